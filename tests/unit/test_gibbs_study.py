"""The gibbs_2pno study: conditions from a config, config errors naming the key, the study's
shape (``studies.base.load``), and one tiny fit whose record and estimates follow the result
schemas."""

import copy
from pathlib import Path

import jax
import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml

from bayesirt.config import ConfigError, check
from bayesirt.studies import base, design_conditions
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.gibbs_2pno import conditions, settings

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


def validated(cfg: dict) -> dict:
    """A config as the workflow sees it: schema-checked, defaults filled in, the study checked."""
    from snakemake.utils import validate

    cfg = copy.deepcopy(cfg)
    check(cfg, SCHEMAS / "config.schema.yaml")
    validate(cfg, str(SCHEMAS / "config.schema.yaml"), set_default=True)
    settings.check(cfg)
    return cfg


def config_yaml(name="test.yaml") -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def with_study(study: dict) -> dict:
    """The test config with this gibbs_2pno section, validated."""
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"] = study
    return validated(cfg)


def study(**design):
    return {
        "methods": list(conditions.METHODS),
        "designs": {
            "a": {"n_persons": 100, "n_items": 10, "missing": ["mcar0", "mcar20"], "replications": 2},
            "b": {"n_persons": 50, "n_items": 5, "missing": ["mcar10"], "replications": 1, **design},
        },
    }


def test_conditions_are_designs_x_missing_x_methods_x_replications():
    conds = conditions.conditions(with_study(study(nuts=True)))
    # the mixture example closes the list
    assert conds[-1] == conditions.MixtureCondition() and conds[-1].folder == "results/gibbs_2pno/mixture/fit"
    conds = conds[:-1]
    # a: mcar0 -> gibbs and gibbs_seed (omit is the same sampler without missing cells), mcar20 ->
    # gibbs, gibbs_omit, gibbs_seed; b: all four
    assert len(conds) == 2 * (2 + 3) + 4
    assert conditions.Condition("b", "mcar10", "nuts", 0) in conds
    assert not any(c.design == "a" and c.method == "nuts" for c in conds)
    assert not any(c.missing == "mcar0" and c.method == "gibbs_omit" for c in conds)
    assert conds[0].folder == "results/gibbs_2pno/a/mcar0/gibbs/rep0"
    assert conditions.design_conditions(with_study(study(nuts=True)), "b") == [
        conditions.Condition("b", "mcar10", m, 0) for m in conditions.METHODS
    ]
    assert conditions.conditions(with_study({**study(), "enabled": False})) == []
    no_mixture = conditions.conditions(with_study({**study(), "mixture": {"enabled": False}}))
    assert no_mixture == conditions.design_conditions(with_study(study())) and len(no_mixture) == 2 * 5 + 3
    off = config_yaml()
    del off["studies"]["gibbs_2pno"]
    assert conditions.conditions(validated(off)) == []
    with pytest.raises(ValueError, match="'random20' is not"):
        parse_missing("random20")


def test_the_study_has_the_shape_of_every_study():
    study = base.load("gibbs_2pno")
    assert all(callable(f) for f in (study.conditions, study.fit, study.aggregate, study.figures))
    assert set(study.methods) == set(conditions.METHODS) | {conditions.MIXTURE_METHOD}
    assert all(callable(f) for f in study.methods.values())
    conds = study.conditions(validated(config_yaml()))
    assert conds and all(c.folder.startswith("results/gibbs_2pno/") for c in conds)
    assert {c.method for c in conds} == {"gibbs", "gibbs_omit", "gibbs_mixture"}


def test_settings_are_read_from_the_validated_config():
    cfg = validated(config_yaml())
    s = settings.Settings.from_config(cfg)
    assert (s.gibbs.n_chains, s.gibbs.n_warmup, s.gibbs.n_samples, s.gibbs.chunk, s.gibbs.chain_processes) == (
        2,
        200,
        300,
        100,
        2,
    )
    assert s.nuts == settings.Sampler(4, 500, 1000, 1, 500, 1)  # the schema's defaults
    assert s.mixture.sampler.n_samples == 500 and s.mixture.n_women == 300 and s.mixture.priors["nu"] == 170.0
    assert s.priors == {
        "ability_mean": 0.0,
        "ability_var": 1.0,
        "difficulty_mean": 0.0,
        "difficulty_var": 1.0,
        "discrimination_mean": 0.0,
        "discrimination_var": 1.0,
    }
    assert settings.fit_threads(cfg, "gibbs") == 2 and settings.fit_threads(cfg, "nuts") == 1


