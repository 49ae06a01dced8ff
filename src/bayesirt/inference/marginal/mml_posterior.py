"""The marginal likelihood, abilities and predictions of unidimensional GRMs at given item
parameters (by the quadrature of ``inference.marginal.mml_quadrature``, the one the marginal-ML fit
``inference.marginal.mml`` maximises): per-person marginal log-likelihoods, EAP abilities and posterior
sds, the fit's objective at unconstrained parameters, and posterior predictive category
probabilities of held-out cells.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.marginal.mml_quadrature import (
    Params,
    _check,
    _data,
    _dtype,
    _mean_nll,
    _node_loglik,
    _posterior,
)
from bayesirt.models import grm

_posterior_jit = jax.jit(_posterior)


def marginal_loglik(y, discrimination, cuts, n_categories=None, factor=None, n_nodes: int = 21) -> np.ndarray:
    """Per-person marginal log-likelihood log p(y_i | a, cuts), summed over factors, (N,).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    numpy.ndarray
        Log-likelihoods, shape (N,), float64.
    """
    return posterior(y, discrimination, cuts, n_categories, factor, n_nodes)[0]


def posterior(y, discrimination, cuts, n_categories=None, factor=None, n_nodes: int = 21):
    """Per-person marginal log-likelihood (N,), EAP abilities (N, F) and posterior sds (N, F)
    at given item parameters (``cuts`` increasing up to each item's K_j - 1; later columns unused).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    tuple of numpy.ndarray
        Marginal log-likelihood (N,), EAP abilities (N, F) and posterior sds (N, F), float64.

    Raises
    ------
    ValueError
        If ``y`` is not persons x items, an item has fewer than 2 categories, a response is
        outside its item's categories, or ``factor`` is not one of 0..F-1 per item with every
        factor used.
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    dtype = _dtype()
    data = _data(y, n_categories, factor, n_nodes, dtype)
    a = jnp.asarray(discrimination, dtype)
    c = jnp.asarray(cuts, dtype)[:, : int(n_categories.max()) - 1]
    return tuple(np.asarray(v, np.float64) for v in _posterior_jit(a, c, data))


def mean_nll(params: Params, y, n_categories=None, factor=None, n_nodes: int = 21):
    """The objective of ``fit`` at unconstrained ``params`` (a JAX scalar; differentiable with
    ``jax.grad`` through a closure over this function's data arguments).

    Parameters
    ----------
    params : Params
        Unconstrained item parameters.
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    jax.Array
        Mean negative marginal log-likelihood per person, a scalar.
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    return _mean_nll(params, _data(y, n_categories, factor, n_nodes, _dtype()))


PREDICTIVE_CELLS = 250_000  # cells per chunk of ``predictive_probs``


def predictive_probs(
    y, discrimination, cuts, rows, cols, n_categories=None, factor=None, n_nodes: int = 21
) -> np.ndarray:
    """Posterior predictive P(y_ij = k | person i's observed responses) at the cells (rows, cols),
    (n_cells, Kmax): the GRM category probabilities at the nodes averaged over the person's
    posterior on the nodes of the item's factor, item parameters plugged in. The cells are
    meant to be missing in ``y`` (a hidden response must not inform its own prediction).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    rows, cols : array (n_cells,)
        Persons and items of the cells.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    numpy.ndarray
        P(y_ij = k), shape (n_cells, Kmax), float64 (0 beyond an item's categories).
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    persons, which = np.unique(rows, return_inverse=True)
    dtype = _dtype()
    data = _data(y[persons], n_categories, factor, n_nodes, dtype)
    a = jnp.asarray(discrimination, dtype)
    c = jnp.asarray(cuts, dtype)[:, : int(n_categories.max()) - 1]
    lj = _node_loglik(a, c, data) + data.log_w  # (P, F, Q)
    post = np.asarray(jax.nn.softmax(lj, axis=-1), np.float64)
    probs = np.exp(
        np.asarray(grm.category_log_probs(data.nodes[:, None] * a[None, :], c, data.n_categories), np.float64)
    )  # (Q, I, Kmax)
    # in chunks of cells: all at once held (cells, Q) and (Q, cells, Kmax) float64 arrays,
    # 22 GB for the 15 million scored cells of the paper's 1M-person design
    out = np.empty((len(rows), probs.shape[-1]))
    for a0 in range(0, len(rows), PREDICTIVE_CELLS):
        w, j = which[a0 : a0 + PREDICTIVE_CELLS], cols[a0 : a0 + PREDICTIVE_CELLS]
        out[a0 : a0 + len(j)] = np.einsum("nq,qnk->nk", post[w, factor[j]], probs[:, j])
    return out
