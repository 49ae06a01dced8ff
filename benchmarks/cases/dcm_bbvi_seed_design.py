"""BBVI (seed 002) on the seed's LCDM design (1,000 x 30, 2 attributes): pattern accuracy against
the seed's 0.967, the EM reference and the oracle, time to convergence, gradient variance with
and without control variates.

Ten simulated data sets (the seeds README's generator; the Q-matrix is drawn anew each time,
and with it how well the profiles can be told apart, so each data set also reports the oracle:
the accuracy of the modal posterior profile at the true parameters). Methods: EM (reference),
the seed's BBVI (M = 50, Rao-Blackwellized score-function gradients, the seed's block schedule),
the same with control variates (bbvi_cv), and collapsed VI. Targets, for each BBVI variant:
mean pattern accuracy >= 0.967, within 1 point of EM on every data set, to convergence in <= 10 s
(wall after compilation, the slowest data set).

Whether 0.967 is within reach at all: ``oracle_over_data_sets`` draws ``ORACLE_DATA_SETS`` more
data sets from the same generator and reports the distribution of the oracle's pattern accuracy
(no method can beat the oracle on average; it can by luck on one data set of 1,000 persons).
"""

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from bayesirt.studies.dcm_bbvi import conditions, data, methods
from bayesirt.studies.dcm_bbvi import oracle as dcm_oracle
from bayesirt.studies.dcm_bbvi.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _configs import validated  # the cases' folder, put on the path above

# Ten, not three: the oracle's accuracy varies between data sets with sd 0.013 (the Q-matrix and
# the item parameters are redrawn), so three sets (0.957, 0.943, 0.958) said little about 0.967
DATA_SEEDS = tuple(range(20020, 20030))
METHODS = ("em", "bbvi", "bbvi_cv", "collapsed_vi")
ORACLE_DATA_SETS = 200
N_PERSONS = None  # None: the design's (1,000)
CHANGES = {}  # over the study's settings (the default config's)
# benchmarks/run.py --smoke
SMOKE = {
    "DATA_SEEDS": (20020,),
    "ORACLE_DATA_SETS": 2,
    "N_PERSONS": 200,
    "CHANGES": {
        "variance_repeats": 4,
        "bbvi_training": {"max_steps": 160, "min_steps": 80},
        "collapsed_training": {"max_steps": 200, "min_steps": 100},
    },
}


def oracle_over_data_sets(spec) -> dict:
    """The oracle's pattern accuracy on ``ORACLE_DATA_SETS`` fresh data sets of the generator."""
    acc = np.array(
        [
            dcm_oracle.oracle_accuracy(*data.simulate(spec, 0.0, 30_000 + k))["pattern_accuracy"]
            for k in range(ORACLE_DATA_SETS)
        ]
    )
    return {
        "data_sets": ORACLE_DATA_SETS,
        "mean": float(acc.mean()),
        "sd": float(acc.std(ddof=1)),
        "quantiles_5_50_95": np.quantile(acc, [0.05, 0.5, 0.95]).tolist(),
        "max": float(acc.max()),
        "share_at_or_above_seed": float(np.mean(acc >= conditions.SEED_ACCURACY)),
    }


def run() -> dict:
    spec = conditions.DESIGNS["seed"]
    if N_PERSONS:
        spec = dict(spec, n_persons=N_PERSONS)
    settings = replace(Settings.from_config(validated()), **CHANGES)
    per = {m: [] for m in METHODS}
    oracle, variance = [], None
    for s in DATA_SEEDS:
        rm, truth, q = data.simulate(spec, 0.0, s)
        oracle.append(dcm_oracle.oracle_accuracy(rm, truth, q)["pattern_accuracy"])
        for m in METHODS:
            rec = methods.fit(m, rm, truth, q, seed=1, settings=settings).record
            per[m].append(rec)
            if m == "bbvi" and variance is None:
                variance = rec["gradient_variance"]
    out = {
        "sizes": {
            "persons": spec["n_persons"],
            "items": spec["n_items"],
            "attributes": 2,
            "bbvi_samples": 50,
            "data_sets": len(DATA_SEEDS),
        },
        "seed_pattern_accuracy": conditions.SEED_ACCURACY,
        "oracle_pattern_accuracy": float(np.mean(oracle)),
        "oracle_pattern_accuracy_per_data_set": oracle,
    }
    em_acc = np.array([r["accuracy"]["pattern_accuracy"] for r in per["em"]])
    met = True
    for m, recs in per.items():
        acc = np.array([r["accuracy"]["pattern_accuracy"] for r in recs])
        secs = [r["timing"]["wall_seconds"] for r in recs]
        out[f"{m}_pattern_accuracy"] = float(acc.mean())
        out[f"{m}_pattern_accuracy_per_data_set"] = acc.tolist()
        out[f"{m}_attribute_accuracy"] = float(np.mean([r["accuracy"]["attribute_accuracy"] for r in recs]))
        out[f"{m}_seconds"] = float(max(secs))
        out[f"{m}_seconds_per_data_set"] = secs
        out[f"{m}_compile_seconds"] = float(np.mean([r["timing"]["compile_seconds"] for r in recs]))
        out[f"{m}_steps"] = [r["steps"] for r in recs]
        out[f"{m}_converged"] = all(r["converged"] for r in recs)
        out[f"{m}_beta_rmse"] = float(np.mean([r["recovery"]["beta"]["rmse"] for r in recs]))
        out[f"{m}_beta_coverage_95"] = float(np.mean([r["recovery"]["beta_coverage_95"] for r in recs]))
        if m.startswith("bbvi"):
            out[f"{m}_points_below_em_worst"] = float(100 * np.max(em_acc - acc))
            ok = (
                acc.mean() >= conditions.SEED_ACCURACY
                and np.all(acc >= em_acc - 0.01)
                and max(secs) <= 10.0
                and out[f"{m}_converged"]
            )
            out[f"{m}_targets_met"] = bool(ok)
            met = met and ok
    out["oracle_over_data_sets"] = oracle_over_data_sets(spec)
    out["oracle_share_at_or_above_seed"] = out["oracle_over_data_sets"]["share_at_or_above_seed"]
    out["profile_accuracy"] = {m: recs[0]["accuracy"]["profile_accuracy"] for m, recs in per.items()}
    out["gradient_variance_reduction"] = {b: v["reduction"] for b, v in variance.items()}
    out["gradient_variance"] = variance
    out["targets"] = {
        "pattern_accuracy_min": conditions.SEED_ACCURACY,
        "within_em_points": 1.0,
        "bbvi_seconds_max": 10.0,
    }
    out["targets_met"] = bool(met)
    out["wall_seconds"] = out["bbvi_seconds"]
    return out
