"""The amortized_ifa study package: the fits of a config, its settings and checks, simulated
data, estimates tables, aggregation (Table 1 stability, per-parameter MSE), and one tiny
end-to-end fit whose record follows the schema."""

import copy
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from snakemake.utils import validate

from bayesirt.config import ConfigError
from bayesirt.models import mgrm
from bayesirt.studies import base, design_conditions
from bayesirt.studies.amortized_ifa import conditions, data, methods, seed_methods, settings, tables
from bayesirt.tables import mgrm_table

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
TINY = {"batch_size": 30, "max_steps": 20, "min_steps": 10, "check_every": 10, "window": 10, "progress_every": 0}


def test_config(**designs) -> dict:
    """config/test.yaml (with these amortized_ifa designs, if any) validated with the schema's
    defaults filled in, as the workflow sees it."""
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    if designs:
        cfg["studies"]["amortized_ifa"]["designs"] = copy.deepcopy(designs)
    validate(cfg, str(SCHEMAS / "config.schema.yaml"), set_default=True)
    return cfg


test_config.__test__ = False  # a helper, not a test


def design(**values) -> settings.Design:
    """The settings of one design given by some of its keys (the others: the schema's defaults)."""
    return settings.Settings.from_config(test_config(x=values)).design("x")


def one_design(d: settings.Design, evaluation: settings.Evaluation) -> settings.Settings:
    """The study's settings with the one design ``d`` (what ``methods.fit_block`` reads)."""
    return settings.Settings(enabled=True, methods=("iwae",), evaluation=evaluation, designs=(d,))


def test_the_study_loads_and_its_conditions_are_the_fits_of_the_test_config():
    study = base.load("amortized_ifa")
    assert all(callable(f) for f in (study.conditions, study.fit, study.aggregate, study.figures))
    offered = set(conditions.METHODS) | set(seed_methods.SEED_METHODS)
    assert set(study.methods) == offered and all(callable(f) for f in study.methods.values())
    fits = study.conditions(test_config())
    # normal: two replications per method, mixture_p1 one; ipip: P = 1 and 2 of the scree per method
    assert len(fits) == 10 and all(f.folder.startswith("results/amortized_ifa/") for f in fits)
    assert {f.method for f in fits} == {"iwae", "iwavb"}
    assert fits[0].folder == "results/amortized_ifa/normal/iwae_P4_R5/rep0"
    disabled = test_config()
    disabled["studies"]["amortized_ifa"]["enabled"] = False
    assert conditions.conditions(disabled) == []
    # a design may name its own methods (how the paper-scale run leaves IWAVB out of a design)
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["amortized_ifa"]["designs"]["ipip"]["methods"] = ["iwae"]
    validate(cfg, str(SCHEMAS / "config.schema.yaml"), set_default=True)
    fits = conditions.conditions(cfg)
    assert {f.method for f in fits if f.design == "ipip"} == {"iwae"} and len(fits) == 8
    assert {f.method for f in fits if f.design != "ipip"} == {"iwae", "iwavb"}