def test_config_errors_name_the_key():
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["priors"] = {"discrimination_var": 0.0}
    with pytest.raises(ConfigError, match="discrimination_var"):
        validated(cfg)
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["priors"] = {"theta_sd": 1.0}
    with pytest.raises(ConfigError, match="config key 'studies.gibbs_2pno.priors.theta_sd': unknown key"):
        validated(cfg)
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["n_itemz"] = 3
    with pytest.raises(ConfigError, match="n_itemz"):
        validated(cfg)
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["methods"] = ["gibbs", "metropolis"]
    with pytest.raises(ConfigError, match="methods"):
        validated(cfg)
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["missing"] = ["mcar90", "mcar95"]
    with pytest.raises(ConfigError, match=r"^config key 'studies.gibbs_2pno.designs.tiny.missing.1': 'mcar95' — "):
        validated(cfg)
    validated(config_yaml())


@pytest.mark.slow  # compile-bound (~50 s); the workflow test checks the same schemas on its Gibbs fits
def test_tiny_fit_follows_the_result_schemas(schema):
    from bayesirt.studies.gibbs_2pno import data, methods

    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["gibbs"] = {"n_chains": 2, "n_warmup": 20, "n_samples": 30, "chunk": 25}
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"] = {"n_persons": 40, "n_items": 4}
    cfg = validated(cfg)
    rm, truth = data.simulate_condition(cfg["studies"]["gibbs_2pno"]["designs"]["tiny"], "mcar20", 3, missing_seed=4)
    assert 0.15 < np.mean(rm.responses == -1) < 0.25
    cond = conditions.Condition("t", "mcar20", "gibbs_omit", 0)
    out = methods.fit(rm, truth, cond, settings.Settings.from_config(cfg), seed=5)
    rec = out.record
    jsonschema.validate(rec, yaml.safe_load((SCHEMAS / "fit_record.schema.yaml").read_text()))
    assert rec["steps"] == 50 and rec["n_chains"] == 2 and rec["timing"]["item_min_ess_per_second"] > 0
    for row in out.estimates.to_dict("records"):
        schema("estimates").validate(row)
    est = out.estimates
    assert len(est) == 4 + 4 + 40 and est["true"].notna().all()
    assert (est["q5"] <= est["mean"]).all() and (est["mean"] <= est["q95"]).all()
    assert set(out.idata.posterior.data_vars) == {"discrimination", "difficulty", "ability"}


def test_an_unknown_method_is_refused():
    from bayesirt.studies.gibbs_2pno import methods

    with pytest.raises(ValueError, match="method 'metropolis' is not known"):
        methods.fit(None, None, conditions.Condition("t", "mcar0", "metropolis", 0), None, seed=0)


def test_real_data_design_fits_a_prepared_binary_data_set():
    from bayesirt.io import Item, ResponseMatrix
    from bayesirt.studies.gibbs_2pno import data

    rng = np.random.default_rng(0)
    y = (rng.uniform(size=(60, 5)) < 0.6).astype(np.int16)
    y[rng.uniform(size=y.shape) < 0.2] = -1  # natural missing cells
    rm = ResponseMatrix(y, [Item(f"q{j}", 2) for j in range(5)], {"source": "table"})
    out, truth = data.observed_condition(rm, "mcar10", missing_seed=1, where="survey.csv")
    assert truth.empty and list(truth.columns)[:2] == ["parameter", "item"]
    assert out.attrs["natural_missing_rate"] == pytest.approx(np.mean(y == -1))
    # the extra 10% of all cells is hidden among the observed ones
    assert np.mean(out.responses == -1) == pytest.approx(np.mean(y == -1) + 0.1, abs=0.01)
    # both treatments of missing cells are fitted on real data, even with no extra missingness
    cfg = config_yaml()
    cfg["datasets"]["gss"] = {"source": "table", "file": "gss.csv", "items": ["a", "b"]}
    cfg["studies"]["gibbs_2pno"]["designs"] = {"gss": {"dataset": "gss", "missing": ["mcar0"]}}
    conds = conditions.design_conditions(validated(cfg))
    assert [c.method for c in conds] == ["gibbs", "gibbs_omit"]
    bad = ResponseMatrix(np.where(y == 1, 2, y), [Item(f"q{j}", 3) for j in range(5)], {})  # 3-category items
    with pytest.raises(ValueError, match=r"survey.csv: code 2 at person \d+, item 'q\d' is not binary"):
        data.observed_condition(bad, "mcar0", missing_seed=1, where="survey.csv")


