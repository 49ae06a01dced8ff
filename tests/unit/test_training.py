"""The training driver's stopping rules: the noise rule (default) against a slope whose truth is
known, and the relative rule kept for old results; the fit record's account of how converged."""

from pathlib import Path

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
import yaml
from scipy import stats

from bayesirt import records
from bayesirt.inference.execution.stopping import blocks, trend
from bayesirt.inference.execution.training import TrainSettings, train
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
DATA = {"d": jnp.zeros(1)}


def test_trend_matches_least_squares_on_block_means():
    rng = np.random.default_rng(0)
    block, per_window = 25, 4
    steps = np.arange(block * 2 * per_window + 13)  # a trailing incomplete block is left out
    history = 5.0 - 0.002 * steps + rng.normal(0, 0.05, steps.size)
    got = trend(history, block, per_window, "epoch", 0.95)
    means = history[:-13].reshape(2 * per_window, block).mean(axis=1)
    ref = stats.linregress(np.arange(2 * per_window), means)
    assert got.slope == pytest.approx(ref.slope, rel=1e-6)
    assert got.slope_se == pytest.approx(ref.stderr, rel=1e-5)
    assert got.slope == pytest.approx(-0.002 * block, abs=3 * ref.stderr)
    assert got.improving  # -0.05 per block against a standard error of ~0.004
    flat = trend(5.0 + rng.normal(0, 0.05, steps.size), block, per_window, "epoch", 0.95)
    assert not flat.improving and abs(flat.slope) < 3 * flat.slope_se
    assert trend(history[: block * 2 * per_window - 1], block, per_window, "epoch", 0.95) is None
    per_step = trend(history, block, per_window, "step", 0.95)
    assert per_step.slope == pytest.approx(got.slope / block) and per_step.slope_se == pytest.approx(
        got.slope_se / block
    )


def test_blocks_are_epochs_for_minibatches_and_fractions_of_the_window_for_full_batch():
    assert blocks(1000, TrainSettings(batch_size=64, window_epochs=2, window=20)) == (15, 2, "epoch")
    # window (steps) is a floor on the window: 100 steps are 7 epochs of 15 steps
    assert blocks(1000, TrainSettings(batch_size=64, window_epochs=2, window=100)) == (15, 7, "epoch")
    assert blocks(1000, TrainSettings(batch_size=None, window=100)) == (25, 10, "step")
    assert blocks(1000, TrainSettings(batch_size=5000, window=100)) == (25, 10, "step")


def _slow_descent(offset):
    """Loss offset + 0.1 |x - 50| + N(0, 0.05) noise: Adam at lr 0.01 moves x by ~0.01 a step,
    so the loss falls by ~0.001 a step, steadily, until x reaches 50."""

    def loss(p, key, batch):
        return offset + 0.1 * jnp.abs(p["x"] - 50.0) + 0.05 * jax.random.normal(key)

    return loss


SLOW = dict(
    stopping="noise",
    learning_rate=0.01,
    lr_decay_rate=1.0,
    max_steps=1500,
    min_steps=200,
    check_every=50,
    window=40,
    patience=3,
    progress_every=0,
)


def test_relative_rule_stops_a_steady_slow_descent_that_the_noise_rule_follows():
    loss = _slow_descent(1000.0)  # relative improvement per 40-step window ~4e-5 < rel_tol
    old = train(
        loss,
        {"x": jnp.array(0.0)},
        jax.random.key(0),
        DATA,
        1,
        TrainSettings(**{**SLOW, "stopping": "relative", "rel_tol": 1e-3}),
    )
    assert old.converged and old.steps < 500 and old.convergence["stop_reason"] == "relative_tolerance"
    # the record of the old rule's fit still says that its loss was falling beyond its noise
    assert old.convergence["improving"] is True
    new = train(loss, {"x": jnp.array(0.0)}, jax.random.key(0), DATA, 1, TrainSettings(**SLOW))
    assert not new.converged and new.steps == 1500
    c = new.convergence
    assert c["stop_reason"] == "max_steps" and c["max_steps_still_improving"] and c["slope_unit"] == "step"
    assert c["slope"] == pytest.approx(-0.001, rel=0.2) and c["slope_se"] < 1e-4
    assert "still improving" in new.reason


def test_noise_rule_stops_on_a_plateau_and_says_why():
    loss = _slow_descent(1000.0)
    res = train(loss, {"x": jnp.array(49.0)}, jax.random.key(0), DATA, 1, TrainSettings(**SLOW))
    # x reaches 50 after ~100 steps; tests start at min_steps and need patience = 3 quiet ones
    assert res.converged and 200 <= res.steps <= 600
    c = res.convergence
    assert c["stop_reason"] == "no_improvement" and not c["max_steps_still_improving"] and not c["improving"]
    assert abs(c["slope"]) < 4 * c["slope_se"] + 1e-4
    # the gradients average out over the window (x hovers about 50), and the returned x is the
    # mean of the window's 200 iterates
    assert c["gradient_drift"] <= TrainSettings().drift_max and c["averaged_steps"] == 200
    np.testing.assert_allclose(res.params["x"], 50.0, atol=0.1)


