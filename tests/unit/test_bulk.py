"""The bulk driver (inference/execution/bulk.py): a block of fits as one vectorized program gives each fit
what it gets alone, stops each fit on its own test, and lets a diverging fit stop alone."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt import block_plan
from bayesirt.data import simulate_mgrm as sm
from bayesirt.inference.execution import bulk, bulk_group, bulk_processes
from bayesirt.inference.execution.training import Problem, TrainSettings, train_problem
from bayesirt.inference.variational import iwae, iwavb
from bayesirt.models import mgrm

# float32 arithmetic vectorized over fits may sum in another order than a single fit's; over a
# few hundred steps that moves parameters by far less than this (relative and absolute)
TOL = 2e-4


def regression_problem(seed: int, noise: float, settings: TrainSettings, label="fit") -> Problem:
    """Per-person means mu_i + noise around a shared location: minibatch SGD on the squared
    error, whose loss settles at a level set by ``noise`` (so fits stop at different steps)."""
    rng = np.random.default_rng(seed)
    x = (1.5 + rng.normal(0, noise, 200)).astype(np.float32)

    def loss(params, key, batch):
        jitter = 0.01 * jax.random.normal(key, ())
        return jnp.mean((batch["x"] - params["m"]) ** 2) + jitter

    return Problem(loss, {"m": jnp.zeros(())}, jax.random.key(seed), {"x": jnp.asarray(x)}, 200, settings, None, label)


SETTINGS = TrainSettings(
    learning_rate=0.05, batch_size=20, max_steps=3000, min_steps=100, check_every=20, window=60, patience=2
)


def assert_same_fit(block_fit, single):
    assert block_fit.steps == single.steps and block_fit.converged == single.converged
    assert block_fit.reason == single.reason
    for a, b in zip(jax.tree.leaves(block_fit.params), jax.tree.leaves(single.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(block_fit.losses, single.losses, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("stopping, batch_size", [("relative", 20), ("noise", 20), ("relative", None)])
def test_each_fit_of_a_block_stops_where_it_would_alone(stopping, batch_size):
    # batch_size None: full batch, whose block narrows the same way (one row per fit)
    settings = replace(SETTINGS, stopping=stopping, batch_size=batch_size, progress_every=0)
    problems = [regression_problem(s, noise, settings, f"rep{s}") for s, noise in enumerate([0.1, 1.0, 3.0, 0.5, 2.0])]
    block = bulk.train_block(problems)
    singles = [train_problem(p) for p in problems]
    for b, s in zip(block, singles, strict=True):
        assert_same_fit(b, s)
    steps = [b.steps for b in block]
    assert len(set(steps)) > 1, f"the fits should stop at different steps to test the masking: {steps}"
    assert [b.extra["block"]["position"] for b in block] == list(range(5))
    assert all(b.extra["block"]["left_at_step"] == b.steps for b in block)


def test_a_block_in_groups_gives_each_group_what_it_gets_as_a_block_of_its_own():
    settings = replace(SETTINGS, progress_every=0)
    problems = [regression_problem(s, noise, settings, f"rep{s}") for s, noise in enumerate([0.1, 1.0, 3.0, 0.5, 2.0])]
    grouped = bulk.train_block(problems, width=2)
    assert [b.extra["block"]["group"] for b in grouped] == [0, 0, 1, 1, 2]
    assert {b.extra["block"]["width"] for b in grouped} == {2} and grouped[4].extra["block"]["size"] == 5
    for members in ([0, 1], [2, 3], [4]):  # the same program widths and members: the same bits
        alone = bulk.train_block([problems[i] for i in members])
        for i, a in zip(members, alone, strict=True):
            assert grouped[i].steps == a.steps and np.array_equal(grouped[i].losses, a.losses)
            assert np.array_equal(np.asarray(grouped[i].params["m"]), np.asarray(a.params["m"]))
    for g, p in zip(grouped, problems, strict=True):
        assert_same_fit(g, train_problem(p))


@pytest.mark.parametrize(
    "width, running, spent, compile_seconds, narrowed",
    [
        (4, 2, 1.0, 0.5, True),  # half still running, their idle share has paid for a compilation
        (4, 2, 0.4, 0.5, False),  # not yet paid for
        (4, 3, 10.0, 0.5, False),  # more than half still running
        (2, 1, 0.0, 0.0, True),
        (1, 1, 10.0, 0.0, False),  # one fit: nothing to narrow
    ],
)
def test_a_program_is_narrowed_once_its_stopped_fits_have_cost_a_compilation(
    width, running, spent, compile_seconds, narrowed
):
    assert bulk_group.narrows(width, running, spent, compile_seconds) is narrowed


@pytest.mark.parametrize(
    "n_fits, width, processes, parts",
    [
        (100, 8, 2, [(0, 48), (48, 100)]),  # 13 groups: 6 and 7 of them
        (100, 8, 16, [(8 * g, min(8 * g + 8, 100)) for g in range(13)]),  # a process per group at most
        (5, None, 4, [(0, 5)]),  # one program: this process
        (5, 2, 1, [(0, 5)]),
    ],
)
def test_worker_processes_get_whole_groups(n_fits, width, processes, parts):
    assert [(r.start, r.stop) for r in bulk_processes.plan(n_fits, width, processes)] == parts


@pytest.mark.parametrize("n_fits, width", [(1, 1), (8, 8), (9, 5), (10, 5), (17, 6), (100, 8)])
def test_a_cpu_block_is_cut_into_equal_groups_of_at_most_eight(n_fits, width):
    assert block_plan.cpu_program_width(n_fits) == width
    groups = bulk.groups_of(n_fits, width)
    assert len(groups) == -(-n_fits // 8) and max(map(len, groups)) - min(map(len, groups)) <= width - 1


@pytest.mark.parametrize("width", [0, -3])
def test_a_program_width_below_one_is_refused(width):
    with pytest.raises(ValueError, match="fits per program must be at least 1"):
        bulk.groups_of(4, width)


def test_a_diverging_fit_stops_alone_with_its_last_good_state():
    settings = replace(SETTINGS, progress_every=0, max_steps=400)
    good = [regression_problem(s, 1.0, settings) for s in (1, 2)]

    def loss(params, key, batch):  # infinite from step 130 on, for data far out only
        blow_up = jnp.where((batch["step"] >= 130) & (batch["x"][0] > 1e3), jnp.inf, 0.0)
        return good[0].loss_fn(params, key, batch) + blow_up

    far_out = {"x": jnp.full(200, 1e4, jnp.float32)}
    problems = [replace(p, loss_fn=loss) for p in good] + [replace(good[0], loss_fn=loss, data=far_out)]
    block = bulk.train_block(problems)
    assert block[2].extra["diverged_at_step"] == 130 and not block[2].converged
    assert block[2].convergence["stop_reason"] == "diverged" and len(block[2].losses) == 130
    assert np.isfinite(np.asarray(block[2].params["m"]))
    for b, p in zip(block[:2], problems[:2], strict=True):
        assert_same_fit(b, train_problem(p))


def test_fits_of_a_block_must_share_their_size_and_settings():
    a = regression_problem(0, 1.0, SETTINGS)
    with pytest.raises(ValueError, match="same training settings"):
        bulk.check_block([a, replace(a, settings=replace(SETTINGS, learning_rate=0.1))])
    with pytest.raises(ValueError, match="same number of persons"):
        bulk.check_block([a, replace(a, n_persons=100)])
    with pytest.raises(ValueError, match="same shapes"):
        bulk.check_block([a, replace(a, data={"x": jnp.zeros(10)})])
    with pytest.raises(ValueError, match="at least one"):
        bulk.check_block([])


@pytest.mark.parametrize("method", [iwae, iwavb])
def test_amortized_fits_in_a_block_match_their_single_fits(method):
    train = TrainSettings(batch_size=32, max_steps=200, min_steps=100, check_every=50, window=50, progress_every=0)
    if method is iwae:
        cfg = iwae.IWAESettings(n_importance=5, hidden=(16,), train=train)
    else:
        cfg = iwavb.IWAVBSettings(n_importance=5, encoder_hidden=16, discriminator_hidden=(16,), train=train)
    problems = []
    for seed in range(3):
        rm, _ = sm.simulate_mgrm(seed, 96, n_items=6, n_categories=3, n_factors=2)
        st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
        problems.append(method.problem(jax.random.key(seed), rm.responses, st, cfg, label=f"rep{seed}"))
    block = bulk.train_block(problems)
    for b, p in zip(block, problems, strict=True):
        assert_same_fit(b, train_problem(p))


def test_a_block_that_would_not_fit_in_memory_is_refused_before_it_starts(monkeypatch):
    problems = [regression_problem(s, 1.0, SETTINGS) for s in range(3)]
    monkeypatch.setattr(bulk, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="lower studies.x.block_size"):
        bulk.train_block(problems, setting="studies.x.block_size")
    monkeypatch.setattr(bulk, "available_bytes", lambda: 10**12)
    fits = bulk.train_block(problems)
    assert all(f.extra["block"]["memory_bytes"] > 3 * 200 * 4 for f in fits)  # at least the three data sets
