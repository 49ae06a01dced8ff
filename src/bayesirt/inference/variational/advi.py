"""Mean-field ADVI with person-level ("local") parameters and minibatches (seed 000, section 3).

The surrogate is a product of independent normals on the unconstrained real line, pushed
through each parameter's bijector (TFP), so every factor lives on its prior's support
(Normal prior: normal; HalfNormal prior: softplus-transformed normal). The ELBO is

    E_q[ log p(y | phi) + log p(phi) + log|J(u)| ] + H[q(u)],

with the Gaussian entropy in closed form and the rest estimated with ``n_draws`` draws.
With a minibatch B of persons, global terms enter once and the batch's local terms
(likelihood, ability prior and entropy) are scaled by N/B; the loss is that estimate divided
by N. Multiplied by B/N this is the seed's objective with prior weight w = B/N; the constant
factor changes no optimum, and per-person scaling keeps learning rates independent of N.

A model is a ``Model``: parameter shapes, bijectors, which parameters are local (leading axis
= persons), and log-density functions. ``log_likelihood(params, batch, key)`` returns one
value per person of the batch; ``key`` lets objectives that draw imputations do so.

``fit(key, data, model, ADVISettings(...), init=q0)`` fits any such model (the calling
convention of ``bayesirt.inference``); ``init`` builds a surrogate from starting values,
``draws`` samples a fitted one. ``inference.variational.grm_advi`` is this fit for the factorized GRM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import SHARED, FitResult, Problem, TrainSettings, train_problem

HALF_LOG_2PI_E = 0.5 * np.log(2 * np.pi * np.e)


@dataclass(frozen=True)
class Model:
    """A model for mean-field ADVI: parameter shapes, bijectors, local parameters, log-densities.

    Attributes
    ----------
    shapes : dict
        Name -> shape (local parameters have persons as first axis).
    bijectors : dict
        Name -> tfb bijector from R to the parameter's support.
    local : tuple of str
        Names of per-person parameters.
    log_prior_global : callable
        params -> scalar.
    log_prior_local : callable
        params (batch rows of local parameters) -> (B,).
    log_likelihood : callable
        (params, batch, key) -> (B,).
    """

    shapes: dict  # name -> shape (local parameters have persons as first axis)
    bijectors: dict  # name -> tfb bijector from R to the parameter's support
    local: tuple  # names of per-person parameters
    log_prior_global: Callable  # params -> scalar
    log_prior_local: Callable  # params (batch rows of local parameters) -> (B,)
    log_likelihood: Callable  # (params, batch, key) -> (B,)


@dataclass(frozen=True)
class ADVISettings:
    """Settings of :func:`fit`.

    Attributes
    ----------
    n_draws : int
        Draws of the surrogate per step (the ELBO's Monte Carlo estimate).
    init_scale : float
        The surrogate's starting sd when ``fit`` builds its start.
    train : TrainSettings
        The training driver's settings.
    """

    n_draws: int = 1
    init_scale: float = 0.1
    train: TrainSettings = field(default_factory=TrainSettings)


def init(model: Model, initial_values: dict, init_scale: float = 0.1) -> dict:
    """Surrogate parameters from starting values.

    ``loc`` at the inverse bijector of ``initial_values``, and ``raw_scale`` (softplus-inverse of
    the standard deviation) at ``init_scale``.

    Parameters
    ----------
    model : Model
        The model (shapes and bijectors).
    initial_values : dict
        Name -> starting value on the constrained scale, shaped as ``model.shapes``.
    init_scale : float
        Starting standard deviation.

    Returns
    -------
    dict
        ``{"loc": {...}, "raw_scale": {...}}`` on the unconstrained scale.

    Raises
    ------
    ValueError
        If a starting value's shape differs from ``model.shapes``.
    """
    raw = float(np.log(np.expm1(init_scale)))
    # one compiled program rather than a few eager ones per parameter
    loc = jax.jit(
        lambda values: {k: jnp.asarray(model.bijectors[k].inverse(v), jnp.float32) for k, v in values.items()}
    )({k: np.asarray(v, np.float32) for k, v in initial_values.items()})
    for k, shape in model.shapes.items():
        if loc[k].shape != tuple(shape):
            raise ValueError(f"initial value of '{k}' has shape {loc[k].shape}, expected {shape}")
    return {"loc": loc, "raw_scale": {k: jnp.asarray(np.full(v.shape, raw, np.float32)) for k, v in loc.items()}}


_init = init  # for ``fit``, whose keyword ``init`` hides the function


def _sample(model: Model, q: dict, index, key, with_log_q: bool = False):
    """One draw of every parameter (local ones only for the batch rows) and log|J|; with
    ``with_log_q`` also the surrogate's log-density of the draw (global scalar, local per row)."""
    params, ldj_global, ldj_local, logq_global, logq_local = {}, 0.0, 0.0, 0.0, 0.0
    keys = jax.random.split(key, len(model.shapes))
    for k, name in zip(keys, sorted(model.shapes)):
        loc, scale = q["loc"][name], jax.nn.softplus(q["raw_scale"][name])
        if name in model.local:
            loc, scale = loc[index], scale[index]
        eps = jax.random.normal(k, loc.shape, loc.dtype)
        u = loc + scale * eps
        bij = model.bijectors[name]
        params[name] = bij.forward(u)
        ldj = jnp.broadcast_to(bij.forward_log_det_jacobian(u, event_ndims=0), u.shape)
        log_q = -0.5 * eps**2 - jnp.log(scale) - 0.5 * np.log(2 * np.pi)
        if name in model.local:
            ldj_local = ldj_local + ldj.reshape(ldj.shape[0], -1).sum(-1)
            logq_local = logq_local + log_q.reshape(log_q.shape[0], -1).sum(-1)
        else:
            ldj_global = ldj_global + ldj.sum()
            logq_global = logq_global + log_q.sum()
    if with_log_q:
        return params, ldj_global, ldj_local, logq_global, logq_local
    return params, ldj_global, ldj_local


def _entropy(model: Model, q: dict, index):
    """Closed-form entropy of the Gaussian factors: global (scalar) and per batch person."""
    h_global, h_local = 0.0, 0.0
    for name in model.shapes:
        log_scale = jnp.log(jax.nn.softplus(q["raw_scale"][name])) + HALF_LOG_2PI_E
        if name in model.local:
            rows = log_scale[index]
            h_local = h_local + rows.reshape(rows.shape[0], -1).sum(-1)
        else:
            h_global = h_global + log_scale.sum()
    return h_global, h_local


def negative_elbo(model: Model, n_persons: int, n_draws: int = 1):
    """Loss for ``training.train``: minus the (per-person) ELBO estimate on a batch.

    Parameters
    ----------
    model : Model
        The model.
    n_persons : int
        N, to scale the global terms to one person.
    n_draws : int
        Draws of the surrogate per estimate.

    Returns
    -------
    callable
        ``loss(q, key, batch) -> scalar``.
    """

    def loss(q, key, batch):
        index = batch["index"]
        scale_local = n_persons / index.shape[0]

        def one_draw(k):
            k_params, k_lik = jax.random.split(k)
            params, ldj_g, ldj_l = _sample(model, q, index, k_params)
            local = model.log_likelihood(params, batch, k_lik) + model.log_prior_local(params) + ldj_l
            return model.log_prior_global(params) + ldj_g + scale_local * local.sum()

        keys = jax.random.split(key, n_draws)
        # One draw (the fits' default) without vmap: XLA's CPU compiler in jaxlib 0.10 handles the
        # size-1 batch axis badly (the imputation objectives' GRM category-probability gradient
        # ran several times slower under a vmap of one: the Performance page); same keys, same draw.
        expected = one_draw(keys[0]) if n_draws == 1 else jax.vmap(one_draw)(keys).mean()
        h_g, h_l = _entropy(model, q, index)
        return -(expected + h_g + scale_local * h_l.sum()) / n_persons

    return loss


def log_ratios_program(model: Model, n_persons: int, n_draws: int, batch_size: int = 8):
    """The compiled function ``(q, key, data) -> (n_draws,)`` of the log importance ratios
    log p(data, z) - log q(z) of draws z of every parameter from the surrogate (on the
    unconstrained scale, Jacobians included), the input of PSIS's Pareto k-hat
    (``inference.variational.psis``). ``batch_size`` draws are evaluated at a time (memory).

    Parameters
    ----------
    model : Model
        The model.
    n_persons : int
        N (every person's local parameters are drawn).
    n_draws : int
        Draws.
    batch_size : int
        Draws evaluated together.

    Returns
    -------
    callable
        jitted ``(q, key, data) -> (n_draws,)``; ``data`` the driver's data of the fit.
    """
    index = jnp.arange(n_persons)

    @jax.jit
    def ratios(q, key, data):
        batch = dict(data, index=index)

        def one(k):
            k_params, k_lik = jax.random.split(k)
            params, ldj_g, ldj_l, logq_g, logq_l = _sample(model, q, index, k_params, with_log_q=True)
            local = model.log_likelihood(params, batch, k_lik) + model.log_prior_local(params) + ldj_l - logq_l
            return model.log_prior_global(params) + ldj_g - logq_g + local.sum()

        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch_size)

    return ratios


