"""rb_imputation study: conditions, config errors naming the key, error tables against a reference fit."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bayesirt.config import ConfigError
from bayesirt.studies import base, design_conditions
from bayesirt.studies.rb_imputation import conditions, settings, tables

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(name="test.yaml") -> dict:
    """A shipped config with the schema's defaults filled in, as the workflow sees it."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def test_condition_names_and_parsing():
    study = {"objectives": ["zero_fill", "rao_blackwell", "exact_marginal"], "n_copies": [3, 5]}
    names = conditions.condition_names(study)
    assert names == ["zero_fill", "rao_blackwell_M3", "rao_blackwell_M5", "exact_marginal"]
    assert [conditions.parse_condition(n) for n in names] == [
        ("zero_fill", None),
        ("rao_blackwell", 3),
        ("rao_blackwell", 5),
        ("exact_marginal", None),
    ]


def test_the_objectives_are_those_of_inference_objectives():
    # conditions.py names them without importing inference.variational.objectives (JAX) at parse time
    from bayesirt.inference.variational import objectives

    assert conditions.OBJECTIVES == objectives.NAMES
    assert set(conditions.COPIES) < set(objectives.NAMES)


def test_the_study_loads_and_its_conditions_are_result_folders():
    study = base.load("rb_imputation")
    assert study.name == "rb_imputation" and set(study.methods) == set(conditions.METHODS)
    assert all(
        callable(f) for f in (study.conditions, study.fit, study.aggregate, study.figures, *study.methods.values())
    )
    fits = study.conditions(validated())
    # the reference, then test.yaml's two replications of its four objectives (M = 2)
    assert [f.folder for f in fits] == ["results/rb_imputation/rwa_sim/reference"] + [
        f"results/rb_imputation/rwa_sim/mcar15/{c}/rep{r}"
        for r in (0, 1)
        for c in ("zero_fill", "naive_average_M2", "rao_blackwell_M2", "exact_marginal")
    ]
    methods = ["zero_fill", "naive_average", "rao_blackwell", "exact_marginal"]
    assert [f.method for f in fits] == ["complete", *methods, *methods]
    assert fits[2].n_copies == 2 and fits[1].n_copies is None
    cfg = validated()
    cfg["studies"]["rb_imputation"]["enabled"] = False
    assert study.conditions(cfg) == []
    del cfg["studies"]["rb_imputation"]
    assert study.conditions(cfg) == []


def test_each_missingness_design_of_a_list_has_its_own_masks_and_folders():
    cfg = validated()
    cfg["studies"]["rb_imputation"]["missing"] = ["mcar15", "mar15", "mnar15"]
    settings.check(cfg)
    fits = conditions.conditions(cfg)
    per_design = {m: [f for f in fits if f.missing == m] for m in ("mcar15", "mar15", "mnar15")}
    assert len(fits) == 1 + 3 * 2 * 4 and all(len(f) == 8 for f in per_design.values())
    assert per_design["mnar15"][0].folder == "results/rb_imputation/rwa_sim/mnar15/zero_fill/rep0"
    cfg["studies"]["rb_imputation"]["missing"] = ["mcar15", "mnar0"]
    with pytest.raises(ConfigError, match=r"^config key 'studies.rb_imputation.missing': 'mnar0' — a rate of 0%"):
        settings.check(cfg)


def test_settings_from_the_validated_config():
    cfg = validated()
    s = settings.Settings.from_config(cfg)
    assert s.training["max_steps"] == 300 and s.training["n_draws"] == 1  # test.yaml's, the schema's
    assert s.posterior_draws == 50 and s.n_dimensions == 1 and s.priors == cfg["priors"]
    assert s.block_size == 100  # the schema's default
    study = cfg["studies"]["rb_imputation"]
    assert s.objectives == tuple(study["objectives"]) and s.n_copies == tuple(study["n_copies"])
    assert s.missing == tuple(conditions.missing_designs(study)) and s.stacking == study["stacking"]
    settings.check(cfg)
    cfg["studies"]["rb_imputation"]["missing"] = "mar0"
    with pytest.raises(ConfigError, match=r"^config key 'studies.rb_imputation.missing': 'mar0' — a rate of 0%"):
        settings.check(cfg)


