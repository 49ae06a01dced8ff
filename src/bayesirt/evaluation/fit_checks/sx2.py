"""The classical S-X2 item fit (Orlando & Thissen 2000; Kang & Chen 2008 for K > 2), for
complete data only: the statistic to cross-check against other software.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid
from bayesirt.evaluation.fit_checks.pooling import _default_parameters, _fit_row, _pool
from bayesirt.evaluation.fit_checks.posteriors import _lord_wingersky
from bayesirt.evaluation.fit_checks.prepared import _prepare


def sx2_complete(
    y, grid: LatentGrid, n_parameters=None, alpha: float = 0.05, min_expected: float = 1.0
) -> pd.DataFrame:
    """Orlando & Thissen's (2000) S-X2 item fit for complete data (Kang & Chen 2008 for K > 2).

    With the summed score S over all items (T = sum_j (K_j - 1)), the Lord-Wingersky recursion
    over the grid gives f(s | q) for all items and f_{-j}(s | q) for all items but j, and

        E_jk(s) = sum_q w_q P_j(k | q) f_{-j}(s - k | q) / sum_q w_q f(s | q),

    the model-implied proportion answering k among persons with summed score s (marginal over
    the latent variable, no ability estimates). Score groups are s = 1..T-1: the lowest and
    highest possible scores are left out (each determines every response). With N_s persons
    at score s and O_jks of them answering k,

        S-X2_j = sum_s sum_k (O_jks - N_s E_jk(s))^2 / (N_s E_jk(s)),

    which for binary items is the familiar sum_s N_s (O - E)^2 / (E (1 - E)) in proportions.

    Pooling rule: adjacent score groups are merged while any group has an expected count
    N_s E_jk(s) below ``min_expected`` (default 1) in some category, structural zeros (a
    category impossible at that score, only for K_j > 2) and empty score groups included. The
    lowest such group is merged first: the lowest group into the next, the highest into the
    one below, an inner group into the neighbour with fewer persons (the lower one on a tie),
    until no small group is left or one group remains. The rule is modelled on the final "merge
    across" step of mirt's (R) ``itemfit``; mirt also drops empty score groups, merges groups
    of one person and collapses categories of polytomous items within a group first, which
    this function does not do, so polytomous items and sparse edge cases can differ from it.

    Degrees of freedom: df_j = G_j (K_j - 1) - m_j with G_j the score groups after pooling
    (for binary items G_j - m_j, as in Orlando & Thissen and mirt).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1; no missing cell allowed.
    grid : LatentGrid
        The model, one scale, e.g. ``grm_grid`` at the estimates.
    n_parameters : int or array (I,), optional
        m_j, default K_j (a slope and K_j - 1 cuts); 0 for known item values.
    alpha : float
        Level of ``flagged``.
    min_expected : float
        The pooling threshold on expected counts.

    Returns
    -------
    pandas.DataFrame
        One row per item: item, n_observed, statistic, df, p_value, groups, pooled (merges),
        flagged (p_value < alpha; never when df <= 0).

    Raises
    ------
    ValueError
        If any response is missing, or the grid has more than one scale.
    """
    p = _prepare(y, grid)
    n_missing = int((~p.observed).sum())
    if n_missing:
        raise ValueError(
            f"sx2_complete needs complete data: {n_missing} of {p.y.size} cells are missing"
            " (use item_fit for data with missing responses)"
        )
    if p.n_scales != 1 or np.unique(p.scale).size != 1:
        raise ValueError(f"sx2_complete needs a single scale; the grid has {np.unique(p.scale).size}")
    n_items = p.y.shape[1]
    m = _default_parameters(p.n_cat, n_parameters)
    w = np.exp(p.log_weights)
    total = int((p.n_cat - 1).sum())
    f_all = _lord_wingersky(p.probs, p.n_cat, range(n_items))
    p_score = w @ f_all  # P(S = s), (T+1,)
    scores = p.y.sum(axis=1)
    n_s = np.bincount(scores, minlength=total + 1).astype(np.float64)
    inner = slice(1, total)  # s = 1..T-1
    rows = []
    for j in range(n_items):
        k_j = p.n_cat[j]
        f_rest = _lord_wingersky(p.probs, p.n_cat, [i for i in range(n_items) if i != j])
        numer = np.zeros((total + 1, k_j))
        for k in range(k_j):
            numer[k : k + f_rest.shape[1], k] = (w * p.probs[:, j, k]) @ f_rest
        proportion = numer / p_score[:, None]
        obs = np.zeros((total + 1, k_j))
        np.add.at(obs, (scores, p.y[:, j]), 1.0)
        exp = n_s[:, None] * proportion
        pooled_obs, pooled_exp, merges = _pool(obs[inner], exp[inner], min_expected, two_categories=False)
        rows.append(_fit_row(j, p.y.shape[0], pooled_obs, pooled_exp, merges, k_j, m[j], alpha))
    return pd.DataFrame(rows)
