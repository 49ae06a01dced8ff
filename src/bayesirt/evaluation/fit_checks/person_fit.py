"""Person fit: the standardised log-likelihood lz over each person's observed items."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid, _dot, _logsumexp
from bayesirt.evaluation.fit_checks.posteriors import _posteriors
from bayesirt.evaluation.fit_checks.prepared import _prepare, _Prepared


def _point_log_probs(p: _Prepared, grid: LatentGrid, log_post: np.ndarray) -> np.ndarray:
    """log P(Y_nj = k) at each person's point estimate on j's scale, (N, I, K); -inf beyond K_j.

    With an order (theta nodes) the point is the EAP and the log-probabilities are interpolated
    linearly between the two neighbouring nodes, then renormalised over the item's categories;
    without one (classes) the point is the posterior mode class.
    """
    n_items = p.y.shape[1]
    item = np.arange(n_items)[None, :]
    if grid.order is None:
        mode = np.argmax(log_post, axis=-1)[:, p.scale]  # (N, I)
        out = p.logp[mode, item, :]
    else:
        order = np.asarray(grid.order, dtype=np.float64)
        sort = np.argsort(order)
        nodes = order[sort]
        logp = p.logp[sort]
        eap = _dot("nsq,q->ns", np.exp(log_post), np.asarray(order, np.float64))  # (N, S)
        theta = eap[:, p.scale]  # (N, I)
        hi = np.clip(np.searchsorted(nodes, theta), 1, nodes.size - 1)
        t = np.clip((theta - nodes[hi - 1]) / (nodes[hi] - nodes[hi - 1]), 0.0, 1.0)[..., None]
        out = (1.0 - t) * logp[hi - 1, item, :] + t * logp[hi, item, :]
    out = np.where(p.valid[None], out, -np.inf)
    return out - _logsumexp(out, axis=-1)[..., None]


def person_fit(y, grid: LatentGrid, threshold: float = -1.645) -> pd.DataFrame:
    """Standardised log-likelihood lz (Drasgow, Levine & Williams 1985) over observed items.

    At the person's point estimate (the EAP on each scale, or the posterior-mode class when
    the grid has no order), with p_jk = P(Y_j = k | estimate) and sums over the person's
    observed items only:

        l0 = sum_j log p_{j y_j},  E = sum_j sum_k p_jk log p_jk,
        Var = sum_j [sum_k p_jk (log p_jk)^2 - (sum_k p_jk log p_jk)^2],  lz = (l0 - E) / sqrt(Var).

    With several scales the sums run over all observed items, each at its own scale's EAP
    (items of different scales are independent given the abilities). Between grid nodes the
    log-probabilities are interpolated linearly. lz is not corrected for the estimation of the
    ability (Snijders 2001), so under the model its variance is a little below 1.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    threshold : float
        ``flagged`` is lz < threshold (one-sided, 5% under a standard normal by default).

    Returns
    -------
    pandas.DataFrame
        N rows: person, n_observed, lz, flagged. Persons with fewer than two observed items
        get lz NaN and are not flagged.
    """
    p = _prepare(y, grid)
    log_post = _posteriors(p)
    lp = _point_log_probs(p, grid, log_post)  # (N, I, K)
    prob = np.exp(lp)
    plogp = np.where(p.valid[None], prob * np.where(np.isfinite(lp), lp, 0.0), 0.0)
    mean_j = plogp.sum(-1)
    second_j = np.where(p.valid[None], prob * np.where(np.isfinite(lp), lp, 0.0) ** 2, 0.0).sum(-1)
    var_j = np.maximum(second_j - mean_j**2, 0.0)
    obs = p.observed
    picked = np.take_along_axis(lp, np.where(obs, p.y, 0)[..., None], axis=-1)[..., 0]
    l0 = np.where(obs, picked, 0.0).sum(1)
    e = np.where(obs, mean_j, 0.0).sum(1)
    v = np.where(obs, var_j, 0.0).sum(1)
    n_obs = obs.sum(1)
    ok = (n_obs >= 2) & (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lz = np.where(ok, (l0 - e) / np.sqrt(v), np.nan)
    return pd.DataFrame(
        {
            "person": np.arange(p.y.shape[0]),
            "n_observed": n_obs,
            "lz": lz,
            "flagged": np.where(ok, lz < threshold, False),
        }
    )
