"""Starting values of a multidimensional GRM, and its unconstrained parameters from and to
natural values (loadings, cuts or intercepts, factor correlations, a simulation's truth table).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from tensorflow_probability.substrates import jax as tfp

from bayesirt.models.mgrm_structure import Structure, factor_corr, intercepts, loadings

tfb = tfp.bijectors


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


def natural_params(params, st: Structure) -> dict:
    """numpy loadings (I, P), intercepts (a list: each item's C_i - 1 of them) and factor
    correlations (P, P): the layout of ``bayesirt.tables.mgrm_table`` and of the truth of
    ``bayesirt.data.simulate_mgrm`` (the inverse of ``params_from_natural``).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (``bayesirt.models.mgrm``'s docstring).
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
