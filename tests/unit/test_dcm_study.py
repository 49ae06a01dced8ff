"""Study dcm_bbvi: scoring by profile index (bit order), designs, the oracle, bad input, the
conditions and settings of a config, blocks of replications."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from bayesirt import io
from bayesirt.config import ConfigError, check
from bayesirt.models import lcdm
from bayesirt.studies import base, design_conditions
from bayesirt.studies.dcm_bbvi import conditions, data, methods, oracle, settings, tables

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(name="test.yaml", **study) -> dict:
    """A shipped config with the schema's defaults filled in, as the workflow sees it; ``study``
    replaces keys of its studies.dcm_bbvi."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    cfg["studies"]["dcm_bbvi"].update(study)
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def default() -> settings.Settings:
    """The study's settings of the default config (no key of the study set: the schema's defaults)."""
    return settings.Settings.from_config(validated("config.yaml"))


def test_the_study_loads_and_its_conditions_are_result_folders():
    study = base.load("dcm_bbvi")
    assert study.name == "dcm_bbvi" and tuple(study.methods) == conditions.METHODS
    assert all(
        callable(f) for f in (study.conditions, study.fit, study.aggregate, study.figures, *study.methods.values())
    )
    fits = study.conditions(validated())
    assert [f.folder for f in fits] == [
        "results/dcm_bbvi/seed/mcar20/em/rep0",
        "results/dcm_bbvi/seed/mcar20/bbvi/rep0",
        "results/dcm_bbvi/seed/mcar20/em/rep1",
        "results/dcm_bbvi/seed/mcar20/bbvi/rep1",
    ]
    assert [f.method for f in fits] == ["em", "bbvi", "em", "bbvi"]
    # NUTS only on nuts_designs; the schema's defaults: missing [mcar0, mcar20], one replication
    fits = study.conditions(validated(designs={"seed": {}, "larger": {"replications": 2}}, methods=["em", "nuts"]))
    assert [f.folder.removeprefix("results/dcm_bbvi/") for f in fits] == [
        "seed/mcar0/em/rep0",
        "seed/mcar0/nuts/rep0",
        "seed/mcar20/em/rep0",
        "seed/mcar20/nuts/rep0",
        "larger/mcar0/em/rep0",
        "larger/mcar0/em/rep1",
        "larger/mcar20/em/rep0",
        "larger/mcar20/em/rep1",
    ]
    assert study.conditions(validated(enabled=False)) == []
    # the seed's runs only on seed_method_designs (the schema's default: the seed's own design)
    fits = study.conditions(validated(designs={"seed": {}, "larger": {}}, methods=["bbvi_seed", "em"]))
    assert [(f.design, f.method) for f in fits if f.missing == "mcar0"] == [
        ("seed", "bbvi_seed"),
        ("seed", "em"),
        ("larger", "em"),
    ]


def test_settings_come_from_the_config_and_the_methods_read_them():
    # a config that sets no key of the study gets the schema's defaults and the methods' own
    # training settings; the test config's overrides reach the library's settings objects
    plain = default()
    assert (plain.n_samples, plain.variance_repeats, plain.monotone) == (50, 32, False)
    assert methods.bbvi_train(plain) == methods.BBVI_TRAIN
    assert methods.collapsed_train(plain) == methods.COLLAPSED_TRAIN
    assert methods.item_priors(plain) == lcdm.Priors()
    test = settings.Settings.from_config(validated())
    assert test.n_samples == 10 and test.variance_repeats == 4
    train = methods.bbvi_train(test)
    assert train.max_steps == 160 and train.window == methods.BBVI_TRAIN.window
    nuts = methods.nuts_settings(settings.Settings.from_config(validated("paper.yaml")))
    assert (nuts.n_chains, nuts.n_warmup, nuts.n_samples, nuts.progress_every) == (4, 1000, 1000, 0)
    assert methods.em_settings(replace(test, monotone=True, em={"standard_errors": False})) == (
        methods.dcm_em.EMSettings(monotone=True, standard_errors=False)
    )


def test_check_refuses_a_missingness_the_design_cannot_hold():
    settings.check(validated())
    key = "studies.dcm_bbvi.designs.seed.missing.0"
    with pytest.raises(ConfigError, match=rf"^config key '{key}': 'mcar99\.9' — hiding"):
        settings.check(validated(designs={"seed": {"missing": ["mcar99.9"]}}))