# The study's settings are checked by the config schema alone (one line naming the key),
# before any job runs; these cases were checked by a hand-written parser before.
@pytest.mark.parametrize(
    "bad, message",
    [
        ({"copies": 3}, "config key 'studies.rb_imputation.copies': unknown key"),
        ({"objectives": ["zero_fill", "magic"]}, "config key 'studies.rb_imputation.objectives.1'"),
        ({"n_copies": [0]}, "config key 'studies.rb_imputation.n_copies.0'"),
        ({"n_dimensions": 0}, "config key 'studies.rb_imputation.n_dimensions'"),
        ({"missing": "mcar"}, "config key 'studies.rb_imputation.missing'"),
        ({"missing": ["mcar15", "mcar15"]}, "config key 'studies.rb_imputation.missing'"),
        ({"missing": []}, "config key 'studies.rb_imputation.missing'"),
    ],
)
def test_config_errors_name_the_key(bad, message):
    from bayesirt.config import check

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    config["studies"]["rb_imputation"].update(bad)
    with pytest.raises(ConfigError, match=re.escape(message)):
        check(config, SCHEMA)


def test_replications_of_a_condition_are_fitted_in_blocks_of_the_block_size():
    study = {"replications": 5, "block_size": 2}

    def of(study):
        return {"studies": {"rb_imputation": study}}

    fit = conditions.Condition("rwa_sim", "rao_blackwell_M3", "rao_blackwell", "mcar15", 3, 3)
    assert conditions.condition_blocks(of(study), fit) == [[0, 1], [2, 3], [4]]
    blocks = [design_conditions.block_number(conditions, of(study), replace(fit, rep=r)) for r in range(5)]
    assert blocks == [0, 0, 1, 1, 2]
    assert conditions.condition_blocks(of({**study, "block_size": 100}), fit) == [[0, 1, 2, 3, 4]]  # one block
    assert conditions.condition_blocks(of({**study, "replications": 0}), fit) == []
    assert fit.block_folder(1) == "results/rb_imputation/rwa_sim/mcar15/rao_blackwell_M3/blocks/block1"
    assert (
        design_conditions.fit_folder(conditions, of(study), fit)
        == "results/rb_imputation/rwa_sim/mcar15/rao_blackwell_M3/blocks/block1/rep3"
    )
    with pytest.raises(ValueError, match="alone"):
        conditions.Condition("rwa_sim", "reference", "complete").block_folder(0)
    # test.yaml: its two masks, one block per condition
    assert conditions.condition_blocks(validated(), fit) == [[0, 1]]


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_bad_block_size_names_the_key(bad):
    from bayesirt.config import check

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    config["studies"]["rb_imputation"]["block_size"] = bad
    with pytest.raises(ConfigError, match=re.escape("config key 'studies.rb_imputation.block_size'")) as err:
        check(config, SCHEMA)
    assert "\n" not in str(err.value)


