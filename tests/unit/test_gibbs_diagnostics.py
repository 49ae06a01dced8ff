"""gibbs_2pno's diagnostics (``studies.gibbs_2pno.diagnostics``): the doubling check on tables whose
answer is known, the page's section, and (slow) a doubled block of the test config's tiny design."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import reproduction
from bayesirt.studies.gibbs_2pno import diagnostics
from bayesirt.studies.gibbs_2pno import reproduction as page


def doubled_table(method, coverage, shift, converged, z_share=np.nan) -> pd.DataFrame:
    n = len(coverage)
    return pd.DataFrame(
        {
            "design": "n1kj30",
            "missing": "mcar20",
            "method": method,
            "rep": range(n),
            "sweeps": 12_000,
            "converged": converged,
            "max_r_hat": 1.02,
            "coverage_90": coverage,
            "z_share": z_share,
            "sweeps_doubled": 24_000,
            "converged_doubled": True,
            "max_r_hat_doubled": 1.005,
            "coverage_90_doubled": np.asarray(coverage) + shift,
            "z_share_doubled": z_share,
            "seconds": 1.0,
        },
        columns=diagnostics.COLUMNS,
    )


def fits_table(coverage, converged) -> pd.DataFrame:
    n = len(coverage)
    fits = pd.DataFrame(np.nan, index=range(n), columns=page.FIT_COLUMNS)
    return fits.assign(
        design="n1kj30",
        missing="mcar20",
        method="gibbs",
        rep=range(n),
        converged=converged,
        discrimination_coverage_90=coverage,
        difficulty_coverage_90=coverage,
    )


def test_an_unconverged_coverage_row_keeps_its_verdict_only_where_doubling_does_not_move_it():
    # ten fits, one unconverged, mean coverage 0.90 within 0.01 (supported); doubling moves it by
    # 0.0005 (kept) or 0.05 (not kept)
    coverage = 0.9 + 0.005 * np.sin(np.arange(10))
    converged = [True] * 9 + [False]
    for shift, kept in ((0.0005, True), (0.05, False)):
        doubled = doubled_table("gibbs", coverage, shift, converged)
        (row,) = page.coverage_claims(fits_table(coverage, converged), doubled)
        assert row.verdict == ("supported" if kept else "inconclusive"), row
        assert "Doubling every fit's steps" in row.why and ("the verdict stands" in row.why) == kept
    (row,) = page.coverage_claims(fits_table(coverage, converged))
    assert row.verdict == "inconclusive" and "Doubling" not in row.why


def test_the_agreement_check_reads_the_share_of_large_z_of_the_sampler_judged():
    doubled = pd.concat(
        [
            doubled_table("gibbs_seed", [0.9] * 3, 0.0, False, z_share=[0.10, 0.12, 0.14]),
            doubled_table("gibbs", [0.9] * 3, 0.0, True, z_share=[0.0, 0.01, 0.0]),
        ]
    )
    check = page.doubling_check(doubled, "gibbs_seed", "z_share", "the share of |z| > 3")
    assert check.holds and "moves the share of |z| > 3 by 0.0000" in check.sentence
    assert page.doubling_check(doubled, "gibbs_omit", "z_share", "x") is None
    assert page.doubling_check(None, "gibbs", "z_share", "x") is None


def test_the_page_shows_the_doubling_check(tmp_path):
    out = tmp_path / "gibbs_2pno"
    (out / reproduction.DIAGNOSTICS).mkdir(parents=True)
    table = doubled_table("gibbs_seed", [0.85, 0.87], 0.02, [False, True], z_share=[0.05, 0.03])
    table.to_csv(out / reproduction.DIAGNOSTICS / "doubled_fits.csv", index=False)
    (out / reproduction.DIAGNOSTICS / "diagnostics.json").write_text(json.dumps({"command": "x", "seconds": 120}))
    text = reproduction.diagnostics_section("gibbs_2pno", out)
    assert text.startswith("## Diagnostics: twice the sweeps")
    assert "on the first 2 data sets of design `n1kj30` (the run's data" in text  # the design refitted
    row = "| design `n1kj30`, mcar20 | `gibbs_seed` | 2 | 12,000 -> 24,000 | 1 -> 2 of 2 | 1.0200 -> 1.0050 |"
    assert row + " 0.860 -> 0.880 | 4.00% -> 4.00% |" in text


@pytest.mark.slow
def test_a_doubled_block_runs_twice_the_sweeps():
    # config/test.yaml's tiny design: the seed's plain sampler and ours, two data sets
    from tests.unit.test_rb_study import validated

    config = validated()
    config["studies"]["gibbs_2pno"]["methods"] = ["gibbs", "gibbs_seed"]
    fits = diagnostics.doubled_fits(config, 2, progress=lambda line: None)
    assert list(fits.columns) == diagnostics.COLUMNS and len(fits) == 4
    assert (fits.sweeps_doubled == 2 * fits.sweeps).all() and fits.z_share.isna().all()  # no NUTS in it
    assert fits[["coverage_90", "coverage_90_doubled"]].stack().between(0, 1).all()
