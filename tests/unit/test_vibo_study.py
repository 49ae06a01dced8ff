"""The vibo study (bayesirt.studies.vibo): conditions from a config, bad config, the data of a
condition, estimates and their evaluation, tables of simulated and real designs."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from bayesirt.config import ConfigError, check
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.vibo import conditions, data, figures, methods, settings, tables
from bayesirt.studies.vibo import evaluation as vibo_eval
from bayesirt.studies.vibo.conditions import Condition

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(study: dict | None = None) -> dict:
    """config/test.yaml (its vibo block replaced by ``study``, where given) with the schema's
    defaults filled in, as the workflow sees it."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    if study is not None:
        cfg["studies"]["vibo"] = study
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def study(**design):
    return {
        "methods": list(conditions.METHODS),
        "designs": {
            "a": {"n_persons": 100, "n_items": 10, "missing": ["mcar0", "mnar20"], "replications": 2},
            "b": {"n_persons": 50, "n_items": 5, "missing": ["mcar10"], "replications": 1, **design},
        },
    }


def test_the_study_loads_and_its_conditions_are_the_test_configs_fits():
    from bayesirt.studies.base import load

    s = load("vibo")
    assert callable(s.conditions) and callable(s.fit) and callable(s.aggregate) and callable(s.figures)
    assert set(s.methods) == set(conditions.METHODS) and all(callable(f) for f in s.methods.values())
    cfg = validated()
    conds = s.conditions(cfg)
    assert conds and all(c.folder.startswith("results/vibo/") for c in conds)
    assert {c.design for c in conds} == {"tiny", "tiny_grm"} and "nuts" not in {c.method for c in conds}
    st = settings.Settings.from_config(cfg)
    assert st.eval_samples == 50 and st.vibo["hidden"] == [16, 16] and st.nuts["n_samples"] == 500
    assert st.design("tiny_grm")["model"] == "grm"


def test_conditions_are_designs_x_missing_x_methods_x_replications():
    conds = conditions.conditions(validated(study(nuts=True)))
    assert len(conds) == 2 * 2 * 6 + 1 * 1 * 7  # NUTS only where a design asks for it
    assert Condition("b", "mcar10", "nuts", 0) in conds
    assert not any(c.design == "a" and c.method == "nuts" for c in conds)
    assert conds[0].folder == "results/vibo/a/mcar0/vibo_one_prior/rep0"
    assert conditions.conditions(validated({**study(), "enabled": False})) == []
    # a design switched off (a merged config cannot delete one) has no conditions and no name
    off = validated(study(enabled=False))
    assert {c.design for c in conditions.conditions(off)} == {"a"} and list(conditions.designs(off)) == ["a"]
    no_study = validated()
    del no_study["studies"]["vibo"]
    assert conditions.conditions(no_study) == []
    settings.check(no_study)  # nothing to check


def test_missingness_names():
    assert parse_missing("mnar20") == ("mnar", 0.2)
    assert parse_missing("mcar7.5") == ("mcar", 0.075)
    with pytest.raises(ValueError, match="'random20' is not"):
        parse_missing("random20")


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
    return {
        "model": "grm",
        "preset": "rwa",
        "n_persons": 60,
        "missing": ["mcar20", "mnar20"],
        "replications": 1,
        **extra,
    }


def test_grm_design_parsing():
    cfg = validated({**study(), "designs": {"g": grm_design()}})
    conds = conditions.conditions(cfg)
    assert len(conds) == 2 * 6 and Condition("g", "mnar20", "mml", 0) in conds  # six methods, no NUTS
    assert settings.design_shape(grm_design()) == (60, 22)  # the RWA preset: 22 items, 9 categories
    assert settings.grm_shape("rwa") == (22, 9)
    assert settings.design_shape({"model": "2pl", "n_persons": 50, "n_items": 5}) == (50, 5)
    with pytest.raises(ValueError, match="vibo model 'gpcm' is not known"):
        settings.design_shape({"model": "gpcm", "n_persons": 5, "n_items": 5})