def test_accuracy_scores_by_profile_index():
    true = np.array([0, 1, 2, 3, 1, 2])
    prob = np.eye(4)[[0, 1, 1, 3, 2, 2]]  # person 2 ("01") called "10"; person 4 ("10") called "01"
    acc = tables.accuracy(prob, true, 2)
    assert acc["pattern_accuracy"] == pytest.approx(4 / 6)
    # swapped attributes are wrong on both attributes
    assert acc["attribute_accuracy"] == pytest.approx(1 - 4 / 12)
    assert acc["profile_accuracy"] == {"00": 1.0, "10": 0.5, "01": 0.5, "11": 1.0}
    # the seed's "in top 2": person 2's true profile second, person 4's third
    prob = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.6, 0.3, 0.0], [0, 0, 0, 1.0],
                     [0.3, 0.1, 0.6, 0.0], [0, 0, 1.0, 0]])  # fmt: skip
    assert tables.accuracy(prob, true, 2)["top2_accuracy"] == pytest.approx(5 / 6)


def test_larger_design_q_matrix_measures_one_or_two_attributes():
    rm, truth, q = data.simulate(conditions.DESIGNS["larger"], 0.2, 3, n_persons=300)
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
    rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.0, 5, n_persons=400)
    assert oracle.oracle_accuracy(rm, truth, q)["pattern_accuracy"] > 0.9


def test_the_oracle_table_has_a_row_per_data_set_read_from_its_files(tmp_path):
    datasets, responses, truths, expected = [], [], [], []
    for rep, missing in enumerate((0.0, 0.2)):
        rm, truth, q = data.simulate(conditions.DESIGNS["seed"], missing, 10 + rep, n_persons=200)
        folder = tmp_path / f"rep{rep}"
        folder.mkdir()
        io.write_responses(rm, folder / "responses.parquet")
        truth.to_csv(folder / "truth.csv", index=False)
        datasets.append(("seed", f"mcar{round(100 * missing)}", rep))
        responses.append(folder / "responses.parquet")
        truths.append(folder / "truth.csv")
        expected.append(oracle.oracle_accuracy(rm, truth, q)["pattern_accuracy"])
    table = oracle.oracle_table(datasets, responses, truths)
    assert list(table.missing) == ["mcar0", "mcar20"] and list(table.rep) == [0, 1]
    np.testing.assert_allclose(table.pattern_accuracy, expected)


def test_unknown_method_and_bad_q():
    rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.0, 5, n_persons=50)
    with pytest.raises(ValueError, match="unknown method 'gibbs'"):
        methods.fit("gibbs", rm, truth, q, seed=0, settings=default())
    with pytest.raises(ValueError, match="has 29 rows but the responses have 30 items"):
        methods.fit("em", rm, truth, q[:-1], seed=0, settings=default())


@pytest.mark.parametrize("method", ["em", "bbvi_cv"])
def test_the_monotone_key_reaches_em_and_bbvi(method):
    # one config key for every method that honours it; what the study reports lies inside the
    # constraints (a short BBVI run: this checks the wiring, not the fit)
    from dataclasses import replace

    rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.0, 5, n_persons=200)
    config = settings.Settings.from_config(
        validated(monotone=True, variance_repeats=0, n_samples=50, bbvi_training={"max_steps": 80, "min_steps": 80})
    )
    assert config.monotone
    out = methods.fit(method, rm, truth, q, seed=0, settings=config)
    assert out.record["monotone"] is True
    b = out.estimates[out.estimates.parameter == "beta"]
    assert (b[b.category.isin([1, 2])]["mean"] >= 0).all()  # the main effects (2 attributes)
    if method == "em":  # (a second BBVI compilation would double the test's time)
        plain = methods.fit(method, rm, truth, q, seed=0, settings=replace(config, monotone=False))
        assert plain.record["monotone"] is False


def test_replications_of_a_condition_are_fitted_in_blocks_of_the_design_block_size():
    cfg = validated(designs={"seed": {"replications": 5, "block_size": 2}})
    spec = conditions.Condition("seed", "mcar20", "bbvi_cv", 3)
    assert conditions.condition_blocks(cfg, spec) == [[0, 1], [2, 3], [4]]
    assert [design_conditions.block_number(conditions, cfg, replace(spec, rep=r)) for r in range(5)] == [0, 0, 1, 1, 2]
    # the default (100) and any size above the replications: one block
    default = validated(designs={"seed": {"replications": 5}})
    assert default["studies"]["dcm_bbvi"]["designs"]["seed"]["block_size"] == 100
    assert conditions.condition_blocks(default, spec) == [[0, 1, 2, 3, 4]]
    three = {"studies": {"dcm_bbvi": {"designs": {"seed": {"replications": 3, "block_size": 3}}}}}
    assert conditions.condition_blocks(three, spec) == [[0, 1, 2]]
    assert spec.block_folder(1) == "results/dcm_bbvi/seed/mcar20/bbvi_cv/blocks/block1"
    # the fitting jobs' settings carry their design's block size
    config = validated(designs={"seed": {"block_size": 7}, "larger": {}})
    assert settings.Settings.from_config(config, "seed").block_size == 7
    assert settings.Settings.from_config(config, "larger").block_size == 100
    assert settings.Settings.from_config(config).block_size is None


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_bad_block_size_names_the_key(bad):
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    config["studies"]["dcm_bbvi"]["designs"]["seed"]["block_size"] = bad
    with pytest.raises(ConfigError, match=re.escape("config key 'studies.dcm_bbvi.designs.seed.block_size'")) as err:
        check(config, SCHEMA)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("method", ["bbvi_cv", "collapsed_vi", "em"])
