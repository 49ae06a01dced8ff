"""vibo's diagnostics (``studies.vibo.diagnostics``): the exact posterior at given 2PL items against
a brute-force grid, sentences written from a table whose answer is known, the page's section, and
(slow) one fit of the test config's design scored both ways."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import reproduction
from bayesirt.studies.vibo import diagnostics


def test_the_exact_posterior_is_that_of_the_2pl_at_the_given_items():
    # 6 persons, 8 items, a missing cell or two: EAP and posterior sd against a 4001-point grid
    # on [-8, 8] with the N(0, 1) prior, P(Y = 1) = sigmoid(a theta - d); within 1e-4
    rng = np.random.default_rng(0)
    a, d = rng.uniform(0.5, 2.0, 8), rng.normal(size=8)
    y = (rng.random((6, 8)) < 0.5).astype(int)
    y[0, 3] = y[4, 0] = -1
    est = pd.DataFrame(
        [{"parameter": "discrimination", "item": j, "person": -1, "mean": a[j]} for j in range(8)]
        + [{"parameter": "difficulty", "item": j, "person": -1, "mean": d[j]} for j in range(8)]
    )
    eap, psd = diagnostics.exact_scores(y, est)
    grid = np.linspace(-8, 8, 4001)
    p = 1 / (1 + np.exp(-(a[None, :] * grid[:, None] - d[None, :])))  # (grid, items)
    for i in range(6):
        seen = y[i] >= 0
        log_post = -0.5 * grid**2 + np.sum(np.where(y[i][seen] == 1, np.log(p[:, seen]), np.log1p(-p[:, seen])), 1)
        w = np.exp(log_post - log_post.max())
        w /= w.sum()
        mean = np.sum(w * grid)
        np.testing.assert_allclose([eap[i], psd[i]], [mean, np.sqrt(np.sum(w * (grid - mean) ** 2))], atol=1e-4)


def fits_table(rows) -> pd.DataFrame:
    out = []
    for missing, method, scored, cov, exact, ratio in rows:
        for rep in range(3):
            out.append(
                {
                    "design": "n1k",
                    "missing": missing,
                    "method": method,
                    "scored_cells": scored,
                    "rep": rep,
                    "converged": True,
                    "ability_rmse": 0.3,
                    "coverage_90": cov,
                    "exact_ability_rmse": 0.28,
                    "exact_coverage_90": exact,
                    "mean_sd_ratio": ratio,
                    "seconds": 10.0,
                }
            )
    return pd.DataFrame(out, columns=diagnostics.COLUMNS)


def test_the_findings_say_what_a_table_whose_answer_is_known_says():
    fits = fits_table(
        [
            ("mcar0", "vibo_seed", True, 0.66, 0.90, 0.62),
            ("mcar0", "vibo_prior_per_missing", True, 0.80, 0.80, 0.95),
            ("mcar0", "vibo_seed", False, 0.67, 0.90, 0.62),
        ]
    )
    text = "\n".join(diagnostics.findings(fits))
    assert "`vibo_seed`: the encoder's 90% intervals cover 0.660 of the true abilities, the exact posterior's" in text
    assert "the items are right and the gap is the encoder's: its intervals are narrower" in text
    assert "(sd ratio 0.62)" in text
    assert "`vibo_prior_per_missing`: the encoder's 90% intervals cover 0.800" in text
    assert "the exact posterior at the fitted items misses 90% too" in text
    assert "with no cells set apart for scoring: encoder coverage 0.670 against 0.660 with them" in text
    assert "not what moves it" in text


def test_the_page_shows_the_diagnostics(tmp_path):
    out = tmp_path / "vibo"
    (out / reproduction.DIAGNOSTICS).mkdir(parents=True)
    fits_table([("mcar0", "vibo_seed", True, 0.66, 0.90, 0.62)]).to_csv(
        out / reproduction.DIAGNOSTICS / "encoder_fits.csv", index=False
    )
    facts = {"command": "python tools/reproduction.py diagnose vibo", "commit": "abcdef0123", "seconds": 300}
    (out / reproduction.DIAGNOSTICS / "diagnostics.json").write_text(json.dumps(facts))
    text = reproduction.diagnostics_section("vibo", out)
    assert text.startswith("## Diagnostics: the encoder or the items?")
    assert "| design `n1k`, mcar0 | `vibo_seed` | 3 | 0.660 | 0.900 | 0.300; 0.280 | 0.62 |" in text


@pytest.mark.slow
def test_one_fit_is_scored_by_its_encoder_and_exactly():
    # config/test.yaml's tiny design (200 persons, 20 items, 20% MCAR): the seed's VIBO, with the
    # cells set apart for scoring and without; both scorings give coverages in [0, 1]
    from tests.unit.test_rb_study import validated

    config = validated()
    with_cells = diagnostics.one_fit(config, "vibo_seed", "mcar20", 0, design="tiny")
    without = diagnostics.one_fit(config, "vibo_seed", "mcar20", 0, 0.0, design="tiny")
    assert set(with_cells) == set(diagnostics.COLUMNS) and with_cells["scored_cells"] and not without["scored_cells"]
    for row in (with_cells, without):
        assert 0 <= row["coverage_90"] <= 1 and 0 <= row["exact_coverage_90"] <= 1
        assert 0 < row["ability_rmse"] < 2 and 0 < row["exact_ability_rmse"] < 2 and row["mean_sd_ratio"] > 0