def test_a_block_of_fits_gives_the_records_and_estimates_of_single_fits():
    # three masks (seeds 1-3) of one simulated data set (seed 3), one imputation model, fit
    # seeds 10-12: rao_blackwell with M = 2 in one block against each fitted alone. The masks
    # hide cells of different layouts, so the block pads them (objectives.block_data) and each
    # fit still draws its own imputations: the fits agree up to float32 rounding of the
    # vectorized program (seen: 1e-6); asserted: equal steps, means and sds within 1e-4, ELBO
    # within 1e-5 relative.
    import warnings

    from bayesirt.data import simulate
    from bayesirt.imputation import stacking
    from bayesirt.inference.variational import objectives
    from bayesirt.studies.rb_imputation import data, methods

    rm, truth = simulate.simulate_factorized_grm(3, 80, [3, 3], 4, ["A", "B"])
    masked = [data.mask(rm, "mcar", 0.15, seed)[0] for seed in (1, 2, 3)]
    with warnings.catch_warnings():  # so few Laplace draws fail the PSIS check (a warning)
        warnings.simplefilter("ignore")
        model = stacking.fit(masked[0], stacking.StackingSettings(n_draws=10, newton_steps=5))
        study = settings.Settings.from_config(validated("config.yaml"))
        training = {"max_steps": 150, "min_steps": 50, "check_every": 50, "window": 50, "progress_every": 0}
        config = replace(study, training={**study.training, **training}, posterior_draws=20)
        reps = [
            methods.Replication(
                data.Data(m, truth, model),
                conditions.Condition("sim", "rao_blackwell_M2", "rao_blackwell", "mcar15", r, 2),
                10 + r,
            )
            for r, m in enumerate(masked)
        ]
        extras = [{"y": m.responses, **methods.imputation_extra_data(model, m)} for m in masked]
        assert all(d[objectives.SHARED][objectives.CELLS].padded for d in objectives.block_data(extras))
        block = methods.fit_block(reps, config)
        singles = [
            methods.objective("rao_blackwell", r.data, seed=r.seed, settings=config, n_copies=2, fields=r.fields)
            for r in reps
        ]
    for r, (b, single) in enumerate(zip(block, singles, strict=True)):
        assert b.record["block"]["size"] == 3 and b.record["block"]["position"] == r and single.record["block"] is None
        assert b.record["steps"] == single.record["steps"] and b.record["replication"] == r
        assert (
            b.record["condition"] == "rao_blackwell_M2"
            and b.record["imputation_checks"] == single.record["imputation_checks"]
        )
        assert b.record["elbo"] == pytest.approx(single.record["elbo"], rel=1e-5)
        np.testing.assert_allclose(b.estimates["mean"], single.estimates["mean"], atol=1e-4)
        np.testing.assert_allclose(b.estimates["sd"], single.estimates["sd"], atol=1e-4)
        np.testing.assert_allclose(b.losses["loss"], single.losses["loss"], rtol=1e-5)
    with pytest.raises(ValueError, match="imputation objective"):
        complete = [replace(r, cond=replace(r.cond, condition="complete", method="complete")) for r in reps]
        methods.fit_block(complete, config)
    with pytest.raises(ValueError, match="one condition"):
        methods.fit_block([reps[0], replace(reps[1], cond=replace(reps[1].cond, condition="rao_blackwell_M3"))], config)