def test_real_data_design_must_name_a_known_dataset():
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["designs"]["survey"] = {"dataset": "nope"}
    with pytest.raises(ConfigError, match="studies.gibbs_2pno.designs.survey.dataset': 'nope' is not one of"):
        validated(cfg)
    cfg["studies"]["gibbs_2pno"]["designs"]["survey"] = {"dataset": "x", "n_persons": 10, "n_items": 3}
    with pytest.raises(ConfigError, match="survey"):
        validated(cfg)


def test_recovery_figure_of_real_data_sets_one_fit_against_another():
    from bayesirt.studies.gibbs_2pno import figures

    rows = [
        {
            "parameter": p,
            "item": j if p != "ability" else -1,
            "person": j if p == "ability" else -1,
            "mean": 0.1 * j,
            "q5": 0.1 * j - 0.2,
            "q95": 0.1 * j + 0.2,
        }
        for p in ("discrimination", "difficulty", "ability")
        for j in range(4)
    ]
    est = pd.DataFrame(rows)
    fig = figures.recovery(est, est.assign(mean=est["mean"] + 0.01), "gibbs_omit")
    assert fig.axes[0].get_xlabel() == "posterior mean, gibbs_omit" and "no true values" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no true values and no reference"):
        figures.recovery(est)


def test_real_data_example_config_passes_the_schema():
    cfg = validated(config_yaml("examples/gss_abortion.yaml"))
    assert conditions.conditions(cfg)[0].design == "gss"
    assert not conditions.mixture_on(cfg)


def test_replications_of_a_condition_are_fitted_in_blocks_of_the_design_block_size():
    cond = conditions.Condition("a", "mcar20", "gibbs", 3)

    def of(design):
        return {"studies": {"gibbs_2pno": {"designs": {"a": design}}}}

    assert conditions.condition_blocks(of({"replications": 5, "block_size": 2}), cond) == [[0, 1], [2, 3], [4]]
    assert design_conditions.block_number(conditions, of({"replications": 5, "block_size": 2}), cond) == 1
    assert conditions.condition_blocks(of({"replications": 5, "block_size": 100}), cond) == [[0, 1, 2, 3, 4]]
    assert cond.block_folder(1) == "results/gibbs_2pno/a/mcar20/gibbs/blocks/block1"
    assert (
        design_conditions.fit_folder(conditions, of({"replications": 5, "block_size": 2}), cond)
        == "results/gibbs_2pno/a/mcar20/gibbs/blocks/block1/rep3"
    )
    cfg = with_study(study(block_size=3))
    assert cfg["studies"]["gibbs_2pno"]["designs"]["a"]["block_size"] == 100  # the default
    s = settings.Settings.from_config(cfg)
    assert (s.block_size("a"), s.block_size("b")) == (100, 3)
    assert settings.block_key("b") == "studies.gibbs_2pno.designs.b.block_size"


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_bad_block_size_names_the_key(bad):
    cfg = config_yaml()
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["block_size"] = bad
    with pytest.raises(ConfigError, match=r"^config key 'studies.gibbs_2pno.designs.tiny.block_size': [^\n]*$"):
        check(cfg, SCHEMAS / "config.schema.yaml")


def _block_setup(method, n_reps=2, **sampler):
    """A tiny design's replications (data seeds 3, 4, ...; fit seeds 5, 6, ...) and settings."""
    from bayesirt.studies.gibbs_2pno import data, methods

    cfg = config_yaml()
    gibbs = {"n_chains": 2, "n_warmup": 25, "n_samples": 50, "chunk": 25, "chain_processes": 1, **sampler}
    cfg["studies"]["gibbs_2pno"]["gibbs"] = gibbs
    cfg["studies"]["gibbs_2pno"]["nuts"] = {"n_chains": 2, "n_warmup": 30, "n_samples": 30}
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"] = {"n_persons": 40, "n_items": 4, "replications": n_reps}
    cfg = validated(cfg)
    design = cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]
    reps = []
    for r in range(n_reps):
        rm, truth = data.simulate_condition(design, "mcar20", 3 + r, missing_seed=10 + r)
        reps.append(methods.Replication(rm, truth, conditions.Condition("tiny", "mcar20", method, r), 5 + r))
    return reps, settings.Settings.from_config(cfg)


