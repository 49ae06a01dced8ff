"""Seed 004's own VIBO in the vibo study: the seed methods fit with the settings the seed states
(and ours keep theirs), both run end to end at a tiny size, and the 0% condition is complete."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from bayesirt.inference.variational import vibo, vibo_average, vibo_encoder
from bayesirt.models import irt2pl
from bayesirt.studies.vibo import data, methods, seed_methods
from bayesirt.studies.vibo import reproduction as vibo_page
from bayesirt.studies.vibo import settings as study_settings
from bayesirt.studies.vibo.conditions import Condition
from tests.unit.test_vibo_blocks import TINY, validated


def replication(method, missing="mcar20", rep=0, n_persons=60):
    cfg = validated(
        {
            "designs": {"t": {"n_persons": n_persons, "n_items": 8, "missing": [missing], "replications": 1}},
            "eval_samples": 20,
            "posterior_draws": 10,
            "training": TINY,
        }
    )
    study = study_settings.Settings.from_config(cfg)
    train, hidden, hold, truth = data.condition_data(
        study.design("t"), missing, 40 + rep, score_fraction=0.15, heldout_fraction=0.25, missing_seed=50 + rep
    )
    return study, methods.Replication(train, hidden, hold, truth, Condition("t", missing, method, rep), 60 + rep)


@pytest.mark.slow  # two VIBO fits, minutes of compilation on 2 cores
def test_the_seed_methods_fit_with_the_seed_settings_and_ours_with_theirs():
    study, rep = replication("vibo_seed")
    p = methods.prepare(rep, study)
    problem, vs = methods.vibo_problem(p)
    assert vs.missing == "prior_per_missing" and vs.n_samples == 1  # "replace its term ... with the prior"
    for name in ("difficulty", "log_discrimination", "first_cut", "log_gaps"):
        assert vs.priors.of(name) == (0.0, 1.0)  # "independent standard Normal distributions"
    assert p.priors == vs.priors  # the item correction and the model checks use the same prior
    assert vs.hidden == tuple(study.vibo["hidden"]) and vs.train.learning_rate == study.vibo["learning_rate"]
    assert set(problem.params["encoder"][0]) == {"w", "b"}  # the product of experts' MLP
    # the averaging comparison: everything the same but the encoder
    _, rep_avg = replication("vibo_average_seed")
    avg_problem, avg_vs = methods.vibo_problem(methods.prepare(rep_avg, study))
    assert avg_vs == vs and set(avg_problem.params["encoder"]) == {"embed", "head"}
    assert (
        seed_methods.encoder_module("vibo_average_seed") is vibo_average
        and seed_methods.encoder_module("vibo_seed") is vibo
    )
    # this project's variants keep the config's priors and their own missing-data treatment
    _, ours = replication("vibo_prior_per_missing")
    p_ours = methods.prepare(ours, study)
    _, vs_ours = methods.vibo_problem(p_ours)
    assert vs_ours.priors == irt2pl.ItemPriors(**study.priors) == p_ours.priors
    assert vs_ours.priors.of("log_discrimination") == (0.0, 0.5)
    assert dataclasses.replace(vs_ours, priors=vs.priors) == vs  # the seed's priors are the one difference


@pytest.mark.slow  # a VIBO fit, minutes of compilation on 2 cores
def test_the_averaging_encoder_runs_end_to_end():
    # vibo_seed runs end to end in the complete condition's test below (its code path with
    # missing cells is vibo_prior_per_missing's, which test_vibo_blocks fits)
    method = "vibo_average_seed"
    study, rep = replication(method)
    (out,) = methods.fit_block([rep], study)
    record = out.record
    stated = {k: v for k, v in dataclasses.asdict(seed_methods.SEED_SETTINGS).items() if k != "missing"}
    assert record["method"] == method and record["settings"]["method"]["seed"] == stated  # no expert to replace
    ev = record["evaluation"]
    assert np.isfinite([ev["ability_rmse"], ev["hidden_log_score"], ev["heldout_loglik"]]).all()
    assert ev["ability_corr"] > 0.3 and ev["hidden_n_cells"] > 0
    assert np.isfinite(record["psis"]["khat"])


def test_the_complete_condition_hides_no_cell_and_still_scores_the_fits():
    study, rep = replication("vibo_seed", missing="mcar0")
    assert (np.asarray(rep.train.responses) != -1).all() and (np.asarray(rep.holdout.responses) != -1).all()
    assert rep.hidden.empty
    # the same complete data as a condition with missingness starts from
    _, rep20 = replication("vibo_seed", missing="mcar20")
    assert len(rep20.hidden) > 0 and (np.asarray(rep20.train.responses) == -1).mean() > 0.2
    # a table read back from CSV has no dtype when empty: the fit takes it as integers
    empty = rep.hidden.astype(object)
    (out,) = methods.fit_block([dataclasses.replace(rep, hidden=empty)], study)
    ev, record = out.record["evaluation"], out.record
    assert record["missing_rate"] == 0.0 and ev["hidden_n_cells"] == 0 and np.isnan(ev["hidden_log_score"])
    assert np.isfinite([ev["ability_rmse"], ev["heldout_loglik"], record["psis"]["khat"]]).all()
    assert record["method"] == "vibo_seed" and ev["ability_corr"] > 0.3
    assert record["settings"]["method"]["seed"] == dataclasses.asdict(seed_methods.SEED_SETTINGS)
    # with nothing missing the seed's product has no prior expert: the encoder's precision is
    # the sum of the experts' alone
    p = methods.prepare(rep, study)
    _, vs = methods.vibo_problem(p)
    params = vibo.init(p.keys["fit"], p.st, vs, p.y)
    prec, _ = vibo_encoder.expert_table(params["encoder"], params["items"]["loc"], p.st)
    _, sd = vibo_encoder.product_of_experts(params["encoder"], params["items"]["loc"], p.y[:3], p.st, vs)
    by_hand = [prec[np.arange(8), p.y[i]].sum() + vibo_encoder.MIN_PRECISION for i in range(3)]
    np.testing.assert_allclose(np.asarray(sd[:, 0]) ** -2, by_hand, rtol=1e-5)


def page_fits(seed_gap: float, hidden_at_zero: bool):
    """Fits of a simulated design: five replications at mcar0 and mcar20 of the seed's two
    methods, ours and MML, the seed's product ``seed_gap`` below the average in ability RMSE."""
    rng = np.random.default_rng(0)
    base = {"vibo_seed": 0.30 - seed_gap, "vibo_average_seed": 0.30, "vibo_one_prior": 0.29, "mml": 0.28}
    rows = [
        {
            "design": "n1k",
            "missing": m,
            "method": meth,
            "rep": r,
            "ability_rmse": b + rng.normal(0, 0.002),
            "coverage_90": 0.9,
            "hidden_log_score": -0.5 if (m != "mcar0" or hidden_at_zero) else np.nan,
            "heldout_loglik": -50.0,
        }
        for m in ("mcar0", "mcar20")
        for meth, b in base.items()
        for r in range(5)
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("gap, verdict", [(0.05, "supported"), (-0.05, "contradicted")])
def test_the_page_judges_the_seed_s_comparison_with_the_averaging_encoder(gap, verdict):
    fits = page_fits(gap, hidden_at_zero=False)
    (row,) = vibo_page.comparison_claims(fits)
    assert row.verdict == verdict and "`vibo_seed` against `vibo_average_seed`" in row.claim
    assert row.seed.startswith('"We found this design to outperform averaging')
    # the report's own claims name the method each judges, ours and the seed's
    timings = fits[["design", "missing", "method", "rep"]].assign(wall_seconds=1.0)
    claims = [c.claim for c in vibo_page.verdict_claims(fits, timings)]
    assert any("(`vibo_seed`, design `n1k`)" in c for c in claims)
    assert any("(`vibo_one_prior`, design `n1k`)" in c for c in claims)


def test_the_page_says_whether_its_zero_percent_condition_was_complete():
    assert "is not complete data" in vibo_page.complete_condition(page_fits(0.0, hidden_at_zero=True))
    assert vibo_page.complete_condition(page_fits(0.0, hidden_at_zero=False)).startswith("The 0% condition is complete")
    intro = vibo_page.INTRO
    assert "one per item" in intro and "none when every item is answered" in intro and "`vibo_average_seed`" in intro
