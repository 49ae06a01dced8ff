"""Calibration of the item sds VIBO and mean-field VI report, at the RWA size (vibo study).

The vibo study's RWA-shaped GRM (22 items, 9 categories, one scale; ``N_PERSONS`` training
persons, complete data), ``REPLICATIONS`` data sets, each fitted by VIBO's two variants and
per-person mean-field VI with the default config's settings (``studies.vibo.methods.fit``, as
the workflow fits them). Per method, the share of items x data sets whose 90% interval of the
discrimination covers the truth:

* ``<method>_coverage_90``: the intervals the tables report (``mean`` +- 1.645 ``sd``): a Laplace
  approximation of the items' marginal posterior at its mode (``inference.marginal.irt2pl_laplace``),
  where the record's ``item_uncertainty`` says it was applied;
* ``<method>_own_coverage_90`` (shown, not a target): the approximation's own (``vi_mean``,
  ``vi_sd``).

Beside coverage, the RMSE of the estimates against the truth over their mean sd (1 when the sds
are right on average), and the seconds the correction took per fit.

Target: coverage in 0.85-0.95 for every method (the issue's range for every VI method that
reports an sd).
"""

import time
from pathlib import Path

import numpy as np
import yaml

from bayesirt.studies.vibo import data, methods, settings
from bayesirt.studies.vibo.conditions import Condition

ROOT = Path(__file__).resolve().parents[2]
N_PERSONS = 9881
REPLICATIONS = 3
METHODS = ("vibo_one_prior", "vibo_prior_per_missing", "mfvi")
DATA_SEED, FIT_SEED = 20261126, 1
COVERAGE = (0.85, 0.95)
Z90 = 1.6448536269514722
SMOKE = {"N_PERSONS": 200, "REPLICATIONS": 1}


def study_settings() -> tuple[settings.Settings, dict]:
    """The default config's vibo settings with one design: the RWA-shaped GRM at N_PERSONS."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    design = {"model": "grm", "preset": "rwa", "n_persons": N_PERSONS, "missing": ["mcar0"]}
    cfg["studies"]["vibo"]["designs"] = {"rwa": {**design, "replications": REPLICATIONS}}
    validate(cfg, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    study = settings.Settings.from_config(cfg)
    return study, study.design("rwa")


def run() -> dict:
    t0 = time.perf_counter()
    study, design = study_settings()
    covered = {m: [] for m in METHODS}
    own_covered = {m: [] for m in METHODS}
    errors = {m: [] for m in METHODS}
    sds = {m: [] for m in METHODS}
    entries = {m: [] for m in METHODS}
    seconds = {m: [] for m in METHODS}
    for r in range(REPLICATIONS):
        train, hidden, holdout, truth = data.condition_data(
            design,
            "mcar0",
            DATA_SEED + r,
            score_fraction=study.score_fraction,
            heldout_fraction=study.heldout_fraction,
            missing_seed=DATA_SEED + 1000 + r,
        )
        for m in METHODS:
            cond = Condition("rwa", "mcar0", m, r)
            out = methods.fit(train, hidden, holdout, truth, cond, settings=study, seed=FIT_SEED + r)
            d = out.estimates[out.estimates.parameter == "discrimination"]
            err = (d["mean"] - d["true"]).to_numpy()
            covered[m].append(np.abs(err) <= Z90 * d["sd"].to_numpy())
            own = d["vi_mean"] if "vi_mean" in d else d["mean"]
            own_sd = d["vi_sd"] if "vi_sd" in d else d["sd"]
            own_covered[m].append(np.abs(own - d["true"]).to_numpy() <= Z90 * own_sd.to_numpy())
            errors[m].append(err)
            sds[m].append(d["sd"].to_numpy())
            entries[m].append(out.record["item_uncertainty"])
            seconds[m].append(out.record["timing"].get("item_correction_seconds", float("nan")))
    out = {
        "sizes": {"persons": N_PERSONS, "items": 22, "categories": 9, "replications": REPLICATIONS},
        "wall_seconds": time.perf_counter() - t0,
        "item_uncertainty": entries,
    }
    for m in METHODS:
        out[f"{m}_coverage_90"] = float(np.mean(covered[m]))
        out[f"{m}_own_coverage_90"] = float(np.mean(own_covered[m]))
        out[f"{m}_rmse_to_sd"] = float(np.sqrt(np.mean(np.square(errors[m]))) / np.mean(sds[m]))
        out[f"{m}_correction_seconds"] = float(np.mean(seconds[m]))
    lo, hi = COVERAGE
    met = {f"{m}_coverage_90": lo <= out[f"{m}_coverage_90"] <= hi for m in METHODS}
    out["targets"] = {"coverage_90": list(COVERAGE)}
    out["targets_detail"] = met
    out["targets_met"] = all(met.values())
    return out