def test_grm_design_config_errors_name_the_key():
    from snakemake.utils import validate

    def parse(**design):
        """The workflow's parse-time checks: the schema, its defaults, then the study's own (one
        line each)."""
        cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
        cfg["studies"]["vibo"]["designs"]["g"] = design
        check(cfg, SCHEMA)
        validate(cfg, str(SCHEMA), set_default=True)
        settings.check(cfg)

    def refused(**design) -> str:
        with pytest.raises(ConfigError) as e:
            parse(**design)
        assert "\n" not in str(e.value)
        return str(e.value)

    parse(**grm_design(n_persons=100))  # a valid GRM design passes
    assert refused(**grm_design(n_items=10)).startswith(
        "config key 'studies.vibo.designs.g.n_items': a grm design takes its items from its preset 'rwa' "
        "(22 items, 9 categories)"
    )
    no_preset = grm_design()
    del no_preset["preset"]
    assert refused(**no_preset).startswith("config key 'studies.vibo.designs.g.preset': a grm design needs")
    assert refused(n_persons=100, n_items=10, preset="rwa").startswith(
        "config key 'studies.vibo.designs.g.preset': only a grm design has a preset"
    )
    assert refused(n_persons=100).startswith("config key 'studies.vibo.designs.g.n_items': a 2pl design needs")
    assert refused(**grm_design(preset="ipip")).startswith("config key 'studies.vibo.designs.g.preset'")
    assert refused(**grm_design(model="gpcm")).startswith("config key 'studies.vibo.designs.g.model'")
    # the GRM's missingness is bounded like the 2PL's, on the preset's 22 items
    assert refused(**grm_design(n_persons=20, missing=["mcar90"])).startswith(
        "config key 'studies.vibo.designs.g.missing.0': 'mcar90'"
    )


def test_grm_simulation_matches_its_truth():
    # The truth's cuts are on the fitted model's scale (P(Y >= k) = sigmoid(a theta - cut_k)):
    # the model-implied share of responses >= k at the true abilities matches the simulated
    # share per item and k (4,000 persons: binomial sd <= 0.008; tolerance 0.035).
    design = grm_design(n_persons=4000, missing=["mcar0"])
    train, hidden, hold, truth = data.simulate_condition(
        design, "mcar0", 5, score_fraction=0.05, heldout_fraction=0.1, missing_seed=6
    )
    assert train.responses.shape == (4000, 22) and hold.responses.shape == (400, 22)
    assert list(train.n_categories) == [9] * 22 and train.responses.max() == 8
    y = train.responses.copy()
    y[hidden.person.to_numpy(), hidden.item.to_numpy()] = hidden.response.to_numpy()  # the complete matrix
    assert (y >= 0).all()
    pick = lambda p: truth[truth.parameter == p].sort_values(["item", "person", "category"])
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
    est = vibo_eval.estimates_table(items, ability, None, st)
    assert len(est[est.parameter == "cut"]) == 8 and 99.0 not in est["mean"].to_numpy()
    assert sorted(est[(est.parameter == "cut") & (est.item == 0)].category) == [1, 2]
    truth = est.rename(columns={"mean": "value"}).drop(columns="sd")
    truth.loc[truth.parameter == "cut", "value"] += 0.3  # every cut off by 0.3
    scored = vibo_eval.recovery(vibo_eval.estimates_table(items, ability, truth, st))
    assert scored["cut_rmse"] == pytest.approx(0.3) and scored["discrimination_rmse"] == 0.0
    assert "difficulty_rmse" not in scored
    point = vibo_eval.point_items(st, items)  # back to the model's unconstrained values
    np.testing.assert_allclose(np.asarray(irt2pl.constrain(point, st)["cuts"])[1:], cuts[1:], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(irt2pl.constrain(point, st)["cuts"])[0, :2], cuts[0, :2], rtol=1e-6)


