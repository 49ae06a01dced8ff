"""amortized_ifa's doubling check: a doubled fit continues the run's, the diagnostic reads the
run's fits and refits them with twice the cap, and a claim on unconverged fits keeps its verdict
only where doubling moves its figure by less than its interval."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from bayesirt import io
from bayesirt.studies.amortized_ifa import conditions, data, doubling, methods, reproduction, settings
from tests.unit.test_ifa_study import TINY, design, one_design, test_config


def test_twice_the_cap_continues_the_run_fit():
    d = design(analysis="confirmatory", preset="mixture_p1", n_persons=40, training={**TINY, "min_steps": 20})
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=10, posterior_draws=5)
    train, hold, truth = data.simulate_design(d, 0, 0.25)
    rep = methods.Replication(train, hold, truth, conditions.Condition(d.name, "iwae", 1, 3, 0), 7)
    study = one_design(d, evaluation)
    (run,) = methods.fit_block([rep], study)
    (twice,) = methods.fit_block([rep], doubling.with_doubled_cap(study, d.name))
    assert run.record["steps"] == 20 and twice.record["steps"] == 40  # min_steps = max_steps: no early stop
    assert twice.record["settings"]["training"]["max_steps"] == 40
    pd.testing.assert_frame_equal(twice.losses.iloc[: len(run.losses)], run.losses)


def test_figures_of_a_record():
    record = {
        "converged": False,
        "steps": 500,
        "recovery": {"loading_mse": 0.1, "intercept_mse": 0.2},
        "heldout_loglik": {"independent": -20.0, "own_proposal": -19.0},
    }
    f = doubling.figures_of(record)
    assert f["converged"] is False and f["steps"] == 500 and f["loglik_independent"] == -20.0
    assert f["loading_mse"] == 0.1 and np.isnan(f["factor_corr_mse"])


@pytest.mark.slow  # about 40 s: IWAE and IWAVB fitted with twice the cap of the test config
def test_doubled_fits_reads_the_run_and_refits_with_twice_the_cap(tmp_path, monkeypatch):
    cfg = test_config()
    monkeypatch.chdir(tmp_path)
    study = settings.Settings.from_config(cfg)
    train, hold, truth = data.simulate_design(study.design("mixture_p1"), 3, study.evaluation.heldout_fraction)
    folder = tmp_path / data.data_folder("mixture_p1", 0)
    folder.mkdir(parents=True)
    io.write_responses(train, folder / "responses.parquet")
    io.write_responses(hold, folder / "holdout.parquet")
    io.write_table(truth, folder / "truth.csv")
    record = {
        "converged": False,
        "steps": 100,
        "recovery": {"loading_mse": 0.5},
        "heldout_loglik": {"independent": -9.0},
    }
    (iwae,) = [
        f
        for f in conditions.design_fits(
            "mixture_p1", cfg["studies"]["amortized_ifa"]["designs"]["mixture_p1"], ("iwae",)
        )
    ]
    run = tmp_path / conditions.run_folder(cfg, iwae)
    run.mkdir(parents=True)
    (run / "fit.json").write_text(json.dumps(record))
    said = []
    table = doubling.doubled_fits(cfg, 1, progress=said.append)
    assert list(table.columns) == doubling.COLUMNS and list(table.method) == ["iwae"]  # iwavb not fitted by the run
    assert any("iwavb" in s and "left out" in s for s in said)
    row = table.iloc[0]
    assert row.loading_mse == 0.5 and row.steps == 100 and 100 < row.steps_doubled <= 200
    # the latent's scale of the doubled fit (the run's needs its estimates.csv, not written here)
    assert np.isnan(row.latent_variance) and row.latent_variance_doubled > 0 and row.refitted
    assert "| `mixture_p1` | `iwae` | 5 | 1 |" in "\n".join(doubling.section(table, "made"))


def test_a_block_whose_fits_all_met_their_stopping_rule_is_not_refitted(tmp_path, monkeypatch):
    cfg = test_config()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(methods, "fit_block", lambda *a, **k: pytest.fail("a converged block was refitted"))
    record = {
        "converged": True,
        "steps": 300,
        "recovery": {"loading_mse": 0.5},
        "heldout_loglik": {"independent": -9.0},
    }
    spec = cfg["studies"]["amortized_ifa"]["designs"]["mixture_p1"]
    (iwae,) = [f for f in conditions.design_fits("mixture_p1", spec, ("iwae",)) if f.rep == 0]
    run = tmp_path / conditions.run_folder(cfg, iwae)
    run.mkdir(parents=True)
    (run / "fit.json").write_text(json.dumps(record))
    said = []
    (row,) = doubling.doubled_fits(cfg, 1, progress=said.append).itertuples()
    assert not row.refitted and row.seconds == 0.0
    assert (row.steps_doubled, row.loading_mse_doubled, row.converged_doubled) == (300, 0.5, True)
    assert any("not refitted" in s for s in said)


def pairs(gap: float, doubled_gap: float | None = None, reps: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A mixture design's fits of IWAE and IWAVB that did not meet their stopping rule, IWAVB's
    loading MSE ``gap`` above IWAE's, and their doubling check (the gap ``doubled_gap`` doubled)."""
    rng = np.random.default_rng(2)
    fits, doubled = [], []
    for rep in range(reps):
        base = 0.2 + 0.02 * rng.standard_normal()
        noise = 0.002 * rng.standard_normal()
        for method, mse, mse2 in (
            ("iwae", base, base),
            ("iwavb", base + gap + noise, base + (doubled_gap or gap) + noise),
        ):
            common = {"design": "mixture_p1", "method": method, "rep": rep, "converged": False, "steps": 50000}
            fits.append(
                {
                    **common,
                    "n_factors": 1,
                    "importance_samples": 30,
                    "status": "max_steps",
                    "loglik_independent": -20.0 - mse,
                    "loading_mse": mse,
                    "intercept_mse": np.nan,
                    "factor_corr_mse": np.nan,
                }
            )
            doubled.append(
                {
                    **common,
                    "n_importance": 30,
                    "loading_mse": mse,
                    "loading_mse_doubled": mse2,
                    "loglik_independent": -20.0 - mse,
                    "loglik_independent_doubled": -20.0 - mse2,
                }
            )
    return pd.DataFrame(fits), pd.DataFrame(doubled)


