"""The vibo study's parse-time part: conditions from a config, missingness names, bad config."""

from pathlib import Path

import pytest
import yaml

from bayesirt.config import ConfigError, check
from bayesirt.studies import vibo

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def study(**design):
    return {"methods": list(vibo.METHOD_NAMES),
            "designs": {"a": {"n_persons": 100, "n_items": 10, "missing": ["mcar0", "mnar20"], "replications": 2},
                        "b": {"n_persons": 50, "n_items": 5, "missing": ["mcar10"], "replications": 1, **design}}}


def test_conditions_are_designs_x_missing_x_methods_x_replications():
    conds = vibo.conditions(study(nuts=True))
    assert len(conds) == 2 * 2 * 4 + 1 * 1 * 5  # NUTS only where a design asks for it
    assert vibo.Condition("b", "mcar10", "nuts", 0) in conds
    assert not any(c.design == "a" and c.method == "nuts" for c in conds)
    assert conds[0].path == "results/vibo/a/mcar0/vibo_one_prior/rep0"
    assert vibo.conditions({**study(), "enabled": False}) == []


def test_missingness_names():
    assert vibo.parse_missing("mnar20") == ("mnar", 0.2)
    assert vibo.parse_missing("mcar7.5") == ("mcar", 0.075)
    with pytest.raises(ValueError, match="'random20' is not"):
        vibo.parse_missing("random20")


def test_config_errors_name_the_key():
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["vibo"]["designs"]["tiny"]["n_itemz"] = 3
    with pytest.raises(ConfigError, match="n_itemz"):
        check(cfg, SCHEMA)
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["vibo"]["priors"] = {"difficulty_sigma": 1.0}
    with pytest.raises(ConfigError, match="config key 'studies.vibo.priors.difficulty_sigma': unknown key"):
        check(cfg, SCHEMA)
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["vibo"]["methods"] = ["vibo", "mml"]
    with pytest.raises(ConfigError, match="methods"):
        check(cfg, SCHEMA)
