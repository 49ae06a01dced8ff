"""LCDM at scale: 100,000 persons x 30 items, 4 attributes (16 profiles), 20% MCAR: collapsed VI in
minibatches (target <= 60 s), EM and BBVI reported; peak memory (target <= 8 GB).

Data: the study's ``larger`` generator (items measure 1-2 of 4 attributes) with 30 items and
100,000 persons. Collapsed VI: minibatches of 5,000 persons through the training driver. BBVI:
full batch (q(Z_i) is updated only for persons in a batch, and Adam's moments would move the
others without information, so BBVI is not minibatched), M = 10 samples, at most 8 sweeps of
the seed's schedule: reported, not held to a target. Peak memory is the process's maximum
resident set size (ru_maxrss) after all fits.
"""

import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

from bayesirt.studies.dcm_bbvi import conditions, data, methods, oracle
from bayesirt.studies.dcm_bbvi.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _configs import validated  # the cases' folder, put on the path above

DATA_SEED = 20021
N_PERSONS, N_ITEMS, MISSING = 100_000, 30, 0.2
COLLAPSED_BATCH, COLLAPSED_MAX_STEPS, BBVI_MAX_STEPS = 5000, 6000, 640
SMOKE = {"N_PERSONS": 1000, "COLLAPSED_BATCH": 250, "COLLAPSED_MAX_STEPS": 200, "BBVI_MAX_STEPS": 80}  # run.py --smoke


def run() -> dict:
    spec = dict(conditions.DESIGNS["larger"], n_items=N_ITEMS, n_persons=N_PERSONS)
    t0 = time.perf_counter()
    rm, truth, q = data.simulate(spec, MISSING, DATA_SEED)
    simulate_seconds = time.perf_counter() - t0
    config = replace(
        Settings.from_config(validated()),
        n_samples=10,
        variance_repeats=0,
        collapsed_training={"batch_size": COLLAPSED_BATCH, "max_steps": COLLAPSED_MAX_STEPS},
        bbvi_training={"max_steps": BBVI_MAX_STEPS, "progress_every": 1},
        em={"standard_errors": False},
    )
    out = {
        "sizes": {
            "persons": N_PERSONS,
            "items": N_ITEMS,
            "attributes": 4,
            "profiles": 16,
            "missing_rate": float((rm.responses < 0).mean()),
            "collapsed_batch": COLLAPSED_BATCH,
            "bbvi_samples": 10,
        },
        "simulate_seconds": simulate_seconds,
    }
    ceiling = oracle.oracle_accuracy(rm, truth, q)
    out["oracle_pattern_accuracy"] = ceiling["pattern_accuracy"]
    for m in ("collapsed_vi", "em", "bbvi"):
        rec = methods.fit(m, rm, truth, q, seed=1, settings=config).record
        out[f"{m}_seconds"] = rec["timing"]["wall_seconds"]
        out[f"{m}_compile_seconds"] = rec["timing"]["compile_seconds"]
        out[f"{m}_steps"] = rec["steps"]
        out[f"{m}_converged"] = rec["converged"]
        out[f"{m}_pattern_accuracy"] = rec["accuracy"]["pattern_accuracy"]
        out[f"{m}_attribute_accuracy"] = rec["accuracy"]["attribute_accuracy"]
        out[f"{m}_beta_rmse"] = rec["recovery"]["beta"]["rmse"]
        out[f"peak_memory_gb_after_{m}"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    out["peak_memory_gb"] = out["peak_memory_gb_after_bbvi"]
    out["bbvi_seconds_per_step"] = out["bbvi_seconds"] / out["bbvi_steps"]
    out["wall_seconds"] = out["collapsed_vi_seconds"]
    out["targets"] = {"collapsed_vi_seconds_max": 60.0, "peak_memory_gb_max": 8.0}
    out["targets_met"] = bool(
        out["collapsed_vi_seconds"] <= 60.0 and out["collapsed_vi_converged"] and out["peak_memory_gb"] <= 8.0
    )
    return out