def test_parse_time_modules_use_the_standard_library_only():
    code = (
        "import sys; from bayesirt.studies.amortized_ifa import conditions, settings; "
        "print(sorted(m for m in ('numpy', 'pandas', 'jax', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_design_fits_confirmatory_and_exploratory():
    conf = {"analysis": "confirmatory", "preset": "normal_p5", "replications": 2, "importance_samples": [15, 25]}
    specs = conditions.design_fits("normal", conf)
    assert len(specs) == 2 * 2 * 2 and {s.n_factors for s in specs} == {5}
    assert specs[0].condition == "iwae_P5_R15"
    expl = {
        "analysis": "exploratory",
        "replications": 3,
        "importance_samples": [25],
        "factors": [1, 2],
        "repeat_factors": 5,
    }
    specs = conditions.design_fits("ipip", expl, methods=("iwavb",))
    # replication 0 of every P of the scree (plus the repeat P), repeats 1..2 at P = 5
    assert sorted((s.n_factors, s.rep) for s in specs) == [(1, 0), (2, 0), (5, 0), (5, 1), (5, 2)]
    assert conditions.data_replication(expl, 2) == 0 and conditions.data_replication(conf, 2) == 2


def test_replications_of_a_condition_are_fitted_in_blocks_of_the_design_block_size():
    conf = {"analysis": "confirmatory", "preset": "normal_p5", "replications": 5, "importance_samples": [15]}
    spec = conditions.Condition("normal", "iwae", 5, 15, 3)

    def of(name, design):
        return {"studies": {"amortized_ifa": {"designs": {name: design}}}}

    assert conditions.condition_blocks(of("normal", {**conf, "block_size": 2}), spec) == [[0, 1], [2, 3], [4]]
    assert design_conditions.block_number(conditions, of("normal", {**conf, "block_size": 2}), spec) == 1
    assert conditions.condition_blocks(of("normal", {**conf, "block_size": 100}), spec) == [[0, 1, 2, 3, 4]]
    assert spec.block_folder(1) == "results/amortized_ifa/normal/iwae_P5_R15/blocks/block1"
    # exploratory: the scree's P have replication 0 alone; the repeat P all replications
    expl = {"analysis": "exploratory", "replications": 3, "importance_samples": [25], "factors": [1, 2]}
    expl |= {"repeat_factors": 2, "block_size": 2}
    scree, repeat = conditions.Condition("ipip", "iwae", 1, 25, 0), conditions.Condition("ipip", "iwae", 2, 25, 0)
    assert conditions.condition_blocks(of("ipip", expl), scree) == [[0]]
    assert conditions.condition_blocks(of("ipip", expl), repeat) == [[0, 1], [2]]


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_bad_block_size_names_the_key(bad):
    from bayesirt.config import check

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    config["studies"]["amortized_ifa"] = {"designs": {"x": {"preset": "normal_p5", "n_persons": 50, "block_size": bad}}}
    with pytest.raises(ConfigError, match=re.escape("config key 'studies.amortized_ifa.designs.x.block_size'")):
        check(config, SCHEMAS / "config.schema.yaml")


def test_simulate_design_holds_out_persons_and_is_seeded():
    d = design(preset="mixture_p1", n_persons=40)
    train, hold, truth = data.simulate_design(d, 3, 0.25)
    assert train.n_persons == 40 and hold.n_persons == 10
    ab = truth[truth.parameter == "ability"]
    assert ab.person.max() == 39 and len(ab) == 40
    again = data.simulate_design(d, 3, 0.25)
    assert np.array_equal(train.responses, again[0].responses) and np.array_equal(hold.responses, again[1].responses)


def test_the_simulation_reads_only_its_keys_the_rerun_trigger_of_its_job():
    # the simulation job's params keep conditions.SIMULATION_KEYS alone, so a design whose
    # methods, training and importance samples change must simulate the same data
    base = {"preset": "mixture_p1", "n_persons": 40, "simulate": {"standardize_mixture": False}}
    other = {
        **base,
        "methods": ["iwae_seed"],
        "importance_samples": [5, 10],
        "training": {"max_steps": 7, "batch_size": 16},
        "iwae": {"hidden": [8], "learning_rate": 0.01},
        "seed_training": {"half_cycle": 3},
    }
    assert set(base) == set(conditions.SIMULATION_KEYS)
    (a, ha, ta), (b, hb, tb) = (data.simulate_design(design(**v), 5, 0.25, parameter_seed=2) for v in (base, other))
    assert np.array_equal(a.responses, b.responses) and np.array_equal(ha.responses, hb.responses) and ta.equals(tb)


def test_replications_share_the_true_item_parameters_of_their_design():
    d = design(preset="normal_p5", n_persons=60)
    (a, _, ta), (b, _, tb) = (data.simulate_design(d, rep, 0.25, parameter_seed=9) for rep in (1, 2))
    items = ["loading", "intercept", "factor_corr"]
    pa, pb = (t[t.parameter.isin(items)].reset_index(drop=True) for t in (ta, tb))
    assert len(pa) > 0 and pa.equals(pb)
    assert not np.array_equal(a.responses, b.responses)
    _, _, other = data.simulate_design(d, 1, 0.25, parameter_seed=10)
    assert not other[other.parameter == "loading"]["value"].equals(ta[ta.parameter == "loading"]["value"])


def test_estimates_of_the_true_parameters_recover_exactly(schema):
    train, _, truth = data.simulate_design(design(preset="bench_p4", n_persons=30), 1, 0.2)
    st = methods.model_structure(train, 4, "confirmatory")
    lam, ints, corr, info = methods.item_estimates(mgrm.truth_params(st, truth), st, train, "confirmatory", truth)
    est = methods.estimates_table(train, lam, ints, corr, None, truth)
    rec = methods.recovery_metrics(est)
    assert rec["loading_mse"] < 1e-10 and rec["intercept_mse"] < 1e-10 and rec["factor_corr_mse"] < 1e-10
    assert info["rotation"] is None
    assert (
        set(est.parameter) == {"loading", "intercept", "factor_corr"}
        and est.loc[est.parameter == "loading", "sd"].isna().all()
    )
    for row in est.to_dict("records"):
        schema("estimates").validate(row)


def test_exploratory_estimates_are_rotated_and_aligned_to_the_truth():
    train, _, truth = data.simulate_design(
        design(preset="bench_p4", n_persons=30, simulate={"lkj_concentration": 20.0}), 2, 0.2
    )
    st = methods.model_structure(train, 4, "exploratory")
    lam_t = methods.truth_matrix(truth, "loading", (12, 4))
    # an orthogonal solution equivalent to the truth: rotate, permute and reflect its factors
    corr_t = np.asarray(
        mgrm.factor_corr(
            mgrm.truth_params(methods.model_structure(train, 4, "confirmatory"), truth),
            methods.model_structure(train, 4, "confirmatory"),
        )
    )
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))
    a = lam_t @ np.linalg.cholesky(corr_t) @ q
    cuts = -np.stack([truth[(truth.parameter == "intercept") & (truth.item == j)].value.to_numpy() for j in range(12)])
    params = mgrm.params_from_natural(st, a[:, [2, 0, 3, 1]] * [1, -1, 1, 1], cuts)
    lam, ints, corr, info = methods.item_estimates(params, st, train, "exploratory", truth)
    assert info["rotation"] == "geomin" and info["aligned_to"] == "truth"
    assert min(info["congruence_with_truth"]) > 0.95
    assert np.allclose(ints, -cuts, atol=1e-5)


