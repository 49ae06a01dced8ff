"""vibo's diagnostic of the seed's "a single sample is sufficient" (``studies.vibo.gradient_samples``):
the page's rows on tables whose answer is known, the section and the seed number beside it, and
(slow) the refits of the test config's design at each sample size."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import reproduction
from bayesirt.studies.vibo import gradient_samples as gs
from bayesirt.studies.vibo.seed_numbers import gradient_samples_figure


def samples_table(gain: float, spread: float = 0.002, converged=True, missing=("mcar0",)) -> pd.DataFrame:
    """Five data sets per missingness; at 25 samples the held-out log-likelihood is ``gain`` higher
    than at 1 (give or take ``spread``, fixed offsets), at 5 half of it."""
    offsets = spread * np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    rows = []
    for m in missing:
        for rep in range(5):
            for samples, share in ((1, 0.0), (5, 0.5), (25, 1.0)):
                rows.append(
                    {
                        "design": "n1k",
                        "missing": m,
                        "n_samples": samples,
                        "rep": rep,
                        "converged": converged if samples == 25 else True,
                        "steps": 1000 + 10 * rep,
                        "heldout_loglik": -54.5 + share * (gain + offsets[rep]),
                        "ability_rmse": 0.23,
                        "discrimination_rmse": 0.10,
                        "coverage_90": 0.88,
                        "seconds": 20.0,
                    }
                )
    return pd.DataFrame(rows, columns=gs.COLUMNS)


@pytest.mark.parametrize(
    ("gain", "verdict"),
    [(0.001, "supported"), (0.05, "contradicted"), (0.0095, "inconclusive")],
)
def test_the_claim_is_judged_by_one_sample_against_the_most_within_the_margin(gain, verdict):
    # margin 0.01 nats per new person; differences (1 sample - 25) of -gain with sd 0.0032 over 5
    # data sets: a t interval of about +-0.004 around -gain
    (row,) = gs.claims(samples_table(gain))
    assert row.verdict == verdict and row.method == "vibo_seed" and row.source == "seed"
    assert row.quote == "with a single sample is sufficient" and "this project's" in row.seed
    assert "5 paired data sets" in row.ours


def test_a_row_on_fits_that_missed_their_stopping_rule_is_at_most_inconclusive():
    (row,) = gs.claims(samples_table(0.001, converged=False))
    assert row.verdict == "inconclusive" and row.numbers_say == "supported" and row.fits_met == (0, 5)


def test_no_rows_without_the_diagnostic_or_with_one_sample_size():
    assert gs.claims(None) == [] and gs.claims(samples_table(0.0).query("n_samples == 1")) == []


def test_the_page_shows_the_section_and_the_seed_number(tmp_path):
    out = tmp_path / "vibo"
    folder = out / reproduction.DIAGNOSTICS
    folder.mkdir(parents=True)
    samples_table(0.001, missing=("mcar0", "mcar20")).to_csv(folder / f"{gs.TABLE}.csv", index=False)
    facts = {"command": "python tools/reproduction.py diagnose vibo", "commit": "abcdef0123", "seconds": 600}
    (folder / "diagnostics.json").write_text(json.dumps(facts))
    text = reproduction.diagnostics_section("vibo", out)
    assert text.startswith("## Diagnostics: one sample per gradient")
    assert "`python tools/reproduction.py diagnose vibo`, commit `abcdef0`, 10 min" in text
    assert "| design `n1k`, mcar20 | 25 | 5 | 5 of 5 | 1020 | -54.499 | 0.2300 | 0.1000 | 0.880 | 20 |" in text
    assert text.count(": **supported**. The held-out") == 2
    tables = {f"{reproduction.DIAGNOSTICS}/{gs.TABLE}": pd.read_csv(folder / f"{gs.TABLE}.csv")}
    ours = gradient_samples_figure(tables)
    assert ours.value.startswith("held-out log-likelihood per new person, 1 sample minus 25: mcar0 -0.0010 [")
    assert "; mcar20 -0.0010 [" in ours.value and ours.value.endswith("(5 data sets)")
    assert gradient_samples_figure({}).value is None


@pytest.mark.slow
def test_the_seed_product_is_refitted_at_each_sample_size():
    # config/test.yaml's tiny design (200 persons, 20 items) at 20% MCAR, one data set
    from tests.unit.test_rb_study import validated

    config = validated()
    config["studies"]["vibo"]["designs"]["tiny"]["missing"] = ["mcar20"]
    fits = gs.sample_fits(config, 1, progress=lambda line: None, design="tiny")
    assert list(fits.columns) == gs.COLUMNS and list(fits.n_samples) == list(gs.SAMPLES)
    assert fits.heldout_loglik.lt(0).all() and fits.coverage_90.between(0, 1).all()
