"""The one training driver for every stochastic-gradient method (ADVI, IWAE, IWAVB, VIBO, BBVI).

A method supplies ``loss_fn(params, key, batch)`` (a scalar to minimise, where ``batch`` is a
dict of arrays whose leading axis is persons, plus ``"index"``, the persons' row numbers, and
``"step"``, the global step number as a traced integer, for schedules inside a loss such as a
warm-up) and initial parameters. The driver owns everything else:

* minibatches of persons drawn without replacement each epoch (or the full data); an entry
  ``data[SHARED]`` (optional, any pytree of arrays) is not indexed by persons and goes to
  every batch whole (e.g. a flat list of cells that a loss indexes itself);
* a whole chunk of steps compiled as one ``lax.scan`` (PLATFORM notes: ~2x over a Python
  loop of jitted steps), called from a thin Python loop that prints progress;
* Adam with global-norm gradient clipping and exponential learning-rate decay (optax);
* a convergence rule on windowed means of the loss (one noisy step cannot stop a fit);
* a NaN guard: a non-finite loss or parameter stops the fit, names the step, keeps the last
  good state (``FitDivergedError.last_good``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import optax

log = logging.getLogger("bayesirt")

SHARED = "shared"  # key of the data entry that is passed to every batch unsliced


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
    window: int = 100  # steps averaged on each side of the comparison
    rel_tol: float = 1e-4  # relative improvement of the windowed loss counted as "no progress"
    patience: int = 3  # consecutive checks without progress before stopping
    progress_every: int = 10  # chunks between progress lines (0: silent)

    def optimizer(self) -> optax.GradientTransformation:
        if self.lr_decay_rate >= 1.0:
            # optax reads end_value as an upper bound when the rate is not below 1
            schedule = optax.constant_schedule(self.learning_rate)
        else:
            schedule = optax.exponential_decay(self.learning_rate, self.lr_decay_steps, self.lr_decay_rate,
                                               end_value=min(self.min_learning_rate, self.learning_rate))
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


class FitDivergedError(RuntimeError):
    """The loss or the parameters became non-finite; ``last_good`` holds the state before."""

    def __init__(self, step: int, last_good, losses):
        super().__init__(f"loss became non-finite at step {step}; stopped and kept the last good state")
        self.step = step
        self.last_good = last_good
        self.losses = losses


def _chunk_fn(loss_fn, optimizer, n_persons: int, batch_size: int, n_steps: int):
    """Compile-ready function running ``n_steps`` optimizer steps inside one lax.scan."""
    full_batch = batch_size >= n_persons
    batches_per_epoch = max(n_persons // batch_size, 1)

    def step(carry, xs):
        params, opt_state = carry
        key, index = xs
        loss, grads = jax.value_and_grad(loss_fn)(params, key, index)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    # epochs a chunk can touch: at most this many distinct permutations are needed per chunk
    epochs_per_chunk = -(-n_steps // batches_per_epoch) + 1

    def chunk(params, opt_state, key, data, first_step):
        step_key, perm_key = jax.random.split(key)
        t = first_step + jnp.arange(n_steps)
        step_keys = jax.vmap(lambda s: jax.random.fold_in(step_key, s))(t)
        if full_batch:
            index = jnp.broadcast_to(jnp.arange(n_persons), (n_steps, n_persons))
        else:
            # Step t uses slice (t mod batches_per_epoch) of the permutation of epoch
            # t // batches_per_epoch: persons are drawn without replacement within an epoch,
            # whatever the chunk boundaries.
            epoch, pos = t // batches_per_epoch, t % batches_per_epoch
            first_epoch = epoch[0]
            perms = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(perm_key, e), n_persons))(
                first_epoch + jnp.arange(epochs_per_chunk))
            index = jax.vmap(lambda e, s: jax.lax.dynamic_slice(perms[e], (s * batch_size,), (batch_size,)))(
                epoch - first_epoch, pos)

        def step_with_data(carry, xs):
            key, idx, s = xs
            batch = data if full_batch else {
                k: v if k == SHARED else jax.tree.map(lambda a: a[idx], v) for k, v in data.items()}
            batch = dict(batch, index=idx, step=s)
            return step(carry, (key, batch))

        (params, opt_state), losses = jax.lax.scan(step_with_data, (params, opt_state), (step_keys, index, t))
        return params, opt_state, losses

    return chunk


def train(loss_fn, params, key, data: dict, n_persons: int, settings: TrainSettings,
          label: str = "fit", optimizer: optax.GradientTransformation | None = None) -> FitResult:
    """Minimise ``loss_fn(params, key, batch)`` from ``params``; see the module docstring.

    ``optimizer`` replaces ``settings.optimizer()`` when a method needs its own (e.g. AdamW
    with separate learning rates for the parts of ``params`` via ``optax.multi_transform``,
    as the adversarial methods do); the rest of ``settings`` (batches, convergence) applies.
    """
    batch_size = min(settings.batch_size or n_persons, n_persons)
    optimizer = optimizer if optimizer is not None else settings.optimizer()
    opt_state = optimizer.init(params)
    chunk = _chunk_fn(loss_fn, optimizer, n_persons, batch_size, settings.check_every)

    t0 = time.perf_counter()
    compiled = jax.jit(chunk).lower(params, opt_state, key, data, 0).compile()
    compile_seconds = time.perf_counter() - t0

    losses: list[np.ndarray] = []
    steps, stalls = 0, 0
    converged, reason = False, f"reached max_steps={settings.max_steps}"
    t0 = time.perf_counter()
    while steps < settings.max_steps:
        new_params, new_state, chunk_losses = compiled(params, opt_state, key, data, steps)
        chunk_losses = np.asarray(chunk_losses)
        bad = ~np.isfinite(chunk_losses)
        if bad.any() or not _all_finite(new_params):
            first = steps + (int(np.argmax(bad)) if bad.any() else settings.check_every - 1)
            log.error("%s: non-finite loss at step %d", label, first)
            raise FitDivergedError(first, params, np.concatenate(losses + [chunk_losses[:first - steps]]))
        params, opt_state = new_params, new_state
        losses.append(chunk_losses)
        steps += settings.check_every
        history = np.concatenate(losses)
        if steps >= max(settings.min_steps, 2 * settings.window):
            recent = history[-settings.window:].mean()
            before = history[-2 * settings.window:-settings.window].mean()
            improvement = (before - recent) / max(abs(recent), 1e-12)
            stalls = stalls + 1 if improvement < settings.rel_tol else 0
            if stalls >= settings.patience:
                converged = True
                reason = (f"windowed loss improved by less than {settings.rel_tol:g} (relative) "
                          f"for {settings.patience} checks")
                break
        n_chunks = steps // settings.check_every
        if settings.progress_every and n_chunks % settings.progress_every == 0:
            log.info("%s: step %d  loss %.5g  (%.1f s)", label, steps,
                     history[-settings.check_every:].mean(), time.perf_counter() - t0)
    jax.block_until_ready(params)
    wall = time.perf_counter() - t0
    log.info("%s: %s after %d steps, %.2f s (+%.2f s compile)", label,
             "converged" if converged else "stopped", steps, wall, compile_seconds)
    return FitResult(params, np.concatenate(losses), steps, converged, reason, wall, compile_seconds)


def keep_last_good(fit, *args, **kwargs) -> FitResult:
    """``fit(*args, **kwargs)``, except that a fit whose loss becomes non-finite returns its last
    good state as an unconverged ``FitResult`` (reason and ``extra["diverged_at_step"]`` say
    where) instead of raising, so every study writes a record for it the same way."""
    t0 = time.perf_counter()
    try:
        return fit(*args, **kwargs)
    except FitDivergedError as err:
        log.error("%s", err)
        return FitResult(err.last_good, np.asarray(err.losses), max(err.step, 1), False, str(err),
                         time.perf_counter() - t0, 0.0, {"diverged_at_step": err.step})


def _all_finite(tree) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree))
