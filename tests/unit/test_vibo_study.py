"""The vibo study's parse-time part: conditions from a config, missingness names, bad config."""

from pathlib import Path

import numpy as np
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


def grm_design(**extra):
    return {"model": "grm", "preset": "rwa", "n_persons": 60, "missing": ["mcar20", "mnar20"], "replications": 1,
            **extra}


def test_grm_design_parsing():
    cfg = {**study(), "designs": {"g": grm_design()}}
    conds = vibo.conditions(cfg)
    assert len(conds) == 2 * 4 and vibo.Condition("g", "mnar20", "mml", 0) in conds
    assert vibo.design_shape(grm_design()) == (60, 22)  # the RWA preset: 22 items, 9 categories
    assert vibo.grm_shape("rwa") == (22, 9)
    assert vibo.design_shape({"n_persons": 50, "n_items": 5}) == (50, 5)
    with pytest.raises(ValueError, match="vibo model 'gpcm' is not known"):
        vibo.design_shape({"model": "gpcm", "n_persons": 5, "n_items": 5})


def test_grm_design_config_errors_name_the_key():
    from bayesirt.studies import config_checks

    def parse(**design):
        """The workflow's parse-time checks: the schema, then the studies' own (one line each)."""
        cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
        cfg["studies"]["vibo"]["designs"]["g"] = design
        check(cfg, SCHEMA)
        config_checks.check(cfg)

    def refused(**design) -> str:
        with pytest.raises(ConfigError) as e:
            parse(**design)
        assert "\n" not in str(e.value)
        return str(e.value)

    parse(**grm_design(n_persons=100))  # a valid GRM design passes
    assert refused(**grm_design(n_items=10)).startswith(
        "config key 'studies.vibo.designs.g.n_items': a grm design takes its items from its preset 'rwa' "
        "(22 items, 9 categories)")
    no_preset = grm_design()
    del no_preset["preset"]
    assert refused(**no_preset).startswith("config key 'studies.vibo.designs.g.preset': a grm design needs")
    assert refused(n_persons=100, n_items=10, preset="rwa").startswith(
        "config key 'studies.vibo.designs.g.preset': only a grm design has a preset")
    assert refused(n_persons=100).startswith("config key 'studies.vibo.designs.g.n_items': a 2pl design needs")
    assert refused(**grm_design(preset="ipip")).startswith("config key 'studies.vibo.designs.g.preset'")
    assert refused(**grm_design(model="gpcm")).startswith("config key 'studies.vibo.designs.g.model'")
    # the GRM's missingness is bounded like the 2PL's, on the preset's 22 items
    assert refused(**grm_design(n_persons=20, missing=["mcar90"])).startswith(
        "config key 'studies.vibo.designs.g.missing.0': 'mcar90'")


def test_grm_simulation_matches_its_truth():
    # The truth's cuts are on the fitted model's scale (P(Y >= k) = sigmoid(a theta - cut_k)):
    # the model-implied share of responses >= k at the true abilities matches the simulated
    # share per item and k (4,000 persons: binomial sd <= 0.008; tolerance 0.035).
    design = grm_design(n_persons=4000, missing=["mcar0"])
    train, hidden, hold, truth = vibo.simulate_condition(design, "mcar0", 5, score_fraction=0.05,
                                                         heldout_fraction=0.1, missing_seed=6)
    assert train.responses.shape == (4000, 22) and hold.responses.shape == (400, 22)
    assert list(train.n_categories) == [9] * 22 and train.responses.max() == 8
    y = train.responses.copy()
    y[hidden.person.to_numpy(), hidden.item.to_numpy()] = hidden.response.to_numpy()  # the complete matrix
    assert (y >= 0).all()
    pick = lambda p: truth[truth.parameter == p].sort_values(["item", "person", "category"])  # noqa: E731
    a, theta = pick("discrimination").value.to_numpy(), pick("ability").value.to_numpy()
    cuts = pick("cut").value.to_numpy().reshape(22, 8)
    assert pick("cut").category.min() == 1 and np.all(np.diff(cuts, axis=1) > 0)
    implied = (1 / (1 + np.exp(-(theta[:, None, None] * a[None, :, None] - cuts[None])))).mean(0)
    observed = np.stack([(y >= k).mean(0) for k in range(1, 9)], axis=1)
    assert np.abs(implied - observed).max() < 0.035


