"""15% MCAR injected into an RWA-shaped simulated matrix (9,881 x 22, 9 categories): target vs achieved rate, wall time.

The matrix comes from the factorized-GRM RWA preset (``bayesirt.data.simulate``); injection is
``bayesirt.data.missingness.inject(kind="mcar", rate=0.15)`` with one response kept per person
and item. Targets: achieved rate within +-0.5 percentage points of 15%; bit-identical mask on a
second run with the same seed; under 5 s.
"""

import time

import numpy as np

from bayesirt.data import missingness, simulate

N_PERSONS = 9881
DATA_SEED, SEED, RATE = 20261121, 0, 0.15
SMOKE = {"N_PERSONS": 500}  # benchmarks/run.py --smoke


def run() -> dict:
    rm, _ = simulate.from_preset("rwa", DATA_SEED, N_PERSONS)
    t0 = time.perf_counter()
    out, hidden = missingness.inject(rm, kind="mcar", rate=RATE, seed=SEED)
    wall = time.perf_counter() - t0
    _, again = missingness.inject(rm, kind="mcar", rate=RATE, seed=SEED)
    rec = out.attrs["missingness"]
    within = abs(rec["achieved_rate"] - RATE) <= 0.005
    return {
        "sizes": {"persons": rm.n_persons, "items": rm.n_items, "categories": 9},
        "wall_seconds": wall,
        "target_rate": RATE,
        "achieved_rate": rec["achieved_rate"],
        "hidden_cells": rec["n_hidden"],
        "total_missing_rate": rec["total_missing_rate"],
        "persons_left_without_response": int((~out.observed.any(1)).sum()),
        "identical_on_rerun": bool(np.array_equal(hidden, again)),
        "targets": {"rate_tolerance": 0.005, "wall_seconds_max": 5.0},
        "targets_met": bool(within and wall <= 5.0 and np.array_equal(hidden, again)),
    }
