"""Shared set-up of the 2PNO Gibbs benchmark cases (not a case itself: the leading underscore
hides it from benchmarks/run.py)."""

from __future__ import annotations

import os

from bayesirt.data.simulate_binary import simulate_2pno_arrays


def simulate(seed, n, j, missing=0.0):
    """The issue's design (a ~ U(0.5, 2), d ~ N(0, 1), theta ~ N(0, 1))."""
    return simulate_2pno_arrays(seed, n, j, missing)


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages at the time of the run (the machine may be shared)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def item_stats(summary):
    items = summary[summary.parameter.isin(["discrimination", "difficulty"])]
    return {
        "max_r_hat": float(items.r_hat.max()),
        "min_ess_bulk": float(items.ess_bulk.min()),
        "median_ess_bulk": float(items.ess_bulk.median()),
        "min_ess_tail": float(items.ess_tail.min()),
    }
