"""rb_imputation study, one small replication (2,000 simulated RWA-shaped persons, 15% MCAR, M = 3).

Statements checked (data seed 20261121, mask seed 1, fit seed 1), with their tolerances:
* every fit converges; the complete-data fit recovers discriminations within RMSE 0.12;
* the imputation model beats the intercept-only marginal on the hidden cells by >= 0.05 nats;
* zero-fill (the exact observed-data likelihood under MCAR) stays within discrimination RMSE
  0.08 of the complete-data fit;
* averaging log-likelihoods over copies (naive, and the seed's batch-level log-mean-exp, which
  at this batch size is dominated by the single best copy) attenuates discriminations: their
  RMSE to the complete-data fit is larger than the per-person Rao-Blackwell and the exact
  marginal ones.
At 9,881 persons the same ordering is in results/benchmarks/rb_study_sim.json.
"""

from dataclasses import replace

import numpy as np
import pytest

from bayesirt.data import simulate
from bayesirt.studies.rb_imputation import conditions, methods, tables
from bayesirt.studies.rb_imputation.settings import Settings
from tests.configs import validated

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replication():
    rm, truth = simulate.from_preset("rwa", 20261121, 2000)
    # the default config's settings (15% MCAR, M = 3), every objective, the imputation model at
    # its own defaults
    settings = replace(Settings.from_config(validated()), objectives=conditions.OBJECTIVES, stacking={})
    return methods.run_replication(rm, truth, mask_seed=1, fit_seed=1, settings=settings)


def disc(rep, objective, against="complete_data"):
    e = rep.tables["errors"]
    row = e[
        (e.condition == objective) & (e.parameter == "discrimination") & (e.scale == "all") & (e.against == against)
    ]
    return float(row["rmse"].iloc[0]), float(row["bias"].iloc[0])


def test_all_fits_converge_and_reference_recovers_truth(replication):
    assert replication.tables["summary"]["converged"].all() and replication.reference.record["converged"]
    rmse, _ = disc(replication, "reference", "truth")
    assert rmse < 0.12


def test_imputation_model_is_informative(replication):
    s = replication.imputation_scores
    assert s["log_score"] > s["marginal_log_score"] + 0.05
    assert replication.imputation_checks["convergence"]["ok"]


def test_zero_fill_tracks_the_complete_data_fit(replication):
    rmse, _ = disc(replication, "zero_fill")
    assert rmse < 0.08


def test_averaging_log_likelihoods_attenuates_discriminations(replication):
    naive, naive_bias = disc(replication, "naive_average_M3")
    batch, _ = disc(replication, "rao_blackwell_batch_M3")
    rb, _ = disc(replication, "rao_blackwell_M3")
    exact, _ = disc(replication, "exact_marginal")
    assert naive_bias < 0
    assert rb < naive and exact < naive
    assert rb < batch


def test_tables_are_complete(replication):
    e = replication.tables["errors"]
    assert set(e.condition) == {
        "reference",
        *conditions.condition_names({"objectives": conditions.OBJECTIVES, "n_copies": [3]}),
    }
    assert set(e.parameter) == set(tables.COMPARED)
    assert np.isfinite(e["rmse"]).all()
    agg = tables.across_replications([e.assign(objective=e.condition), e.assign(objective=e.condition, rep=1)])
    assert (agg["n_reps"] == 2).all()