def loading_row(fits, doubled=None):
    claims = reproduction.simulation_claims(fits, doubled)
    (row,) = [c for c in claims if c.claim.startswith("IWAVB has the lower loading MSE (mixture")]
    return row


def test_a_claim_on_unconverged_fits_keeps_its_verdict_where_doubling_moves_it_less_than_its_interval():
    fits, doubled = pairs(0.1)
    without = loading_row(fits)
    assert without.verdict == "inconclusive" and "at most inconclusive" in without.why
    kept = loading_row(fits, doubled)
    assert kept.verdict == "contradicted" and "so the verdict stands" in kept.why
    _, moved = pairs(0.1, doubled_gap=0.3)
    capped = loading_row(fits, moved)
    assert capped.verdict == "inconclusive" and "not less than its interval" in capped.why


def test_the_doubled_cap_is_the_design_only(tmp_path):
    study = settings.Settings.from_config(test_config())
    doubled = doubling.with_doubled_cap(study, "mixture_p1")
    assert doubled.design("mixture_p1").training.max_steps == 2 * study.design("mixture_p1").training.max_steps
    assert (
        doubled.design("mixture_p1").seed_training.max_steps == 2 * study.design("mixture_p1").seed_training.max_steps
    )
    assert doubled.design("normal") == study.design("normal")
    assert dataclasses.replace(doubled, designs=study.designs) == study


def with_normal(fits: pd.DataFrame, reps: int = 3) -> pd.DataFrame:
    """``fits`` and a normal design's pairs that met their stopping rule, IWAVB's held-out
    log-likelihood a little off IWAE's (no gain either way)."""
    rng = np.random.default_rng(5)
    normal = fits[fits.rep < reps].assign(design="normal_p5", converged=True, status="converged")
    return pd.concat([fits, normal.assign(loglik_independent=-20.0 + 0.01 * rng.standard_normal(len(normal)))])


def gain_row(fits, doubled=None):
    (row,) = [c for c in reproduction.simulation_claims(fits, doubled) if c.claim.startswith("IWAVB's gain over")]
    return row


def test_the_gain_row_takes_the_doubling_check_of_the_mixture_pairs():
    # IWAVB's held-out log-likelihood 0.1 below IWAE's on the mixture (gain -0.1), about 0 on normal
    fits, doubled = pairs(0.1)
    fits = with_normal(fits)
    assert gain_row(fits).verdict == "inconclusive"  # unconverged mixture fits, no check
    kept = gain_row(fits, doubled)
    assert kept.verdict == "contradicted" and "so the verdict stands" in kept.why
    # one mixture replication not refitted: a check of some of the values keeps no verdict
    some = gain_row(fits, doubled[doubled.rep > 0])
    assert some.verdict == "inconclusive" and "Doubling the steps of 6 of the 7 values" in some.why
    _, moved = pairs(0.1, doubled_gap=0.4)
    capped = gain_row(fits, moved)
    assert capped.verdict == "inconclusive" and "not less than its interval" in capped.why


def test_the_section_says_how_many_data_sets_of_each_design_it_covers():
    both = pd.DataFrame({"design": ["mixture_p1"] * 2 + ["mixture_p3"], "rep": [0, 1, 0]})
    assert doubling.data_sets(both) == "2 data sets (`mixture_p3`: 1)"
    assert doubling.data_sets(both[both.design == "mixture_p1"]) == "2 data sets"
    assert doubling.data_sets(both[both.design == "mixture_p3"]) == "1 data set"
