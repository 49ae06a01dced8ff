"""Cost of the imputation objectives: ADVI fits on RWA-size simulated data (9,881 x 22, 9
categories) with 15% MCAR, and per-step time of every objective.

Per-step time is measured in the real training loop (200 full-batch steps per objective, best
of 2 interleaved runs, so that load from other processes affects all objectives alike).
Imputation PMFs come from the stacking model fitted on the data.
Targets: a fit converges in <= 30 s (wall, after compilation); per-step time relative to
zero_fill: rao_blackwell with M = 5 <= 1.5x, exact_marginal <= 1.2x.
"""

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from bayesirt.data import missingness, simulate
from bayesirt.imputation import stacking
from bayesirt.studies.rb_imputation import data, methods
from bayesirt.studies.rb_imputation.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _configs import validated  # the cases' folder, put on the path above

N_PERSONS = 9881
DATA_SEED, MASK_SEED, FIT_SEED = 20261121, 1, 1
TIMED = [
    ("zero_fill", 1),
    ("exact_marginal", 1),
    ("rao_blackwell", 3),
    ("rao_blackwell", 5),
    ("naive_average", 5),
    ("rao_blackwell_batch", 5),
]
FITTED = [("zero_fill", 1), ("exact_marginal", 1), ("rao_blackwell", 5)]
REPEATS, TIMED_STEPS, CHECK_EVERY = 2, 200, 50
FIT_TRAINING = {}  # over the default config's training: the fits of FITTED
POSTERIOR_DRAWS = None  # None: the default config's
STACKING = stacking.StackingSettings()
# benchmarks/run.py --smoke (fits of the timed steps' length, so that they reuse the compiled programs)
SMOKE = {
    "N_PERSONS": 300,
    "REPEATS": 1,
    "TIMED_STEPS": 20,
    "CHECK_EVERY": 10,
    "TIMED": [t for t in TIMED if t != ("rao_blackwell", 3)],
    "FIT_TRAINING": {"max_steps": 20, "min_steps": 20, "check_every": 10, "progress_every": 0},
    "STACKING": stacking.StackingSettings(n_draws=50, newton_steps=20),
    "POSTERIOR_DRAWS": 20,
}


def study_settings(training: dict) -> Settings:
    """The default config's study settings with ``training`` over its training."""
    study = Settings.from_config(validated())
    draws = study.posterior_draws if POSTERIOR_DRAWS is None else POSTERIOR_DRAWS
    return replace(study, training={**study.training, **training}, posterior_draws=draws)


def step_times(rm, model) -> dict:
    """Milliseconds per training step of each objective: ``TIMED_STEPS`` steps of the real
    training loop (compiled lax.scan chunks, full batch), best of ``REPEATS`` interleaved runs."""
    best = {}
    timed = {"max_steps": TIMED_STEPS, "min_steps": TIMED_STEPS, "check_every": CHECK_EVERY, "progress_every": 0}
    settings = study_settings(timed)
    for _ in range(REPEATS):
        for name, m in TIMED:
            out = methods.fit(name, data.Data(rm, None, model), seed=FIT_SEED, settings=settings, n_copies=m)
            condition = out.record["condition"]  # e.g. rao_blackwell_M5
            ms = 1000 * out.record["timing"]["wall_seconds"] / out.record["steps"]
            best[condition] = min(best.get(condition, np.inf), ms)
    return best


def run() -> dict:
    rm, truth = simulate.from_preset("rwa", DATA_SEED, N_PERSONS)
    rm_missing, hidden = missingness.inject(rm, kind="mcar", rate=0.15, seed=MASK_SEED)
    model, _ = data.fit_imputation_model(rm_missing, STACKING)
    cells = methods.imputation_extra_data(model, rm_missing)["shared"]["missing_cells"]
    block_slots = int(np.prod(cells.block_person.shape)) if cells.blocks else None
    ms = step_times(rm_missing, model)
    ratio = {k: v / ms["zero_fill"] for k, v in ms.items()}

    fitted = {}
    settings = study_settings(FIT_TRAINING)
    for name, m in FITTED:
        out = methods.fit(name, data.Data(rm_missing, truth, model), seed=FIT_SEED, settings=settings, n_copies=m)
        rec = out.record
        d = out.estimates[out.estimates.parameter == "discrimination"]
        fitted[rec["condition"]] = {
            "wall_seconds": rec["timing"]["wall_seconds"],
            "compile_seconds": rec["timing"]["compile_seconds"],
            "steps": rec["steps"],
            "converged": rec["converged"],
            "seconds_per_step_in_fit": rec["timing"]["wall_seconds"] / rec["steps"],
            "discrimination_rmse_vs_truth": float(np.sqrt(np.mean((d["mean"] - d["true"]) ** 2))),
        }
    met = {
        "fits_converge_within_30s": all(f["converged"] and f["wall_seconds"] <= 30.0 for f in fitted.values()),
        "rao_blackwell_M5_within_1.5x": bool(ratio["rao_blackwell_M5"] <= 1.5),
        "exact_marginal_within_1.2x": bool(ratio["exact_marginal"] <= 1.2),
    }
    return {
        "sizes": {
            "persons": rm.n_persons,
            "items": rm.n_items,
            "categories": 9,
            "missing_cells": int((rm_missing.responses < 0).sum()),
            "full_batch_layout": "item blocks" if cells.blocks else "flat cell list",
            "item_block_slots": block_slots,
        },
        "wall_seconds": fitted["rao_blackwell_M5"]["wall_seconds"],
        "step_ms": ms,
        "step_ratio_to_zero_fill": ratio,
        "fits": fitted,
        "targets": {"fit_wall_seconds_max": 30.0, "rao_blackwell_M5_ratio_max": 1.5, "exact_marginal_ratio_max": 1.2},
        "targets_detail": met,
        "targets_met": all(met.values()),
    }
