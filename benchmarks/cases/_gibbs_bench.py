"""Shared set-up of the 2PNO Gibbs benchmark cases (not a case itself: the leading underscore
hides it from benchmarks/run.py)."""

from __future__ import annotations

import os

import numpy as np
from scipy.special import ndtr


def simulate(seed: int, n: int, j: int, missing: float = 0.0):
    """The issue's design: a_j ~ U(0.5, 2), d_j ~ N(0, 1), theta_i ~ N(0, 1), 2PNO responses."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, j)
    d = rng.normal(0.0, 1.0, j)
    theta = rng.normal(0.0, 1.0, n)
    y = (rng.uniform(size=(n, j)) < ndtr(theta[:, None] * a - d)).astype(np.int8)
    if missing:
        y[rng.uniform(size=y.shape) < missing] = -1
    return y, a, d, theta


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages at the time of the run (the machine may be shared)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def item_stats(summary):
    items = summary[summary.parameter.isin(["discrimination", "difficulty"])]
    return {"max_r_hat": float(items.r_hat.max()), "min_ess_bulk": float(items.ess_bulk.min()),
            "median_ess_bulk": float(items.ess_bulk.median()), "min_ess_tail": float(items.ess_tail.min())}
