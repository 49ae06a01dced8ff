"""Responses checked against a grid and held with the arrays every check reads (``_prepare``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesirt.evaluation.fit_checks.latent_grid import _TINY, LatentGrid, _logsumexp, _n_categories


class _Prepared(NamedTuple):
    y: np.ndarray  # (N, I) int, -1 missing
    observed: np.ndarray  # (N, I) bool
    probs: np.ndarray  # (Q, I, K)
    logp: np.ndarray  # (Q, I, K) floored log-probabilities
    log_weights: np.ndarray  # (Q,)
    scale: np.ndarray  # (I,)
    n_scales: int
    n_cat: np.ndarray  # (I,)
    valid: np.ndarray  # (I, K): category k exists for item j


def _as_responses(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"responses must be a 2-d (persons, items) array, got shape {y.shape}")
    if np.issubdtype(y.dtype, np.floating):
        # a float table (e.g. read with pandas) may carry NaN for missing
        finite = np.isfinite(y)
        if np.any(finite & (y != np.round(y))):
            raise ValueError("responses must be integer category codes (0..K-1, -1 for missing)")
        y = np.where(finite, y, -1).astype(np.int64)
    elif not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        raise ValueError(f"responses must be integer category codes, got dtype {y.dtype}")
    return y.astype(np.int64)


def _prepare(y, grid: LatentGrid) -> _Prepared:
    y = _as_responses(y)
    probs = np.asarray(grid.probs, dtype=np.float64)
    if probs.ndim != 3:
        raise ValueError(f"grid.probs must be (Q, I, Kmax), got shape {probs.shape}")
    n_states, n_items, kmax = probs.shape
    if y.shape[1] != n_items:
        raise ValueError(f"responses have {y.shape[1]} items, the grid {n_items}")
    log_w = np.asarray(grid.log_weights, dtype=np.float64)
    if log_w.shape != (n_states,):
        raise ValueError(f"grid.log_weights must be ({n_states},), got {log_w.shape}")
    log_w = log_w - _logsumexp(log_w, axis=0)
    scale = np.asarray(grid.scale_index, dtype=np.int64)
    if scale.shape != (n_items,) or scale.min() < 0:
        raise ValueError(f"grid.scale_index must be ({n_items},) non-negative integers")
    n_cat = _n_categories(probs)
    if y.min(initial=0) < -1:
        raise ValueError("responses must be 0..K_j-1 or -1 (missing); found values below -1")
    too_high = y >= n_cat[None, :]
    if too_high.any():
        n, j = np.argwhere(too_high)[0]
        raise ValueError(
            f"item {j} has {n_cat[j]} categories in the grid but person {n} answered {y[n, j]}"
            f" ({int(too_high.sum())} such cells)"
        )
    valid = np.arange(kmax)[None, :] < n_cat[:, None]
    with np.errstate(divide="ignore"):
        logp = np.log(np.maximum(probs, _TINY))
    return _Prepared(y, y >= 0, probs, logp, log_w, scale, int(scale.max()) + 1, n_cat, valid)