def fake_estimates(lam, ints, corr):
    return mgrm_table({"loading": lam, "intercept": list(ints), "factor_corr": corr}, value_column="mean")


def test_stability_table_compares_repeats_with_the_best_likelihood_fit():
    rng = np.random.default_rng(0)
    lam, ints = np.abs(rng.normal(size=(10, 2))), np.sort(rng.normal(size=(10, 3)), 1)  # reflected (sums > 0)
    corr = np.array([[1.0, 0.3], [0.3, 1.0]])
    est = {
        ("iwae", 2, 5, 0): fake_estimates(lam, ints, corr),
        # the same solution with the factors swapped and one reflected: equivalent
        ("iwae", 2, 5, 1): fake_estimates(lam[:, ::-1] * [-1, 1], ints, np.array([[1.0, -0.3], [-0.3, 1.0]])),
        ("iwae", 2, 5, 2): fake_estimates(lam + 0.1, ints + 0.2, corr),
    }
    fits = pd.DataFrame(
        {
            "method": "iwae",
            "n_factors": 2,
            "importance_samples": 5,
            "rep": [0, 1, 2],
            "loglik_independent": [-10.0, -11.0, -12.0],
        }
    )
    per, summary = tables.stability_table(est, fits, 2)
    per = per.set_index("rep")
    assert (per["reference_rep"] == 0).all()
    assert per.loc[1, "loading_rmse"] == pytest.approx(0.0, abs=1e-12)
    assert per.loc[1, "covariance_rmse"] == pytest.approx(0.0, abs=1e-12)
    assert per.loc[2, "loading_rmse"] == pytest.approx(0.1) and per.loc[2, "intercept_rmse"] == pytest.approx(0.2)
    assert summary.loc[0, "n_compared"] == 2 and summary.loc[0, "intercept_rmse_mean"] == pytest.approx(0.1)


