"""Observed-against-expected tables of the item fits: pooling of small groups, Pearson's
statistic, degrees of freedom and one result row per item.
"""

from __future__ import annotations

import numpy as np

# chi-square tail from scipy.special, the function scipy.stats.chi2.sf calls: the same numbers
# without importing scipy.stats, which costs about a second in every workflow job
from scipy.special import chdtrc


def _pool(observed: np.ndarray, expected: np.ndarray, min_expected: float, two_categories: bool):
    """Merge adjacent rows (groups) of (G, K) tables until no row is small.

    A row is small when one of its expected counts is below ``min_expected`` (a structural zero
    included) or, with ``two_categories``, when fewer than two categories are observed in it.
    The lowest small row is merged first: the first row into the second, the last into the one
    before, an inner row into the neighbour with fewer persons (the lower one on a tie). Stops
    at one row. Returns the pooled tables and the number of merges.
    """
    obs = observed.astype(np.float64).copy()
    exp = expected.astype(np.float64).copy()
    merges = 0
    while obs.shape[0] > 1:
        small = (exp < min_expected).any(axis=1)
        if two_categories:
            small |= np.count_nonzero(obs, axis=1) < 2
        if not small.any():
            break
        i = int(np.argmax(small))
        if i == 0:
            target = 1
        elif i == obs.shape[0] - 1:
            target = i - 1
        else:
            target = i - 1 if obs[i - 1].sum() <= obs[i + 1].sum() else i + 1
        obs[target] += obs[i]
        exp[target] += exp[i]
        obs = np.delete(obs, i, axis=0)
        exp = np.delete(exp, i, axis=0)
        merges += 1
    return obs, exp, merges


def _pearson(obs: np.ndarray, exp: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(exp > 0, (obs - exp) ** 2 / exp, np.where(obs > 0, np.inf, 0.0))
    return float(terms.sum())


def _default_parameters(n_cat: np.ndarray, n_parameters) -> np.ndarray:
    if n_parameters is None:
        return n_cat.astype(np.int64)  # a slope and K_j - 1 cuts
    m = np.broadcast_to(np.asarray(n_parameters, dtype=np.int64), n_cat.shape)
    return m.copy()


def _fit_row(j, n_obs, obs, exp, merges, n_cat_j, m_j, alpha):
    groups = obs.shape[0]
    df = groups * (n_cat_j - 1) - m_j
    stat = _pearson(obs, exp) if groups else np.nan
    p_value = float(chdtrc(df, stat)) if df > 0 and np.isfinite(stat) else np.nan
    return {
        "item": j,
        "n_observed": int(n_obs),
        "statistic": stat,
        "df": int(df),
        "p_value": p_value,
        "groups": int(groups),
        "pooled": int(merges),
        "flagged": bool(p_value < alpha) if np.isfinite(p_value) else False,
    }