def _assert_block_matches_single_fits(block, reps, s, atol):
    from bayesirt.studies.gibbs_2pno import methods

    record_schema = yaml.safe_load((SCHEMAS / "fit_record.schema.yaml").read_text())
    for position, (out, rep) in enumerate(zip(block, reps, strict=True)):
        single = methods.fit(rep.responses, rep.truth, rep.cond, s, seed=rep.seed)
        rec = out.record
        jsonschema.validate(rec, record_schema)
        assert single.record["block"] is None and rec["settings"]["block_size"] == 100
        assert {k: rec["block"][k] for k in ("size", "position")} == {"size": len(reps), "position": position}
        assert rec["block"]["left_at_step"] == rec["steps"] == single.record["steps"]
        assert rec["timing"]["block_wall_seconds"] > 0 and rec["replication"] == rep.cond.rep
        assert rec["converged"] == single.record["converged"]
        for name in ("discrimination", "difficulty", "ability"):
            np.testing.assert_allclose(
                out.idata.posterior[name].values, single.idata.posterior[name].values, rtol=0, atol=atol
            )
        pd.testing.assert_frame_equal(out.estimates, single.estimates, rtol=0, atol=atol)
        for key in ("ability_rmse", "discrimination_rmse", "difficulty_coverage_90"):
            assert rec["evaluation"][key] == pytest.approx(single.record["evaluation"][key], abs=atol)


def test_a_block_of_gibbs_fits_gives_the_draws_records_and_estimates_of_single_fits():
    """Two replications of a 40 x 4 design with 20% missing cells, omitted (seeds above): the
    block's draws, estimates and records agree with single fits within 1e-5 (float32 rounding;
    equal on the CPU in practice)."""
    from bayesirt.studies.gibbs_2pno import methods

    reps, s = _block_setup("gibbs_omit")
    block = methods.fit_block(reps, s)
    assert block[0].record["block"]["memory_bytes"] > 0
    _assert_block_matches_single_fits(block, reps, s, atol=1e-5)


@pytest.mark.slow  # NUTS compiles its loops for every fit (~1 min)
def test_a_block_of_nuts_fits_is_the_single_fits_one_after_another():
    from bayesirt.studies.gibbs_2pno import methods

    reps, s = _block_setup("nuts")
    block = methods.fit_block(reps, s)
    assert all(out.record["block"]["memory_bytes"] == 0 for out in block)  # no block program
    _assert_block_matches_single_fits(block, reps, s, atol=0)


def test_gibbs_seed_is_the_plain_sampler_of_seed_001():
    """``gibbs_seed`` draws what ``inference.samplers.gibbs`` draws with ``expand=False`` (Albert's three
    blocks, nothing else) from the same key, and ``gibbs`` (expansion moves on) does not; a block
    of its replications gives its single fits."""
    from bayesirt.inference.samplers import gibbs as gibbs_sampler
    from bayesirt.models import twopno
    from bayesirt.studies.gibbs_2pno import methods

    reps, s = _block_setup("gibbs_seed")
    rep = reps[0]
    seed_fit = methods.fit(rep.responses, rep.truth, rep.cond, s, seed=rep.seed)
    assert seed_fit.record["expand"] is False
    plain = gibbs_sampler.fit(
        jax.random.key(rep.seed),
        rep.responses.responses,
        twopno.Priors(**s.priors),
        gibbs_sampler.GibbsSettings(methods.sampler_settings(s.gibbs), expand=False, abilities=True),
        item_names=[it.name for it in rep.responses.items],
    )
    for name in ("discrimination", "difficulty"):
        np.testing.assert_array_equal(seed_fit.idata.posterior[name].values, plain.idata.posterior[name].values)
    ours = methods.fit(rep.responses, rep.truth, conditions.Condition("tiny", "mcar20", "gibbs", 0), s, seed=rep.seed)
    assert ours.record["expand"] is True
    plain_a = plain.idata.posterior["discrimination"].values
    assert not np.allclose(ours.idata.posterior["discrimination"].values, plain_a)
    _assert_block_matches_single_fits(methods.fit_block(reps, s), reps, s, atol=1e-5)
