"""The vibo study's blocks of replications: a condition's replications in blocks of the design's
block_size, the block_size key checked, and a block fit (methods.fit_block) against single fits
of the same replications (methods.fit)."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from bayesirt.config import ConfigError, check
from bayesirt.inference.variational import vibo_programs
from bayesirt.studies import design_conditions
from bayesirt.studies.vibo import conditions, data, methods, settings
from bayesirt.studies.vibo.conditions import Condition

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(study: dict) -> dict:
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["vibo"] = study
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def test_replications_of_a_condition_are_fitted_in_blocks_of_the_design_block_size():
    cond = Condition("n1k", "mcar20", "mfvi", 3)

    def of(design):
        return {"studies": {"vibo": {"designs": {"n1k": design}}}}

    assert conditions.condition_blocks(of({"replications": 5, "block_size": 2}), cond) == [[0, 1], [2, 3], [4]]
    blocks = [
        design_conditions.block_number(conditions, of({"replications": 5, "block_size": 2}), replace(cond, rep=r))
        for r in range(5)
    ]
    assert blocks == [0, 0, 1, 1, 2]
    assert conditions.condition_blocks(of({"replications": 5, "block_size": 100}), cond) == [[0, 1, 2, 3, 4]]
    assert conditions.condition_blocks(of({"replications": 1, "block_size": 1}), cond) == [[0]]
    assert cond.block_folder(1) == "results/vibo/n1k/mcar20/mfvi/blocks/block1"
    # the default (100), read from the validated config into the settings
    cfg = validated({"designs": {"a": {"n_persons": 50, "n_items": 5, "replications": 3}}})
    assert cfg["studies"]["vibo"]["designs"]["a"]["block_size"] == 100
    assert settings.Settings.from_config(cfg).block_size("a") == 100
    # the test config fits its tiny design's two replications in one block
    test_cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    from snakemake.utils import validate

    validate(test_cfg, str(SCHEMA), set_default=True)
    assert conditions.condition_blocks(test_cfg, Condition("tiny", "mcar0", "mfvi", 0)) == [[0, 1]]


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_bad_block_size_names_the_key(bad):
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["vibo"]["designs"]["x"] = {"n_persons": 50, "n_items": 5, "block_size": bad}
    with pytest.raises(ConfigError, match=re.escape("config key 'studies.vibo.designs.x.block_size'")) as e:
        check(cfg, SCHEMA)
    assert "\n" not in str(e.value)


TINY = {"batch_size": 30, "max_steps": 150, "min_steps": 50, "check_every": 50, "window": 50}


def block_setup(method: str, n_reps: int = 3, block_size: int = 100, model: str = "2pl"):
    """Replications of one condition of a tiny design (60 persons, 20% MCAR): a 2PL of 8 items
    or a GRM shaped like the RWA scale (22 items, 9 categories)."""
    shape = {"n_items": 8} if model == "2pl" else {"model": "grm", "preset": "rwa"}
    design = {"n_persons": 60, **shape, "missing": ["mcar20"], "replications": n_reps, "block_size": block_size}
    cfg = validated({"designs": {"t": design}, "eval_samples": 20, "posterior_draws": 10, "training": TINY})
    study = settings.Settings.from_config(cfg)
    design = study.design("t")
    reps = []
    for r in range(n_reps):
        train, hidden, hold, truth = data.condition_data(
            design, "mcar20", 40 + r, score_fraction=0.15, heldout_fraction=0.25, missing_seed=50 + r
        )
        reps.append(methods.Replication(train, hidden, hold, truth, Condition("t", "mcar20", method, r), 60 + r))
    return study, reps


@pytest.mark.parametrize(
    "method, model", [("vibo_prior_per_missing", "2pl"), ("mfvi", "2pl"), ("mml", "2pl"), ("vibo_one_prior", "grm")]
)
def test_a_block_fit_gives_the_records_and_estimates_of_single_fits(method, model):
    # Seeds: data 40 + r, missingness 50 + r, fit 60 + r (r = 0, 1, 2). The block differs from
    # single fits by float32 rounding of the vectorized program only: steps and convergence
    # equal, estimates within 1e-4 (absolute) and every evaluation number within 1e-5
    # (relative, 1e-6 absolute); measured on CPU: 4e-7 and 5e-7 at most. MML, fitted in turn,
    # gives the single fits' records exactly.
    study, reps = block_setup(method, model=model)
    block = methods.fit_block(reps, study)
    assert len(block) == 3
    for i, (b, rep) in enumerate(zip(block, reps, strict=True)):
        single = methods.fit(rep.train, rep.hidden, rep.holdout, rep.truth, rep.cond, settings=study, seed=rep.seed)
        for key in ("replication", "seed", "steps", "converged", "condition", "n_persons", "missing_rate"):
            assert b.record[key] == single.record[key], key
        for key, value in single.record["evaluation"].items():
            # the corrected intervals (below) may flip an item whose interval edge lies within
            # Newton's tolerance of the truth: two items of 22 at most
            tolerance = {"abs": 0.1} if key == "discrimination_coverage_90" else {"rel": 1e-5, "abs": 1e-6}
            assert b.record["evaluation"][key] == pytest.approx(value, **tolerance), key
        if "vi_mean" in single.estimates:  # the tables' items corrected (irt2pl_laplace)
            # the fits' own values as above; the corrected ones come from Newton's method from
            # them, which stops within a Newton decrement of 1e-3 of the mode (0.045 posterior
            # sds), so two runs from nearly equal starts agree within 0.1 sd
            own = ["vi_mean", "vi_sd"]
            np.testing.assert_allclose(b.estimates[own].fillna(0), single.estimates[own].fillna(0), atol=1e-4)
            gap = np.abs(b.estimates["mean"] - single.estimates["mean"])
            assert (gap <= 0.1 * single.estimates["sd"] + 1e-4).all(), gap.max()
            np.testing.assert_allclose(b.estimates["sd"], single.estimates["sd"], rtol=0.05, atol=1e-4)
        else:
            np.testing.assert_allclose(b.estimates["mean"], single.estimates["mean"], atol=1e-4)
            np.testing.assert_allclose(b.estimates["sd"], single.estimates["sd"], atol=1e-4)
        assert b.estimates[["parameter", "item", "person"]].equals(single.estimates[["parameter", "item", "person"]])
        if method == "mml":  # one after the other: the single fit's record (no block), timings aside
            assert "block" not in b.record and "psis" not in b.record  # k-hat: variational fits only
            drop = lambda r: {k: v for k, v in r.items() if k != "timing"}
            assert drop(b.record) == drop(single.record)
        else:
            assert single.record["block"] is None
            assert b.record["block"]["size"] == 3 and b.record["block"]["position"] == i
            assert b.record["block"]["left_at_step"] == b.record["steps"]
            assert b.record["settings"] == single.record["settings"]
            assert {"block_wall_seconds", "eval_seconds", "score_new_seconds"} <= set(b.record["timing"])
            assert len(b.losses) == len(single.losses)
            # the fit's own PSIS k-hat, that of the single fit up to the block's rounding
            assert b.record["psis"]["draws"] == single.record["psis"]["draws"] == vibo_programs.KHAT_DRAWS
            assert b.record["psis"]["khat"] == pytest.approx(single.record["psis"]["khat"], abs=1e-3)
            # the tables' item values: the Laplace correction's, the fit's own beside them
            entry, single_entry = b.record["item_uncertainty"], single.record["item_uncertainty"]
            assert entry["method"] == single_entry["method"] and entry.get("converged") == single_entry.get("converged")
            if "condition_number" in entry:
                assert entry["condition_number"] == pytest.approx(single_entry["condition_number"], rel=1e-3)
            if b.record["item_uncertainty"]["method"] == methods.CORRECTED:
                items = b.estimates.parameter != "ability"
                assert b.estimates.loc[items, ["vi_mean", "vi_sd"]].notna().all().all()
                assert not np.allclose(b.estimates.loc[items, "mean"], b.estimates.loc[items, "vi_mean"])


def test_a_block_holds_one_condition_and_no_more_than_block_size():
    study, reps = block_setup("mml", n_reps=3, block_size=2)
    with pytest.raises(ValueError, match=re.escape("larger than studies.vibo.designs.t.block_size (2)")):
        methods.fit_block(reps, study)
    other = replace(reps[1], cond=Condition("t", "mcar20", "mfvi", 1))
    with pytest.raises(ValueError, match="a block holds one condition"):
        methods.fit_block([reps[0], other], study)
    with pytest.raises(ValueError, match="vibo method 'gibbs' is not known"):
        methods.fit_block([replace(reps[0], cond=Condition("t", "mcar20", "gibbs", 0))], study)
    # samples per gradient are VIBO's: MML (fitted one by one) and mean-field VI refuse them
    for method in ("mml", "mfvi"):
        with pytest.raises(ValueError, match="n_samples is VIBO's samples per gradient"):
            methods.fit_block([replace(reps[0], cond=Condition("t", "mcar20", method, 0))], study, n_samples=5)
