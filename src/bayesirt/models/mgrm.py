"""Multidimensional logistic graded response model for item factor analysis (seed 003, eq. 1-4).

Person i has P latent factors z_i ~ N(0, Sigma); item j has loadings beta_j (P,) and C_j - 1
strictly ordered intercepts. In the paper's notation

    P(x_ij >= k | z_i) = sigmoid(beta_j . z_i + alpha_jk),   k = 1..C_j-1,

so the intercepts alpha_jk decrease in k. The project's one GRM likelihood
(``bayesirt.models.grm``) is written with increasing cuts, ``sigmoid(score - cut_k)``; here
``score = beta_j . z_i`` and ``cut_jk = -alpha_jk``. The cuts are increasing by construction
(``grm.ordered_cuts``: a free first cut plus a cumulative sum of softplus-positive increments),
so the intercepts can never cross, even for items with a rarely used category.

Parameters (a dict of arrays; everything is unconstrained, so any optimizer may move it):
    loadings_raw    (I, P)        loadings = mask * raw, or mask * softplus(raw) when positive
    cut_base        (I,)          first cut
    cut_increments  (I, Kmax-2)   softplus^{-1} of the gaps between cuts
    corr_raw        (P(P-1)/2,)   unconstrained vector -> Cholesky factor of the factor
                                  correlation matrix (TFP ``CorrelationCholesky``); absent
                                  when the prior is the identity (exploratory fits)

``Structure`` holds the static facts (number of categories, Q-mask, constraints). A Q-mask
fixes the loadings outside it at exactly zero (confirmatory analysis); without it every
loading is free (exploratory analysis; then the prior should be the identity, because a
correlation matrix and an oblique rotation are not separately identified).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from tensorflow_probability.substrates import jax as tfp

from bayesirt.models import grm

tfb = tfp.bijectors

LOG_2PI = float(np.log(2.0 * np.pi))


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


# ----------------------------------------------------------------------------- parameters


def loadings(params, st: Structure):
    """Loadings: ``mask * raw``, or ``mask * softplus(raw)`` when positive.

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring).
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
        Unconstrained parameters (module docstring).
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
        Unconstrained parameters (module docstring).
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
        Unconstrained parameters (module docstring).
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
        Unconstrained parameters (module docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (P, P).
    """
    chol = factor_cholesky(params, st)
    return chol @ chol.T


def init_params(key, st: Structure, responses=None, init_loading: float | None = None) -> dict:
    """Initial values.

    Loadings follow the paper's Xavier rule, U(-sqrt(2/(P+M)), sqrt(2/(P+M))) (eq. 18);
    positive loadings take the absolute value (through the softplus inverse). The cuts are
    started at the logits of the observed cumulative category proportions when ``responses``
    are given (the paper's Xavier draw for intercepts would not be ordered; ordered cuts at the
    marginal proportions are the model's exact solution at zero loadings), else evenly spaced
    on [-1, 1]. The correlation starts at the identity.

    Parameters
    ----------
    key : jax.Array
        PRNG key of the loadings' draw.
    st : Structure
        The model's structure.
    responses : array (N, I), optional
        Integer responses, negative for missing (None: evenly spaced cuts).
    init_loading : float, optional
        Start every loading at this value instead of the Xavier draw.

    Returns
    -------
    dict
        float32 ``loadings_raw`` (I, P), ``cut_base`` (I,), ``cut_increments`` (I, Kmax-2) and,
        when correlated, ``corr_raw`` (P(P-1)/2,) zeros.
    """
    n_items, n_factors = st.n_items, st.n_factors
    kmax = st.max_categories
    limit = float(np.sqrt(2.0 / (n_factors + n_items)))
    lam = jax.random.uniform(key, (n_items, n_factors), minval=-limit, maxval=limit)
    if init_loading is not None:
        lam = jnp.full((n_items, n_factors), init_loading)
    if st.positive_loadings:
        lam = jnp.abs(lam) + 1e-2
        raw = jnp.log(jnp.expm1(lam))
    else:
        raw = lam
    ncat = np.asarray(st.n_categories)
    c = np.tile(np.linspace(-1.0, 1.0, kmax - 1), (n_items, 1)) if kmax > 2 else np.zeros((n_items, 1))
    if responses is not None:
        y = np.asarray(responses)
        for j in range(n_items):
            col = y[:, j][y[:, j] >= 0]
            k = int(ncat[j])
            counts = np.bincount(col, minlength=k)[:k] + 0.5  # add-half keeps every logit finite
            upper = np.cumsum(counts[::-1])[::-1][1:] / counts.sum()  # P(Y >= k), k = 1..K-1
            cj = -np.log(upper / (1.0 - upper))  # cut_k = -logit P(Y >= k)
            cj = np.maximum.accumulate(cj + np.arange(cj.size) * 1e-3)
            c[j, : k - 1] = cj
            if k - 1 < kmax - 1:  # unused cuts of items with fewer categories: keep increasing
                c[j, k - 1 :] = cj[-1] + np.arange(1, kmax - k + 1)
    gaps = np.maximum(np.diff(c, axis=1), 1e-2)
    params = {
        "loadings_raw": jnp.asarray(raw, jnp.float32),
        "cut_base": jnp.asarray(c[:, 0], jnp.float32),
        "cut_increments": jnp.asarray(np.log(np.expm1(gaps)), jnp.float32),
    }
    if st.correlated:
        params["corr_raw"] = jnp.zeros(n_factors * (n_factors - 1) // 2, jnp.float32)
    return params


def params_from_natural(st: Structure, loadings_value, cuts_value, corr=None) -> dict:
    """Unconstrained parameters reproducing given loadings (I, P), increasing cuts (I, Kmax-1)
    and factor correlation (P, P); the inverse of ``loadings``/``cuts``/``factor_corr``.
    Loadings outside the mask are ignored; positive loadings must be > 0 inside it.

    Parameters
    ----------
    st : Structure
        The model's structure.
    loadings_value : array (I, P)
        Loadings.
    cuts_value : array (I, Kmax-1)
        Cuts, strictly increasing along each row.
    corr : array (P, P), optional
        Factor correlation (None: the identity); used only when correlated.

    Returns
    -------
    dict
        Unconstrained parameters (float32).

    Raises
    ------
    ValueError
        If a free loading is <= 0 under positive loadings, or the cuts are not strictly increasing.
    """
    lam = np.asarray(loadings_value, np.float64)
    c = np.asarray(cuts_value, np.float64)
    mask = np.asarray(st.loading_mask) > 0
    if st.positive_loadings:
        if (lam[mask] <= 0).any():
            raise ValueError("positive_loadings: every free loading must be > 0")
        raw = np.where(mask, np.log(np.expm1(np.where(mask, lam, 1.0))), 0.0)
    else:
        raw = np.where(mask, lam, 0.0)
    gaps = np.diff(c, axis=1)
    if (gaps <= 0).any():
        raise ValueError("cuts must be strictly increasing along each row")
    params = {
        "loadings_raw": jnp.asarray(raw, jnp.float32),
        "cut_base": jnp.asarray(c[:, 0], jnp.float32),
        "cut_increments": jnp.asarray(np.log(np.expm1(gaps)), jnp.float32),
    }
    if st.correlated:
        corr = np.eye(st.n_factors) if corr is None else np.asarray(corr, np.float64)
        params["corr_raw"] = jnp.asarray(
            tfb.CorrelationCholesky().inverse(jnp.asarray(np.linalg.cholesky(corr), jnp.float32)), jnp.float32
        )
    return params


def truth_params(st: Structure, truth) -> dict:
    """``params_from_natural`` from a truth table of ``bayesirt.data.simulate_mgrm``.

    Parameters
    ----------
    st : Structure
        The model's structure.
    truth : pandas.DataFrame
        Truth table: ``parameter`` "loading" (``item``, ``factor``), "intercept" (``item``,
        ``category`` 1..C_i-1) and "factor_corr" (``factor``, ``factor2``) rows with their ``value``.

    Returns
    -------
    dict
        Unconstrained parameters (float32).
    """
    lam = truth[truth.parameter == "loading"]
    lam_m = np.zeros((st.n_items, st.n_factors))
    lam_m[lam.item.to_numpy(), lam.factor.to_numpy()] = lam.value.to_numpy()
    ints = truth[truth.parameter == "intercept"]
    kmax = st.max_categories
    cut_m = np.zeros((st.n_items, kmax - 1))
    cut_m[ints.item.to_numpy(), ints.category.to_numpy() - 1] = -ints.value.to_numpy()
    ncat = np.asarray(st.n_categories)
    for j in range(st.n_items):  # unused cuts of items with fewer categories: keep increasing
        if ncat[j] - 1 < kmax - 1:
            cut_m[j, ncat[j] - 1 :] = cut_m[j, ncat[j] - 2] + np.arange(1, kmax - ncat[j] + 1)
    corr = np.eye(st.n_factors)
    fc = truth[truth.parameter == "factor_corr"]
    corr[fc.factor.to_numpy(), fc.factor2.to_numpy()] = fc.value.to_numpy()
    corr[fc.factor2.to_numpy(), fc.factor.to_numpy()] = fc.value.to_numpy()
    return params_from_natural(st, lam_m, cut_m, corr)


# ----------------------------------------------------------------------------- densities


def log_likelihood(params, y, z, st: Structure):
    """log p(x_i | z) summed over observed items; missing cells (-1) contribute 0.

    y: (B, I) integer codes; z: (..., B, P) latent draws  ->  (..., B).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring).
    y : array (B, I)
        Integer responses, -1 for missing.
    z : array (..., B, P)
        Factor scores.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (..., B).
    """
    lam = loadings(params, st)
    score = z @ lam.T  # (..., B, I)
    return grm.log_prob(y, score, cuts(params, st), st.n_categories).sum(-1)


def log_prior(params, z, st: Structure):
    """log N(z; 0, Sigma) for z (..., P), with Sigma = L L' (the identity if not correlated).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring).
    z : array (..., P)
        Factor scores.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (...).
    """
    p = st.n_factors
    if not st.correlated:
        return -0.5 * jnp.sum(z * z, -1) - 0.5 * p * LOG_2PI
    chol = factor_cholesky(params, st)
    flat = z.reshape(-1, p)
    white = jax.scipy.linalg.solve_triangular(chol, flat.T, lower=True).T.reshape(z.shape)
    return -0.5 * jnp.sum(white * white, -1) - jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * p * LOG_2PI


def log_joint(params, y, z, st: Structure):
    """log p(x_i, z) = log p(x_i | z) + log p(z): (B, I), (..., B, P) -> (..., B).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring).
    y : array (B, I)
        Integer responses, -1 for missing.
    z : array (..., B, P)
        Factor scores.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (..., B).
    """
    return log_likelihood(params, y, z, st) + log_prior(params, z, st)


def sample_prior(key, params, st: Structure, shape=()):
    """Factor scores drawn from their prior N(0, Sigma).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    params : dict
        Unconstrained parameters (module docstring).
    st : Structure
        The model's structure.
    shape : tuple of int
        Leading shape of the draws.

    Returns
    -------
    jax.Array
        Shape ``shape + (P,)``.
    """
    eps = jax.random.normal(key, shape + (st.n_factors,))
    return eps @ factor_cholesky(params, st).T


# ----------------------------------------------------------------------------- outputs


def natural_params(params, st: Structure) -> dict:
    """numpy loadings (I, P), intercepts (a list: each item's C_i - 1 of them) and factor
    correlations (P, P): the layout of ``bayesirt.tables.mgrm_table`` and of the truth of
    ``bayesirt.data.simulate_mgrm`` (the inverse of ``params_from_natural``).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring).
    st : Structure
        The model's structure.

    Returns
    -------
    dict
        ``loading`` (I, P), ``intercept`` (list of I arrays, C_i - 1 each) and ``factor_corr``
        (P, P), as numpy arrays.
    """
    ints = np.asarray(intercepts(params, st))
    ncat = np.asarray(st.n_categories)
    return {
        "loading": np.asarray(loadings(params, st)),
        "intercept": [ints[j, : ncat[j] - 1] for j in range(ints.shape[0])],
        "factor_corr": np.asarray(factor_corr(params, st)),
    }
