"""The one training driver for every stochastic-gradient method (ADVI, IWAE, IWAVB, VIBO, BBVI).

A method supplies ``loss_fn(params, key, batch)`` (a scalar to minimise, where ``batch`` is a
dict of arrays whose leading axis is persons, plus ``"index"``, the persons' row numbers, and
``"step"``, the global step number as a traced integer, for schedules inside a loss such as a
warm-up) and initial parameters. The driver owns everything else:

* minibatches of persons drawn without replacement each epoch (or the full data); an entry
  ``data[SHARED]`` (optional, any pytree of arrays) is not indexed by persons and goes to
  every batch whole (e.g. a flat list of cells that a loss indexes itself);
* a whole chunk of steps compiled as one ``lax.scan``, called from a thin Python loop that
  prints progress (the chunk and its minibatches: ``inference.execution.training_chunks``);
* Adam with global-norm gradient clipping and exponential learning-rate decay (optax);
* a stopping rule, by default a relative tolerance on windowed means, optionally one judged
  against the loss's own noise (``inference.execution.stopping``);
* a NaN guard: a non-finite loss or parameter stops the fit, names the step, keeps the last
  good state (``FitDivergedError.last_good``).

The stopping rules (``stopping="relative"``, the default, and ``stopping="noise"``), the tests
they make on the loss history and on the gradients, and the tail averaging of a converged
fit's iterates are in ``inference.execution.stopping``; the driver calls them after each chunk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import numpy as np
import optax

from bayesirt.inference.execution.stopping import STOPPING_RULES, Stopper
from bayesirt.inference.execution.training_chunks import (
    SHARED,  # noqa: F401  (the driver's data convention, read as training.SHARED)
    EpochPermutations,
    chunk_fn,
)

log = logging.getLogger("bayesirt")


@dataclass(frozen=True)
class TrainSettings:
    learning_rate: float = 0.05
    lr_decay_rate: float = 0.5  # learning rate multiplied by this every lr_decay_steps
    lr_decay_steps: int = 1000
    min_learning_rate: float = 1e-3
    clip_norm: float = 10.0
    batch_size: int | None = None  # None: full batch
    max_steps: int = 5000
    min_steps: int = 200
    check_every: int = 50  # steps per compiled chunk, and between convergence checks
    window: int = 100  # steps per window: full-batch fits (noise rule) and the relative rule
    rel_tol: float = 1e-4  # relative improvement per window counted as "no progress" (noise rule: a floor)
    patience: int = 3  # consecutive tests (checks) without progress before stopping
    stopping: str = (
        "relative"  # "relative" (windowed means, rel_tol), "noise" or "best" (see inference.execution.stopping)
    )
    window_epochs: int = 5  # noise rule, minibatch fits: epochs per window (at least window steps)
    confidence: float = 0.95  # noise rule: one-sided level at which an improvement counts as real
    # noise rule: largest gradient drift (mean over a parameter array of n * mean(g)^2 / var(g)
    # over the test's window; about 1 or less at a stationary point) that counts as stationary
    drift_max: float = 2.0
    average_tail: bool = True  # noise rule: a converged fit returns its parameters averaged over that window
    progress_every: int = 10  # chunks between progress lines (0: silent)

    def __post_init__(self):
        if self.stopping not in STOPPING_RULES:
            raise ValueError(f"training setting 'stopping' must be one of {STOPPING_RULES}, got '{self.stopping}'")

    def optimizer(self) -> optax.GradientTransformation:
        if self.lr_decay_rate >= 1.0:
            # optax reads end_value as an upper bound when the rate is not below 1
            schedule = optax.constant_schedule(self.learning_rate)
        else:
            schedule = optax.exponential_decay(
                self.learning_rate,
                self.lr_decay_steps,
                self.lr_decay_rate,
                end_value=min(self.min_learning_rate, self.learning_rate),
            )
        return optax.chain(optax.clip_by_global_norm(self.clip_norm), optax.adam(schedule))


@dataclass
class FitResult:
    params: dict
    losses: np.ndarray
    steps: int
    converged: bool
    reason: str
    wall_seconds: float
    compile_seconds: float
    extra: dict = field(default_factory=dict)
    # how converged (see ``Trend``, plus "stopping" and "stop_reason": no_improvement,
    # relative_tolerance, max_steps or diverged); empty for results not made by ``train``
    convergence: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    """One fit, as ``train`` takes it (``train_problem`` fits it). The bulk driver
    (``bulk.train_block``) fits a list of problems that differ only in ``params``, ``key`` and
    ``data`` (the same loss, shapes, settings and optimizer) as one program."""

    loss_fn: Callable
    params: dict
    key: jax.Array
    data: dict
    n_persons: int
    settings: TrainSettings
    optimizer: optax.GradientTransformation | None = None
    label: str = "fit"


class FitDivergedError(RuntimeError):
    """The loss or the parameters became non-finite; ``last_good`` holds the state before."""

    def __init__(self, step: int, last_good, losses):
        super().__init__(f"loss became non-finite at step {step}; stopped and kept the last good state")
        self.step = step
        self.last_good = last_good
        self.losses = losses


def train(
    loss_fn,
    params,
    key,
    data: dict,
    n_persons: int,
    settings: TrainSettings,
    label: str = "fit",
    optimizer: optax.GradientTransformation | None = None,
) -> FitResult:
    """Minimise ``loss_fn(params, key, batch)`` from ``params``; see the module docstring.

    ``optimizer`` replaces ``settings.optimizer()`` when a method needs its own (e.g. AdamW
    with separate learning rates for the parts of ``params`` via ``optax.multi_transform``,
    as the adversarial methods do); the rest of ``settings`` (batches, convergence) applies.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(params, key, batch) -> scalar`` to minimise.
    params : dict
        Starting parameters (any pytree of arrays).
    key : jax.Array
        PRNG key; split into the steps' key and the minibatch permutations' key.
    data : dict
        Arrays with persons on the leading axis, plus optionally a ``SHARED`` entry every batch
        sees whole.
    n_persons : int
        N.
    settings : TrainSettings
        Optimiser, batches and stopping rule.
    label : str
        Name of the fit in the progress log.
    optimizer : optax.GradientTransformation, optional
        Replaces ``settings.optimizer()``.

    Returns
    -------
    FitResult
        The final parameters (tail-averaged where the noise rule says so), the loss history,
        steps, convergence, reason and timings.

    Raises
    ------
    FitDivergedError
        If the loss or the parameters become non-finite; it holds the last good state.
    """
    batch_size = min(settings.batch_size or n_persons, n_persons)
    optimizer = optimizer if optimizer is not None else settings.optimizer()
    # one compiled program (cached across jobs) instead of one tiny eager op per parameter shape
    opt_state = jax.jit(optimizer.init)(params)
    track = settings.stopping == "noise"
    chunk = chunk_fn(loss_fn, optimizer, n_persons, batch_size, settings.check_every, track)
    step_key, perm_key = jax.random.split(key)
    permutations = EpochPermutations(perm_key, n_persons, batch_size, settings.check_every)

    t0 = time.perf_counter()
    compiled = jax.jit(chunk).lower(params, opt_state, step_key, permutations.for_chunk(0), data, 0).compile()
    compile_seconds = time.perf_counter() - t0

    stopper = Stopper(settings, n_persons)
    t0 = time.perf_counter()
    while stopper.steps < settings.max_steps:
        steps = stopper.steps
        new_params, new_state, chunk_losses, sums = compiled(
            params, opt_state, step_key, permutations.for_chunk(steps), data, steps
        )
        chunk_losses = np.asarray(chunk_losses)
        bad = ~np.isfinite(chunk_losses)
        if bad.any() or not _all_finite(new_params):
            first = steps + (int(np.argmax(bad)) if bad.any() else settings.check_every - 1)
            log.error("%s: non-finite loss at step %d", label, first)
            raise FitDivergedError(first, params, np.concatenate(stopper.losses + [chunk_losses[: first - steps]]))
        params, opt_state = new_params, new_state
        if stopper.update(chunk_losses, jax.device_get(sums) if stopper.track else None):
            params = stopper.final_params(params)
            break
        n_chunks = stopper.steps // settings.check_every
        if settings.progress_every and n_chunks % settings.progress_every == 0:
            log.info(
                "%s: step %d  loss %.5g  (%.1f s)", label, stopper.steps, chunk_losses.mean(), time.perf_counter() - t0
            )
    jax.block_until_ready(params)
    return finished(stopper, params, time.perf_counter() - t0, compile_seconds, label)


def train_problem(problem: Problem) -> FitResult:
    """``train`` on one ``Problem``.

    Parameters
    ----------
    problem : Problem
        The fit: loss, starting parameters, key, data, N, settings, optimizer and label.

    Returns
    -------
    FitResult
        As ``train`` returns it (and ``FitDivergedError`` raised as ``train`` raises it).
    """
    p = problem
    return train(p.loss_fn, p.params, p.key, p.data, p.n_persons, p.settings, p.label, p.optimizer)


def finished(stopper: Stopper, params, wall: float, compile_seconds: float, label: str) -> FitResult:
    """The result of a fit that ``stopper`` stopped (converged or at ``max_steps``).

    Parameters
    ----------
    stopper : Stopper
        The fit's stopping state.
    params : dict
        The final parameters.
    wall : float
        Seconds the steps took.
    compile_seconds : float
        Seconds the compilation took.
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    FitResult
        The parameters, the loss history, steps, convergence, reason and timings, with the
        ``convergence`` entry of ``stopper.summary()``.
    """
    history, converged, reason, convergence = stopper.summary()
    log.info(
        "%s: %s after %d steps, %.2f s (+%.2f s compile)",
        label,
        "converged" if converged else "stopped",
        stopper.steps,
        wall,
        compile_seconds,
    )
    return FitResult(params, history, stopper.steps, converged, reason, wall, compile_seconds, convergence=convergence)


def keep_last_good(fit, *args, **kwargs) -> FitResult:
    """``fit(*args, **kwargs)``, except that a fit whose loss becomes non-finite returns its last
    good state as an unconverged ``FitResult`` (reason and ``extra["diverged_at_step"]`` say
    where) instead of raising, so every study writes a record for it the same way.

    Parameters
    ----------
    fit : callable
        A fit that returns a ``FitResult`` and may raise ``FitDivergedError``.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    FitResult
        ``fit``'s result, or :func:`diverged_result` of the error it raised.
    """
    t0 = time.perf_counter()
    try:
        return fit(*args, **kwargs)
    except FitDivergedError as err:
        log.error("%s", err)
        return diverged_result(err.step, err.last_good, err.losses, time.perf_counter() - t0, str(err))


def diverged_result(step: int, last_good, losses, wall: float, reason: str) -> FitResult:
    """The unconverged result of a fit whose loss became non-finite at ``step``: its last good
    state and the losses before, the step in ``extra["diverged_at_step"]``.

    Parameters
    ----------
    step : int
        The step at which the loss became non-finite.
    last_good : dict
        The parameters before it.
    losses : array (n,)
        The losses before it.
    wall : float
        Seconds the fit ran.
    reason : str
        Why it stopped (in words).

    Returns
    -------
    FitResult
        Unconverged, ``steps`` at least 1, no compile time, ``convergence["stop_reason"]``
        ``"diverged"``.
    """
    return FitResult(
        last_good,
        np.asarray(losses),
        max(step, 1),
        False,
        reason,
        wall,
        0.0,
        {"diverged_at_step": step},
        convergence={"stop_reason": "diverged", "max_steps_still_improving": False},
    )


def _all_finite(tree) -> bool:
    # on the host: as eager JAX ops, each parameter shape compiled two programs of its own
    return all(bool(np.isfinite(np.asarray(x)).all()) for x in jax.tree.leaves(tree))
