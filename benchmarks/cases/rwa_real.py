"""Real RWA file (Open Psychometrics RWAS/data.csv): persons, items, categories, missing cells, keys, scale sizes.

Loads the file named by the environment variable BAYESIRT_RWAS (default
../shared/data/RWAS/data.csv relative to the repository root) through ``bayesirt.data.rwa.load``,
the same code the workflow's prepare step uses. Targets: 9,881 persons, 22 items, 9 categories,
352 missing cells in 201 persons, 10 reverse-keyed items (Q4, Q6, Q8, Q9, Q11, Q13, Q15, Q18,
Q20, Q21).
"""

import os
import time
from pathlib import Path

from bayesirt.data import rwa

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {"persons": 9881, "items": 22, "categories": [9], "missing_cells": 352,
            "persons_with_missing": 201,
            "reverse_keyed": ["Q4", "Q6", "Q8", "Q9", "Q11", "Q13", "Q15", "Q18", "Q20", "Q21"]}


def run() -> dict:
    path = Path(os.environ.get("BAYESIRT_RWAS", ROOT / ".." / "shared" / "data" / "RWAS" / "data.csv"))
    if not path.exists():
        raise FileNotFoundError(f"{path}: real RWA file not found; set BAYESIRT_RWAS to RWAS/data.csv")
    t0 = time.perf_counter()
    rm = rwa.load(path)
    wall = time.perf_counter() - t0
    s = rwa.summary(rm)
    met = {k: s[k] == v for k, v in EXPECTED.items()}
    return {
        "sizes": {"persons": s["persons"], "items": s["items"]},
        "wall_seconds": wall,
        **s,
        "targets": EXPECTED,
        "targets_met": all(met.values()),
        "targets_detail": met,
    }