def table(values, true=None):
    n = len(values)
    df = pd.DataFrame(
        {
            "parameter": "discrimination",
            "item": np.arange(n),
            "person": -1,
            "scale": ["A"] * (n // 2) + ["B"] * (n - n // 2),
            "category": -1,
            "mean": values,
            "sd": 0.1,
        }
    )
    if true is not None:
        df["true"] = true
    return df


def test_error_table_against_reference_and_truth():
    ref = table([1.0, 2.0, 3.0, 4.0])
    est = table([1.5, 2.0, 3.0, 3.5], true=[1.0, 1.0, 1.0, 1.0])
    e = tables.error_table(est, ref).set_index(["against", "scale"])
    assert e.loc[("complete_data", "all"), "rmse"] == pytest.approx(np.sqrt(0.125))
    assert e.loc[("complete_data", "A"), "bias"] == pytest.approx(0.25)
    assert e.loc[("complete_data", "B"), "bias"] == pytest.approx(-0.25)
    assert e.loc[("truth", "all"), "bias"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="same parameters"):
        tables.error_table(table([1.0, 2.0, 3.0, 4.0, 5.0]), ref)
    agg = tables.across_replications([e.reset_index().assign(objective="x"), e.reset_index().assign(objective="x")])
    assert (agg["n_reps"] == 2).all() and np.allclose(agg["rmse_sd"], 0.0)


def test_reference_figures_on_real_and_simulated_data(tmp_path):
    # real data (no truth): the reference fit's discriminations item by item; simulated: against the truth
    from bayesirt.studies.rb_imputation import figures

    est = pd.concat([table([1.0, 1.2, 0.8, 1.5]), table([0.1, -0.2, 0.3, 0.0]).assign(parameter="ability")])
    loss = {"reference": pd.DataFrame({"step": np.arange(40), "loss": np.linspace(5, 1, 40)})}
    for name, estimates in (("real", est), ("simulated", est.assign(true=1.0))):
        outputs = {"loss_figure": tmp_path / f"{name}_loss.png", "scatter_figure": tmp_path / f"{name}.png"}
        figures.reference_figures(estimates, loss, outputs)
        assert all(p.read_bytes().startswith(b"\x89PNG") for p in outputs.values())
    table_real = tables.recovery(est, "reference")
    assert table_real.empty and list(table_real.columns) == ["fit", *tables.RECOVERY_COLUMNS]
    assert set(tables.recovery(est.assign(true=1.0), "reference")["fit"]) == {"reference"}


def test_the_seed_design_and_objective_run_beside_ours():
    # seed 000: the RWA data "subsampled to 500 persons" under 15% MCAR alone, and its objective
    # at its M = 3 whatever n_copies sweeps
    cfg = validated()
    cfg["datasets"]["rwa_seed"] = {**cfg["datasets"]["rwa_sim"]}
    study = cfg["studies"]["rb_imputation"]
    study.update(seed_dataset="rwa_seed", missing=["mcar15", "mar15"], n_copies=[2, 5])
    study["objectives"] = [*study["objectives"], "rao_blackwell_seed"]
    settings.check(cfg)
    fits = conditions.conditions(cfg)
    assert conditions.datasets(study) == ["rwa_sim", "rwa_seed"]
    seed_fits = [f for f in fits if f.dataset == "rwa_seed"]
    assert seed_fits[0].folder == "results/rb_imputation/rwa_seed/reference"
    assert {f.missing for f in seed_fits[1:]} == {conditions.SEED_MISSING} == {"mcar15"}
    assert {f.missing for f in fits if f.dataset == "rwa_sim" and f.rep is not None} == {"mcar15", "mar15"}
    seed_objective = [f for f in fits if f.method == "rao_blackwell_seed"]
    assert {(f.condition, f.n_copies) for f in seed_objective} == {("rao_blackwell_seed_M3", 3)}
    assert len(seed_objective) == (2 + 1) * 2  # (ours: two designs, seed's: one) x two masks
    assert {f.condition for f in fits if f.method == "rao_blackwell"} == {"rao_blackwell_M2", "rao_blackwell_M5"}
    assert conditions.parse_condition("rao_blackwell_seed_M3") == ("rao_blackwell_seed", 3)
    study["seed_dataset"] = "nowhere"
    with pytest.raises(ConfigError, match=r"^config key 'studies.rb_imputation.seed_dataset': 'nowhere' is not"):
        settings.check(cfg)
    study["seed_dataset"] = "rwa_sim"
    with pytest.raises(ConfigError, match="is the study's dataset already"):
        settings.check(cfg)


def test_the_paper_config_fits_the_seed_design_on_500_of_the_rwa_persons():
    cfg = validated("paper.yaml")
    study = cfg["studies"]["rb_imputation"]
    settings.check(cfg)
    seed = cfg["datasets"][study["seed_dataset"]]
    assert seed["source"] == "rwa" and seed["subsample"] == 500
    assert {k: seed[k] for k in ("url", "member", "reorient")} == {
        k: cfg["datasets"][study["dataset"]][k] for k in ("url", "member", "reorient")
    }
    assert "rao_blackwell_seed" in study["objectives"] and "rao_blackwell_batch" in study["objectives"]


RWA_FILE = ROOT.parent / "shared" / "data" / "RWAS" / "data.csv"  # beside the checkout (CI too)


@pytest.mark.skipif(not RWA_FILE.is_file(), reason="the RWA test copy is not beside the checkout")
def test_a_subsample_keeps_persons_drawn_without_replacement_in_their_order():
    # seed 000's design: 500 of the 9,881 RWA persons, 22 items of 9 categories
    from bayesirt.data import rwa, subsample

    rm = rwa.load(RWA_FILE)
    y = rm.responses
    sub = subsample.persons(rm, 500, 0)
    rows = np.asarray(sub.attrs["subsample"]["rows"])
    assert sub.responses.shape == (500, 22) and list(sub.n_categories) == [9] * 22
    assert len(set(rows)) == 500 and (np.diff(rows) > 0).all()
    np.testing.assert_array_equal(sub.responses, y[rows])
    assert sub.attrs["source"] == "rwa" and sub.attrs["subsample"]["of"] == 9881
    np.testing.assert_array_equal(subsample.persons(rm, 500, 0).responses, sub.responses)  # seeded
    assert not np.array_equal(subsample.persons(rm, 500, 1).attrs["subsample"]["rows"], rows)
    with pytest.raises(
        ValueError, match=r"^config key 'datasets.x.subsample': 10000 persons asked, the data set has 9881$"
    ):
        subsample.persons(rm, 10_000, 0, where="datasets.x.subsample")
