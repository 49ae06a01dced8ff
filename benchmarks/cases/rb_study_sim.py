"""rb_imputation study, one replication of the default config on simulated RWA-shaped data (9,881 x
22, 9 categories, 2 scales), 15% MCAR, M = 3.

Reports, for the complete-data reference and each objective (zero_fill, naive_average,
rao_blackwell per person, rao_blackwell_batch = the seed's batch-level form, exact_marginal),
discrimination / threshold / ability RMSE against the complete-data fit and against the truth,
plus the imputation model's scores on the hidden cells.
Expectation (from the issue): exact_marginal and rao_blackwell are closer to the complete-data
fit than zero_fill in discrimination RMSE. The case reports what the data say; nothing is tuned.

Diagnostic (not a method): ``oracle_exact_marginal`` is exact_marginal with the imputation
PMFs replaced by the true GRM's category probabilities at the true parameters and abilities.
It separates the objective from the imputation model: if the oracle is close to the
complete-data fit while the stacking PMFs are not, the imputation model limits the result.
"""

import sys
from dataclasses import replace
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from bayesirt.data import missingness, simulate
from bayesirt.inference.variational import objectives
from bayesirt.models import factorized_grm as fgrm
from bayesirt.studies import grm_advi
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.rb_imputation import methods, tables
from bayesirt.studies.rb_imputation.conditions import OBJECTIVES
from bayesirt.studies.rb_imputation.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _configs import validated  # the cases' folder, put on the path above

N_PERSONS = 9881
DATA_SEED, MASK_SEED, FIT_SEED = 20261121, 1, 1
# over the default config's study settings: every objective, and the imputation model at its own
# defaults (400 Laplace draws per sub-model)
CHANGES = {"objectives": OBJECTIVES, "stacking": {}}
ORACLE_DRAWS = 500
# benchmarks/run.py --smoke: the objectives the expectation compares (rb_objective_cost's smoke run fits
# the other two), with the data, M and steps of rb_objective_cost's smoke fits (whose compiled
# programs these reuse from JAX's persistent cache)
SMOKE = {
    "N_PERSONS": 300,
    "ORACLE_DRAWS": 20,
    "CHANGES": {
        "objectives": ("zero_fill", "rao_blackwell", "exact_marginal"),
        "n_copies": (5,),
        "posterior_draws": 20,
        "training": {"max_steps": 20, "min_steps": 20, "check_every": 10, "progress_every": 0},
        "stacking": {"n_draws": 50, "newton_steps": 20},
    },
}


def true_params(rm, truth) -> dict:
    get = lambda name: (
        truth[truth.parameter == name].sort_values(["item", "person", "scale", "category"])["value"].to_numpy()
    )
    return {
        "discrimination": get("discrimination"),
        "base_difficulty": get("base_difficulty"),
        "increments": get("increments").reshape(rm.n_items, -1),
        "ability": get("ability").reshape(rm.n_persons, -1),
    }


def oracle_fit(rm, truth, reference, config) -> dict:
    """exact_marginal with the true model's PMFs (same mask and fit seed as the study)."""
    kind, rate = parse_missing(config.missing[0])
    rm_missing, _ = missingness.inject(rm, kind=kind, rate=rate, seed=MASK_SEED)
    st = fgrm.structure_of(rm)
    params = {k: jnp.asarray(v, jnp.float32) for k, v in true_params(rm, truth).items()}
    pmf = np.exp(np.asarray(fgrm.category_log_probs(params, st), np.float64))
    extra = objectives.from_dense_pmf(rm_missing.responses, pmf, rm.n_categories)
    out = grm_advi.fit(
        rm_missing,
        seed=FIT_SEED,
        settings=methods.train_settings(config),
        priors=methods.item_priors(config),
        truth=truth,
        log_likelihood=objectives.make("exact_marginal", st),
        extra_data=extra,
        posterior_draws=ORACLE_DRAWS,
        label="oracle_exact_marginal",
        fields={"condition": "oracle_exact_marginal", "objective": "exact_marginal", "replication": 0},
    )
    tab = tables.error_table(out.estimates, reference.estimates)
    return {**tables.summary_row(out.record, tab), "errors": tab.to_dict(orient="records")}


def run() -> dict:
    rm, truth = simulate.from_preset("rwa", DATA_SEED, N_PERSONS)
    study = Settings.from_config(validated())
    config = replace(study, **{**CHANGES, "training": {**study.training, **CHANGES.get("training", {})}})
    rep = methods.run_replication(rm, truth, mask_seed=MASK_SEED, fit_seed=FIT_SEED, settings=config)
    summary = rep.tables["summary"].set_index("objective")
    disc = summary["discrimination_rmse_vs_complete_data"].to_dict()
    expectation = {
        "exact_marginal_beats_zero_fill": bool(disc["exact_marginal"] < disc["zero_fill"]),
        "rao_blackwell_beats_zero_fill": bool(disc["rao_blackwell"] < disc["zero_fill"]),
    }
    return {
        "sizes": {
            "persons": rm.n_persons,
            "items": rm.n_items,
            "categories": 9,
            "scales": 2,
            "missing_rate": parse_missing(config.missing[0])[1],
            "n_copies": config.n_copies[0],
            "hidden_cells": int(rep.hidden.sum()),
        },
        "wall_seconds": rep.seconds,
        "imputation_model": {**rep.imputation.info, "scores": rep.imputation_scores, "checks": rep.imputation_checks},
        "per_objective": {
            name: {k: v for k, v in row.items() if k != "rep"} for name, row in summary.to_dict(orient="index").items()
        },
        "timings": rep.tables["timings"].to_dict(orient="records"),
        "errors": rep.tables["errors"].to_dict(orient="records"),
        "diagnostic_oracle_exact_marginal": oracle_fit(rm, truth, rep.reference, config),
        "expectation": expectation,
        "targets": {"exact_marginal_and_rao_blackwell_closer_than_zero_fill": True},
        "targets_met": all(expectation.values()),
        "config": methods.config_record(config),
    }