def test_grm_estimates_and_recovery_metrics():
    from bayesirt.models import irt2pl

    st = irt2pl.Structure("grm", 3, 1, n_categories=(3, 4, 4))
    cuts = np.array([[-1.0, 1.0, 99.0], [-2.0, 0.0, 2.0], [-1.5, 0.5, 1.5]])  # item 0 has 2 cuts; 99 is filler
    items = {"discrimination": (np.array([1.0, 2.0, 0.5]), np.full(3, 0.1)), "cut": (cuts, np.full((3, 3), 0.2))}
    ability = (np.array([0.1, -0.3]), np.array([1.0, 1.0]))
    est = vibo.estimates_table(items, ability, None, st)
    assert len(est[est.parameter == "cut"]) == 8 and 99.0 not in est["mean"].to_numpy()
    assert sorted(est[(est.parameter == "cut") & (est.item == 0)].category) == [1, 2]
    truth = est.rename(columns={"mean": "value"}).drop(columns="sd")
    truth.loc[truth.parameter == "cut", "value"] += 0.3  # every cut off by 0.3
    scored = vibo.evaluation(vibo.estimates_table(items, ability, truth, st))
    assert scored["cut_rmse"] == pytest.approx(0.3) and scored["discrimination_rmse"] == 0.0
    assert "difficulty_rmse" not in scored
    point = vibo.point_items(st, items)  # back to the model's unconstrained values
    np.testing.assert_allclose(np.asarray(irt2pl.constrain(point, st)["cuts"])[1:], cuts[1:], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(irt2pl.constrain(point, st)["cuts"])[0, :2], cuts[0, :2], rtol=1e-6)


def test_grm_item_and_person_tables(tmp_path):
    # items.csv of a GRM fit: intercepts d_k = -cut_k, IRT thresholds b_k = cut_k / a
    import json

    from bayesirt import io
    from bayesirt.models import irt2pl
    from bayesirt.studies import fit_tables

    st = irt2pl.Structure("grm", 3, 1, n_categories=(3, 4, 2))
    items = {"discrimination": (np.array([2.0, 0.5, 1.0]), np.full(3, 0.1)),
             "cut": (np.array([[-1.0, 1.0, 7.0], [-2.0, 0.0, 2.0], [0.3, 8.0, 9.0]]), np.full((3, 3), 0.2))}
    est = vibo.estimates_table(items, (np.array([0.1, -0.3]), np.array([0.5, 0.6])), None, st)
    est.to_csv(tmp_path / "estimates.csv", index=False)
    (tmp_path / "fit.json").write_text(json.dumps({"model": "grm", "method": "mml"}))
    rm = io.ResponseMatrix(np.array([[0, 3, 1], [2, -1, -1]]),
                           [io.Item("Q1", 3, "rwa"), io.Item("Q2", 4, "rwa"), io.Item("Q3", 2, "rwa")], {})
    item_table, persons = fit_tables.tables(tmp_path, rm)
    b = item_table[(item_table.form == "irt") & (item_table.parameter == "b")]
    np.testing.assert_allclose(b["mean"], [-0.5, 0.5, -4.0, 0.0, 4.0, 0.3])
    d = item_table[(item_table.form == "slope_intercept") & (item_table.parameter == "d")]
    np.testing.assert_allclose(d["mean"], [1.0, -1.0, 2.0, 0.0, -2.0, -0.3])
    np.testing.assert_allclose(d["sd"], 0.2)
    assert persons["score"].tolist() == [0.1, -0.3] and persons["n_answered"].tolist() == [3, 1]