def test_parameter_mse_is_eq_29_over_replications():
    lam, ints, corr = np.ones((4, 1)), np.zeros((4, 2)), np.eye(1)
    frames = {}
    for rep, shift in enumerate((0.1, 0.3)):
        e = fake_estimates(lam + shift, ints, corr)
        e["true"] = fake_estimates(lam, ints, corr)["mean"]
        frames[("iwavb", 1, 30, rep)] = e
    mse = tables.parameter_mse(frames)
    loading = mse[mse.parameter == "loading"]
    assert np.allclose(loading["mse"], (0.1**2 + 0.3**2) / 2) and np.allclose(loading["bias"], 0.2)
    assert (mse["n_reps"] == 2).all()


def test_method_and_training_settings_from_a_design():
    d = design(
        preset="mixture_p1",
        n_persons=50,
        iwae={"hidden": [8, 4], "learning_rate": 0.02},
        training={"max_steps": 10, "lr_floor": 0.5},
    )
    assert d.iwae.hidden == (8, 4) and d.iwae.learning_rate == 0.02 and d.iwavb.discriminator_hidden == (256, 128)
    s = methods.train_settings(d.training, 0.02)
    assert s.learning_rate == 0.02 and s.min_learning_rate == pytest.approx(0.01) and s.max_steps == 10
    assert s.lr_decay_steps == 2000  # the schema's default, not the driver's
    assert set(methods.METHODS) == set(conditions.METHODS) | set(seed_methods.SEED_METHODS)


def test_settings_hold_every_key_of_the_schema():
    defs = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())["$defs"]
    for name, cls in (
        ("ifa_training", settings.Training),
        ("ifa_iwae", settings.IWAE),
        ("ifa_iwavb", settings.IWAVB),
        ("ifa_seed_training", settings.SeedTraining),
        ("ifa_iwae_seed", settings.IWAESeed),
        ("ifa_iwavb_seed", settings.IWAVBSeed),
    ):
        assert set(defs[name]["properties"]) == {f.name for f in dataclasses.fields(cls)}, name
    evaluation = {f.name for f in dataclasses.fields(settings.Evaluation)}
    assert evaluation <= set(defs["amortized_ifa"]["properties"])


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            {"preset": "ipip", "n_persons": 50, "dataset": "rwa_sim"},
            "config key 'studies.amortized_ifa.designs.x': give either preset (simulated data) or dataset (real data), "
            "not both",
        ),
        (
            {"dataset": "rwa_sim", "analysis": "exploratory"},
            "config key 'studies.amortized_ifa.designs.x.dataset': 'rwa_sim' is not a data set with held-out persons",
        ),
        (
            {"dataset": "ipip_ffm"},
            "config key 'studies.amortized_ifa.designs.x.n_factors': "
            "a confirmatory fit of a real data set needs n_factors",
        ),
    ],
)
def test_design_data_errors_name_the_key(bad, message):
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["datasets"]["ipip_ffm"] = {"source": "ipip_ffm", "url": "https://example.org/ipip.zip"}
    cfg["studies"]["amortized_ifa"]["designs"] = {"x": bad}
    validate(cfg, str(SCHEMAS / "config.schema.yaml"), set_default=True)
    with pytest.raises(ConfigError, match=re.escape(message)):
        settings.check(cfg)
    settings.check(test_config())  # the test config passes


# A design's method and training settings are checked by the config schema alone, before
# any job runs (they were checked by hand-written code in the study before).
@pytest.mark.parametrize(
    "bad, message",
    [
        ({"iwavb": {"hidden": [8]}}, "config key 'studies.amortized_ifa.designs.x.iwavb.hidden': unknown key"),
        ({"training": {"steps": 3}}, "config key 'studies.amortized_ifa.designs.x.training.steps': unknown key"),
    ],
)
def test_design_settings_errors_name_the_key(bad, message):
    from bayesirt.config import ConfigError, check

    root = Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "config" / "test.yaml").read_text())
    config["studies"]["amortized_ifa"] = {"designs": {"x": {"preset": "mixture_p1", "n_persons": 50, **bad}}}
    with pytest.raises(ConfigError, match=re.escape(message)):
        check(config, root / "workflow" / "schemas" / "config.schema.yaml")
    config["studies"]["amortized_ifa"]["methods"] = ["vae"]
    with pytest.raises(ConfigError, match="config key 'studies.amortized_ifa.methods.0'"):
        check(config, root / "workflow" / "schemas" / "config.schema.yaml")


