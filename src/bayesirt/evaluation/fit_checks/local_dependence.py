"""Local dependence: Yen's Q3 residual correlations over pairwise observed cells, and each
item's largest one with a predictive p-value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid, _dot
from bayesirt.evaluation.fit_checks.posteriors import _posteriors
from bayesirt.evaluation.fit_checks.prepared import _prepare
from bayesirt.evaluation.fit_checks.replication import predictive_p_values


def residual_correlations(y, grid: LatentGrid, min_pairs: int = 10) -> np.ndarray:
    """Yen's Q3: correlations of the residuals y_nj - E[Y_nj | person n's posterior], pairwise.

    E is the posterior mean of the item's expected score given all the person's observed
    responses on the item's scale. Each pair of items is correlated over the persons who
    answered both. Under local independence Q3 is close to -1/(I - 1), not 0, for short tests
    (Yen 1984): judge the values relative to their average or to replicated data.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    min_pairs : int
        Pairs answered by fewer persons than this get NaN.

    Returns
    -------
    np.ndarray (I, I)
        Symmetric; 1 on the diagonal (NaN for items with fewer than ``min_pairs`` answers).
    """
    p = _prepare(y, grid)
    log_post = _posteriors(p)
    item_mean = p.probs @ np.arange(p.probs.shape[2], dtype=np.float64)  # (Q, I)
    post = np.exp(log_post)  # (N, S, Q)
    expected = _dot("nsq,qi->nsi", post, item_mean)[:, p.scale, np.arange(p.y.shape[1])]
    m = p.observed.astype(np.float64)
    r = np.where(p.observed, p.y - expected, 0.0)
    n = _dot("ni,nj->ij", m, m)
    sx = _dot("ni,nj->ij", r, m)  # [i, j]: sum of r_i over persons who answered i and j
    sxx = _dot("ni,nj->ij", r**2, m)
    sxy = _dot("ni,nj->ij", r, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        cov = sxy - sx * sx.T / n
        var_i = sxx - sx**2 / n
        corr = cov / np.sqrt(var_i * var_i.T)
    corr = np.where(n >= min_pairs, corr, np.nan)
    diag = np.diag(n) >= min_pairs
    corr[np.diag_indices_from(corr)] = np.where(diag, 1.0, np.nan)
    return corr


def max_abs_residual_correlation(y, grid: LatentGrid, min_pairs: int = 10) -> float:
    """The largest |Q3| over distinct item pairs (a summary of local dependence).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    min_pairs : int
        As in ``residual_correlations``.

    Returns
    -------
    float
        max over i != j of |Q3_ij|, ignoring NaN pairs; NaN if no pair qualifies.
    """
    corr = residual_correlations(y, grid, min_pairs)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    off = off[np.isfinite(off)]
    return float(np.max(np.abs(off))) if off.size else np.nan


def _item_max_q3(y, grid: LatentGrid, min_pairs: int) -> np.ndarray:
    corr = residual_correlations(y, grid, min_pairs)
    np.fill_diagonal(corr, np.nan)
    return np.where(np.isfinite(corr).any(1), np.nan_to_num(corr, nan=-np.inf).max(1), np.nan)


def local_dependence(
    y, grid: LatentGrid, n_replications: int = 50, seed=0, alpha: float = 0.05, min_pairs: int = 10
) -> pd.DataFrame:
    """Each item's largest residual correlation (Q3) with any other item, and its predictive
    p-value.

    The largest, not the largest in size: items that share a second factor have positive
    residual correlations with each other, and the negative ones they then have with every
    other item (the ability absorbs part of the second factor) are its by-product. Q3 under
    local independence is neither 0 nor the same for every pair (about -1/(I - 1) on average,
    more or less with the items' categories and the missing cells), so the reference is
    simulation: ``predictive_p_values`` over replications that keep each person's
    missing cells. With item values at a point estimate this is a parametric bootstrap at the
    estimates (the item values are not redrawn).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    n_replications : int
        Replicated data sets.
    seed : int
        Seed of the replications.
    alpha : float
        Level of ``flagged``.
    min_pairs : int
        As in ``residual_correlations``.

    Returns
    -------
    pandas.DataFrame
        One row per item: item, max_q3, partner (the item it is reached with), p_value,
        flagged (p_value < alpha).
    """
    corr = residual_correlations(y, grid, min_pairs)
    np.fill_diagonal(corr, np.nan)
    partner = np.nan_to_num(corr, nan=-np.inf).argmax(1)
    observed = _item_max_q3(y, grid, min_pairs)
    p = predictive_p_values(y, grid, lambda d: _item_max_q3(d, grid, min_pairs), n_replications, seed)
    return pd.DataFrame(
        {
            "item": np.arange(corr.shape[0]),
            "max_q3": observed,
            "partner": np.where(np.isfinite(observed), partner, -1),
            "p_value": p,
            "flagged": np.nan_to_num(p, nan=1.0) < alpha,
        }
    )
