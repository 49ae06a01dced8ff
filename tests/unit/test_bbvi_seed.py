"""Seed 002's BBVI runs as its notebook writes them (``inference.dcm.bbvi_seed``,
``studies.dcm_bbvi.seed_methods``): plain steps per block, the beta block's step in C itself, the
sub-experiments' blocks started and left at the truth, and the study's methods end to end at a
tiny size."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.inference.dcm import bbvi, bbvi_seed
from bayesirt.studies.dcm_bbvi import conditions, data, methods
from bayesirt.studies.dcm_bbvi import seed_methods as seed
from bayesirt.studies.dcm_bbvi.settings import Settings
from tests.configs import validated

DEFAULT = Settings.from_config(validated())  # the default config's: the schema's defaults
TINY = bbvi_seed.SeedSchedule(n_sweeps=2, iterations=(2, 3, 2, 2), steps=(1e-2, 1e-3, 1e-5, 1e-5))


def _params():
    return {
        "rho": jnp.ones((3, 4)),
        "mu": jnp.ones((2, 2)),
        "chol_off": jnp.zeros((2, 2, 2)),
        "log_diag": jnp.log(jnp.full((2, 2), 0.5)),
        "log_d": jnp.zeros(4),
        "log_ab": jnp.zeros(2),
    }


def test_each_block_takes_plain_steps_in_turn_and_the_beta_step_shrinks_within_a_visit():
    params = _params()
    grads = jax.tree.map(lambda p: jnp.full_like(p, 2.0), params)
    opt = bbvi_seed.seed_optimizer(TINY)
    state = opt.init(params)
    moved = []
    for t in range(sum(TINY.iterations) + 3):  # one sweep and the first steps of the next
        updates, state = opt.update(grads, state, params)
        moved.append({k for k, u in updates.items() if jnp.any(u != 0)})
        if t == 0:  # Z: rho <- rho - 1e-2 * 2 (the loss is -ELBO)
            np.testing.assert_allclose(updates["rho"], -2e-2)
        if t in (2, 3, 4):  # beta: step 1e-3 / (1, 2, 3); mu plainly, C's diagonal on C's scale
            s = 1e-3 / (t - 1)
            np.testing.assert_allclose(updates["mu"], -s * 2.0, rtol=1e-6)
            np.testing.assert_allclose(updates["log_diag"], np.log(0.5 - s * 2.0 / 0.5) - np.log(0.5), rtol=1e-5)
        if t == 5:
            np.testing.assert_allclose(updates["log_d"], -2e-5)
    blocks = [{"rho"}] * 2 + [{"mu", "chol_off", "log_diag"}] * 3 + [{"log_d"}] * 2 + [{"log_ab"}] * 2
    assert moved == blocks + blocks[:3]
    # the next visit of beta starts again at the initial step
    assert bbvi_seed.shrinking_step(1.0, 20)(20) == 1.0 and bbvi_seed.shrinking_step(1.0, 20)(19) == 1.0 / 20


def test_a_diagonal_step_through_zero_is_reflected_and_stays_positive():
    params = _params()
    grads = jax.tree.map(jnp.zeros_like, params) | {"log_diag": jnp.full((2, 2), 1.0)}
    tx = bbvi_seed.cholesky_step(lambda count: 1.0)  # c - 1 * 1 / c = 0.5 - 2 = -1.5 -> 1.5
    updates, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(jnp.exp(params["log_diag"] + updates["log_diag"]), 1.5, rtol=1e-6)


def test_the_seed_settings_are_the_notebooks():
    s = seed.bbvi_settings()
    assert (s.n_samples, s.priors.a0, s.priors.b0, s.priors.d0) == (1000, 1e-2, 1e-4, 1.0)
    assert not s.control_variates and not s.monotone
    assert seed.FULL_MODEL.n_steps == 200 * (10 + 20 + 20 + 30)
    train = bbvi_seed.train_settings(seed.FULL_MODEL)
    assert train.min_steps == train.max_steps == 16_000 and train.batch_size is None


@pytest.fixture
def tiny_seed(monkeypatch):
    """The seed's runs shrunk to 2 sweeps of at most 2 steps a block (keeping which blocks each
    run moves), M = 20, and a beta step of 1e-3 (the seed's 1.0 or 0.5 plain steps diverge within
    a sweep: the score-function gradient of q(beta)'s mean is in the hundreds at a fresh start)."""
    for name, sched in seed.SCHEDULES.items():
        iters = tuple(min(i, 2) for i in sched.iterations)
        steps = (sched.steps[0], 1e-3 if sched.steps[1] else 0.0, *sched.steps[2:])
        monkeypatch.setitem(seed.SCHEDULES, name, sched._replace(n_sweeps=2, iterations=iters, steps=steps))
    monkeypatch.setattr(seed, "SEED_N_SAMPLES", 20)
    rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.2, 100, n_persons=60)
    return rm, truth, q