def problem(
    key, y, structure: Model, settings: ADVISettings = ADVISettings(), *, init: dict | None = None, label: str = "advi"
) -> Problem:
    """The mean-field fit of ``structure`` to the data ``y``, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the driver as it is (batches and the ELBO's draws).
    y : dict
        The driver's data: arrays with persons on the leading axis (``batch`` of the model's
        ``log_likelihood``; usually ``{"y": responses, ...}``), plus optionally
        ``training.SHARED`` entries every batch sees whole.
    structure : Model
        The model: parameter shapes, bijectors, local parameters and log-densities.
    settings : ADVISettings
        Draws per step, the starting sd and the training driver's settings (``train``).
    init : dict, optional
        The starting surrogate (``advi.init(model, initial_values)``); by default every
        parameter at 0 on the unconstrained scale with sd ``settings.init_scale``.
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with others of its
        kind (one model, data of one shape), the bulk driver (``bulk.train_block``).
    """
    n_persons = next(int(v.shape[0]) for k, v in y.items() if k != SHARED)
    q0 = init
    if q0 is None:
        zeros = {
            k: np.asarray(structure.bijectors[k].forward(np.zeros(shape, np.float32)))
            for k, shape in structure.shapes.items()
        }
        q0 = _init(structure, zeros, settings.init_scale)
    loss = negative_elbo(structure, n_persons, settings.n_draws)
    return Problem(loss, q0, key, y, n_persons, settings.train, None, label)


