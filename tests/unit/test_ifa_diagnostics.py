"""amortized_ifa's diagnostics: the latent's scale of a fit, scored on tables whose answer is
known, read from the run's folders, and IWAVB refitted with its implicit part switched off."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies.amortized_ifa import conditions, data, diagnostics, methods, settings, tables
from tests.unit.test_ifa_study import TINY, design, one_design, test_config


def scaled_estimates(c: float, seed: int = 0) -> pd.DataFrame:
    """Estimates of one factor whose loadings are the true ones times ``c`` and whose persons'
    posterior means are the true abilities divided by ``c`` (sd 0): a pure drift of scale."""
    rng = np.random.default_rng(seed)
    lam, z = rng.uniform(0.5, 2.0, 10), rng.normal(0.0, 1.5, 200)
    rows = [
        {"parameter": "loading", "item": j, "factor": 0, "mean": c * v, "sd": np.nan, "true": v}
        for j, v in enumerate(lam)
    ]
    rows += [{"parameter": "loading", "item": 10, "factor": 0, "mean": 0.0, "sd": np.nan, "true": 0.0}]  # a fixed zero
    rows += [
        {"parameter": "ability", "person": i, "factor": 0, "mean": v / c, "sd": 0.0, "true": v} for i, v in enumerate(z)
    ]
    return pd.DataFrame(rows)


def test_a_pure_drift_of_scale_leaves_no_loading_error_on_the_common_scale():
    est = scaled_estimates(c=0.5)
    (row,) = tables.scale_rows(est)
    z = est[est.parameter == "ability"]["true"]
    lam = est[(est.parameter == "loading") & (est["true"] != 0)]["true"].to_numpy()
    assert row["loading_slope"] == pytest.approx(0.5)
    assert row["latent_variance"] == pytest.approx(z.var(ddof=0) / 0.25)
    assert row["true_variance"] == pytest.approx(z.var(ddof=0))
    assert row["loading_mse"] == pytest.approx(np.mean((0.5 * lam - lam) ** 2))  # the fixed zero is left out
    assert row["loading_mse_common_scale"] == pytest.approx(0.0, abs=1e-12)


def test_posterior_sds_add_to_the_fitted_latent_variance():
    est = scaled_estimates(c=1.0)
    est.loc[est.parameter == "ability", "sd"] = 0.5
    (row,) = tables.scale_rows(est)
    assert row["latent_variance"] == pytest.approx(row["true_variance"] + 0.25)


def test_latent_scale_reads_the_run_fits_and_leaves_out_those_not_fitted(tmp_path, monkeypatch):
    cfg = test_config()
    monkeypatch.chdir(tmp_path)
    fits = diagnostics.run_fits(cfg, 1)
    assert fits and all(f.rep == 0 for f in fits)
    assert {f.design for f in fits} == set(diagnostics.simulated_designs(cfg))
    spec = fits[0]
    folder = tmp_path / conditions.run_folder(cfg, spec)
    assert conditions.run_folder(cfg, spec) == f"{spec.block_folder(0)}/rep0"
    folder.mkdir(parents=True)
    scaled_estimates(c=2.0).to_csv(folder / "estimates.csv", index=False)
    (folder / "fit.json").write_text(json.dumps({"converged": True, "steps": 300}))
    said = []
    table = diagnostics.latent_scale(cfg, 1, progress=said.append)
    assert len(said) == len(fits) - 1 and all("left out" in s for s in said)
    assert list(table.columns) == diagnostics.COLUMNS and len(table) == 1
    assert table.loc[0, "method"] == spec.method and table.loc[0, "loading_slope"] == pytest.approx(2.0)
    summary = diagnostics.summary(table)
    assert summary.loc[0, "met stopping rule"] == "1 of 1"
    (line,) = diagnostics.findings(table)
    assert "accounts for 100%" in line


def test_the_mixture_designs_are_those_iwavb_fits_with_a_mixture_latent():
    cfg = test_config()
    mixtures = diagnostics.mixture_designs(cfg)
    assert mixtures == ["mixture_p1"]
    assert all(f.method == "iwavb" and f.design == "mixture_p1" for f in diagnostics.implicit_off_fits(cfg, 1))
    assert diagnostics.diagnostic_inputs(cfg, 1) == ["data/processed/amortized_ifa/mixture_p1/rep0/responses.parquet"]


def test_an_unknown_part_is_refused():
    from bayesirt.studies import reproduction_diagnostics

    with pytest.raises(ValueError, match="implicit_off"):
        reproduction_diagnostics.diagnose("amortized_ifa", test_config(), 1, "unused", {}, parts=("nope",))


def test_iwavb_without_its_implicit_part_is_fitted_as_a_block():
    d = design(analysis="confirmatory", preset="mixture_p1", n_persons=40, training=TINY)
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=10, posterior_draws=5)
    train, hold, truth = data.simulate_design(d, 0, 0.25)
    rep = methods.Replication(train, hold, truth, conditions.Condition(d.name, "iwavb", 1, 3, 0), 7)
    (out,) = methods.fit_block([rep], one_design(d, evaluation), adjust=diagnostics.without_implicit)
    assert out.record["settings"]["method"]["implicit"] is False
    (row,) = diagnostics.fit_rows(rep.cond, out.estimates, out.record, method=diagnostics.OFF)
    assert row["method"] == diagnostics.OFF and np.isfinite(row["latent_variance"])


def scale_table(gap: float, reps: int = 4, design: str = "mixture_p1") -> pd.DataFrame:
    """A ``latent_scale`` table of IWAE and IWAVB on ``reps`` replications, IWAVB's loading MSE on
    the common scale ``gap`` above IWAE's (with a little spread), every fit converged."""
    rng = np.random.default_rng(1)
    rows = []
    for rep in range(reps):
        base = 0.1 + 0.01 * rng.standard_normal()
        for method, mse in (("iwae", base), ("iwavb", base + gap + 0.001 * rng.standard_normal())):
            rows.append(
                {
                    **dict.fromkeys(diagnostics.COLUMNS, 1.0),
                    "design": design,
                    "method": method,
                    "n_factors": 1,
                    "n_importance": 30,
                    "rep": rep,
                    "factor": 0,
                    "loading_mse_common_scale": mse,
                    "converged": True,
                    "steps": 100,
                }
            )
    return pd.DataFrame(rows, columns=diagnostics.COLUMNS)