def test_grm_item_and_person_tables(tmp_path):
    # items.csv of a GRM fit: intercepts d_k = -cut_k, IRT thresholds b_k = cut_k / a
    import json

    from bayesirt import io
    from bayesirt.models import irt2pl
    from bayesirt.studies import fit_tables

    st = irt2pl.Structure("grm", 3, 1, n_categories=(3, 4, 2))
    items = {
        "discrimination": (np.array([2.0, 0.5, 1.0]), np.full(3, 0.1)),
        "cut": (np.array([[-1.0, 1.0, 7.0], [-2.0, 0.0, 2.0], [0.3, 8.0, 9.0]]), np.full((3, 3), 0.2)),
    }
    est = vibo_eval.estimates_table(items, (np.array([0.1, -0.3]), np.array([0.5, 0.6])), None, st)
    est.to_csv(tmp_path / "estimates.csv", index=False)
    (tmp_path / "fit.json").write_text(json.dumps({"model": "grm", "method": "mml"}))
    rm = io.ResponseMatrix(
        np.array([[0, 3, 1], [2, -1, -1]]),
        [io.Item("Q1", 3, "rwa"), io.Item("Q2", 4, "rwa"), io.Item("Q3", 2, "rwa")],
        {},
    )
    item_table, persons = fit_tables.tables(tmp_path, rm)
    b = item_table[(item_table.form == "irt") & (item_table.parameter == "b")]
    np.testing.assert_allclose(b["mean"], [-0.5, 0.5, -4.0, 0.0, 4.0, 0.3])
    d = item_table[(item_table.form == "slope_intercept") & (item_table.parameter == "d")]
    np.testing.assert_allclose(d["mean"], [1.0, -1.0, 2.0, 0.0, -2.0, -0.3])
    np.testing.assert_allclose(d["sd"], 0.2)
    assert persons["score"].tolist() == [0.1, -0.3] and persons["n_answered"].tolist() == [3, 1]


# ------------------------------------------------------------------ real data (no truth)


def fake_real_data(n=120, j=6, k=4, seed=0):
    """A small 'real' questionnaire without a truth: k-category items driven by one trait, with
    about 5% natural missing cells (one person answered nothing)."""
    from bayesirt import io

    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n, 1))
    y = np.clip(np.round(1.5 + theta + rng.normal(scale=0.8, size=(n, j))), 0, k - 1).astype(np.int16)
    y[rng.random((n, j)) < 0.05] = -1
    y[7] = -1
    return io.ResponseMatrix(y, [io.Item(f"Q{i + 1}", k, "scale") for i in range(j)], {"dataset": "fake"})


def test_observed_condition_splits_persons_and_keeps_the_hidden_responses():
    rm = fake_real_data()
    design = {"model": "grm", "dataset": "fake", "missing": ["mcar10"], "replications": 2}
    kw = dict(score_fraction=0.15, heldout_fraction=0.25, missing_seed=11, where="fake.parquet")
    train, hidden, hold, truth = data.observed_condition(rm, design, "mcar10", 3, **kw)
    # the person who answered nothing is left out; 30 of the other 119 persons are new persons
    assert (train.n_persons, hold.n_persons, train.n_items) == (89, 30, 6)
    assert train.attrs["persons_without_responses_left_out"] == 1
    assert truth.empty and list(truth.columns) == ["parameter", "item", "person", "category", "value"]
    assert list(train.n_categories) == [4] * 6
    # without extra missingness every training and held-out person is a row of the data set,
    # once the scored cells are put back
    tr0, hid0, hold0, _ = data.observed_condition(rm, design, "mcar0", 3, **kw)
    y0 = tr0.responses.copy()
    y0[hid0.person.to_numpy(), hid0.item.to_numpy()] = hid0.response.to_numpy()
    rows = sorted(map(tuple, np.concatenate([y0, hold0.responses]).tolist()))
    assert rows == sorted(map(tuple, np.delete(rm.responses, 7, axis=0).tolist()))
    assert np.array_equal(hold0.responses, hold.responses) is False  # mcar10 hides new persons' cells too
    y = train.responses.copy()
    assert (y[hidden.person, hidden.item] == -1).all() and (hidden.response >= 0).all()
    y[hidden.person.to_numpy(), hidden.item.to_numpy()] = hidden.response.to_numpy()  # the scored cells back
    natural = (rm.responses == -1).sum()
    # 10% of all cells hidden on top of the natural missingness, in training and new persons alike
    assert (y == -1).sum() + (hold.responses == -1).sum() >= natural - 6 + round(0.1 * 119 * 6)
    assert train.attrs["design_missing"] == "mcar10" and train.attrs["part"] == "train"
    # one seed, one split: the same again; another replication's seed splits and hides differently
    again = data.observed_condition(rm, design, "mcar10", 3, **kw)
    assert np.array_equal(again[0].responses, train.responses) and again[1].equals(hidden)
    other = data.observed_condition(rm, design, "mcar10", 4, **{**kw, "missing_seed": 12})
    assert not np.array_equal(other[2].responses, hold.responses)
    # a 2pl design needs binary responses, and the error names the file and the first bad cell
    with pytest.raises(ValueError, match="fake.parquet: code .* is not binary"):
        data.observed_condition(rm, {**design, "model": "2pl"}, "mcar0", 3, **kw)
    assert not conditions.has_truth(design) and conditions.has_truth(grm_design())


