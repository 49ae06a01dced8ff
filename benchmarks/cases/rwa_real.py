"""Real RWA file (Open Psychometrics RWAS/data.csv): persons, items, categories, missing cells, keys, scale sizes.

Loads the file named by the environment variable BAYESIRT_RWAS (default
../shared/data/RWAS/data.csv relative to the repository root) through ``bayesirt.data.rwa.load``,
the same code the workflow's prepare step uses. Targets: 9,881 persons, 22 items, 9 categories,
352 missing cells in 201 persons, 10 reverse-keyed items (Q4, Q6, Q8, Q9, Q11, Q13, Q15, Q18,
Q20, Q21).
"""

import os
import tempfile
import time
from pathlib import Path

from bayesirt.data import rwa, simulate

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "persons": 9881,
    "items": 22,
    "categories": [9],
    "missing_cells": 352,
    "persons_with_missing": 201,
    "reverse_keyed": ["Q4", "Q6", "Q8", "Q9", "Q11", "Q13", "Q15", "Q18", "Q20", "Q21"],
}
STAND_IN = False  # without the real file: load a simulated file in its format instead of an error
STAND_IN_PERSONS = 500
# benchmarks/run.py --smoke: the real file where a checkout has it (as the tests), else the stand-in
SMOKE = {"STAND_IN": True}


def write_stand_in(path: Path) -> Path:
    """A simulated RWA-shaped matrix written in the file's format (codes 1-9, 0 = no answer)."""
    rm, _ = simulate.from_preset("rwa", 20261121, STAND_IN_PERSONS)
    rows = [",".join(rwa.ITEMS + ["E1", "testelapse"])]
    rows += [",".join(str(v + 1) for v in r) + ",100,200" for r in rm.responses]
    path.write_text("\n".join(rows) + "\n")
    return path


def run() -> dict:
    path = Path(os.environ.get("BAYESIRT_RWAS", ROOT / ".." / "shared" / "data" / "RWAS" / "data.csv"))
    source = str(path)
    if STAND_IN and not path.exists():
        source = "simulated RWA-shaped stand-in"
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            rm = rwa.load(write_stand_in(Path(tmp) / "data.csv"))
            wall = time.perf_counter() - t0
    else:
        if not path.exists():
            raise FileNotFoundError(f"{path}: real RWA file not found; set BAYESIRT_RWAS to RWAS/data.csv")
        t0 = time.perf_counter()
        rm = rwa.load(path)
        wall = time.perf_counter() - t0
    s = rwa.summary(rm)
    met = {k: s[k] == v for k, v in EXPECTED.items()}
    return {
        **({"data": source} if STAND_IN else {}),
        "sizes": {"persons": s["persons"], "items": s["items"]},
        "wall_seconds": wall,
        **s,
        "targets": EXPECTED,
        "targets_met": all(met.values()),
        "targets_detail": met,
    }
