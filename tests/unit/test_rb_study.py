"""rb_study glue: config parsing with clear errors, error tables against a reference fit."""

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import rb_imputation


def test_config_from_dict_builds_nested_settings():
    c = rb_imputation.config_from_dict({"n_copies": 5, "objectives": ["zero_fill", "exact_marginal"],
                                   "settings": {"max_steps": 100}, "stacking": {"predictor": "onehot"},
                                   "priors": {"ability_scale": 5.0}, "missing_rate": 0.2})
    assert c.n_copies == 5 and c.objectives == ("zero_fill", "exact_marginal")
    assert c.settings.max_steps == 100 and c.stacking.predictor == "onehot" and c.priors.ability_scale == 5.0
    assert rb_imputation.config_from_dict({}) == rb_imputation.StudyConfig()


@pytest.mark.parametrize("bad, message", [
    ({"copies": 3}, "unknown key\\(s\\) \\['copies'\\]"),
    ({"settings": {"steps": 3}}, "rb_imputation'.settings: unknown key"),
    ({"objectives": ["zero_fill", "magic"]}, "unknown objective\\(s\\) \\['magic'\\]"),
    ({"n_copies": 0}, "n_copies: expected a positive integer"),
    ({"missing_rate": 1.5}, "missing_rate: expected a number in \\[0, 1\\)"),
])
def test_config_errors_name_the_key(bad, message):
    with pytest.raises(ValueError, match=message):
        rb_imputation.config_from_dict(bad)


def table(values, true=None):
    n = len(values)
    df = pd.DataFrame({"parameter": "discrimination", "item": np.arange(n), "person": -1,
                       "scale": ["A"] * (n // 2) + ["B"] * (n - n // 2), "category": -1,
                       "mean": values, "sd": 0.1})
    if true is not None:
        df["true"] = true
    return df


def test_error_table_against_reference_and_truth():
    ref = table([1.0, 2.0, 3.0, 4.0])
    est = table([1.5, 2.0, 3.0, 3.5], true=[1.0, 1.0, 1.0, 1.0])
    e = rb_imputation.error_table(est, ref).set_index(["against", "scale"])
    assert e.loc[("complete_data", "all"), "rmse"] == pytest.approx(np.sqrt(0.125))
    assert e.loc[("complete_data", "A"), "bias"] == pytest.approx(0.25)
    assert e.loc[("complete_data", "B"), "bias"] == pytest.approx(-0.25)
    assert e.loc[("truth", "all"), "bias"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="same parameters"):
        rb_imputation.error_table(table([1.0, 2.0, 3.0, 4.0, 5.0]), ref)
    agg = rb_imputation.aggregate([e.reset_index().assign(objective="x"), e.reset_index().assign(objective="x")])
    assert (agg["n_reps"] == 2).all() and np.allclose(agg["rmse_sd"], 0.0)