def fake_fit(method, rep, missing="mcar10", design="real", shift=0.0, noise=0.0, truth=None):
    """A fit record and estimates table of a GRM method (3 items, 3 categories, 40 persons)."""
    from bayesirt.models import irt2pl

    rng = np.random.default_rng(rep)
    st = irt2pl.Structure("grm", 3, 1, n_categories=(3, 3, 3))
    theta = rng.normal(size=40)
    extra = np.random.default_rng(100 + len(method)).normal(scale=noise, size=40)
    items = {
        "discrimination": (np.array([1.0, 1.5, 0.8]) + shift, np.full(3, 0.1)),
        "cut": (np.array([[-1.0, 1.0], [-0.5, 0.5], [0.0, 2.0]]) + shift, np.full((3, 2), 0.1)),
    }
    est = vibo_eval.estimates_table(items, (theta + shift + extra, np.full(40, 0.3)), truth, st)
    evaluation = {
        **vibo_eval.recovery(est),
        "hidden_accuracy": 0.5 + shift,
        "hidden_log_score": -1.0 - shift,
        "hidden_n_cells": 10,
        "heldout_loglik": -3.0,
    }
    record = {
        "design": design,
        "model": "grm",
        "missing": missing,
        "method": method,
        "replication": rep,
        "n_persons": 40,
        "n_items": 3,
        "missing_rate": 0.2,
        "converged": True,
        "steps": 10,
        "evaluation": evaluation,
        "timing": {"wall_seconds": 1.0, "compile_seconds": 0.1, "score_new_seconds": 0.01},
    }
    return record, est


def test_real_data_tables_compare_the_methods_with_each_other(tmp_path):
    fits = [
        fake_fit(m, rep, shift=s, noise=z)
        for rep in (0, 1)
        for m, s, z in (("vibo_one_prior", 0.1, 0.5), ("mfvi", 0.0, 0.0), ("mml", 0.0, 0.0))
    ]
    result = tables.aggregate([r for r, _ in fits], [e for _, e in fits], observed=True)
    assert set(result) == {"fits", "summary", "agreement", "timings"}
    ag = result["agreement"]
    # 3 pairs x 2 replications x (ability, discrimination, cut), methods in METHOD_NAMES order
    assert len(ag) == 3 * 2 * 3 and set(zip(ag.method, ag.other)) == {
        ("vibo_one_prior", "mfvi"),
        ("vibo_one_prior", "mml"),
        ("mfvi", "mml"),
    }
    same = ag[(ag.method == "mfvi") & (ag.other == "mml")]
    assert np.allclose(same["corr"], 1.0) and np.allclose(same["rmsd"], 0.0)
    shifted = ag[(ag.method == "vibo_one_prior") & (ag.other == "mml") & (ag.parameter == "cut")]
    assert np.allclose(shifted["rmsd"], 0.1) and np.allclose(shifted["mean_difference"], 0.1)
    assert (shifted["n"] == 6).all()
    f = result["fits"]
    vibo_ab = f[f.method == "vibo_one_prior"]["ability_corr_to_mml"]
    assert (vibo_ab < 0.99).all() and (vibo_ab > 0.5).all()  # noise of sd 0.5 on abilities of sd 1
    assert f[f.method == "mfvi"]["ability_corr_to_mml"].tolist() == pytest.approx([1.0, 1.0])
    assert f[f.method == "mml"]["ability_corr_to_mml"].isna().all()  # the reference itself
    s = result["summary"]
    assert not any(c.startswith(("ability_rmse", "coverage", "cut_rmse")) for c in s.columns)  # no truth, no recovery
    assert s["replications"].tolist() == [2, 2, 2]
    assert s.set_index("method").loc["vibo_one_prior", "hidden_accuracy_mean"] == pytest.approx(0.6)
    figures.figures(result, {"figure_agreement": tmp_path / "agreement.png"}, observed=True)
    assert (tmp_path / "agreement.png").stat().st_size > 0


