"""A block of data sets' chains as one program (``inference.samplers.sampling_blocks``): each replication's
draws as its single run's, a replication that goes non-finite stopped alone, the block's
replications in worker processes, and the memory check naming its setting.

Tolerance: with XLA's reductions (the test session's) the block's draws equal the single runs'
on the CPU (0 difference measured); the tests allow float32 rounding, 1e-5 absolute on draws of
order 1, with the seeds given in each test (``inference.execution.chain_blocks`` says what YNNPACK's
reductions, which the workflow's Gibbs jobs use, change)."""

import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from bayesirt.inference.execution import chain_blocks
from bayesirt.inference.execution.worker_processes import usable_cpus
from bayesirt.inference.samplers import gibbs
from bayesirt.inference.samplers.sampling import SamplerSettings, sample
from bayesirt.inference.samplers.sampling_blocks import plan_replication_groups, sample_block

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import chain_kernels  # noqa: E402  (a plain module, so that worker processes can unpickle it)

ATOL = 1e-5  # float32 rounding of draws of order 1
needs_two_cores = pytest.mark.skipif(len(usable_cpus()) < 2, reason="worker processes need 2 usable cores")


@pytest.fixture(autouse=True)
def workers_find_the_kernels(monkeypatch):
    """Worker processes import ``chain_kernels`` by name: put its folder on their path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p))


def _settings(**kw):
    # burn-in and sampling in chunks of one length: one chunk program to compile
    return SamplerSettings(**{"n_chains": 2, "n_warmup": 25, "n_samples": 50, "chunk": 25, "progress_every": 0, **kw})


def _responses(seed, n=60, j=6):
    rng = np.random.default_rng(seed)
    theta, a, d = rng.normal(size=(n, 1)), rng.uniform(0.5, 2, j), rng.normal(size=j)
    y = (rng.random((n, j)) < 0.5 * (1 + np.tanh(a * theta - d))).astype(int)
    y[rng.random(y.shape) < 0.1] = -1
    return y


def _gibbs_block(kernels, keys, settings, **kw):
    k = kernels[0]
    return sample_block(
        keys,
        k.init_fn,
        k.step_fn,
        k.record_fn,
        settings,
        [kk.data for kk in kernels],
        coords=k.coords,
        dims=k.dims,
        **kw,
    )


def _single(k, key, settings):
    return sample(key, k.init_fn, k.step_fn, k.record_fn, settings, coords=k.coords, dims=k.dims, data=k.data)


def test_plan_replication_groups(monkeypatch):
    monkeypatch.setattr("bayesirt.inference.execution.worker_processes.usable_cpus", lambda: [0, 1])
    assert plan_replication_groups(_settings(), 5) == [(0, 5)]
    assert plan_replication_groups(_settings(chain_processes=2), 5) == [(0, 2), (2, 5)]
    # no more workers than the job's cores (min(chain_processes, n_chains)) or replications
    assert plan_replication_groups(_settings(chain_processes=4), 5) == [(0, 2), (2, 5)]
    assert plan_replication_groups(_settings(n_chains=4, chain_processes=4), 3) == [(0, 1), (1, 2), (2, 3)]


def test_gibbs_block_draws_match_single_runs_and_a_non_finite_replication_stops_alone():
    """Seeds 11, 12, 13 (data 0, 1, 2): replication 1 starts from a non-finite ability."""
    settings = _settings()
    kernels = [gibbs.kernel(_responses(s), abilities=True) for s in range(3)]
    keys = [jax.random.key(11 + s) for s in range(3)]
    block = _gibbs_block(kernels, keys, settings, label="three")
    singles = {r: _single(kernels[r], keys[r], settings) for r in (0, 2)}
    for r, single in singles.items():
        for name in ("discrimination", "difficulty", "ability"):
            np.testing.assert_allclose(
                block[r].idata.posterior[name].values, single.idata.posterior[name].values, rtol=0, atol=ATOL
            )
        assert block[r].n_sweeps == single.n_sweeps == 75 and not block[r].diverged
        assert block[r].summary.index.equals(single.summary.index)
        np.testing.assert_allclose(block[r].summary["mean"], single.summary["mean"], rtol=0, atol=ATOL)
        assert block[r].extra["block"] | {"wall_seconds": 0, "compile_seconds": 0} == {
            "size": 3,
            "position": r,
            "wall_seconds": 0,
            "compile_seconds": 0,
            "left_at_step": 75,
            "memory_bytes": block[0].extra["block"]["memory_bytes"],
        }
    assert block[0].extra["block"]["memory_bytes"] > 0
    assert block[0].wall_seconds == pytest.approx(block[0].extra["block"]["wall_seconds"] / 3)

    bad = kernels[1].data._replace(theta0=kernels[1].data.theta0.at[4].set(np.nan))
    kernels[1] = kernels[1]._replace(data=bad)
    block = _gibbs_block(kernels, keys, settings)
    assert block[1].diverged and block[1].n_sweeps == 0 and block[1].idata.posterior["ability"].shape == (2, 0, 60)
    assert block[1].reason == "non-finite initial state: state.theta (chains 0, 1)"
    for r, single in singles.items():  # the others run to the end, as alone
        assert not block[r].diverged and block[r].n_sweeps == 75
        np.testing.assert_allclose(
            block[r].idata.posterior["ability"].values, single.idata.posterior["ability"].values, rtol=0, atol=ATOL
        )


def _blowing_block(blow, processes=1):
    settings = _settings(n_chains=4, n_warmup=20, n_samples=200, chunk=50, chain_processes=processes)
    datas = [{"blow": np.float32(b)} for b in blow]
    keys = [jax.random.key(20 + r) for r in range(len(blow))]
    block = sample_block(
        keys, chain_kernels.data_init, chain_kernels.data_step, chain_kernels.record_x, settings, datas
    )
    return block, keys, settings, datas


def test_a_replication_that_goes_non_finite_mid_run_stops_alone_with_its_draws_so_far():
    """Replication 1's chains turn NaN at sweep 130 (chunk of sweeps 121-170): it keeps the 100
    draws of sweeps 21-120, as alone; replications 0 and 2 run their 220 sweeps."""
    block, keys, settings, datas = _blowing_block([0, 1, 0])
    assert block[1].diverged and block[1].n_sweeps == 120 and block[1].idata.posterior["x"].shape == (4, 100)
    assert "sweeps 121-170" in block[1].reason and "state.x (chains 0, 1, 2, 3)" in block[1].reason
    for r in range(3):
        alone = sample(
            keys[r], chain_kernels.data_init, chain_kernels.data_step, chain_kernels.record_x, settings, data=datas[r]
        )
        assert alone.diverged == block[r].diverged and alone.n_sweeps == block[r].n_sweeps
        assert alone.reason == block[r].reason
        np.testing.assert_allclose(block[r].idata.posterior["x"].values, alone.idata.posterior["x"].values, atol=ATOL)
        assert block[r].extra["block"]["left_at_step"] == alone.n_sweeps
    np.testing.assert_array_equal(block[1].extra["final_state"].sweep, [120] * 4)  # the last good state


@needs_two_cores
def test_worker_processes_split_the_replications_with_the_same_draws():
    one, *_ = _blowing_block([0, 1, 0, 0, 1])
    two, *_ = _blowing_block([0, 1, 0, 0, 1], processes=2)  # replications 0-1 and 2-4 in two workers
    for a, b in zip(one, two, strict=True):
        assert (a.diverged, a.n_sweeps, a.reason) == (b.diverged, b.n_sweeps, b.reason)
        np.testing.assert_allclose(a.idata.posterior["x"].values, b.idata.posterior["x"].values, atol=ATOL)
        assert b.extra["block"]["size"] == 5


def test_a_block_too_large_for_the_memory_is_refused_naming_its_setting(monkeypatch):
    monkeypatch.setattr(chain_blocks, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match=r"^a block of 2 replications needs .* free: lower studies.x.block_size$"):
        sample_block(
            [jax.random.key(0), jax.random.key(1)],
            chain_kernels.data_init,
            chain_kernels.data_step,
            chain_kernels.record_x,
            _settings(),
            [{"blow": np.float32(0)}] * 2,
            setting="studies.x.block_size",
        )


def test_a_block_needs_data_of_one_shape():
    kernels = [gibbs.kernel(_responses(0, n=60)), gibbs.kernel(_responses(1, n=50))]
    with pytest.raises(ValueError, match="same shapes: replication 1 differs"):
        _gibbs_block(kernels, [jax.random.key(0), jax.random.key(1)], _settings())


def test_a_block_of_one_replication_is_a_single_run():
    k = gibbs.kernel(_responses(3))
    (one,) = _gibbs_block([k], [jax.random.key(4)], _settings())
    single = _single(k, jax.random.key(4), _settings())
    np.testing.assert_array_equal(one.idata.posterior["difficulty"].values, single.idata.posterior["difficulty"].values)
    assert one.extra["block"]["size"] == 1 and one.extra["block"]["left_at_step"] == 75