def test_the_full_model_run_runs_end_to_end(tiny_seed):
    rm, truth, q = tiny_seed
    out = methods.fit("bbvi_seed", rm, truth, q, 7, replace(DEFAULT, variance_repeats=0))
    assert out.record["steps"] == seed.SCHEDULES["bbvi_seed"].n_steps == 16
    assert 0 <= out.record["accuracy"]["pattern_accuracy"] <= out.record["accuracy"]["top2_accuracy"] <= 1
    b = out.estimates[out.estimates.parameter == "beta"]
    assert not np.allclose(b["mean"], 0.0)  # q(beta) moved from the fresh start


@pytest.mark.slow  # three runs, each fitted alone and in a block (a minute or more on 2 cores)
@pytest.mark.parametrize("method", seed.SEED_METHODS)
def test_the_seed_runs_end_to_end_and_leave_the_blocks_they_start_at_the_truth(tiny_seed, method):
    rm, truth, q = tiny_seed
    config = replace(DEFAULT, variance_repeats=2)
    out = methods.fit(method, rm, truth, q, 7, config)
    rec = out.record
    assert rec["steps"] == seed.SCHEDULES[method].n_steps and rec["method"] == method
    assert set(rec["accuracy"]) >= {"pattern_accuracy", "profile_accuracy", "top2_accuracy"}
    assert 0 <= rec["accuracy"]["pattern_accuracy"] <= rec["accuracy"]["top2_accuracy"] <= 1
    b = out.estimates[out.estimates.parameter == "beta"]
    if method == "bbvi_beta_truth_seed":  # q(beta)'s means start at the truth and stay there
        np.testing.assert_allclose(b["mean"], b["true"], atol=1e-5)
    else:
        assert not np.allclose(b["mean"], 0.0)  # the beta block moved from the fresh start
    prob = bbvi.prepare(rm.responses, q, allow_zero_rows=True)
    start = seed.start(method, prob, truth)
    true_profile = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    if method == "bbvi_pi_truth_seed":  # q(Z_i) starts at 0.997 on the true profile and stays
        assert (np.asarray(start["rho"]).argmax(1) == true_profile).all()
        assert rec["accuracy"]["pattern_accuracy"] == 1.0
    # a block of two replications gives each its single fit
    reps = [methods.Replication(rm, truth, q, conditions.Condition("seed", "mcar20", method, r), 7) for r in range(2)]
    block = methods.fit_block(reps, config)
    assert block[0].record["steps"] == rec["steps"]
    np.testing.assert_allclose(block[0].estimates["mean"], out.estimates["mean"], atol=1e-3)


def test_the_truth_starts_need_a_truth():
    rm, truth, q = data.simulate(conditions.DESIGNS["seed"], 0.0, 100, n_persons=40)
    prob = bbvi.prepare(rm.responses, q, allow_zero_rows=True)
    with pytest.raises(ValueError, match="needs a simulated data set's truth"):
        seed.start("bbvi_pi_truth_seed", prob, None)
