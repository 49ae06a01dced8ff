"""Chains in worker processes (``SamplerSettings.chain_processes``): the same draws as one
process, the non-finite guard across groups, and clear errors."""

import functools
import logging
import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from bayesirt.inference.execution.chain_processes import plan_groups
from bayesirt.inference.execution.worker_processes import usable_cpus
from bayesirt.inference.samplers import gibbs
from bayesirt.inference.samplers.sampling import SamplerSettings, sample

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import chain_kernels  # noqa: E402  (a plain module, so that worker processes can unpickle it)


@pytest.fixture(autouse=True)
def workers_find_the_kernels(monkeypatch):
    """Worker processes import ``chain_kernels`` by name: put its folder on their path (before
    the path they would inherit, which may name the checkout's ``src``)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p))


def _settings(**kw):
    return SamplerSettings(**{"n_chains": 4, "n_warmup": 20, "n_samples": 200, "chunk": 50, "progress_every": 0, **kw})


def _blowing(seed, processes):
    return sample(
        jax.random.key(seed),
        chain_kernels.blowing_init,
        chain_kernels.blowing_step,
        chain_kernels.record_x,
        _settings(chain_processes=processes),
        label="blow",
    )


def test_plan_groups_splits_chains_contiguously(monkeypatch):
    monkeypatch.setattr("bayesirt.inference.execution.worker_processes.usable_cpus", lambda: [0, 1])
    assert plan_groups(_settings(chain_processes=1)) == [(0, 4)]
    assert plan_groups(_settings(chain_processes=2)) == [(0, 2), (2, 4)]
    # the settings alone decide (the draws must not depend on the machine): more workers than
    # cores share them, and there is at most one worker per chain
    assert plan_groups(_settings(chain_processes=3)) == [(0, 1), (1, 3), (3, 4)]
    assert plan_groups(_settings(chain_processes=8)) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert plan_groups(_settings(n_chains=3, chain_processes=2)) == [(0, 2), (2, 3)]
    assert plan_groups(_settings(n_chains=1, chain_processes=2)) == [(0, 1)]


needs_two_cores = pytest.mark.skipif(len(usable_cpus()) < 2, reason="chain processes need 2 usable cores")


@needs_two_cores
def test_gibbs_draws_match_one_process():
    """The 2PNO Gibbs kernel (data passed as an argument), 4 chains in 2 processes: the same
    draws as 4 vmapped chains in this process (float32 rounding at most; equal in practice)."""
    rng = np.random.default_rng(3)
    theta, a, d = rng.normal(size=(150, 1)), rng.uniform(0.5, 2, 8), rng.normal(size=8)
    y = (rng.random((150, 8)) < 0.5 * (1 + np.tanh(a * theta - d))).astype(int)
    y[rng.random(y.shape) < 0.1] = -1
    runs = [
        gibbs.fit(
            jax.random.key(5), y, None, gibbs.GibbsSettings(_settings(n_warmup=50, n_samples=100, chain_processes=p))
        )
        for p in (1, 2)
    ]
    for name in ("discrimination", "difficulty"):
        np.testing.assert_allclose(
            runs[1].idata.posterior[name].values, runs[0].idata.posterior[name].values, rtol=0, atol=1e-5
        )
    assert runs[1].n_sweeps == runs[0].n_sweeps == 150 and not runs[1].diverged
    np.testing.assert_allclose(
        runs[1].extra["final_state"].a, np.asarray(runs[0].extra["final_state"].a), rtol=0, atol=1e-5
    )
    assert runs[1].wall_seconds > 0 and runs[1].compile_seconds > 0
    assert list(runs[1].summary.index) == list(runs[0].summary.index)


@needs_two_cores
def test_non_finite_guard_across_groups():
    """Key 4: chains 2 and 3 blow up at sweep 130 (chunk 121-170). Chains 0-1 run in the other
    process; the run keeps the draws every group completed, as in one process."""
    one = _blowing(4, 1)
    assert one.diverged and "chains 2, 3" in one.reason  # the set-up of this test
    two = _blowing(4, 2)
    assert two.diverged and "chains 2, 3" in two.reason and "sweeps 121-170" in two.reason
    assert two.n_sweeps == one.n_sweeps == 120
    np.testing.assert_array_equal(two.idata.posterior["x"].values, one.idata.posterior["x"].values)
    fine = _blowing(1, 2)  # key 1: no chain blows up
    assert not fine.diverged and fine.idata.posterior["x"].shape == (4, 200)
    np.testing.assert_array_equal(fine.idata.posterior["x"].values, _blowing(1, 1).idata.posterior["x"].values)


def test_unpicklable_functions_are_named():
    with pytest.raises(ValueError, match="record_fn.*picklable|picklable.*record_fn"):
        sample(
            jax.random.key(0),
            chain_kernels.blowing_init,
            chain_kernels.blowing_step,
            lambda s: {"x": s.x},
            _settings(chain_processes=2),
        )


@needs_two_cores
def test_a_failing_worker_stops_the_run_with_its_error():
    with pytest.raises(RuntimeError, match="chains 0-1 failed: ValueError: this step cannot be traced"):
        sample(
            jax.random.key(0),
            chain_kernels.blowing_init,
            functools.partial(chain_kernels.failing_step),
            chain_kernels.record_x,
            _settings(chain_processes=2),
        )


@needs_two_cores
def test_workers_progress_reaches_the_parents_log(caplog):
    with caplog.at_level(logging.INFO, logger="bayesirt"):
        sample(
            jax.random.key(1),
            chain_kernels.blowing_init,
            chain_kernels.blowing_step,
            chain_kernels.record_x,
            _settings(chain_processes=2, progress_every=1),
            label="relay",
        )
    messages = [r.getMessage() for r in caplog.records]
    for chains in ("[chains 0-1]", "[chains 2-3]"):
        assert any(m.startswith(f"relay {chains}: sweep 220 / 220 (sampling)") for m in messages), messages
    assert any("2 worker processes ready" in m for m in messages)
