"""The one record writer: records of optimisation and Markov-chain fits follow the schema and
say whether, and why, they converged."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pandas as pd
import yaml

from bayesirt import records
from bayesirt.inference.execution.training import FitResult
from bayesirt.inference.samplers import sampling
from bayesirt.studies.base import MethodResult

SCHEMA = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "fit_record.schema.yaml").read_text()
)
FIELDS = {
    "model": "toy",
    "method": "m",
    "study": "s",
    "dataset": "d",
    "condition": "c",
    "seed": 1,
    "n_persons": 5,
    "n_items": 2,
}


def test_optimisation_record_carries_divergence_and_validates(tmp_path):
    res = FitResult(
        {}, np.array([3.0, 2.0, 1.0]), 3, False, "loss became non-finite at step 3", 0.5, 0.1, {"diverged_at_step": 3}
    )
    rec = records.fit_record(res, FIELDS, window=2)
    jsonschema.validate(rec, SCHEMA)
    assert rec["diverged_at_step"] == 3 and rec["final_loss"] == 1.5 and rec["converged"] is False
    out = MethodResult(rec, pd.DataFrame({"parameter": ["x"], "mean": [0.0]}), records.loss_table(res.losses))
    records.write_fit(out, tmp_path / "fit")
    assert sorted(p.name for p in (tmp_path / "fit").iterdir()) == ["estimates.csv", "fit.json", "loss.csv"]


def _normal_sampler(n_chains):
    init = lambda key: jnp.zeros(())
    step = lambda key, x: jax.random.normal(key)  # exact independent draws from N(0, 1)
    settings = sampling.SamplerSettings(n_chains=n_chains, n_warmup=10, n_samples=400, chunk=205, progress_every=0)
    return sampling.sample(jax.random.key(0), init, step, lambda x: {"x": x}, settings)


def test_sampler_record_converges_only_with_several_chains():
    many = records.sample_record(_normal_sampler(4), FIELDS)
    jsonschema.validate(many, SCHEMA)
    assert many["converged"] and "max R-hat" in many["convergence_reason"] and many["steps"] == 410
    one = records.sample_record(_normal_sampler(1), FIELDS)
    assert not one["converged"] and "R-hat not available" in one["convergence_reason"]


def test_one_convergence_word_per_fit():
    # the word every table, figure and flag of a report uses for a fit
    assert records.convergence_status({"converged": True, "loss_still_improving": False}) == "converged"
    assert records.convergence_status({"converged": True, "loss_still_improving": True}) == "still improving"
    assert records.convergence_status({"converged": False, "max_steps_still_improving": True}) == "still improving"
    assert records.convergence_status({"converged": False, "stop_reason": "not_converged"}) == "not converged"
    assert (
        records.convergence_status({"converged": False, "stop_reason": "diverged", "diverged_at_step": 12})
        == "diverged"
    )
    assert (
        records.convergence_status({"converged": True, "diagnostics": {"max_r_hat": 1.001}}) == "converged"
    )  # a sampler
    assert not records.is_converged({"converged": True, "loss_still_improving": True})


def test_flags_are_the_fits_whose_word_is_not_converged(tmp_path):
    for name, rec in {
        "a": {"converged": True},
        "b": {"converged": True, "loss_still_improving": True},
        "c": {"converged": False},
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "fit.json").write_text(json.dumps({"method": "m", "steps": 1, **rec}))
    verdict, flags = records.convergence_flags(tmp_path)
    assert list(flags["fit"]) == ["b", "c"] and list(flags["status"]) == ["still improving", "not converged"]
    assert verdict.startswith("**2 fit(s) flagged**")


def test_a_fit_in_a_block_is_named_without_its_block(tmp_path):
    # a block job writes each fit to rep<r>/ of its folder; reports name the fit without the block,
    # in the order of the names (rep10 of block 1 after rep1 and before rep2 of block 0)
    assert records.fit_name("n1k/mcar20/mfvi/blocks/block3/rep7") == Path("n1k/mcar20/mfvi/rep7")
    assert records.fit_name("rwa_sim/reference") == Path("rwa_sim/reference")
    for block, rep in ((0, 1), (0, 2), (1, 10)):
        folder = tmp_path / "d" / "mcar0" / "m" / "blocks" / f"block{block}" / f"rep{rep}"
        folder.mkdir(parents=True)
        (folder / "fit.json").write_text(json.dumps({"method": "m", "steps": 1, "converged": False}))
    verdict, flags = records.convergence_flags(tmp_path)
    assert list(flags["fit"]) == ["d/mcar0/m/rep1", "d/mcar0/m/rep10", "d/mcar0/m/rep2"]
