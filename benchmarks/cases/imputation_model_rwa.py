"""Stacking imputation model on the real RWA data (9,881 x 22 items, 9 categories): 462 pairwise +
22 intercept-only ordinal models, PSIS-LOO, stacking weights.

Data: ``$BAYESIRT_RWAS`` or ``../shared/data/RWAS/data.csv`` (relative to the repo root); 15% MCAR
is injected on top of the natural missingness and the model is fitted on what remains, then
scored on the hidden cells (log score and accuracy of the PMF's mode, against the intercept-only
marginal model). Both predictor codings are fitted (numeric is the default).
Target: the default model is fitted in <= 180 s on 2 CPU cores.
"""

import os
from pathlib import Path

import numpy as np

from bayesirt.data import missingness, rwa, simulate
from bayesirt.imputation import stacking
from bayesirt.imputation.checks import validate_imputation_model
from bayesirt.io import ResponseMatrix

ROOT = Path(__file__).resolve().parents[2]
MASK_SEED = 1
TARGET_SECONDS = 180.0
N_PERSONS = N_ITEMS = None  # None: all of the file's
STACKING: dict = {}  # StackingSettings over the defaults
STAND_IN = False  # without the real file: a simulated RWA-shaped matrix instead of an error
# benchmarks/run.py --smoke: the real file where a checkout has it (as the tests), else the stand-in
SMOKE = {"N_PERSONS": 400, "N_ITEMS": 6, "STACKING": {"n_draws": 50, "newton_steps": 20}, "STAND_IN": True}


def data_path() -> Path:
    return Path(os.environ.get("BAYESIRT_RWAS", ROOT / ".." / "shared" / "data" / "RWAS" / "data.csv"))


def responses() -> tuple[ResponseMatrix, str]:
    """The real file (its first ``N_PERSONS`` persons and ``N_ITEMS`` items where set) and its path; with
    ``STAND_IN`` and no file, a simulated matrix of the same shape instead."""
    path = data_path()
    if STAND_IN and not path.exists():
        rm, source = simulate.from_preset("rwa", 20261121, N_PERSONS or 9881)[0], "simulated RWA-shaped stand-in"
    else:
        rm, source = rwa.load(path), str(path)
    if N_PERSONS or N_ITEMS:
        rm = ResponseMatrix(rm.responses[:N_PERSONS, :N_ITEMS], rm.items[:N_ITEMS], rm.attrs)
    return rm, source


def run() -> dict:
    rm, source = responses()
    rm_missing, hidden = missingness.inject(rm, kind="mcar", rate=0.15, seed=MASK_SEED)
    out = {
        "sizes": {
            "persons": rm.n_persons,
            "items": rm.n_items,
            "categories": int(rm.n_categories.max()),
            "natural_missing_cells": int((rm.responses < 0).sum()),
            "hidden_cells": int(hidden.sum()),
        }
    }
    if STAND_IN:
        out["data"] = source
    for predictor in ("numeric", "onehot"):
        model = stacking.fit(rm_missing, stacking.StackingSettings(predictor=predictor, **STACKING))
        checks = validate_imputation_model(model, [it.name for it in rm.items], rm.n_categories)
        scores = stacking.imputation_accuracy(model, rm_missing.responses, rm.responses, hidden)
        best = model.weights.argmax(1)
        out[predictor] = {
            "timing": {k: v for k, v in model.info.items() if k.endswith("seconds")},
            "submodels": model.info["n_submodels"],
            "converged": int(model.converged.sum()),
            "max_pareto_k": float(model.pareto_k.max()),
            "max_laplace_khat": float(model.laplace_khat.max()),
            "total_elpd_loo_best": float(model.elpd_loo[np.arange(rm.n_items), best].sum()),
            "effective_models_per_item": float(np.mean(1.0 / np.sum(model.weights**2, 1))),
            "intercept_weight_mean": float(np.mean(np.diag(model.weights))),
            "scores_hidden_cells": scores,
            "checks": checks,
        }
    seconds = out["numeric"]["timing"]["total_seconds"]
    out.update(
        {
            "wall_seconds": seconds,
            "targets": {"fit_seconds_max": TARGET_SECONDS},
            "targets_met": bool(seconds <= TARGET_SECONDS and out["numeric"]["converged"] == rm.n_items**2),
        }
    )
    return out
