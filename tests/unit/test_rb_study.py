"""rb_imputation study: conditions, config errors naming the key, error tables against a reference fit."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesirt.studies import rb_imputation


def test_condition_names_and_parsing():
    study = {"objectives": ["zero_fill", "rao_blackwell", "exact_marginal"], "n_copies": [3, 5]}
    names = rb_imputation.condition_names(study)
    assert names == ["zero_fill", "rao_blackwell_M3", "rao_blackwell_M5", "exact_marginal"]
    assert [rb_imputation.parse_condition(n) for n in names] == [
        ("zero_fill", None), ("rao_blackwell", 3), ("rao_blackwell", 5), ("exact_marginal", None)]


# The study's settings are checked by the config schema alone (one line naming the key),
# before any job runs; these cases were checked by a hand-written parser before.
@pytest.mark.parametrize("bad, message", [
    ({"copies": 3}, "config key 'studies.rb_imputation.copies': unknown key"),
    ({"objectives": ["zero_fill", "magic"]}, "config key 'studies.rb_imputation.objectives.1'"),
    ({"n_copies": [0]}, "config key 'studies.rb_imputation.n_copies.0'"),
    ({"n_dimensions": 0}, "config key 'studies.rb_imputation.n_dimensions'"),
    ({"missing": "mcar"}, "config key 'studies.rb_imputation.missing'"),
])
def test_config_errors_name_the_key(bad, message):
    import yaml

    from bayesirt.config import ConfigError, check

    root = Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "config" / "test.yaml").read_text())
    config["studies"]["rb_imputation"].update(bad)
    with pytest.raises(ConfigError, match=re.escape(message)):
        check(config, root / "workflow" / "schemas" / "config.schema.yaml")


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