def test_a_block_of_fits_gives_the_records_and_estimates_of_single_fits(method):
    # Two replications (data seeds 100, 101; fit seeds 7, 8) fitted as one block and one by one:
    # the same steps, stopping reasons and accuracy, and estimates and final losses equal up to
    # float32 rounding of the vectorized program (estimates within 1e-3, final loss within 1e-5
    # relative); EM runs the same code in a loop, so its results are equal.
    from dataclasses import replace

    import jsonschema

    config = replace(
        default(),
        n_samples=10,
        variance_repeats=4,
        bbvi_training={"max_steps": 240, "min_steps": 160},
        collapsed_training={"max_steps": 300, "min_steps": 200},
    )
    reps = []
    for r in range(2):
        rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.2, 100 + r, n_persons=100)
        reps.append(methods.Replication(rm, truth, q, conditions.Condition("seed", "mcar20", method, r), 7 + r))
    block = methods.fit_block(reps, config)
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "fit_record.schema.yaml").read_text())
    for position, (b, rep) in enumerate(zip(block, reps, strict=True)):
        single = methods.fit(method, rep.rm, rep.truth, rep.q, rep.seed, config, rep.cond.fields)
        jsonschema.validate(b.record, schema)
        assert b.record["block"]["size"] == 2 and b.record["block"]["position"] == position
        assert single.record["block"] is None
        assert b.record["replication"] == rep.cond.rep and b.record["seed"] == rep.seed
        for key in ("steps", "stop_reason", "converged", "accuracy"):
            assert b.record[key] == single.record[key], key
        assert b.record["block"]["left_at_step"] == b.record["steps"]
        assert b.record["final_loss"] == pytest.approx(single.record["final_loss"], rel=1e-5)
        np.testing.assert_allclose(b.estimates["mean"], single.estimates["mean"], atol=1e-3)
        np.testing.assert_allclose(b.estimates["sd"], single.estimates["sd"], atol=1e-3)
        if method == "em":
            assert b.estimates.equals(single.estimates) and b.record["block"]["memory_bytes"] == 0
        else:
            assert len(b.losses) == len(single.losses) == b.record["steps"]
    with pytest.raises(ValueError, match="one design, missingness and method"):
        methods.fit_block([reps[0], replace(reps[1], cond=replace(reps[1].cond, missing="mcar0"))], config)


def test_replications_that_stop_at_different_steps_leave_the_block_each_at_its_own():
    # collapsed VI on data seeds 100, 101 (fit seeds 7, 8) stops by the relative rule at 350 and
    # 400 steps: in the block too, and with the estimates of the single fits (within 1e-3)
    from dataclasses import replace

    train = {"max_steps": 2000, "min_steps": 200, "window": 100, "check_every": 50, "rel_tol": 1e-3, "patience": 2}
    config = replace(default(), collapsed_training=train)
    reps = []
    for r in range(2):
        rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.2, 100 + r, n_persons=100)
        reps.append(methods.Replication(rm, truth, q, conditions.Condition("seed", "mcar20", "collapsed_vi", r), 7 + r))
    block = methods.fit_block(reps, config)
    singles = [methods.fit("collapsed_vi", r.rm, r.truth, r.q, r.seed, config, r.cond.fields) for r in reps]
    assert [b.record["steps"] for b in block] == [s.record["steps"] for s in singles] == [350, 400]
    for b, s in zip(block, singles, strict=True):
        assert b.record["stop_reason"] == s.record["stop_reason"] == "relative_tolerance"
        assert b.record["block"]["left_at_step"] == s.record["steps"]
        np.testing.assert_allclose(b.estimates["mean"], s.estimates["mean"], atol=1e-3)
