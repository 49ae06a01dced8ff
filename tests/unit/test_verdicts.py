"""Claim verdicts from paired replications: hand-computed intervals, the three outcomes, and the
edge cases (one pair, all ties, missing values)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesirt.evaluation import verdicts


def test_interval_and_sentence_match_a_hand_computation():
    # d = (-0.01, -0.03, 0.006, -0.02): mean -0.0135; squared deviations sum to 7.07e-4, so
    # sd = sqrt(7.07e-4 / 3) = 0.015351, se = 0.0076757; t(0.975, 3) = 3.182446
    v = verdicts.paired_verdict([-0.01, -0.03, 0.006, -0.02], subject="IWAVB's loading MSE", direction="lower")
    half = 3.182446 * np.sqrt(7.07e-4 / 3) / 2
    assert v.mean_difference == pytest.approx(-0.0135)
    assert (v.low, v.high) == pytest.approx((-0.0135 - half, -0.0135 + half), abs=1e-6)
    assert v.outcome == "inconclusive" and v.n == 4
    assert v.text == (
        "IWAVB's loading MSE is lower in 3 of 4 paired replications; mean difference −0.0135, "
        "95% interval [−0.0379, 0.0109]: **inconclusive at 4 replications**."
    )


def test_three_outcomes():
    # d = (-1, -2, -3, -2, -2): mean -2, sd sqrt(2/4), se 0.31623, t(0.975, 4) = 2.776445 -> [-2.878, -1.122]
    d = np.array([-1.0, -2.0, -3.0, -2.0, -2.0])
    lower = verdicts.paired_verdict(d, subject="x", direction="lower")
    assert lower.outcome == "supported"
    assert (lower.low, lower.high) == pytest.approx((-2.87798, -1.12202), abs=1e-4)
    assert verdicts.paired_verdict(d, subject="x", direction="higher").outcome == "contradicted"
    assert verdicts.paired_verdict(-d, subject="x", direction="lower").outcome == "contradicted"
    # the same spread over three pairs: t(0.975, 2) = 4.303 makes the interval [-4.48, 0.48]
    assert verdicts.paired_verdict([-1.0, -2.0, -3.0], subject="x", direction="lower").outcome == "inconclusive"


def test_margin_turns_lower_into_lower_or_comparable():
    d = 0.01 * np.array([1.0, 2.0, 3.0, 2.0, 2.0])  # worse by 0.011 to 0.029 (95%)
    assert verdicts.paired_verdict(d, subject="x", direction="lower").outcome == "contradicted"
    within = verdicts.paired_verdict(d, subject="x", direction="lower", margin=0.05)
    assert within.outcome == "supported" and "within 0.05 counts as comparable" in within.text
    assert verdicts.paired_verdict(d, subject="x", direction="lower", margin=0.02).outcome == "inconclusive"
    assert verdicts.paired_verdict(-d, subject="x", direction="higher", margin=0.05).outcome == "supported"


def test_one_pair_is_inconclusive_without_an_interval():
    v = verdicts.paired_verdict([-5.0], subject="IWAVB's time", direction="lower")
    assert v.outcome == "inconclusive" and v.n == 1 and np.isnan(v.low)
    assert "lower in 1 of 1" in v.text and "no interval" in v.text and "inconclusive at 1 replication**" in v.text


def test_all_ties():
    ties = [0.0, 0.0, 0.0]
    strict = verdicts.paired_verdict(ties, subject="x", direction="lower")
    # identical results in every pair: not lower, so a strict claim is contradicted ...
    assert strict.outcome == "contradicted" and (strict.low, strict.high) == (0.0, 0.0)
    assert "lower in 0 of 3 paired replications (3 tied)" in strict.text
    assert verdicts.paired_verdict(ties, subject="x", direction="higher").outcome == "contradicted"
    # ... while "lower or comparable" holds
    assert verdicts.paired_verdict(ties, subject="x", direction="lower", margin=0.01).outcome == "supported"


def test_missing_values_are_left_out_and_nothing_left_is_inconclusive():
    v = verdicts.paired_verdict([np.nan, -1.0, -2.0, -3.0, -2.0, -2.0], subject="x", direction="lower")
    assert v.n == 5 and v.outcome == "supported"
    empty = verdicts.paired_verdict([np.nan], subject="x", direction="lower")
    assert empty.outcome == "inconclusive" and empty.n == 0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="direction"):
        verdicts.paired_verdict([1.0, 2.0], subject="x", direction="smaller")
    with pytest.raises(ValueError, match="margin"):
        verdicts.paired_verdict([1.0, 2.0], subject="x", direction="lower", margin=-1)


def test_two_groups_welch_interval():
    a, b = [1.0, 2.0, 3.0], [0.0, 0.0, 1.0]
    # means 2 and 1/3, variances 1 and 1/3: se^2 = 1/3 + 1/9 = 4/9, Welch df = (4/9)^2 / ((1/3)^2/2 + (1/9)^2/2) = 3.2
    half = stats.t.ppf(0.975, 3.2) * 2 / 3
    v = verdicts.two_group_verdict(a, b, subject="gain", direction="higher", labels=("mixture", "normal"))
    assert v.mean_difference == pytest.approx(5 / 3)
    assert (v.low, v.high) == pytest.approx((5 / 3 - half, 5 / 3 + half), abs=1e-6)
    assert v.outcome == "inconclusive" and "with mixture (3)" in v.text
    assert verdicts.two_group_verdict([1.0], b, subject="gain", direction="higher").outcome == "inconclusive"
    assert (
        verdicts.two_group_verdict([5.0, 5.1, 4.9, 5.0], [0.0, 0.1, -0.1, 0.0], subject="g", direction="higher").outcome
        == "supported"
    )


def test_paired_differences_average_within_units():
    frame = pd.DataFrame(
        {
            "design": ["a"] * 6 + ["b"] * 2,
            "rep": [0, 0, 0, 0, 1, 1, 0, 0],
            "R": [5, 5, 25, 25, 5, 5, 5, 5],
            "method": ["iwae", "iwavb"] * 4,
            "mse": [1.0, 0.5, 3.0, 2.5, 2.0, 2.2, 1.0, np.nan],
        }
    )
    d = verdicts.paired_differences(frame, "mse", claimed="iwavb", baseline="iwae", units=["design", "rep"])
    # design a, rep 0: R = 5 and R = 25 share data, so they form one pair: (0.5 + 2.5)/2 - (1 + 3)/2
    assert d.to_dict() == {("a", 0): pytest.approx(-0.5), ("a", 1): pytest.approx(0.2)}
    assert verdicts.paired_differences(frame, "mse", claimed="iwavb", baseline="nuts", units=["design"]).empty


def test_mse_outliers_name_the_extreme_true_value():
    from bayesirt.studies.amortized_ifa import tables

    rows = [
        {
            "method": "iwae",
            "n_factors": 1,
            "importance_samples": 5,
            "parameter": "loading",
            "item": j,
            "person": -1,
            "factor": 0,
            "factor2": -1,
            "category": -1,
            "mse": 0.01 * (1 + j % 3),
            "bias": 0.0,
            "n_reps": 2,
            "true": 1.0 + 0.1 * j,
        }
        for j in range(10)
    ]
    rows[7].update(mse=8.0, true=7.5)
    out = tables.mse_outliers(pd.DataFrame(rows))
    assert out["item"].tolist() == [7] and out.loc[0, "rank_of_true"] == 1 and out.loc[0, "n_true"] == 10
    note = tables.mse_note(pd.DataFrame(rows))
    assert "loading of item 7 (true value 7.50, the largest of 10; MSE up to 8)" in note
    assert tables.mse_note(pd.DataFrame(rows[:7])).startswith("No MSE exceeds 10 times")


def test_rb_imputation_jensen_claim_is_paired_by_replication():
    from bayesirt.studies.rb_imputation import tables

    rows = []
    for rep, (rb, naive) in enumerate([(0.10, 0.20), (0.12, 0.25), (0.11, 0.19), (0.09, 0.22), (0.10, 0.21)]):
        rows += [
            {"condition": "rao_blackwell_M3", "rep": rep, "discrimination_rmse_vs_complete_data": rb},
            {"condition": "naive_average_M3", "rep": rep, "discrimination_rmse_vs_complete_data": naive},
        ]
    v = tables.jensen_verdict(pd.DataFrame(rows), "rao_blackwell_M3", "naive_average_M3")
    assert v.outcome == "supported" and v.n == 5 and v.mean_difference == pytest.approx(-0.11)
    assert v.text.startswith(
        "the discrimination RMSE of rao_blackwell_M3 (against naive_average_M3) is lower in 5 of 5"
    )
    one = tables.jensen_verdict(pd.DataFrame(rows[:2]), "rao_blackwell_M3", "naive_average_M3")
    assert one.outcome == "inconclusive" and one.n == 1


def test_vibo_claims_are_paired_by_condition_and_replication():
    from bayesirt.studies.vibo import tables

    rows, times = [], []
    for rep in range(4):
        for missing, extra in (("mcar0", 0.0), ("mcar20", 0.1)):
            for method, rmse, seconds in (
                ("vibo_one_prior", 0.30 + extra + 0.001 * rep, 1.0),
                ("mml", 0.30 + extra, 2.0),
                ("nuts", 0.30 + extra - 0.001 * rep, 100.0 + rep),
            ):
                rows.append({"design": "a", "missing": missing, "method": method, "rep": rep, "ability_rmse": rmse})
                times.append({"design": "a", "missing": missing, "method": method, "rep": rep, "wall_seconds": seconds})
    out = {c["claim"]: c["verdict"] for c in tables.claim_verdicts(pd.DataFrame(rows), pd.DataFrame(times))}
    # NUTS takes 100-103 times VIBO's time in all 8 pairs
    assert out["VIBO at least 50 times faster than NUTS"].outcome == "supported"
    # against NUTS (the reference where it ran) VIBO is worse by 0 to 2% (rep 3 at mcar0: 0.303/0.297)
    accurate = out["VIBO's ability RMSE within 5% of NUTS's"]
    assert accurate.outcome == "supported" and accurate.n == 8
    # VIBO and MML grow alike from mcar0 to mcar20: difference 0 in every pair, within the 0.01 margin
    assert out["VIBO no less robust to missing data than MML-EAP (mcar0 to mcar20)"].outcome == "supported"


def test_vibo_mnar_and_variant_claims():
    from bayesirt.studies.vibo import tables

    rows, times = [], []
    for rep in range(4):
        for missing, extra in (("mcar20", 0.0), ("mnar20", 0.05)):
            # VIBO's RMSE grows 0.05 + 0.03 from MCAR to MNAR, MML's 0.05: 0.03 beyond the 0.01 margin
            for method, rmse, cov in (
                ("vibo_one_prior", 0.30 + extra * 1.6 + 0.001 * rep, 0.89 + 0.002 * rep),
                ("vibo_prior_per_missing", 0.35 + extra, 0.70 + 0.01 * rep),
                ("mml", 0.29 + extra, 0.90),
            ):
                rows.append(
                    {
                        "design": "a",
                        "missing": missing,
                        "method": method,
                        "rep": rep,
                        "ability_rmse": rmse,
                        "coverage_90": cov,
                    }
                )
                times.append({"design": "a", "missing": missing, "method": method, "rep": rep, "wall_seconds": 1.0})
    out = {c["claim"]: c["verdict"] for c in tables.claim_verdicts(pd.DataFrame(rows), pd.DataFrame(times))}
    # one MCAR rate only: no MCAR robustness claim; the MNAR stress claim pairs mcar20 with mnar20
    assert not any(c.startswith("VIBO no less robust to missing data (") for c in out)
    mnar = out["VIBO no less robust to missing data under MNAR than MML-EAP (mcar20 to mnar20)"]
    assert mnar.outcome == "contradicted" and mnar.n == 4 and mnar.mean_difference == pytest.approx(0.03)
    # |coverage - 0.9| of one prior (0.004 on average) against 0.185 of a prior per missing, in 8 pairs
    cal = out["One prior expert gives better calibrated ability intervals than a prior expert per missing response"]
    assert cal.outcome == "supported" and cal.n == 8
    # MCAR and MNAR side by side (the report's table), from summary rows of replication 0
    summary = pd.DataFrame(
        [
            {
                "design": "a",
                "missing": r["missing"],
                "method": r["method"],
                "ability_rmse_mean": r["ability_rmse"],
                "coverage_90_mean": r["coverage_90"],
                "hidden_log_score_mean": -1.0,
            }
            for r in rows
            if r["rep"] == 0
        ]
    )
    only_mcar = summary[summary.missing == "mcar20"].assign(design="b")  # a design without MNAR is left out
    summary = pd.concat([summary, only_mcar], ignore_index=True)
    table = tables.mechanism_table(summary)
    mml = table[table.method == "mml"].iloc[0]
    assert mml["rate"] == 20 and mml["ability_rmse_change"] == pytest.approx(0.05)
    assert mml["ability_rmse_mcar"] == pytest.approx(0.29) and len(table) == 3


def test_differences_equal_but_for_rounding_measure_no_spread():
    # 0.1 + 0.2 is 0.30000000000000004: the pairs agree to rounding, so there is no interval to
    # judge by (scipy's would be rounding noise), as with exact ties
    v = verdicts.paired_verdict([0.1 + 0.2, 0.3, 0.3], subject="x", direction="higher")
    assert v.low == v.high == v.mean_difference
    assert verdicts.mean_interval([0.1 + 0.2, 0.3, 0.3, np.nan])[1:] == (v.mean_difference, v.mean_difference, 3)
