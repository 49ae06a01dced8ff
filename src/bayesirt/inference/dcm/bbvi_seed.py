"""BBVI for the LCDM run as seed 002's notebook runs it: K sweeps of coordinate ascent with plain
gradient steps on each block, from a fresh model.

The gradients are BBVI's own (``inference.dcm.bbvi_gradients``: Rao-Blackwellized score-function
estimates from M joint samples of q). What differs from ``inference.dcm.bbvi``'s fit is the schedule:

* each block takes plain steps, ``lambda <- lambda + step * grad`` (the seed's ``update_*``
  functions), not Adam, and the beta block's step shrinks within each visit as
  ``initial_step / t``, t = 1, 2, ... (:func:`seed_optimizer`);
* the run is a fixed number of sweeps (no early stopping): ``SeedSchedule.n_sweeps`` times the
  blocks' iterations;
* q(beta_j)'s Cholesky factor takes its step in C_j itself, as the seed's vech(C_j) gradient
  does, although this project stores the factor's diagonal as its logarithm
  (:func:`cholesky_step`);
* the start is a fresh model (:func:`fresh_params`), not the data-informed start of ``bbvi``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayesirt.inference.dcm.bbvi_gradients import make_loss
from bayesirt.inference.dcm.bbvi_schedule import coordinate_ascent
from bayesirt.inference.execution import training
from bayesirt.models import lcdm

# a diagonal entry of C_j that a step would take to zero or below is reflected and kept at least
# this far from zero (the seed's C_j may change sign, which log-storage cannot hold; V_j = C C^T
# keeps its determinant's sign only through |diag|)
MIN_DIAGONAL = 1e-6


class SeedSchedule(NamedTuple):
    """The notebook's coordinate ascent: sweeps, and per block (Z, beta, pi, sigma^2 in
    ``bbvi_schedule.BLOCKS`` order) its iterations per sweep and its step size (for beta, the
    first step of each visit)."""

    n_sweeps: int
    iterations: tuple  # (Z, beta, pi, sigma^2) per sweep
    steps: tuple  # (Z, beta initial, pi, sigma^2)

    @property
    def n_steps(self) -> int:
        """Gradient steps of the whole run."""
        return int(self.n_sweeps * sum(self.iterations))


def shrinking_step(initial_step: float, iterations: int):
    """The beta block's step within a visit: ``initial_step / t`` at its t-th iteration
    (t = 1..iterations, restarting at every sweep).

    The seed calls ``update_mu_star_V_star(model, init_step = 1.0, use_iter = true, maxiter = 20)``
    without the function's body; a step that starts at ``init_step`` and shrinks with the
    iteration is this project's reading of ``init_step`` with ``use_iter``.

    Parameters
    ----------
    initial_step : float
        The step of each visit's first iteration.
    iterations : int
        The beta block's iterations per sweep, after which t restarts at 1 (0 is taken as 1).

    Returns
    -------
    callable
        ``schedule(count)``: the step at the block's 0-based step count ``count``,
        ``initial_step / (1 + count mod iterations)``.
    """

    period = max(int(iterations), 1)  # a block the run never visits (0 iterations) has no step

    def schedule(count):
        return initial_step / (1.0 + (count % period))

    return schedule


def cholesky_step(schedule) -> optax.GradientTransformation:
    """Plain gradient descent on the loss (ascent on the ELBO) for the beta block, with the
    diagonal of C_j stepped in C_j and stored back as its logarithm.

    For ``log_diag`` = log c, the gradient in c is g / c, so c <- c - s g / c; every other
    parameter takes - s g as it is.

    Parameters
    ----------
    schedule : callable
        ``schedule(count)``, the step size s at the block's step count (:func:`shrinking_step`).

    Returns
    -------
    optax.GradientTransformation
        Its ``update`` needs ``params``. A diagonal entry that a step would take to zero or below
        is reflected and kept at least ``MIN_DIAGONAL`` from zero.
    """

    def init(params):
        del params
        return optax.ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

    def update(grads, state, params):
        step = schedule(state.count)
        updates = {k: -step * g for k, g in grads.items()}
        if "log_diag" in grads:
            c = jnp.exp(params["log_diag"])
            new_c = jnp.maximum(jnp.abs(c - step * grads["log_diag"] / c), MIN_DIAGONAL)
            updates["log_diag"] = jnp.log(new_c) - params["log_diag"]
        return updates, optax.ScaleByScheduleState(count=state.count + 1)

    return optax.GradientTransformation(init, update)


def seed_optimizer(schedule: SeedSchedule) -> optax.GradientTransformation:
    """The seed's coordinate ascent as one optax transformation: plain steps per block, cycled
    by ``bbvi_schedule.coordinate_ascent`` over the blocks' iterations.

    Parameters
    ----------
    schedule : SeedSchedule
        Iterations and step sizes per block (Z, beta, pi, sigma^2).

    Returns
    -------
    optax.GradientTransformation
        ``optax.sgd`` for Z, pi and sigma^2, and for beta :func:`cholesky_step` with
        :func:`shrinking_step`, each block in turn for its iterations.
    """
    z_step, beta_step, pi_step, sigma2_step = schedule.steps
    transforms = (
        optax.sgd(z_step),
        cholesky_step(shrinking_step(beta_step, schedule.iterations[1])),
        optax.sgd(pi_step),
        optax.sgd(sigma2_step),
    )
    return coordinate_ascent(transforms, tuple(schedule.iterations))


def fresh_params(n_persons: int, design: lcdm.Design, priors: lcdm.Priors) -> dict:
    """A fresh model's variational parameters.

    The seed builds ``DCModel(obs, d0, a0, b0, M)`` without showing its starting values; this
    project's choice: q(Z_i) uniform, q(beta_j) = N(0, I) (no information on the coefficients,
    unlike ``bbvi``'s start near the generating values), q(pi) = Dir(d0) (the prior), and q(sigma^2)
    with shape a0 + (number of coefficients) / 2 and mean 1 (q at the prior IG(a0, b0) draws
    sigma^2 beyond float32's range when a0 = 1e-2).

    Parameters
    ----------
    n_persons : int
        N.
    design : lcdm.Design
        The Q-matrix's design: J items, L profiles, K features per item (padded).
    priors : lcdm.Priors
        ``a0`` and ``d0`` (``b0`` is not read).

    Returns
    -------
    dict
        float32 ``rho`` (N, L), ``mu`` (J, K), ``chol_off`` (J, K, K), ``log_diag`` (J, K),
        ``log_d`` (L,) and ``log_ab`` (2,).
    """
    j, n_prof, k = design.delta.shape
    k_total = design.feature_mask.sum()
    a = priors.a0 + k_total / 2
    return {
        "rho": jnp.zeros((n_persons, n_prof), jnp.float32),
        "mu": jnp.zeros((j, k), jnp.float32),
        "chol_off": jnp.zeros((j, k, k), jnp.float32),
        "log_diag": jnp.zeros((j, k), jnp.float32),
        "log_d": jnp.full((n_prof,), np.log(priors.d0), jnp.float32),
        "log_ab": jnp.asarray([np.log(a), np.log(a - 1)], jnp.float32),
    }


def train_settings(schedule: SeedSchedule, check_every: int | None = None) -> training.TrainSettings:
    """The training driver's settings for a fixed run of ``schedule``: full batch, every step
    taken (minimum = maximum), a loss check every sweep (unless ``check_every`` is given).

    Parameters
    ----------
    schedule : SeedSchedule
        Its sweeps and iterations give the number of steps.
    check_every : int, optional
        Steps between loss checks, also the window; one sweep when None.

    Returns
    -------
    training.TrainSettings
        ``batch_size=None``, ``max_steps = min_steps = schedule.n_steps``, no progress lines.
    """
    sweep = int(sum(schedule.iterations))
    every = check_every or sweep
    return training.TrainSettings(
        batch_size=None,
        max_steps=schedule.n_steps,
        min_steps=schedule.n_steps,
        check_every=every,
        window=every,
        progress_every=0,
    )


def problem(
    key, prob, settings, schedule: SeedSchedule, *, init: dict | None = None, label: str = "bbvi_seed"
) -> training.Problem:
    """The seed's run on one data set for the training (or bulk) driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split in two, the second half is the driver's (as ``bbvi.problem``).
    prob : bbvi.Problem
        The data set, as ``bbvi.prepare`` builds it.
    settings : bbvi.BBVISettings
        M and the priors (``n_samples``, ``priors``; no control variates, not monotone); its
        ``train`` is replaced by :func:`train_settings` of ``schedule``.
    schedule : SeedSchedule
        Sweeps, iterations and steps per block.
    init : dict, optional
        Starting parameters (:func:`fresh_params` by default; the seed's sub-experiments start
        some blocks at the truth).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit, with :func:`seed_optimizer`'s transformation, for ``training.train_problem``
        or, with others of the same shape, the bulk driver (``bulk.train_block``).
    """
    _, fit_key = jax.random.split(key)
    settings = settings._replace(train=train_settings(schedule))
    params = fresh_params(prob.n_persons, prob.design, settings.priors) if init is None else init
    loss = make_loss(settings, prob.n_persons)
    optimizer = seed_optimizer(schedule)
    return training.Problem(loss, params, fit_key, prob.data, prob.n_persons, settings.train, optimizer, label)