def test_latent_density_of_the_mixture_integrates_to_one():
    _, density = tables.latent_tables({}, design(preset="mixture_p1", n_persons=50), {"latent_scale_divisor": 1.43})
    assert density["latent"].iloc[0] == "mixture"
    assert np.trapezoid(density["density"], density["x"]) == pytest.approx(1.0, abs=1e-3)


# slow (14 s): in CI the workflow test validates every amortized_ifa record of the test config
@pytest.mark.slow
@pytest.mark.parametrize("method", ["iwae", "iwavb"])
def test_tiny_fit_writes_a_valid_record(method):
    d = design(
        analysis="confirmatory",
        preset="mixture_p1",
        n_persons=60,
        training=TINY,
        iwae={"hidden": [8]},
        iwavb={"encoder_hidden": 8, "noise_hidden": [4], "discriminator_hidden": [8]},
    )
    train, hold, truth = data.simulate_design(d, 0, 0.25)
    spec = conditions.Condition("tiny", method, 1, 3, 0)
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=20, posterior_draws=5)
    out = methods.fit(train, hold, truth, spec, d, evaluation, seed=1)
    assert isinstance(out, base.MethodResult)
    rec = out.record
    jsonschema.validate(rec, yaml.safe_load((SCHEMAS / "fit_record.schema.yaml").read_text()))
    assert rec["condition"] == f"{method}_P1_R3" and rec["heldout_loglik"]["independent_method"] == "quadrature"
    assert np.isfinite(rec["heldout_loglik"]["own_proposal"]) and rec["steps"] == 20
    ab = out.estimates[out.estimates.parameter == "ability"]
    assert len(ab) == 60 and (ab["sd"] > 0).all() and ab["true"].notna().all()


def test_a_block_of_fits_gives_the_records_and_estimates_of_single_fits():
    d = design(
        analysis="confirmatory",
        preset="mixture_p1",
        n_persons=60,
        training=TINY,
        iwae={"hidden": [8]},
    )
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=20, posterior_draws=5)
    reps = []
    for r in range(3):
        train, hold, truth = data.simulate_design(d, r, 0.25)
        reps.append(methods.Replication(train, hold, truth, conditions.Condition(d.name, "iwae", 1, 3, r), 10 + r))
    block = methods.fit_block(reps, one_design(d, evaluation))
    for b, rep in zip(block, reps, strict=True):
        single = methods.fit(rep.train, rep.holdout, rep.truth, rep.cond, d, evaluation, seed=rep.seed)
        assert b.record["block"]["size"] == 3 and single.record["block"] is None
        assert b.record["steps"] == single.record["steps"] and b.record["replication"] == rep.cond.rep
        for key in ("own_proposal", "independent"):  # float32 rounding of the vectorized fit only
            assert b.record["heldout_loglik"][key] == pytest.approx(single.record["heldout_loglik"][key], abs=1e-3)
        np.testing.assert_allclose(b.estimates["mean"], single.estimates["mean"], atol=1e-3)


# slow (about 20 s: two worker processes start and compile): CI runs the one-process path above
@pytest.mark.slow
def test_a_block_in_worker_processes_gives_the_records_of_one_process(monkeypatch):
    d = dataclasses.replace(
        design(analysis="confirmatory", preset="mixture_p1", n_persons=60, training=TINY, iwae={"hidden": [8]}),
        fits_per_program=2,
    )
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=20, posterior_draws=5)
    reps = []
    for r in range(3):
        train, hold, truth = data.simulate_design(d, r, 0.25)
        reps.append(methods.Replication(train, hold, truth, conditions.Condition(d.name, "iwae", 1, 3, r), 10 + r))
    study = one_design(d, evaluation)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the job's threads, as Snakemake hands them over
    here = methods.fit_block(reps, study)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    workers = methods.fit_block(reps, study)
    for h, w in zip(here, workers, strict=True):  # the same groups: the same bits
        assert w.record["timing"]["block_processes"] == 2 and h.record["timing"]["block_processes"] == 1
        assert w.record["block"] == h.record["block"] and w.record["block"]["width"] == 2
        assert {k: v for k, v in w.record.items() if k != "timing"} == {
            k: v for k, v in h.record.items() if k != "timing"
        }
        pd.testing.assert_frame_equal(w.estimates, h.estimates)
