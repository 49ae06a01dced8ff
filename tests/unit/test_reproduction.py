"""Reproduction pages (bayesirt.studies.reproduction, tools/reproduction.py): intervals over
replications, the four verdicts on tables whose answer is known by construction (with the
replications an inconclusive one would need, computed by hand), where each claim comes from
(every seed quote is found in its seed), the index's table against the pages' tallies, and a
collect-then-render round trip. The pages of finished runs are built by the same code from the
committed tables (docs/reproduction/data/), which a test renders."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesirt.evaluation import verdicts
from bayesirt.studies import reproduction, reproduction_diagnostics, reproduction_index
from bayesirt.studies.amortized_ifa import reproduction as ifa_page
from bayesirt.studies.dcm_bbvi import reproduction as dcm_page
from bayesirt.studies.gibbs_2pno import reproduction as gibbs_page
from bayesirt.studies.vibo import reproduction as vibo_page

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "reproduction" / "data"
SEEDS = ROOT.parent / "shared" / "seeds"  # the seed documents sit beside the checkout
RUN = {
    "command": "python tools/reproduction.py run dcm_bbvi --config config/paper.yaml",
    "config": "config/paper.yaml",
    "commit": "0" * 40,
    "machine": "a test",
    "sittings": [{"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"}],
    "started": "2026-01-01T00:00:00Z",
    "finished": "2026-01-01T01:00:00Z",
    "elapsed_seconds": 3600.0,
    "job_seconds": 5000.0,
    "shared_with": [],
    "left_out": ["the larger design's NUTS, as in the config"],
    "note": "",
}


def test_a_claim_takes_only_the_four_verdicts_and_names_its_method_and_source():
    for verdict in reproduction.VERDICTS:
        assert reproduction.Claim("c", "s", "o", verdict, "w", "m").verdict == verdict
    with pytest.raises(ValueError, match="verdict"):
        reproduction.Claim("c", "s", "o", "not supported", "w", "m")
    with pytest.raises(ValueError, match="method"):
        reproduction.Claim("c", "s", "o", "supported", "w", " ")
    with pytest.raises(ValueError, match="section and a quote"):
        reproduction.Claim("c", "s", "o", "supported", "w", "m", section="5.1")


def test_a_row_says_whose_claim_and_whose_method():
    seed_claim = reproduction.Claim("c", "s", "o", "supported", "w", "gibbs", **reproduction.seed_source("2", "a b"))
    assert seed_claim.source == "seed" and reproduction.source_cell(seed_claim) == 'seed, 2: "a b"'
    assert reproduction.method_cell(seed_claim) == "`gibbs` (ours, on the seed's claim)"
    own = reproduction.Claim("c", "s", "o", "supported", "w", "vibo_seed, vibo_average_seed")
    assert own.source == "this project" and own.judges_seed_method
    assert reproduction.method_cell(own) == "`vibo_seed`, `vibo_average_seed` (the seed's)"
    assert reproduction.method_cell(reproduction.Claim("c", "s", "o", "supported", "w", "em")) == "`em` (ours)"
    mixed = reproduction.Claim("c", "s", "o", "supported", "w", "vibo_seed, mml")
    assert reproduction.method_cell(mixed) == "`vibo_seed` (the seed's), `mml` (ours)"
    section = reproduction.claims_section([seed_claim, own])
    assert "| claim | source | method | seed | ours | verdict | why |" in section


# differences whose mean is 0.5 and whose sample sd is exactly 1, from four pairs
HALF_ONE_SD = 0.5 + np.array([-1.5, -0.5, 0.5, 1.5]) / np.sqrt(5 / 3)


def test_the_replications_a_decisive_answer_needs_match_a_hand_computation():
    # mean 0.5, sd 1, threshold 0: n must satisfy t(0.975, n - 1) / sqrt(n) < 0.5. From tables of
    # Student's t: n = 17 gives 2.120 / 4.123 = 0.514 (not yet), n = 18 gives 2.110 / 4.243 = 0.497
    assert verdicts.replications_needed(0.5, 1.0, 0.0) == 18
    assert verdicts.replications_needed(-0.5, 1.0, 0.0) == 18  # either side of the threshold
    assert verdicts.replications_needed(0.0, 1.0, 0.0) is None  # on the threshold: none would decide
    assert verdicts.replications_needed(0.5, 0.0, 0.0) is None  # no spread measured
    assert verdicts.replications_needed(3.0, 1.0, 0.0) == 3  # t(0.975, 2) / sqrt(3) = 2.48 < 3, 12.7 / 1.41 > 3


def test_four_verdicts_on_differences_whose_answer_is_known():
    def row(d, margin=0.0):
        v = verdicts.paired_verdict(d, subject="x", direction="higher", margin=margin)
        return reproduction.from_verdict(v), reproduction.page_sentence(v), v

    assert row([1.0, 1.1, 0.9])[0] == "supported"
    assert row([-1.0, -1.1, -0.9])[0] == "contradicted"  # the interval excludes the claim
    word, sentence, v = row(HALF_ONE_SD)
    assert word == "inconclusive" and v.sd == pytest.approx(1.0) and v.replications_needed == 18
    assert "about 18 replications would decide" in sentence
    assert row([1.0])[0] == "not comparable"  # one pair: no interval
    assert row([0.3, 0.3, 0.3])[0] == "not comparable"  # no spread: one figure shared by every pair
    # a margin moves the threshold: the distance to decide is mean - (-margin)
    assert row(HALF_ONE_SD - 1.0, margin=0.25)[2].replications_needed == verdicts.replications_needed(-0.5, 1, -0.25)


def test_a_tolerance_claim_is_contradicted_only_when_its_interval_is_outside():
    rng = np.random.default_rng(4)
    near = 0.9 + 0.005 * rng.standard_normal(20)
    assert reproduction.tolerance_verdict(near, 0.9, 0.03)[0] == "supported"
    assert reproduction.tolerance_verdict(near - 0.1, 0.9, 0.03)[0] == "contradicted"
    word, text = reproduction.tolerance_verdict([0.88, 0.9, 0.93], 0.9, 0.03)
    assert word == "inconclusive" and "would decide" in text
    assert reproduction.tolerance_verdict([0.9, 0.9], 0.9, 0.03)[0] == "not comparable"  # zero width
    assert reproduction.tolerance_verdict([0.9], 0.9, 0.03)[0] == "not comparable"


def test_a_verdict_on_fits_that_did_not_all_stop_is_at_most_inconclusive():
    claim = reproduction.Claim("c", "s", "o", "contradicted", "w.", "m")
    capped = reproduction.rests_on(claim, pd.DataFrame({"converged": [True, False, True]}))
    assert capped.verdict == "inconclusive" and "Rests on 2 of 3 fits that met their stopping rule" in capped.why
    assert capped.fits_met == (2, 3) and capped.numbers_say == "contradicted"
    assert reproduction.rests_on(claim, pd.DataFrame({"converged": [True, True]})) == claim
    assert reproduction.rests_on(claim, pd.DataFrame({"x": [1]})) == claim  # the table does not say
    kept = reproduction.Claim("c", "s", "o", "not comparable", "w.", "m")
    assert reproduction.rests_on(kept, pd.DataFrame({"converged": [False]})).verdict == "not comparable"


def test_the_mean_interval_is_students_t():
    x = np.array([0.1, 0.4, 0.35, 0.2, 0.3])
    mean, low, high, n = reproduction.mean_interval(x)
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert n == 5 and mean == pytest.approx(0.27)
    assert (low, high) == pytest.approx((0.27 - half, 0.27 + half))
    assert np.isnan(reproduction.mean_interval([0.5])[1])
    assert reproduction.describe([0.5]) == "0.500 (1 replication)"
    assert reproduction.describe([]) == "not run"


def dcm_tables(reps: int, bbvi_shift: float, rng) -> dict:
    """Tables of a dcm_bbvi run whose oracle accuracies centre on the seed's 0.967, and a BBVI
    that is ``bbvi_shift`` below the oracle on every data set."""
    oracle = pd.DataFrame(
        {
            "design": "seed",
            "missing": "mcar0",
            "rep": range(reps),
            "pattern_accuracy": 0.967 + 0.012 * rng.standard_normal(reps),
            "attribute_accuracy": 0.98,
        }
    )
    fits = []
    for method, shift, rmse in (("em", 0.002, 0.20), ("bbvi", bbvi_shift, 0.21), ("bbvi_cv", 0.003, 0.20)):
        fits.append(
            pd.DataFrame(
                {
                    "design": "seed",
                    "missing": "mcar0",
                    "method": method,
                    "rep": range(reps),
                    "converged": True,
                    "status": "converged",
                    "steps": 100,
                    "pattern_accuracy": oracle.pattern_accuracy - shift - 0.001 * rng.random(reps),
                    "attribute_accuracy": 0.98,
                    "beta_rmse": rmse + 0.01 * rng.random(reps),
                    "beta_coverage_95": 0.95,
                }
            )
        )
    return {"fits": pd.concat(fits, ignore_index=True), "oracle": oracle}


def verdict_of(claims, start: str) -> str:
    return next(c.verdict for c in claims if c.claim.startswith(start))


def test_dcm_a_bbvi_near_the_oracle_supports_the_seed_and_one_far_below_contradicts_it():
    rng = np.random.default_rng(0)
    good = dcm_page.claims(dcm_tables(20, 0.002, rng))
    assert verdict_of(good, "BBVI classifies") == "supported"
    assert verdict_of(good, "0.967 is what") == "supported"
    assert verdict_of(good, "bbvi classifies as well") == "supported"
    assert verdict_of(good, "bbvi's coefficient") == "supported"
    poor = dcm_page.claims(dcm_tables(20, 0.06, rng))
    assert verdict_of(poor, "BBVI classifies") == "contradicted"
    assert verdict_of(poor, "bbvi classifies as well") == "contradicted"
    # the same fits, two of which did not meet their stopping rule: nothing decided on them
    tables = dcm_tables(20, 0.06, rng)
    fits = tables["fits"]
    fits.loc[(fits.method == "bbvi") & (fits.rep < 2), "converged"] = False
    row = next(c for c in dcm_page.claims(tables) if c.claim.startswith("BBVI classifies"))
    assert row.verdict == "inconclusive" and "Rests on 18 of 20 fits that met their stopping rule" in row.why
    assert row.source == "seed" and row.method == "bbvi"
    assert verdict_of(poor, "bbvi_cv classifies as well") == "supported"


def test_dcm_unconverged_fits_keep_a_verdict_only_where_doubling_their_steps_does_not_move_it():
    rng = np.random.default_rng(5)
    tables = dcm_tables(20, 0.06, rng)
    fits = tables["fits"]
    fits.loc[fits.method == "bbvi", "converged"] = False
    bbvi = fits[fits.method == "bbvi"]

    def doubled(moved: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "design": "seed",
                "missing": "mcar0",
                "method": "bbvi",
                "rep": bbvi.rep,
                "steps": 100,
                "converged": False,
                "pattern_accuracy": bbvi.pattern_accuracy,
                "beta_rmse": bbvi.beta_rmse,
                "steps_doubled": 200,
                "pattern_accuracy_doubled": bbvi.pattern_accuracy + moved,
                "beta_rmse_doubled": bbvi.beta_rmse,
                "seconds": 1.0,
            }
        )

    def row(tables, start):
        return next(c for c in dcm_page.claims(tables) if c.claim.startswith(start))

    assert row(tables, "bbvi classifies as well").verdict == "inconclusive"
    held = {**tables, f"{reproduction.DIAGNOSTICS}/doubled_fits": doubled(0.00001)}
    for start in ("bbvi classifies as well", "BBVI classifies"):
        claim = row(held, start)
        assert claim.verdict == "contradicted" and "Rests on 0 of 20 fits that met their stopping rule." in claim.why
        assert (
            "Doubling every fit's steps (the diagnostics below) moves" in claim.why
            and "so the verdict stands" in claim.why
        )
    # coefficients unmoved by doubling: the recovery claim stands as well
    assert row(held, "bbvi's coefficient").verdict == "supported"
    moved = {**tables, f"{reproduction.DIAGNOSTICS}/doubled_fits": doubled(0.05)}
    assert row(moved, "bbvi classifies as well").verdict == "inconclusive"
    assert "not less than its interval's half-width" in row(moved, "bbvi classifies as well").why


def test_dcm_the_seeds_claim_is_judged_on_the_seeds_run_first_and_not_on_runs_that_became_non_finite():
    rng = np.random.default_rng(3)
    tables = dcm_tables(20, 0.002, rng)
    # the seed's run has no stopping rule: it meets its rule by taking every planned step
    seed_run = tables["fits"][tables["fits"].method == "bbvi"].assign(method="bbvi_seed", converged=False, steps=16000)
    tables["fits"] = pd.concat([tables["fits"], seed_run], ignore_index=True)
    rows = [c for c in dcm_page.claims(tables) if c.claim.startswith("BBVI classifies")]
    assert [(c.method, c.verdict) for c in rows] == [("bbvi_seed", "supported"), ("bbvi", "supported")]
    assert "(the seed's run's)" in rows[0].why and "this project's method, not the seed's run" in rows[1].why
    fits = tables["fits"]
    fits.loc[(fits.method == "bbvi_seed") & (fits.rep < 3), "steps"] = 800
    row = next(c for c in dcm_page.claims(tables) if c.method == "bbvi_seed")
    assert row.verdict == "inconclusive" and "Rests on 17 of 20 fits that met their planned steps" in row.why
    fits = tables["fits"]
    fits.loc[fits.method == "bbvi_seed", ["status", "converged", "pattern_accuracy"]] = ["diverged", False, 0.24]
    row = next(c for c in dcm_page.claims(tables) if c.method == "bbvi_seed")
    assert row.verdict == "not comparable" and row.why.startswith("20 of 20 runs became non-finite")
    # and so is this project's claim on the same runs
    row = next(c for c in dcm_page.claims(tables) if c.claim.startswith("bbvi_seed classifies as well"))
    assert row.verdict == "not comparable" and row.fits_met is None


def test_dcm_a_run_without_the_seed_condition_is_not_comparable():
    tables = dcm_tables(3, 0.0, np.random.default_rng(1))
    tables = {k: v.assign(missing="mcar20") for k, v in tables.items()}
    claims = dcm_page.claims(tables)
    assert verdict_of(claims, "BBVI classifies") == "not comparable"
    assert all("mcar20" in c.claim for c in claims[1:])


def pairs(z, sd_ratio) -> pd.DataFrame:
    n = len(z)
    return pd.DataFrame(
        {
            "missing": "mcar0",
            "rep": np.arange(n) % 10,
            "parameter": "difficulty",
            "item": 0,
            "z": z,
            "sd_ratio": sd_ratio,
        }
    )


def test_gibbs_agreement_holds_for_standard_normal_z_and_fails_for_a_shift():
    rng = np.random.default_rng(2)
    same = gibbs_page.agreement_claim(
        pairs(rng.standard_normal(2000), 1 + 0.02 * rng.standard_normal(2000)), "c", "s", "gibbs"
    )
    assert same.verdict == "supported"
    shifted = gibbs_page.agreement_claim(pairs(rng.standard_normal(2000) + 1.5, np.ones(2000)), "c", "s", "gibbs")
    assert shifted.verdict == "contradicted"
    wider = gibbs_page.agreement_claim(
        pairs(rng.standard_normal(2000), 1.2 + 0.01 * rng.standard_normal(2000)), "c", "s", "gibbs"
    )
    assert wider.verdict == "contradicted"
    assert gibbs_page.agreement_claim(pairs([], []), "c", "s", "gibbs").verdict == "not comparable"


def test_gibbs_the_seeds_claim_is_judged_on_the_seeds_plain_sampler_then_on_ours():
    # the seed's sampler (gibbs_seed) far from NUTS, ours in agreement: two rows, the seed's first
    rng = np.random.default_rng(5)
    ours = pairs(rng.standard_normal(400), 1 + 0.01 * rng.standard_normal(400)).assign(method="gibbs")
    seeds = pairs(rng.standard_normal(400) + 2.0, np.ones(400)).assign(method="gibbs_seed")
    fits = pd.DataFrame(0.9, index=range(30), columns=gibbs_page.FIT_COLUMNS)
    fits = fits.assign(design="d", missing="mcar0", rep=np.tile(np.arange(10), 3), converged=True)
    fits = fits.assign(method=np.repeat(["gibbs", "gibbs_seed", "nuts"], 10), max_r_hat=1.0, min_ess_bulk=1000.0)
    empty = pd.DataFrame(columns=["missing", "rep", "parameter", "item", "z", "sd_ratio"])
    posterior = pd.DataFrame(columns=["parameter", "category", "mean", "sd", "q5", "q95", "r_hat", "true"])
    tables = {
        "fits": fits,
        "gibbs_vs_nuts": pd.concat([seeds, ours], ignore_index=True),
        "augment_vs_omit": empty,
        "posterior": posterior,
    }
    seed_row, our_row = gibbs_page.claims(tables)[:2]
    assert seed_row.methods == ["gibbs_seed", "nuts"] and seed_row.verdict == "contradicted"
    assert our_row.methods == ["gibbs", "nuts"] and our_row.verdict == "supported"
    assert seed_row.source == our_row.source == "seed"
    mixing = [c.methods for c in gibbs_page.claims(tables) if c.claim.startswith("The Gibbs chains mix")]
    assert mixing == [["gibbs_seed"], ["gibbs"]]
    # a run collected before the seed's sampler ran: its pairs have no method column, ours alone
    tables["gibbs_vs_nuts"] = ours.drop(columns="method")
    (only,) = [c for c in gibbs_page.claims(tables) if "agree with NUTS" in c.claim]
    assert only.methods == ["gibbs", "nuts"]


def test_gibbs_the_mixture_on_one_data_set_is_inconclusive_whatever_it_covers():
    post = pd.DataFrame(
        {
            "parameter": ["mu", "mu", "pi"],
            "category": [0, 1, -1],
            "mean": [163.9, 176.7, 0.54],
            "sd": [0.8, 0.7, 0.05],
            "q5": [162.5, 175.6, 0.45],
            "q95": [165.2, 178.0, 0.63],
            "r_hat": 1.0,
            "true": [163.0, 177.0, 0.571],
        }
    )
    assert gibbs_page.mixture_claim(post).verdict == "inconclusive"
    missed = gibbs_page.mixture_claim(post.assign(true=[160.0, 177.0, 0.571]))
    assert missed.verdict == "inconclusive" and "2 of 3 parameters of one simulated data set" in missed.why


def test_a_comparison_on_fewer_than_two_pairs_is_not_comparable():
    def verdict(d):
        return reproduction.from_verdict(verdicts.paired_verdict(d, subject="x", direction="lower"))

    assert verdict([]) == verdict([-1.0]) == "not comparable"
    assert verdict([-1.0, -1.1, -0.9]) == "supported" and verdict([1.0, -1.0, 0.5]) == "inconclusive"
    assert verdict([1.0, 1.1, 0.9]) == "contradicted"


def test_vibo_methods_table_pools_a_design_s_conditions_per_method():
    rng = np.random.default_rng(5)
    rows = [
        {
            "design": d,
            "missing": m,
            "method": meth,
            "rep": r,
            "converged": True,
            "ability_rmse": base + rng.normal(0, 0.01),
        }
        for d in ("n1k", "rwa_real_grm")
        for m in ("mcar0", "mcar20")
        for meth, base in (("vibo_one_prior", 0.30), ("mml", 0.28))
        for r in range(3)
    ]
    fits = pd.DataFrame(rows)
    fits.loc[fits.design == "rwa_real_grm", "ability_rmse"] = np.nan  # no truth
    fits["heldout_loglik"] = -10.0
    timings = fits[["design", "missing", "method", "rep"]].assign(wall_seconds=np.where(fits.method == "mml", 4.0, 2.0))
    table = vibo_page.methods_table({"fits": fits, "timings": timings})
    assert list(table.columns) == [
        "design",
        "method",
        "fits",
        "converged",
        "ability RMSE",
        "held-out log-likelihood",
        "seconds (median)",
    ]
    row = table[(table.design == "n1k") & (table.method == "mml")].iloc[0]
    mean, low, high, n = reproduction.mean_interval(fits[(fits.design == "n1k") & (fits.method == "mml")].ability_rmse)
    assert row["fits"] == n == 6 and row["ability RMSE"] == f"{mean:.3f} [{low:.3f}, {high:.3f}]"
    assert row["seconds (median)"] == "4" and table.iloc[-1]["ability RMSE"] == ""  # real data: no truth
    text = vibo_page.sections({"fits": fits, "timings": timings})[0]
    assert text.startswith("## The methods side by side") and "| n1k | vibo_one_prior | 6 | 6 |" in text


def test_ifa_claims_are_judged_on_the_seeds_methods_first_then_on_ours():
    # normal_p5 with both pairs: the seed's IWAVB worse than its IWAE on loadings, ours better
    rng = np.random.default_rng(12)
    fits = pd.DataFrame(
        [
            {
                "design": "normal_p5",
                "method": m,
                "n_factors": 5,
                "importance_samples": 15,
                "rep": rep,
                "loading_mse": base + rng.normal(0, 0.001),
                "intercept_mse": 0.02 + rng.normal(0, 1e-4),
                "factor_corr_mse": 0.01 + rng.normal(0, 1e-4),
                "loglik_independent": -30.0 + rng.normal(0, 0.001),
                "converged": True,
            }
            for m, base in (("iwae_seed", 0.03), ("iwavb_seed", 0.05), ("iwae", 0.05), ("iwavb", 0.03))
            for rep in range(4)
        ]
    )
    timings = fits[["design", "method", "n_factors", "importance_samples", "rep"]].assign(wall_seconds=10.0)
    empty = pd.DataFrame(columns=["method", "importance_samples", "n_factors", "loglik_independent"])
    rows = ifa_page.claims({"fits": fits, "timings": timings, "scree": empty, "stability": pd.DataFrame()})
    loading = [c for c in rows if c.claim == "IWAVB has the lower loading MSE (normal latents, normal_p5)"]
    assert [c.methods for c in loading] == [["iwae_seed", "iwavb_seed"], ["iwae", "iwavb"]]
    assert [c.verdict for c in loading] == ["contradicted", "supported"]
    times = [c.methods for c in rows if c.claim.startswith("IWAE and IWAVB take similar time")]
    assert times == [["iwae_seed", "iwavb_seed"], ["iwae", "iwavb"]]


def test_ifa_paired_claims_and_an_ipip_run_of_iwae_alone(tmp_path):
    """Normal latents where IWAVB's loading MSE is lower in every replication and its held-out
    log-likelihood higher; an IPIP scree of IWAE alone whose gains fall most after P = 5."""
    rng = np.random.default_rng(11)
    fits = pd.DataFrame(
        [
            {
                "design": "normal_p5",
                "method": m,
                "n_factors": 5,
                "importance_samples": r,
                "rep": rep,
                "loading_mse": base + rng.normal(0, 0.001),
                "intercept_mse": 0.02 + rng.normal(0, 1e-4),
                "factor_corr_mse": 0.01 + rng.normal(0, 1e-4),
                "loglik_independent": -30.0 - base + rng.normal(0, 0.001),
                "converged": True,
            }
            for m, base in (("iwae", 0.05), ("iwavb", 0.03))
            for r in (15, 35)
            for rep in range(4)
        ]
    )
    mixture = fits[fits.importance_samples == 15].assign(design="mixture_p1", importance_samples=30)
    mixture["loglik_independent"] += np.where(mixture.method == "iwavb", 0.5, 0.0) + rng.normal(0, 0.01, len(mixture))
    rows = {c.claim: c for c in ifa_page.simulation_claims(pd.concat([fits, mixture]))}
    assert rows["IWAVB's gain over IWAE is larger with multimodal latents"].verdict == "supported"
    rows = {c.claim: c for c in ifa_page.simulation_claims(fits)}
    assert "IWAVB's gain over IWAE is larger with multimodal latents" not in rows
    assert rows["IWAVB has the lower loading MSE (normal latents, normal_p5)"].verdict == "supported"
    independent = "method-independent, this project's estimate at the fitted items"
    assert rows[
        f"IWAVB reaches a higher held-out log-likelihood ({independent}; normal latents, normal_p5)"
    ].verdict == ("supported")
    # the seed's metric (eq. 27: each method's own proposal) beside ours, where the run has it
    own = "by each method's own proposal, the seed's eq. 27"
    assert not any(own in claim for claim in rows)
    with_own = fits.assign(loglik_own_proposal=fits.loglik_independent - np.where(fits.method == "iwavb", 0.2, 0.0))
    rows = {c.claim: c for c in ifa_page.simulation_claims(with_own)}
    assert rows[f"IWAVB reaches a higher held-out log-likelihood ({own}; normal latents, normal_p5)"].verdict == (
        "contradicted"
    )
    assert rows["The intercept MSE averages below 0.03 (normal latents)"].verdict == "supported"
    gains = [0, 8.0, 6.0, 4.0, 3.0, 0.3, 0.2]  # the fifth factor still adds, the sixth hardly
    scree = pd.DataFrame(
        {
            "method": "iwae",
            "importance_samples": 25,
            "n_factors": range(1, 8),
            "loglik_independent": -70 + np.cumsum(gains),
        }
    )
    stability = pd.DataFrame(
        {"method": ["iwae"], "loading_rmse": [0.02], "intercept_rmse": [0.05], "covariance_rmse": [0.07]}
    )
    rows = ifa_page.ipip_claims({"scree": scree, "stability": stability})
    verdicts = [(r.claim.split(" (")[0], r.verdict) for r in rows]
    higher = "IWAVB's held-out log-likelihood is higher than IWAE's at every number of factors"
    assert verdicts[0] == (higher, "not comparable")
    assert verdicts[1] == ("The scree plot has its elbow at five factors", "inconclusive")  # one curve
    assert [v for _, v in verdicts[2:]] == ["not comparable", "not comparable"]  # synthetic data; IWAVB not run
    assert rows[2].ours == "not run" and "IWAE's gain" in rows[1].ours and "(1 refit)" in rows[3].ours
    tables = {"fits": fits, "scree": scree}
    names = [name for name, _ in ifa_page.figures(tables, tmp_path)]
    assert names == ["mse.png", "loglik.png", "scree.png"] and all((tmp_path / n).stat().st_size > 0 for n in names)


def write_dcm_results(folder: Path) -> None:
    tables = dcm_tables(5, 0.002, np.random.default_rng(3))
    folder.mkdir(parents=True)
    tables["fits"].to_csv(folder / "fits.csv", index=False)
    tables["oracle"].to_csv(folder / "oracle.csv", index=False)
    tables["fits"].assign(wall_seconds=1.0)[["design", "missing", "method", "rep", "wall_seconds"]].to_csv(
        folder / "timings.csv", index=False
    )
    est = pd.DataFrame(
        {
            "parameter": "beta",
            "item": [0, 0, 1, 1],
            "person": -1,
            "scale": "all",
            "category": [0, 1, 0, 1],
            "mean": [-1.1, 3.0, -1.0, 2.9],
            "sd": 0.1,
            "true": [-1.1, 3.0, -1.1, 3.0],
            "design": "seed",
            "missing": "mcar0",
            "method": "em",
            "rep": 0,
        }
    )
    est.to_csv(folder / "estimates.csv", index=False)


def test_collect_keeps_the_named_columns_and_render_writes_the_page_and_its_figures(tmp_path):
    results = tmp_path / "results" / "dcm_bbvi"
    write_dcm_results(results)
    data = reproduction.collect("dcm_bbvi", results, tmp_path / "data" / "dcm_bbvi", RUN)
    kept = pd.read_csv(data / "estimates.csv")
    assert "person" not in kept.columns and list(kept.columns) == dcm_page.ESTIMATE_COLUMNS
    assert json.loads((data / "run.json").read_text())["commit"] == RUN["commit"]
    page = reproduction.render("dcm_bbvi", data, tmp_path / "pages")
    text = page.read_text()
    assert text.startswith("# dcm_bbvi (seed 002)")
    assert "| seed | mcar0 | em, bbvi, bbvi_cv | 5 | 15 | 15 of 15 |" in text
    assert f"`{RUN['commit']}`" in text and "| wall time | 1.00 h" in text and "| job time | 1.39 h" in text
    assert "- the larger design's NUTS, as in the config" in text
    for name in ("accuracy.png", "beta.png"):
        assert f"](dcm_bbvi/{name})" in text
        assert (tmp_path / "pages" / "dcm_bbvi" / name).read_bytes()[:4] == b"\x89PNG"
    rows = [line for line in text.splitlines() if line.startswith("| ") and "**" in line]
    assert len(rows) == len(dcm_page.claims(reproduction.read_tables("dcm_bbvi", data)[0]))


def test_a_new_collect_replaces_the_tables_but_keeps_the_lists_written_by_hand(tmp_path):
    results, out = tmp_path / "results" / "dcm_bbvi", tmp_path / "data" / "dcm_bbvi"
    write_dcm_results(results)
    reproduction.collect("dcm_bbvi", results, out, RUN)
    (out / "stale.csv").write_text("a\n1\n")
    (out / "stale").mkdir()
    for name in reproduction.KEPT:
        (out / name).write_text(f"# {name}\n")
    reproduction.collect("dcm_bbvi", results, out, RUN)
    assert not (out / "stale.csv").exists() and not (out / "stale").exists()
    assert (out / "estimates.csv").is_file() and (out / "run.json").is_file()
    for name in reproduction.KEPT:
        assert (out / name).read_text() == f"# {name}\n"


def test_collect_names_a_table_the_run_has_not_written(tmp_path):
    results = tmp_path / "dcm_bbvi"
    write_dcm_results(results)
    (results / "oracle.csv").unlink()
    with pytest.raises(FileNotFoundError, match="oracle.csv; has it finished"):
        reproduction.collect("dcm_bbvi", results, tmp_path / "out", RUN)


def test_an_unknown_study_is_named():
    with pytest.raises(ValueError, match="no study 'dcm'"):
        reproduction.study_module("dcm")
    with pytest.raises(ValueError, match="no study 'dcm'"):
        reproduction_diagnostics.diagnostic_parts("dcm")


@pytest.mark.parametrize("study", reproduction.STUDIES)
def test_every_committed_diagnostic_table_is_a_part_the_tool_can_make_again(study):
    # the page reads docs/reproduction/data/<study>/diagnostics/<part>.csv; each must be a name of
    # the study's diagnostics.PARTS, or `tools/reproduction.py diagnose` could not rebuild it
    parts = reproduction_diagnostics.diagnostic_parts(study)
    assert parts and all(callable(make) for make in parts.values())
    committed = {p.stem for p in (ROOT / "docs" / "reproduction" / "data" / study / "diagnostics").glob("*.csv")}
    assert committed <= set(parts), f"{study}: {sorted(committed - set(parts))} made by no part"


def test_the_committed_pages_rebuild_from_their_committed_tables(tmp_path):
    data = ROOT / "docs" / "reproduction" / "data"
    studies = sorted(p.name for p in data.iterdir() if (p / "run.json").is_file())
    assert studies, "docs/reproduction/data holds no collected run"
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "reproduction.py"), "page", "--pages", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    for study in studies:
        assert f"{study}.md" in out.stdout
        assert (tmp_path / f"{study}.md").read_text() == (ROOT / "docs" / "reproduction" / f"{study}.md").read_text()
    # the index is written with the pages, from the same tables
    assert (tmp_path / "index.md").read_text() == (ROOT / "docs" / "reproduction" / "index.md").read_text()


def test_prose_names_a_verdict_with_the_table_s_word():
    # a report's sentence and its claims table say the same word for the same verdict
    for d, word in (
        ([-1.0, -1.1, -0.9], "supported"),
        ([1.0, 1.1, 0.9], "contradicted"),
        ([1.0, -1.0, 0.5], "inconclusive"),
        ([-1.0], "not comparable"),
    ):
        v = verdicts.paired_verdict(d, subject="x", direction="lower")
        sentence = reproduction.page_sentence(v)
        assert reproduction.from_verdict(v) == word and f"**{word}**" in sentence, sentence
    v = verdicts.two_group_verdict([1.0, 2.0, 3.0], [1.5, 2.5], subject="x", direction="higher")
    assert f"**{reproduction.from_verdict(v)}**" in reproduction.page_sentence(v)


def test_no_claim_is_decided_on_a_zero_width_interval_or_one_fit():
    fit = {"method": "gibbs", "design": "tiny", "missing": "mcar20", "discrimination_rmse": 0.1, "ability_corr": 0.9}
    one = pd.DataFrame([{**fit, "discrimination_coverage_90": 0.85, "difficulty_coverage_90": 0.95}])
    assert gibbs_page.coverage_claims(one)[0].verdict == "not comparable"
    two = pd.concat([one, one.assign(discrimination_coverage_90=0.9, difficulty_coverage_90=0.9)])
    assert gibbs_page.coverage_claims(two)[0].verdict == "not comparable"  # both fits' means are 0.90
    rng = np.random.default_rng(6)
    many = pd.DataFrame(
        [
            {**fit, "discrimination_coverage_90": c, "difficulty_coverage_90": c}
            for c in 0.9 + 0.01 * rng.standard_normal(20)
        ]
    )
    assert gibbs_page.coverage_claims(many)[0].verdict == "supported"
    stalled = many.assign(converged=[True] * 19 + [False])
    row = gibbs_page.coverage_claims(stalled)[0]
    assert row.verdict == "inconclusive" and "Rests on 19 of 20 fits" in row.why


def test_timing_rows_show_a_shared_block_as_one_measurement():
    timings = pd.DataFrame(
        {
            "design": "mixture_p1",
            "method": np.repeat(["iwae", "iwavb"], 3),
            "n_factors": 1,
            "importance_samples": 30,
            "rep": [0, 1, 2] * 2,
            "wall_seconds": np.repeat([16.5, 1321.2], 3),
        }
    )
    (row,) = ifa_page.time_claims(timings)
    assert row.verdict == "not comparable" and "[" not in row.ours  # no interval of zero width
    assert "1321.2 s per fit (one block, shared by 3 fits)" in row.ours and "no spread" in row.why


def seed_text(study: str) -> str:
    import yaml

    name = yaml.safe_load((DATA / study / "seed_settings.yaml").read_text())["seed"]
    return " ".join((SEEDS / name).read_text().split())


@pytest.mark.parametrize("study", reproduction.STUDIES)
def test_every_seed_quote_is_in_its_seed(study):
    if not SEEDS.is_dir():
        pytest.skip("the seed documents are not beside this checkout")
    claims = reproduction.study_module(study).claims(reproduction.read_tables(study, DATA / study)[0])
    quoted = [c for c in claims if c.source == "seed"]
    assert quoted, f"{study}: no claim of the seed's"
    text = seed_text(study)
    for c in quoted:
        assert " ".join(c.quote.split()) in text, (c.claim, c.quote)


TALLY = re.compile(r"^\*\*(\d+) claims \((\d+) of the seed's, (\d+) of this project's\): (.*)\.\*\*$", re.M)


def page_tally(study: str) -> tuple[int, int, dict]:
    m = TALLY.search((ROOT / "docs" / "reproduction" / f"{study}.md").read_text())
    counts = {v: int(n) for n, v in (part.split(" ", 1) for part in m.group(4).split(", "))}
    return int(m.group(2)), int(m.group(3)), counts


def test_the_index_table_agrees_with_the_pages_tallies():
    text = (ROOT / "docs" / "reproduction" / "index.md").read_text()
    assert text.startswith("# Reproduction at the seeds' scale")
    rows = {
        line.split(" | ")[0].removeprefix("| [").split("]")[0]: line.strip("| ").split(" | ")
        for line in text.splitlines()
        if line.startswith("| [")
    }
    studies = sorted(p.name for p in DATA.iterdir() if (p / "run.json").is_file())
    assert sorted(rows) == studies
    for study in studies:
        seed_n, project_n, counts = page_tally(study)
        seed = [int(x) for x in rows[study][3].split(" / ")]
        project = [int(x) for x in rows[study][4].split(" / ")]
        assert sum(seed) == seed_n and sum(project) == project_n, study
        assert [a + b for a, b in zip(seed, project)] == [counts[v] for v in reproduction.VERDICTS], study
    assert text.index("| study |") < text.index("## How a page is made")  # the table first


def test_the_index_counts_seed_and_project_claims_apart(tmp_path):
    claims = [
        reproduction.Claim("a", "s", "o", "contradicted", "w", "bbvi", **reproduction.seed_source("x", "y")),
        reproduction.Claim("b", "s", "o", "supported", "w", "em"),
        reproduction.rests_on(
            reproduction.Claim("c", "s", "o", "contradicted", "w.", "em"), pd.DataFrame({"converged": [True, False]})
        ),
    ]
    assert reproduction_index.counts(claims, "seed") == "0 / 1 / 0 / 0"
    assert reproduction_index.counts(claims, "this project") == "1 / 0 / 1 / 0"
    line = reproduction_index.summary_line("dcm_bbvi", claims)
    assert "contradicted: a" in line and "holds: b" in line
    assert (
        "(1 of them on fits that did not all meet their stopping rule; on their numbers alone 1 contradicted)" in line
    )


def test_ifa_scree_is_judged_per_method_the_seed_first():
    """Two curves (the seed's IWAE as written and ours): a row each, never their mean."""
    gains = {"iwae": [0, 8.0, 6.0, 4.0, 3.0, 0.3, 0.2], "iwae_seed": [0, 8.0, 6.0, 0.5, 0.4, 0.3, 0.2]}
    scree = pd.concat(
        pd.DataFrame(
            {"method": m, "importance_samples": 25, "n_factors": range(1, 8), "loglik_independent": -70 + np.cumsum(g)}
        )
        for m, g in gains.items()
    )
    rows = [r for r in ifa_page.ipip_claims({"scree": scree, "stability": pd.DataFrame()}) if "elbow" in r.claim]
    assert [r.method for r in rows] == ["iwae_seed", "iwae"]
    assert "after P = 3" in rows[0].why and "after P = 5" in rows[1].why
    assert rows[0].ours.startswith("IWAE_SEED's gain") and rows[1].ours.startswith("IWAE's gain")


def test_a_rerun_of_some_designs_replaces_their_rows_and_keeps_the_others_with_their_runs(tmp_path):
    out = tmp_path / "diagnostics"
    first = {"command": "all", "commit": "0123456789", "seconds": 60.0}
    table = pd.DataFrame({"design": ["a", "b", "c"], "x": [1, 2, 3]})
    reproduction_diagnostics.write_diagnostics(out, {"t": table.copy(), "u": table.copy()}, first)
    redo_b = {"command": "b only", "commit": "abcdef0123", "seconds": 120.0, "designs": ["b"]}
    reproduction_diagnostics.write_diagnostics(
        out, {"t": pd.DataFrame({"design": ["b"], "x": [20]})}, redo_b, True, ["b"]
    )
    t = pd.read_csv(out / "t.csv")
    assert t.to_dict("list") == {"design": ["a", "c", "b"], "x": [1, 3, 20]}
    assert pd.read_csv(out / "u.csv").x.tolist() == [1, 2, 3]  # another part: untouched
    facts = json.loads((out / "diagnostics.json").read_text())
    made = reproduction_diagnostics.made_by(reproduction_diagnostics.part_facts(facts, "t"))
    assert made == "`all`, commit `0123456`, 1 min; `b only`, commit `abcdef0`, 2 min"
    assert (
        reproduction_diagnostics.made_by(reproduction_diagnostics.part_facts(facts, "u"))
        == "`all`, commit `0123456`, 1 min"
    )
    # b again: the earlier run of b alone made no row that remains, so it is gone from the facts
    reproduction_diagnostics.write_diagnostics(
        out, {"t": pd.DataFrame({"design": ["b"], "x": [21]})}, redo_b, True, ["b"]
    )
    facts = json.loads((out / "diagnostics.json").read_text())
    assert len(reproduction_diagnostics.part_facts(facts, "t")["runs"]) == 2
    assert pd.read_csv(out / "t.csv").x.tolist() == [1, 3, 21]


def test_a_rerun_of_some_methods_of_a_design_keeps_that_designs_other_methods(tmp_path):
    out = tmp_path / "diagnostics"
    first = {"command": "all", "commit": "0123456789", "seconds": 60.0}
    table = pd.DataFrame({"design": ["a", "a", "b"], "method": ["m", "n", "m"], "x": [1, 2, 3]})
    reproduction_diagnostics.write_diagnostics(out, {"t": table}, first)
    redo = {"command": "a, n only", "commit": "abcdef0123", "seconds": 120.0, "designs": ["a"], "methods": ["n"]}
    again = pd.DataFrame({"design": ["a"], "method": ["n"], "x": [20]})
    reproduction_diagnostics.write_diagnostics(out, {"t": again}, redo, True, ["a"], ["n"])
    assert pd.read_csv(out / "t.csv").to_dict("list") == {
        "design": ["a", "b", "a"],
        "method": ["m", "m", "n"],
        "x": [1, 3, 20],
    }
    facts = reproduction_diagnostics.part_facts(json.loads((out / "diagnostics.json").read_text()), "t")
    assert [r["command"] for r in facts["runs"]] == ["all", "a, n only"]
    # the same methods again: the earlier run of them alone made no row that remains
    reproduction_diagnostics.write_diagnostics(out, {"t": again.assign(x=21)}, redo, True, ["a"], ["n"])
    facts = reproduction_diagnostics.part_facts(json.loads((out / "diagnostics.json").read_text()), "t")
    assert [r["command"] for r in facts["runs"]] == ["all", "a, n only"]
    assert pd.read_csv(out / "t.csv").x.tolist() == [1, 3, 21]


def test_a_markdown_table_escapes_pipes_in_its_header_as_in_its_cells():
    lines = reproduction.markdown_table(pd.DataFrame({"|z| > 3": ["a|b"], "n": [1]}))
    assert lines == ["| \\|z\\| > 3 | n |", "|---|---|", "| a\\|b | 1 |"]
