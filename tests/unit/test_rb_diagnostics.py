"""rb_imputation's diagnostics (``studies.rb_imputation.diagnostics``): the doubling check on tables
whose answer is known, sentences written from them, a claim that keeps its verdict only where
doubling the steps does not move it, and (slow) the fits on a workflow's files."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import reproduction
from bayesirt.studies.rb_imputation import diagnostics, diagnostics_section
from bayesirt.studies.rb_imputation import reproduction as page


def fits_table(by_condition: dict, reps: int = 5, dataset: str = "rwa_seed500") -> pd.DataFrame:
    """A diagnostics table: per condition (rmse, rmse doubled, log bias), the masks' figures
    spread by +-0.01 * (rep - 2) (the same spread for every condition, so paired differences
    have none unless a condition's own spread is given as a 4th value)."""
    rows = []
    for name, (rmse, doubled, bias, *own) in by_condition.items():
        objective, copies = diagnostics.parse_condition(name)
        wiggle = own[0] if own else 0.01
        for rep in range(reps):
            rows.append(
                {
                    "dataset": dataset,
                    "rep": rep,
                    "condition": name,
                    "objective": objective,
                    "n_copies": copies,
                    "steps": 1500 + 50 * rep,
                    "converged": False,
                    "discrimination_rmse": rmse + wiggle * (rep - 2),
                    "log_discrimination_bias": bias,
                    "steps_doubled": 3400,
                    "discrimination_rmse_doubled": doubled + wiggle * (rep - 2),
                    "log_discrimination_bias_doubled": bias,
                    "seconds": 2.0,
                }
            )
    return pd.DataFrame(rows, columns=diagnostics.FIT_COLUMNS)


def test_doubling_holds_only_where_the_paired_difference_moves_less_than_its_half_width():
    # zero_fill's masks spread by 0.01 a step of rep, naive's by 0.02: the paired difference
    # has a 95% half-width of t(0.975, 4) * sd(0.01 * (rep - 2)) / sqrt(5) = 0.0196
    fits = fits_table({"zero_fill": (0.05, 0.05, 0.0), "naive_average_M3": (0.40, 0.405, 0.2, 0.02)})
    check = diagnostics.paired_doubling(fits, "naive_average_M3", "zero_fill")
    assert check.holds and "by 0.0050, less than its interval's half-width 0.0196" in check.sentence
    moved = fits_table({"zero_fill": (0.05, 0.05, 0.0), "naive_average_M3": (0.40, 0.43, 0.2, 0.02)})
    check = diagnostics.paired_doubling(moved, "naive_average_M3", "zero_fill")
    assert not check.holds and "by 0.0300, not less than its interval's half-width 0.0196" in check.sentence
    assert diagnostics.paired_doubling(fits, "rao_blackwell_M3", "zero_fill") is None


def test_the_findings_say_what_a_table_whose_answer_is_known_says():
    fits = fits_table(
        {
            "zero_fill": (0.05, 0.05, 0.002),
            "naive_average_M3": (0.40, 0.401, -0.25),
            "rao_blackwell_seed_M3": (0.39, 0.392, -0.24),
            "importance_weighted_M3": (0.08, 0.079, 0.01),
            "importance_weighted_M30": (0.06, 0.06, 0.004),
        }
    )
    bias = pd.DataFrame(
        [
            {"dataset": "rwa_real", "missing": m, "condition": c, "log_discrimination_bias": v}
            for m, z, n in (("mcar15", 0.001, -0.3), ("mnar15", 0.02, -0.35))
            for c, v in (("zero_fill", z), ("naive_average_M3", n))
        ]
    )
    text = "\n".join(diagnostics_section.findings(fits, bias))
    assert "zero-fill's discriminations are off by +0.002 on the log scale" in text
    assert (
        "move them one way: `naive_average_M3` lowers them by 22.1%; `rao_blackwell_seed_M3` lowers them by 21.3%"
        in text
    )
    # importance_weighted_M3 (0.010) is within twice zero-fill's pull (0.004)? no: 0.010 > 0.004, so it is listed
    assert "`importance_weighted_M3` raises them by 1.0%" in text
    assert "`importance_weighted_M30` (this project's" in text
    assert (
        "has discrimination RMSE 0.060 against zero-fill's 0.050 and the seed's `rao_blackwell_seed_M3` 0.390" in text
    )
    assert "the seed's objective's gap is its target" in text
    assert "moves a fit's discrimination RMSE by 0.0010 (median; at most 0.0020)" in text
    assert "every move is smaller than that spread" in text
    assert "zero-fill's log-discrimination bias is +0.001 (mcar15), +0.020 (mnar15)" in text
    assert "0.300 (mcar15), 0.350 (mnar15)" in text


def summary_table(by_condition: dict, dataset="rwa_seed500", missing="mcar15") -> pd.DataFrame:
    rows = []
    for name, (rmse, own) in by_condition.items():
        objective, copies = diagnostics.parse_condition(name)
        for rep in range(5):
            rows.append(
                {
                    "dataset": dataset,
                    "missing": missing,
                    "condition": name,
                    "objective": objective,
                    "n_copies": copies,
                    "rep": rep,
                    "converged": False,
                    "status": "still improving",
                    "steps": 1500,
                    "discrimination_rmse_vs_complete_data": rmse + own * (rep - 2),
                }
            )
    return pd.DataFrame(rows)


def test_a_claim_on_unconverged_fits_keeps_its_verdict_only_where_doubling_holds():
    summary = summary_table({"zero_fill": (0.05, 0.01), "naive_average_M3": (0.40, 0.02)})
    tables = {"summary": summary}
    (claim,) = [c for c in page.claims(tables) if "naive_average_M3" in c.claim]
    assert claim.verdict == "inconclusive" and claim.numbers_say == "contradicted" and claim.fits_met == (0, 10)
    held = {
        **tables,
        f"{reproduction.DIAGNOSTICS}/seed_design_fits": fits_table(
            {"zero_fill": (0.05, 0.05, 0.0), "naive_average_M3": (0.40, 0.405, 0.2, 0.02)}
        ),
    }
    (claim,) = [c for c in page.claims(held) if "naive_average_M3" in c.claim]
    assert claim.verdict == "contradicted" and claim.fits_met is None
    assert "Rests on 0 of 10 fits that met their stopping rule. Doubling every fit's steps" in claim.why
    moved = {
        **tables,
        f"{reproduction.DIAGNOSTICS}/seed_design_fits": fits_table(
            {"zero_fill": (0.05, 0.05, 0.0), "naive_average_M3": (0.40, 0.45, 0.2, 0.02)}
        ),
    }
    (claim,) = [c for c in page.claims(moved) if "naive_average_M3" in c.claim]
    assert claim.verdict == "inconclusive"
    # the doubling check is of the seed's design: a claim on another data set is not helped by it
    other = {"summary": summary.assign(dataset="rwa_real"), **{k: v for k, v in held.items() if k != "summary"}}
    (claim,) = [c for c in page.claims(other) if "naive_average_M3" in c.claim]
    assert claim.verdict == "inconclusive"


def test_the_seed_objective_is_judged_on_jensen_beside_ours_and_zero_fill_is_cited_as_the_baseline():
    summary = summary_table(
        {
            "zero_fill": (0.05, 0.01),
            "naive_average_M3": (0.40, 0.02),
            "rao_blackwell_M3": (0.20, 0.01),
            "rao_blackwell_seed_M3": (0.39, 0.01),
        }
    )
    jensen = [c for c in page.claims({"summary": summary}) if c.claim.startswith("Averaging")]
    assert [set(c.methods) for c in jensen] == [
        {"rao_blackwell_seed", "naive_average"},
        {"rao_blackwell", "naive_average"},
    ]
    assert "as the seed writes it" in jensen[0].claim and "this project's form" in jensen[1].claim
    baseline = next(c for c in page.claims({"summary": summary}) if "than zero-fill" in c.claim)
    assert baseline.quote == "Baseline" and "reports no comparison" in baseline.seed


def test_the_page_shows_the_diagnostics(tmp_path):
    out = tmp_path / "rb_imputation"
    (out / reproduction.DIAGNOSTICS).mkdir(parents=True)
    fits = fits_table({"zero_fill": (0.05, 0.05, 0.0), "rao_blackwell_seed_M3": (0.39, 0.392, -0.24)})
    fits.to_csv(out / reproduction.DIAGNOSTICS / "seed_design_fits.csv", index=False)
    facts = {"command": "python tools/reproduction.py diagnose rb_imputation", "commit": "abcdef0123", "seconds": 600}
    (out / reproduction.DIAGNOSTICS / "diagnostics.json").write_text(json.dumps(facts))
    text = reproduction.diagnostics_section("rb_imputation", out)
    assert text.startswith("## Diagnostics: the seed's method or this implementation?")
    assert "first 5 masks of the seed's design" in text and "commit `abcdef0`, 10 min" in text
    assert "| `rao_blackwell_seed_M3` (the seed's) | 5 | 1600; 3400 | 0.390 ± 0.020 | 0.392 | 0.002 | -0.240 |" in text


@pytest.mark.slow
def test_the_fits_read_the_workflow_s_files_and_double_their_steps(tmp_path, monkeypatch):
    # two masks (15% MCAR) of a simulated 60-person data set written where the workflow writes
    # them, one imputation model each, a reference fit; zero-fill and importance_weighted (M = 2)
    # at 100-200 steps, then doubled
    from bayesirt import io, records
    from bayesirt.data import simulate
    from bayesirt.imputation import stacking
    from bayesirt.studies.rb_imputation import data, methods
    from tests.unit.test_rb_study import validated

    config = validated()
    study = config["studies"]["rb_imputation"]
    study.update(seed_dataset="tiny", replications=2)
    config["training"].update(max_steps=200, min_steps=100, check_every=50, window=50, progress_every=0)
    config["posterior_draws"] = 20
    monkeypatch.setattr(diagnostics, "CONDITIONS", (("zero_fill", None), ("importance_weighted", 2)))
    rm, truth = simulate.simulate_factorized_grm(3, 60, [3, 3], 4, ["A", "B"])
    (tmp_path / "data/processed/tiny").mkdir(parents=True)
    io.write_responses(rm, tmp_path / "data/processed/tiny/responses.parquet")
    ref = methods.reference(data.Data(rm), seed=1, settings=diagnostics_settings(config))
    records.write_fit(ref, (tmp_path / diagnostics.reference_file("tiny")).parent)
    for rep in range(2):
        responses, model = (tmp_path / f for f in diagnostics.mask_files("tiny", rep))
        responses.parent.mkdir(parents=True)
        model.parent.mkdir(parents=True)
        masked, _ = data.mask(rm, "mcar", 0.15, rep)
        io.write_responses(masked, responses)
        with warnings.catch_warnings():  # so few Laplace draws fail the PSIS check (a warning)
            warnings.simplefilter("ignore")
            stacking.save(stacking.fit(masked, stacking.StackingSettings(n_draws=10, newton_steps=5)), model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = diagnostics.seed_design_fits(config, 5, root=tmp_path, progress=lambda line: None)
    assert list(fits.columns) == diagnostics.FIT_COLUMNS and len(fits) == 4
    assert set(fits.condition) == {"zero_fill", "importance_weighted_M2"} and set(fits.rep) == {0, 1}
    for _, f in fits.groupby("condition"):
        assert (f.steps_doubled == 2 * f.steps.max()).all() and (f.steps_doubled >= 2 * f.steps).all()
    assert np.isfinite(fits[["discrimination_rmse", "discrimination_rmse_doubled"]]).all().all()
    assert (fits.discrimination_rmse > 0).all() and np.isfinite(fits.log_discrimination_bias).all()


def diagnostics_settings(config):
    from bayesirt.studies.rb_imputation.settings import Settings

    return Settings.from_config(config)


def test_the_inputs_are_those_of_the_parts_run():
    config = {"studies": {"rb_imputation": {"dataset": "full", "seed_dataset": "seed500", "replications": 5,
                                            "missing": ["mcar15"]}}}  # fmt: skip
    full = diagnostics.inputs(config, 2, ["full_data_fits"])
    assert full[0] == diagnostics.reference_file("full") and len(full) == 1 + 2 * 2
    assert all("/full/" in f for f in full)
    both = diagnostics.inputs(config, 2)
    assert set(full) < set(both) and diagnostics.reference_file("seed500") in both
    assert any(f.endswith("mcar15/summary.csv") for f in both)
