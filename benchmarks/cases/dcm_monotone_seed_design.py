"""The LCDM's monotonicity option (issue #12) on the seed's design (1,000 x 30, 2 attributes): EM
and BBVI with control variates (bbvi_cv), each with and without monotone coefficients: pattern
accuracy, time, smallest main effect.

Three data sets of the seed's generator (the first three of ``dcm_bbvi_seed_design``; their
true coefficients are monotone), every fit with the study's settings (``dcm_bbvi.methods.fit``)
and ``monotone`` on or off; the BBVI gradient-variance measurement is skipped (not what this
case is about, and a quarter of a BBVI fit's time). Times are the fit's wall time after
compilation, as in the study's records.
"""

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from bayesirt.studies.dcm_bbvi import conditions, data, methods
from bayesirt.studies.dcm_bbvi.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _configs import validated  # the cases' folder, put on the path above

DATA_SEEDS = (20020, 20021, 20022)
METHODS = ("em", "bbvi_cv")
N_PERSONS = None  # None: the design's (1,000)
TRAIN = {}  # over the study's settings (the smoke run's shorter fits)
# benchmarks/run.py --smoke
SMOKE = {
    "DATA_SEEDS": (20020,),
    "N_PERSONS": 200,
    "TRAIN": {"bbvi_training": {"max_steps": 160, "min_steps": 80}},
}


def run() -> dict:
    spec = conditions.DESIGNS["seed"]
    if N_PERSONS:
        spec = dict(spec, n_persons=N_PERSONS)
    study = Settings.from_config(validated())  # the default config's: the schema's defaults
    rows = {f"{m}{'_monotone' if mono else ''}": [] for m in METHODS for mono in (False, True)}
    for s in DATA_SEEDS:
        rm, truth, q = data.simulate(spec, 0.0, s)
        for m in METHODS:
            for mono in (False, True):
                settings = replace(study, monotone=mono, variance_repeats=0, **TRAIN)
                out = methods.fit(m, rm, truth, q, seed=1, settings=settings)
                est = out.estimates
                b = est[est.parameter == "beta"]
                main = b[b.category.isin([1, 2])]  # with 2 attributes, features 1 and 2 are the main effects
                rows[f"{m}{'_monotone' if mono else ''}"].append(
                    {
                        "pattern_accuracy": out.record["accuracy"]["pattern_accuracy"],
                        "seconds": out.record["timing"]["wall_seconds"],
                        "compile_seconds": out.record["timing"]["compile_seconds"],
                        "steps": out.record["steps"],
                        "converged": out.record["converged"],
                        "beta_rmse": out.record["recovery"]["beta"]["rmse"],
                        "min_main_effect": float(main["mean"].min()),
                        "loglik": out.record.get("loglik"),
                    }
                )
    out = {
        "sizes": {
            "persons": spec["n_persons"],
            "items": spec["n_items"],
            "attributes": 2,
            "bbvi_samples": 50,
            "data_sets": len(DATA_SEEDS),
        }
    }
    for name, recs in rows.items():
        for key in (
            "pattern_accuracy",
            "seconds",
            "compile_seconds",
            "beta_rmse",
            "min_main_effect",
            "loglik",
            "steps",
            "converged",
        ):
            out[f"{name}_{key}_per_data_set"] = [r[key] for r in recs]
        out[f"{name}_pattern_accuracy"] = float(np.mean([r["pattern_accuracy"] for r in recs]))
        out[f"{name}_seconds"] = float(np.max([r["seconds"] for r in recs]))
    for m in METHODS:
        diff = np.array([r["pattern_accuracy"] for r in rows[f"{m}_monotone"]]) - np.array(
            [r["pattern_accuracy"] for r in rows[m]]
        )
        out[f"{m}_monotone_minus_plain_points"] = (100 * diff).tolist()
    out["wall_seconds"] = out["bbvi_cv_monotone_seconds"]
    out["steps"] = out["bbvi_cv_monotone_steps_per_data_set"]
    out["compile_seconds"] = float(np.mean(out["bbvi_cv_monotone_compile_seconds_per_data_set"]))
    return out
