"""Study dcm_bbvi: scoring by profile index (bit order), designs, the oracle, bad input."""

import numpy as np
import pytest

from bayesirt.models import lcdm
from bayesirt.studies import dcm_bbvi


def test_accuracy_scores_by_profile_index():
    true = np.array([0, 1, 2, 3, 1, 2])
    prob = np.eye(4)[[0, 1, 1, 3, 2, 2]]  # person 2 ("01") called "10"; person 4 ("10") called "01"
    acc = dcm_bbvi.accuracy(prob, true, 2)
    assert acc["pattern_accuracy"] == pytest.approx(4 / 6)
    # swapped attributes are wrong on both attributes
    assert acc["attribute_accuracy"] == pytest.approx(1 - 4 / 12)
    assert acc["profile_accuracy"] == {"00": 1.0, "10": 0.5, "01": 0.5, "11": 1.0}


def test_larger_design_q_matrix_measures_one_or_two_attributes():
    rm, truth, q = dcm_bbvi.simulate(dcm_bbvi.DESIGNS["larger"], 0.2, 3, n_persons=300)
    assert q.shape == (20, 4) and set(q.sum(1)) <= {1, 2} and np.all(q.sum(0) > 0)
    lcdm.check_q_matrix(q, 20)
    assert 0.18 < (rm.responses < 0).mean() < 0.22
    beta = truth[truth.parameter == "beta"]
    inter = beta[beta.feature.str.contains(":")]
    assert inter.value.between(-5, 2).all()
    # every interaction is at least minus the smaller of its item's two main effects
    for item in inter.item:
        b = beta[beta.item == item].set_index("feature").value
        mains = b[[f for f in b.index if f != "intercept" and ":" not in f]]
        assert b[[f for f in b.index if ":" in f]].iloc[0] >= -mains.min()


def test_oracle_accuracy_is_high_on_the_seed_design():
    rm, truth, q = dcm_bbvi.simulate(dcm_bbvi.DESIGNS["seed"], 0.0, 5, n_persons=400)
    assert dcm_bbvi.oracle_accuracy(rm, truth, q)["pattern_accuracy"] > 0.9


def test_unknown_method_and_bad_q():
    rm, truth, q = dcm_bbvi.simulate(dcm_bbvi.DESIGNS["seed"], 0.0, 5, n_persons=50)
    with pytest.raises(ValueError, match="unknown method 'gibbs'"):
        dcm_bbvi.run_fit("gibbs", rm, truth, q, seed=0)
    with pytest.raises(ValueError, match="has 29 rows but the responses have 30 items"):
        dcm_bbvi.run_fit("em", rm, truth, q[:-1], seed=0)


@pytest.mark.parametrize("method", ["em", "bbvi_cv"])
def test_the_monotone_key_reaches_em_and_bbvi(method):
    # one config key for every method that honours it; what the study reports lies inside the
    # constraints (a short BBVI run: this checks the wiring, not the fit)
    from dataclasses import replace

    rm, truth, q = dcm_bbvi.simulate(dcm_bbvi.DESIGNS["seed"], 0.0, 5, n_persons=200)
    config = dcm_bbvi.study_settings({"designs": {}, "monotone": True, "variance_repeats": 0,
                                      "bbvi_training": {"max_steps": 80, "min_steps": 80}})
    assert config.monotone
    out = dcm_bbvi.run_fit(method, rm, truth, q, seed=0, config=config)
    assert out.record["monotone"] is True
    b = out.estimates[out.estimates.parameter == "beta"]
    assert (b[b.category.isin([1, 2])]["mean"] >= 0).all()  # the main effects (2 attributes)
    if method == "em":  # (a second BBVI compilation would double the test's time)
        plain = dcm_bbvi.run_fit(method, rm, truth, q, seed=0, config=replace(config, monotone=False))
        assert plain.record["monotone"] is False
