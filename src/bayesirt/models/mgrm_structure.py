"""The static structure of a multidimensional GRM (``Structure``) and the maps from its
unconstrained parameters to loadings, cuts and the factor correlation matrix; the parameters
are laid out in ``bayesirt.models.mgrm``'s docstring.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from tensorflow_probability.substrates import jax as tfp

from bayesirt.models import grm

tfb = tfp.bijectors


class Structure(NamedTuple):
    """Static description of a multidimensional GRM (arrays are traced once under jit)."""

    n_categories: jnp.ndarray  # (I,) categories per item
    loading_mask: jnp.ndarray  # (I, P) 1.0 where a loading is free, 0.0 where fixed at zero
    n_factors: int
    max_categories: int
    positive_loadings: bool = False
    correlated: bool = False  # learn a factor correlation matrix (else Sigma = I)

    @property
    def n_items(self) -> int:
        return int(self.loading_mask.shape[0])


def structure(
    n_categories, n_factors: int, q_matrix=None, positive_loadings: bool = False, correlated: bool | None = None
) -> Structure:
    """Build a ``Structure``. ``q_matrix`` (I, P) of 0/1 gives a confirmatory model; ``None``
    an exploratory one. ``correlated`` defaults to True for confirmatory and False for
    exploratory models.

    Parameters
    ----------
    n_categories : array (I,)
        Categories per item (integers >= 2).
    n_factors : int
        P, the number of factors.
    q_matrix : array (I, P), optional
        0/1 loading mask (None: every loading free).
    positive_loadings : bool
        Loadings are ``softplus(raw)`` > 0 inside the mask.
    correlated : bool, optional
        Learn a factor correlation matrix (None: with a ``q_matrix``); never with one factor.

    Returns
    -------
    Structure
        The structure.

    Raises
    ------
    ValueError
        If ``n_categories`` is not 1-d integers >= 2, ``n_factors`` < 1, or ``q_matrix`` has
        another shape than (I, P), entries other than 0 and 1, or an item loading on no factor.
    """
    n_categories = np.asarray(n_categories, dtype=np.int32)
    if n_categories.ndim != 1 or (n_categories < 2).any():
        raise ValueError(f"n_categories must be a 1-d array of integers >= 2, got {n_categories}")
    if n_factors < 1:
        raise ValueError(f"n_factors must be at least 1, got {n_factors}")
    n_items = n_categories.size
    if q_matrix is None:
        mask = np.ones((n_items, n_factors), np.float32)
    else:
        mask = np.asarray(q_matrix, dtype=np.float32)
        if mask.shape != (n_items, n_factors):
            raise ValueError(f"q_matrix has shape {mask.shape}, expected ({n_items}, {n_factors})")
        if not np.isin(mask, (0.0, 1.0)).all():
            raise ValueError("q_matrix must contain only 0 and 1")
        if (mask.sum(1) == 0).any():
            raise ValueError(f"q_matrix: item {int(np.argmin(mask.sum(1)))} loads on no factor")
    if correlated is None:
        correlated = q_matrix is not None and n_factors > 1
    return Structure(
        jnp.asarray(n_categories),
        jnp.asarray(mask),
        int(n_factors),
        int(n_categories.max()),
        bool(positive_loadings),
        bool(correlated and n_factors > 1),
    )


def simple_structure_q(factor_of_item, n_factors: int) -> np.ndarray:
    """Q-matrix of a simple structure: item j loads only on factor ``factor_of_item[j]``.

    Parameters
    ----------
    factor_of_item : array (I,) of int
        Factor of each item, 0..P-1.
    n_factors : int
        P, the number of factors.

    Returns
    -------
    np.ndarray
        Shape (I, P), float32.
    """
    f = np.asarray(factor_of_item)
    q = np.zeros((f.size, n_factors), np.float32)
    q[np.arange(f.size), f] = 1.0
    return q


def loadings(params, st: Structure):
    """Loadings: ``mask * raw``, or ``mask * softplus(raw)`` when positive.

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (I, P).
    """
    raw = params["loadings_raw"]
    lam = jax.nn.softplus(raw) if st.positive_loadings else raw
    return lam * st.loading_mask


def cuts(params, st: Structure):
    """(I, Kmax-1) increasing cuts; ``intercepts = -cuts`` in the paper's eq. (1).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
    st : Structure
        The model's structure (not used).

    Returns
    -------
    jax.Array
        Shape (I, Kmax-1).
    """
    return grm.ordered_cuts(params["cut_base"], jax.nn.softplus(params["cut_increments"]))


def intercepts(params, st: Structure):
    """The paper's intercepts ``alpha = -cuts`` (decreasing along each item's row).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (I, Kmax-1).
    """
    return -cuts(params, st)


# compiled once: called eagerly (estimates, evaluation), the bijector's forward pass ran as
# about twenty tiny programs, each traced and compiled (or read from the cache) in every job
_correlation_cholesky = jax.jit(lambda raw: tfb.CorrelationCholesky().forward(raw))


def factor_cholesky(params, st: Structure):
    """Cholesky factor L of the factor correlation matrix (identity when not correlated).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Lower-triangular L, shape (P, P).
    """
    if not st.correlated:
        return jnp.eye(st.n_factors)
    return _correlation_cholesky(params["corr_raw"])


def factor_corr(params, st: Structure):
    """Factor correlation matrix ``Sigma = L L'`` (the identity when not correlated).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (P, P).
    """
    chol = factor_cholesky(params, st)
    return chol @ chol.T