def test_minibatch_windows_are_whole_epochs_so_person_spread_cancels():
    """Persons differ a lot (loss spread 10 between batches), the parameter converges fast: the
    epoch means are flat, so the fit stops soon after min_steps with the slope per epoch."""
    n, batch = 400, 20
    spread = jnp.asarray(np.random.default_rng(1).normal(0, 10.0, n), jnp.float32)

    def loss(p, key, b):
        return jnp.mean(b["v"]) + jnp.sum((p["x"] - 1.0) ** 2)

    settings = TrainSettings(
        learning_rate=0.1,
        batch_size=batch,
        max_steps=4000,
        min_steps=200,
        check_every=20,
        window_epochs=3,
        patience=3,
        progress_every=0,
        stopping="noise",
    )
    res = train(loss, {"x": jnp.zeros(2)}, jax.random.key(0), {"v": spread}, n, settings)
    # (a full window of gradients must also show no drift: here the loss is noiseless, so Adam
    # hovers about x = 1 until its gradients vanish)
    assert res.converged and res.steps <= 600 and res.convergence["slope_unit"] == "epoch"
    np.testing.assert_allclose(res.params["x"], 1.0, atol=0.05)


def test_record_says_how_converged_and_validates():
    loss = _slow_descent(1000.0)
    res = train(loss, {"x": jnp.array(0.0)}, jax.random.key(0), DATA, 1, TrainSettings(**{**SLOW, "max_steps": 400}))
    rec = records.fit_record(res, FIELDS, window=100)
    jsonschema.validate(rec, SCHEMA)
    assert rec["stop_reason"] == "max_steps" and rec["max_steps_still_improving"] is True
    assert rec["loss_slope"] < 0 and rec["loss_slope_se"] > 0 and rec["loss_slope_unit"] == "step"
    # x's gradient is -0.1 at every step: the drift is at its cap, and nothing was averaged
    assert rec["gradient_drift"] > 50 and rec["gradient_drift_array"] == "x" and rec["averaged_steps"] == 0


def test_unknown_stopping_rule_is_refused():
    with pytest.raises(ValueError, match="stopping"):
        TrainSettings(stopping="patience")


def test_report_flags_unconverged_fits(tmp_path):
    loss = _slow_descent(1000.0)
    improving = train(
        loss, {"x": jnp.array(0.0)}, jax.random.key(0), DATA, 1, TrainSettings(**{**SLOW, "max_steps": 400})
    )
    settled = train(loss, {"x": jnp.array(49.0)}, jax.random.key(0), DATA, 1, TrainSettings(**SLOW))
    for name, res in {"a": improving, "b": settled}.items():
        out = MethodResult(records.fit_record(res, FIELDS, window=100), records.loss_table([]))
        records.write_fit(out, tmp_path / name)
    verdict, flags = records.convergence_flags(tmp_path)
    assert list(flags.fit) == ["a"] and bool(flags.max_steps_still_improving.iloc[0])
    assert "1 fit(s) flagged" in verdict and "1 stopped at max_steps while still improving" in verdict
    verdict, flags = records.convergence_flags(tmp_path / "b")
    assert flags.empty and verdict.startswith("Every fit converged")


def test_relative_floor_keeps_a_noisy_fit_going_while_its_estimated_slope_is_large():
    """Noise sd 0.6 leaves a slope of 0.001 per step near the test's threshold over 200 steps; the
    estimated improvement per window (~0.04 on a loss of ~10) is still above rel_tol = 1e-3."""

    def loss(p, key, batch):
        return 10.0 + 0.1 * jnp.abs(p["x"] - 50.0) + 0.6 * jax.random.normal(key)

    common = {**SLOW, "max_steps": 800}
    floor = train(loss, {"x": jnp.array(0.0)}, jax.random.key(0), DATA, 1, TrainSettings(rel_tol=1e-3, **common))
    assert floor.steps == 800 and not floor.converged
    # without the floor (and without the gradient-drift check) the noisy loss's test stops it
    bare = train(
        loss,
        {"x": jnp.array(0.0)},
        jax.random.key(0),
        DATA,
        1,
        TrainSettings(rel_tol=1.0, drift_max=float("inf"), **common),
    )
    assert bare.converged and bare.steps < 800
    # the drift check alone keeps it going: x's gradient is -0.1 at every step, however noisy the loss
    drift = train(loss, {"x": jnp.array(0.0)}, jax.random.key(0), DATA, 1, TrainSettings(rel_tol=1.0, **common))
    assert drift.steps == 800 and not drift.converged and drift.convergence["max_steps_still_improving"]
    assert drift.convergence["gradient_drift"] > 50 and drift.convergence["gradient_drift_array"] == "x"


def test_default_rule_is_the_relative_one_and_its_early_stops_are_flagged(tmp_path):
    assert TrainSettings().stopping == "relative"
    loss = _slow_descent(1000.0)
    early = train(
        loss,
        {"x": jnp.array(0.0)},
        jax.random.key(0),
        DATA,
        1,
        TrainSettings(**{**SLOW, "stopping": "relative", "rel_tol": 1e-3}),
    )
    rec = records.fit_record(early, FIELDS, window=100)
    jsonschema.validate(rec, SCHEMA)
    assert rec["converged"] and rec["loss_still_improving"] is True
    records.write_fit(MethodResult(rec, records.loss_table([])), tmp_path / "early")
    verdict, flags = records.convergence_flags(tmp_path)
    assert list(flags.fit) == ["early"] and "relative-tolerance rule while the loss was still falling" in verdict