def test_claims_leave_real_data_designs_out():
    import pandas as pd

    sim, real = [], []
    for rep in (0, 1, 2):
        r, e = fake_fit("mml", rep, design="sim")
        truth = e.rename(columns={"mean": "value"})[["parameter", "item", "person", "category", "value"]]
        sim += [
            fake_fit("vibo_one_prior", rep, design="sim", shift=0.05, truth=truth),
            fake_fit("mml", rep, design="sim", truth=truth),
        ]
        real += [fake_fit("vibo_one_prior", rep, shift=2.0), fake_fit("mml", rep)]
    assert "true" in sim[0][1] and "true" not in real[0][1]
    sim_fits = tables.aggregate([r for r, _ in sim], [e for _, e in sim])["fits"]
    real_fits = tables.aggregate([r for r, _ in real], [e for _, e in real], observed=True)["fits"]
    both = pd.concat([sim_fits, real_fits], ignore_index=True)
    timings = pd.DataFrame(
        {"design": both.design, "missing": both.missing, "method": both.method, "rep": both.rep, "wall_seconds": 1.0}
    )
    claims = tables.claim_verdicts(both, timings)
    alone = tables.claim_verdicts(sim_fits, timings[timings.design == "sim"])
    assert [c["claim"] for c in claims] == [c["claim"] for c in alone] != []
    assert [c["verdict"].text for c in claims] == [c["verdict"].text for c in alone]
    assert tables.claim_verdicts(real_fits, timings[timings.design == "real"]) == []  # no truth, no claim


def test_real_data_fit_has_no_recovery_but_scores_the_hidden_cells():
    # MML-EAP (the cheapest method) on the fake data set through methods.fit, as the workflow calls it
    rm = fake_real_data(n=150, j=5)
    design = {"model": "grm", "dataset": "fake", "missing": ["mcar10"], "replications": 1}
    train, hidden, hold, truth = data.observed_condition(
        rm, design, "mcar10", 1, score_fraction=0.15, heldout_fraction=0.2, missing_seed=2, where="fake"
    )
    study = settings.Settings.from_config(
        validated({"designs": {"real": design}, "eval_samples": 50, "posterior_draws": 20, "training": {}})
    )
    out = methods.fit(train, hidden, hold, truth, Condition("real", "mcar10", "mml", 0), settings=study, seed=5)
    ev = out.record["evaluation"]
    assert not any(k.endswith(("_rmse", "_corr")) or k.startswith("coverage") for k in ev)
    assert ev["hidden_n_cells"] == len(hidden) > 0 and 0.2 < ev["hidden_accuracy"] <= 1.0
    assert np.isfinite(ev["hidden_log_score"]) and np.isfinite(ev["heldout_loglik"])
    assert out.record["dataset"] == "fake" and out.record["design"] == "real"
    assert "true" not in out.estimates


def test_real_data_design_config_errors_name_the_key():
    def parse(**design):
        cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
        cfg["datasets"]["survey"] = {"source": "rwa", "url": "/nowhere/RWAS.zip"}
        cfg["studies"]["vibo"]["designs"]["r"] = design
        check(cfg, SCHEMA)
        from snakemake.utils import validate

        validate(cfg, str(SCHEMA), set_default=True)
        settings.check(cfg)
        return cfg

    def refused(**design) -> str:
        with pytest.raises(ConfigError) as e:
            parse(**design)
        assert "\n" not in str(e.value)
        return str(e.value)

    cfg = parse(model="grm", dataset="survey", missing=["mcar0", "mcar20"], replications=3)
    assert [c for c in conditions.conditions(cfg) if c.design == "r"][
        0
    ].folder == "results/vibo/r/mcar0/vibo_one_prior/rep0"
    assert refused(model="grm", dataset="nope").startswith(
        "config key 'studies.vibo.designs.r.dataset': 'nope' is not one of the data sets"
    )
    assert refused(model="grm", dataset="survey", preset="rwa").startswith(
        "config key 'studies.vibo.designs.r.preset': a design that names a dataset ('survey')"
    )
    assert refused(model="grm", dataset="survey", n_persons=100).startswith(
        "config key 'studies.vibo.designs.r.n_persons': a design that names a dataset"
    )
    assert refused(dataset="survey").startswith("config key 'studies.vibo.designs.r.model': the data set 'survey'")
    assert refused(model="grm", dataset="survey", missing=["mar0"]).startswith(
        "config key 'studies.vibo.designs.r.missing.0': 'mar0'"
    )