@pytest.mark.parametrize(("gap", "verdict"), [(0.05, "contradicted"), (-0.05, "supported")])
def test_the_common_scale_row_judges_iwavb_against_iwae_by_replication(gap, verdict):
    (claim,) = diagnostics.claims(scale_table(gap))
    assert claim.verdict == verdict and claim.method == "iwae, iwavb" and "common scale" in claim.claim
    assert claim.section == "" and claim.quote == ""  # this project's reading, not the seed's


@pytest.mark.parametrize(
    ("reps", "moved", "verdict"), [(4, 0.001, "contradicted"), (4, 0.2, "inconclusive"), (3, 0.001, "inconclusive")]
)
def test_the_common_scale_row_keeps_its_verdict_on_unconverged_fits_only_by_the_doubling_check(reps, moved, verdict):
    # no fit met its stopping rule; doubling moves IWAVB's figure by `moved` on `reps` of the 4 replications
    table = scale_table(0.05).assign(converged=False)
    fits = diagnostics.per_fit(table)
    doubled = fits[fits.rep < reps].assign(
        loading_mse_common_scale_doubled=lambda f: f.loading_mse_common_scale + moved * (f.method == "iwavb")
    )
    (claim,) = diagnostics.claims(table, doubled)
    assert claim.verdict == verdict and "Rests on 0 of 8 fits" in claim.why
    assert ("so the verdict stands" in claim.why) == (verdict == "contradicted")
    assert ("3 of the 4 values" in claim.why) == (reps == 3)


def test_no_common_scale_row_without_the_table_or_a_mixture_design():
    assert diagnostics.claims(None) == [] and diagnostics.claims(scale_table(0.05).iloc[:0]) == []
    assert diagnostics.claims(scale_table(0.05, design="normal_p5")) == []


def test_the_page_shows_the_section(tmp_path):
    from bayesirt.studies import reproduction

    folder = tmp_path / "amortized_ifa" / reproduction.DIAGNOSTICS
    folder.mkdir(parents=True)
    scale_table(0.05).to_csv(folder / "latent_scale.csv", index=False)
    facts = {"command": "python tools/reproduction.py diagnose amortized_ifa", "commit": "abcdef0123", "seconds": 60}
    (folder / "diagnostics.json").write_text(json.dumps(facts))
    text = reproduction.diagnostics_section("amortized_ifa", tmp_path / "amortized_ifa")
    assert text.startswith("## Diagnostics: the latent's scale or the loadings?")
    assert "latent_scale: `python tools/reproduction.py diagnose amortized_ifa`, commit `abcdef0`, 1 min" in text
    assert "| `mixture_p1` | `iwavb` | 30 | 4 | 4 of 4 |" in text and text.count("- `iwa") == 2


