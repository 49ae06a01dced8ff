"""Posteriors over the grid's states from observed cells only, leave-one-out predictives (each
cell divided out of its person's posterior) and summed-score distributions (Lord-Wingersky).
"""

from __future__ import annotations

import numpy as np

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid, _dot, _logsumexp, _n_categories
from bayesirt.evaluation.fit_checks.prepared import _prepare, _Prepared

# Persons per pass of the (persons, items, states) arrays of the leave-one-out predictives: tens
# of MB at a time instead of GB (20,000 persons x 100 items x 101 nodes is 1.6 GB in float64),
# which the memory system streams far faster than one pass over the whole array.
_PERSON_CHUNK = 1024


def _cell_log_probs(p: _Prepared, rows=slice(None)) -> np.ndarray:
    """log P(y_nj | state q) per cell of the persons ``rows``, (n, I, Q); 0 at missing cells."""
    y, observed = p.y[rows], p.observed[rows]
    n_items = y.shape[1]
    logp_t = p.logp.transpose(1, 2, 0)  # (I, K, Q)
    cell = logp_t[np.arange(n_items)[None, :], np.where(observed, y, 0)]
    return np.where(observed[..., None], cell, 0.0)


def _log_posteriors(p: _Prepared, cell: np.ndarray) -> np.ndarray:
    """Normalised log posterior over states per person and scale, (n, S, Q), from the persons'
    cell log-probabilities ``cell`` (``_cell_log_probs``)."""
    return _normalised(p, np.stack([cell[:, p.scale == s, :].sum(1) for s in range(p.n_scales)], axis=1))


def _normalised(p: _Prepared, loglik: np.ndarray) -> np.ndarray:
    """The log posterior over states from each scale's log-likelihood (n, S, Q) and the prior."""
    lp = p.log_weights[None, None, :] + loglik
    return lp - _logsumexp(lp, axis=-1)[..., None]


def _posteriors(p: _Prepared) -> np.ndarray:
    """Normalised log posterior over states per person and scale, (N, S, Q), as
    ``_log_posteriors`` but without the (N, I, Q) cell array: each scale's log-likelihood is
    the contraction of the responses' one-hot codes (N, I, K) with the log-probabilities."""
    n, n_items = p.y.shape
    onehot = np.zeros((n, n_items, p.logp.shape[2]))
    rows, cols = np.nonzero(p.observed)
    onehot[rows, cols, p.y[rows, cols]] = 1.0
    # each scale's items copied C-contiguous: a boolean index on the middle axis returns them
    # items-first in memory, where einsum's loops are several times slower (Performance page)
    loglik = np.stack(
        [
            _dot("nik,qik->nq", *(np.ascontiguousarray(x[:, p.scale == s]) for x in (onehot, p.logp)))
            for s in range(p.n_scales)
        ],
        axis=1,
    )
    return _normalised(p, loglik)


def _loo_weights(p: _Prepared, cell: np.ndarray, log_post: np.ndarray) -> np.ndarray:
    """p(state | the person's observed cells on j's scale except j), (n, I, Q).

    The cell is divided out of the full posterior (a subtraction in log space) and the result
    renormalised after subtracting its maximum; the floor on the probabilities keeps every
    term finite.
    """
    loo = log_post[:, p.scale, :] - cell
    loo -= loo.max(axis=-1, keepdims=True)
    np.exp(loo, out=loo)
    loo /= loo.sum(axis=-1, keepdims=True)
    return loo


def _mix(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum_q weights[n, j, q] values[q, j, k] -> (N, I, K)."""
    return _dot("niq,qik->nik", weights, values)


def _loo(p: _Prepared, item: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """P(Y_nj = k | person n's other observed cells on j's scale) for every cell, (N, I, K),
    and, where ``item`` is given, that item's leave-one-out weights over the states (N, Q).
    Computed ``_PERSON_CHUNK`` persons at a time (``_loo_weights`` of each chunk)."""
    pred = np.empty(p.y.shape + (p.probs.shape[2],))
    kept = None if item is None else np.empty((p.y.shape[0], p.probs.shape[0]))
    for start in range(0, p.y.shape[0], _PERSON_CHUNK):
        rows = slice(start, start + _PERSON_CHUNK)
        cell = _cell_log_probs(p, rows)
        weights = _loo_weights(p, cell, _log_posteriors(p, cell))
        pred[rows] = _mix(weights, p.probs)
        if kept is not None:
            kept[rows] = weights[:, item, :]
    return pred, kept


def person_posteriors(y, grid: LatentGrid) -> np.ndarray:
    """Log posterior over the grid's states per person and scale, from observed cells only.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, S, Q)
        log p(state q | person n's observed responses on scale s); a person with no observed
        item on a scale gets the prior.
    """
    return _posteriors(_prepare(y, grid))


def leave_one_out_predictive(y, grid: LatentGrid) -> np.ndarray:
    """P(Y_nj = k | person n's other observed responses on j's scale), for observed cells.

    Computed by dividing cell j out of the person's posterior in log space, for all cells at
    once (no refit, no loop over items).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, I, Kmax)
        The leave-one-out predictive distribution of each observed cell; NaN at missing cells;
        0 for categories beyond an item's K_j.
    """
    p = _prepare(y, grid)
    return np.where(p.observed[..., None], _loo(p)[0], np.nan)


def summed_score_distribution(grid: LatentGrid, items=None) -> np.ndarray:
    """P(summed score = s | state q) by the Lord-Wingersky (1984) recursion over items.

    Parameters
    ----------
    grid : LatentGrid
        The model.
    items : array of int, optional
        The items whose scores are summed (all items by default).

    Returns
    -------
    np.ndarray (Q, T+1)
        T = sum over the items of (K_j - 1).
    """
    probs = np.asarray(grid.probs, dtype=np.float64)
    n_cat = _n_categories(probs)
    items = np.arange(probs.shape[1]) if items is None else np.asarray(items, dtype=np.int64)
    return _lord_wingersky(probs, n_cat, items)


def _lord_wingersky(probs: np.ndarray, n_cat: np.ndarray, items) -> np.ndarray:
    n_states = probs.shape[0]
    dist = np.ones((n_states, 1))
    for j in items:
        top = dist.shape[1] - 1
        new = np.zeros((n_states, top + n_cat[j]))
        for k in range(n_cat[j]):
            new[:, k : k + top + 1] += dist * probs[:, j, k][:, None]
        dist = new
    return dist