def fit(
    key, y, structure: Model, settings: ADVISettings = ADVISettings(), *, init: dict | None = None, label: str = "advi"
) -> FitResult:
    """Fit the mean-field surrogate of ``structure`` to the data ``y`` by the training driver:
    ``training.train_problem(problem(...))``; the parameters are those of :func:`problem`.

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the driver as it is (batches and the ELBO's draws).
    y : dict
        The driver's data: arrays with persons on the leading axis, plus optionally
        ``training.SHARED`` entries every batch sees whole.
    structure : Model
        The model: parameter shapes, bijectors, local parameters and log-densities.
    settings : ADVISettings
        Draws per step, the starting sd and the training driver's settings (``train``).
    init : dict, optional
        The starting surrogate (``advi.init(model, initial_values)``); by default every
        parameter at 0 on the unconstrained scale with sd ``settings.init_scale``.
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        ``params`` is the fitted surrogate (``{"loc", "raw_scale"}``); losses, steps,
        convergence and timings as the driver reports them. A loss that becomes non-finite
        raises ``training.FitDivergedError`` (``training.keep_last_good`` turns it into an
        unconverged result).
    """
    return train_problem(problem(key, y, structure, settings, init=init, label=label))


def draws(model: Model, q: dict, key, n: int) -> dict:
    """``n`` draws of every parameter from the surrogate, on the constrained scale.

    Parameters
    ----------
    model : Model
        The model (shapes and bijectors).
    q : dict
        The surrogate (``{"loc", "raw_scale"}``).
    key : jax.Array
        PRNG key.
    n : int
        Number of draws.

    Returns
    -------
    dict
        Name -> numpy array (n, *shape).
    """
    return {name: np.asarray(v) for name, v in draws_program(model, n)(q, key).items()}


def draws_program(model: Model, n: int):
    """The compiled function ``(q, key) -> {name: (n, *shape) draws}`` of :func:`draws`: one
    program rather than a few eager ones per parameter, reusable for many surrogates of the
    model (e.g. the fits of a block).

    Parameters
    ----------
    model : Model
        The model (shapes and bijectors).
    n : int
        Number of draws.

    Returns
    -------
    callable
        jitted ``(q, key) -> dict`` of JAX arrays.
    """

    @jax.jit
    def constrained(q, key):
        out = {}
        for k, name in zip(jax.random.split(key, len(model.shapes)), sorted(model.shapes)):
            loc, scale = q["loc"][name], jax.nn.softplus(q["raw_scale"][name])
            u = loc + scale * jax.random.normal(k, (n,) + loc.shape, loc.dtype)
            out[name] = model.bijectors[name].forward(u)
        return out

    return constrained