def test_the_doubling_reads_the_run_figures_from_the_collected_tables(tmp_path):
    from bayesirt.studies.amortized_ifa import doubling

    (tmp_path / "mixture_p1").mkdir()
    (tmp_path / "diagnostics").mkdir()
    fits = pd.DataFrame(
        [
            {"method": m, "n_factors": 1, "importance_samples": 30, "rep": r, "converged": False, "steps": 50000}
            | {"loglik_independent": -13.0 - r, "loglik_own_proposal": -13.1, "loading_mse": 0.3 + r}
            | {"intercept_mse": 0.07, "factor_corr_mse": np.nan}
            for m in ("iwae", "iwavb")
            for r in (0, 1)
        ]
    )
    fits.to_csv(tmp_path / "mixture_p1" / "fits.csv", index=False)
    scale = pd.DataFrame(
        [
            {"design": "mixture_p1", "method": "iwavb", "n_importance": 30, "rep": 1, "factor": f}
            | {"latent_variance": 2.0 + f, "loading_mse_common_scale": 1.0}
            for f in (0, 1)
        ]
    )
    scale.to_csv(tmp_path / "diagnostics" / "latent_scale.csv", index=False)
    got = doubling.collected_figures(tmp_path, "mixture_p1", "iwavb", 30, 1)
    assert got["converged"] is False and got["steps"] == 50000 and got["loading_mse"] == pytest.approx(1.3)
    assert got["latent_variance"] == pytest.approx(2.5) and got["loading_mse_common_scale"] == 1.0
    assert np.isnan(doubling.collected_figures(tmp_path, "mixture_p1", "iwae", 30, 0)["latent_variance"])
    assert doubling.collected_figures(tmp_path, "mixture_p1", "iwavb", 15, 0) is None  # no such fit
    assert doubling.collected_figures(tmp_path, "mixture_p3", "iwavb", 30, 0) is None  # no such design


def test_a_doubling_check_of_some_of_a_claim_s_pairs_keeps_no_verdict():
    from bayesirt.studies.reproduction_claims import Claim, doubling, rests_on

    diff = np.array([0.10, 0.12, 0.08, 0.11])  # half-width t(0.975, 3) * sd / 2 = 0.027
    check = doubling(diff, diff + 0.001)
    assert check.holds and check.covered == 4 and "less than its interval's half-width" in check.sentence
    claim = Claim("c", "s", "o", "supported", "numbers.", "iwavb")

    def fits(reps: int) -> pd.DataFrame:  # a paired claim's fits: both methods on each replication
        return pd.DataFrame({"method": ["iwae", "iwavb"] * reps, "converged": [False, True] * reps})

    assert rests_on(claim, fits(4), doubling=check).verdict == "supported"
    five = rests_on(claim, fits(5), doubling=check)
    assert five.verdict == "inconclusive" and five.numbers_say == "supported"
    assert "Doubling the steps of 4 of the 5 values it rests on" in five.why


def test_the_doubling_section_says_where_the_run_figures_came_from_and_where_the_refits_started():
    from bayesirt.studies.amortized_ifa import doubling

    row = dict.fromkeys(doubling.COLUMNS, 1.0) | {"design": "mixture_p1", "method": "iwavb", "rep": 0}
    row |= {"refitted": True, "run_figures": "collected tables", "resumed_at_step": 0}
    text = "\n".join(doubling.section(pd.DataFrame([row, row | {"rep": 1}]), "made"))
    assert "Designs checked: `mixture_p1`; the run's figures read from its collected tables" in text
    assert "so every refitted block fitted from step 0, with the run's data and seeds." in text
    cut = pd.DataFrame([row, row | {"rep": 1, "resumed_at_step": 13800}])
    assert "(a block cut off resumed from its own checkpoint, at step 13800)" in doubling.provenance(cut)[0]
    kept = pd.DataFrame([row | {"run_figures": "fit folder", "resumed_at_step": 50000}])
    assert "the refitted blocks resumed at step(s) 50000 (the run's kept states)" in doubling.provenance(kept)[0]
    assert doubling.provenance(pd.DataFrame([row]).drop(columns="run_figures")) == []  # an older table


@pytest.mark.parametrize(("off_variance", "said"), [(1.9, "the drift persists"), (1.1, "most of the drift goes")])
def test_the_implicit_part_sentence_says_whether_the_drift_goes_with_it(off_variance, said):
    rows = [
        {"design": "mixture_p1", "method": m, "latent_variance": v, "true_variance": 1.0, "loading_mse_common_scale": c}
        for m, v, c in (("iwae", 1.2, 0.2), ("iwavb", 2.0, 2.0), (diagnostics.OFF, off_variance, 1.0))
    ]
    lines = diagnostics.implicit_part(pd.DataFrame(rows))
    assert len(lines) == 1 and said in lines[0]
    assert "from 2.00 to " in lines[0] and "(`iwae`, a Gaussian q with no discriminator: +0.20)" in lines[0]
    assert diagnostics.implicit_part(pd.DataFrame(rows[:2])) == []  # no refit without the implicit part
