"""Data-augmentation Gibbs sampler for the two-parameter normal ogive model (seed 001, Albert 1992).

Model (``bayesirt.models.twopno``): y_ij = 1(Z_ij > 0), Z_ij ~ N(eta_ij, 1),
eta_ij = a_j theta_i - d_j, with the priors of :class:`~bayesirt.models.twopno.Priors`.
One sweep draws three blocks, each from its exact full conditional, every person and every
item at once (vectorized; no loop over persons or items):

1. ``Z | theta, a, d``: truncated normal N(eta_ij, 1) on (0, inf) when y_ij = 1 and on
   (-inf, 0] when y_ij = 0 (see :func:`bayesirt.inference.truncnormal.normal_above`
   for the algorithm).
2. ``theta_i | Z, a, d`` ~ N(m_i, v_i), v_i = 1 / (1/s2_theta + sum_j a_j^2),
   m_i = v_i (mu_theta/s2_theta + sum_j a_j (Z_ij + d_j)).
3. ``xi_j = (a_j, d_j) | Z, theta``: bivariate normal with precision
   P = diag(1/s2_a, 1/s2_d) + X'X and linear term b = diag(...)^-1 mu + X'Z_j, where
   X = [theta, -1] (so that X xi_j = eta_.j), restricted to a_j > 0. Drawn exactly: a_j from
   its marginal N((P22 b1 - P12 b2)/det, P22/det) truncated to (0, inf), then
   d_j | a_j ~ N((b2 - P21 a_j)/P22, 1/P22). No draw is discarded.

Missing responses (y = -1), two equivalent treatments (``missing=``):

* ``"augment"`` (default): the missing cell's Z is drawn from the untruncated N(eta_ij, 1) and
  enters the theta and item updates like any other cell. Integrating that Z out gives back
  the posterior without the cell, so the target is unchanged; the sums are plain matrix
  products.
* ``"omit"``: the cell is left out; its Z is held at 0 and the theta and item updates sum only
  over observed cells (per-person and per-item precisions through the observation mask).

The two have the same stationary distribution (``tests/statistical/test_gibbs_recovery.py``
compares their posteriors on data with 30% missing); ``augment`` is the textbook form.

Identification: a_j > 0 fixes the reflection of the latent scale, the ability prior its
location and scale; no sign flips or relabelling are needed.

Moves along the model's symmetries (``expand=True``, the default): after the three blocks,
each sweep moves the location, the scale and each item's scale of the latent variable by
generalized Gibbs steps that leave the posterior invariant (``inference.gibbs_expansion``),
which raises the item parameters' ESS about fivefold at N = 1000, J = 20. ``expand=False`` is
the plain sampler of the seed.

Random numbers: one uniform per cell per sweep for Z (inverse CDF), so the sweep costs little
more than generating N x J uniforms. The key handed to :func:`step` is used as given, through
the unrolled Threefry hash (:mod:`bayesirt.inference.unrolled_threefry`: JAX's numbers, bit for
bit, without a loop of kernel launches per draw, which dominated sweeps of small designs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.chains import SamplerSettings
from bayesirt.inference.gibbs_expansion import expand_items, expansion_applies, rescale, shift_location
from bayesirt.inference.truncnormal import normal_above, truncated_normal
from bayesirt.inference.unrolled_threefry import as_unrolled
from bayesirt.models.twopno import Priors, check_binary_responses, initial_values

MISSING_MODES = ("augment", "omit")
# Person draws are kept by default only up to this many persons (memory of the draws).
ABILITY_DRAWS_MAX_PERSONS = 100_000


class State(NamedTuple):
    z: jnp.ndarray  # (N, J) latent normals (0 in missing cells under missing="omit")
    theta: jnp.ndarray  # (N,)
    a: jnp.ndarray  # (J,) discrimination, > 0
    d: jnp.ndarray  # (J,) difficulty


# --------------------------------------------------------------------------------------------
# full conditionals


def _cells(y):
    """Sign s (+1 for y = 1 or missing, -1 for y = 0) and the observation mask, as floats."""
    obs = y >= 0
    s = jnp.where(y == 0, -1.0, 1.0)
    return s, obs


def draw_z(key, y, theta, a, d, missing: str = "augment"):
    """Z_ij | theta, a, d for every cell: N(eta, 1) truncated to the side of y_ij; missing
    cells untruncated (``augment``) or 0 (``omit``). Z = eta + s X with X ~ N(0,1) | X > -s eta.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    theta : array (N,)
        Abilities.
    a : array (J,)
        Discriminations.
    d : array (J,)
        Difficulties.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.

    Returns
    -------
    jax.Array
        Z, shape (N, J).
    """
    eta = theta[:, None] * a[None, :] - d[None, :]
    s, obs = _cells(y)
    s = s.astype(eta.dtype)
    c = jnp.where(obs, -s * eta, -jnp.inf)
    z = eta + s * normal_above(key, c)
    # X >= c exactly, but eta + s X can round across 0 when |eta| is large: keep Z on its side
    z = jnp.where(y == 1, jnp.maximum(z, 0.0), jnp.where(y == 0, jnp.minimum(z, 0.0), z))
    if missing == "omit":
        z = jnp.where(obs, z, 0.0)
    return z


def theta_conditional(z, y, a, d, priors: Priors, missing: str = "augment"):
    """Mean and variance of theta_i | Z, a, d (vectors over persons).

    Parameters
    ----------
    z : array (N, J)
        Latent normals.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    a : array (J,)
        Discriminations.
    d : array (J,)
        Difficulties.
    priors : twopno.Priors
        The model's priors.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.

    Returns
    -------
    tuple of jax.Array
        Mean (N,) and variance (N,).
    """
    p0 = 1.0 / priors.ability_var
    if missing == "omit":
        m = (y >= 0).astype(z.dtype)
        prec = p0 + m @ (a * a)
        lin = priors.ability_mean * p0 + z @ a + m @ (a * d)
    else:
        prec = p0 + jnp.sum(a * a) * jnp.ones(z.shape[0], z.dtype)
        lin = priors.ability_mean * p0 + z @ a + jnp.sum(a * d)
    return lin / prec, 1.0 / prec


def draw_theta(key, z, y, a, d, priors: Priors, missing: str = "augment"):
    """theta_i | Z, a, d for every person, from :func:`theta_conditional`.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    z : array (N, J)
        Latent normals.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    a : array (J,)
        Discriminations.
    d : array (J,)
        Difficulties.
    priors : twopno.Priors
        The model's priors.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.

    Returns
    -------
    jax.Array
        theta, shape (N,).
    """
    mean, var = theta_conditional(z, y, a, d, priors, missing)
    return mean + jnp.sqrt(var) * jax.random.normal(key, mean.shape, mean.dtype)


def item_conditional(z, y, theta, priors: Priors, missing: str = "augment"):
    """Precision entries (P11, P12, P22) and linear terms (b1, b2) of xi_j = (a_j, d_j) given
    Z and theta, before the restriction a_j > 0 (vectors over items).
    Unrestricted mean = P^-1 b, covariance = P^-1.

    Parameters
    ----------
    z : array (N, J)
        Latent normals.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    theta : array (N,)
        Abilities.
    priors : twopno.Priors
        The model's priors.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.

    Returns
    -------
    tuple of jax.Array
        P11, P12, P22, b1, b2, each (J,).
    """
    pa, pd = 1.0 / priors.discrimination_var, 1.0 / priors.difficulty_var
    if missing == "omit":
        m = (y >= 0).astype(z.dtype)
        s_tt = (theta * theta) @ m
        s_t = theta @ m
        n = jnp.sum(m, axis=0)
    else:
        ones = jnp.ones(z.shape[1], z.dtype)
        s_tt = jnp.sum(theta * theta) * ones
        s_t = jnp.sum(theta) * ones
        n = z.shape[0] * ones
    p11 = pa + s_tt
    p12 = -s_t  # X = [theta, -1]
    p22 = pd + n
    b1 = priors.discrimination_mean * pa + theta @ z
    b2 = priors.difficulty_mean * pd - jnp.sum(z, axis=0)
    return p11, p12, p22, b1, b2


def draw_items(key, z, y, theta, priors: Priors, missing: str = "augment"):
    """(a, d) | Z, theta exactly: a_j from its truncated marginal, then d_j | a_j.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    z : array (N, J)
        Latent normals.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    theta : array (N,)
        Abilities.
    priors : twopno.Priors
        The model's priors.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.

    Returns
    -------
    tuple of jax.Array
        a (J,), positive, and d (J,).
    """
    p11, p12, p22, b1, b2 = item_conditional(z, y, theta, priors, missing)
    det = p11 * p22 - p12 * p12
    mean_a = (p22 * b1 - p12 * b2) / det
    sd_a = jnp.sqrt(p22 / det)
    k_a, k_d = jax.random.split(key)
    a = truncated_normal(k_a, mean_a, sd_a, jnp.zeros_like(mean_a))
    a = jnp.maximum(a, jnp.finfo(a.dtype).tiny)
    d = (b2 - p12 * a) / p22 + jax.random.normal(k_d, a.shape, a.dtype) / jnp.sqrt(p22)
    return a, d


# --------------------------------------------------------------------------------------------
# init / step / record


def _check_missing(missing):
    if missing not in MISSING_MODES:
        raise ValueError(f"missing='{missing}' is not known; expected one of {list(MISSING_MODES)}")


class Data(NamedTuple):
    """What a chain needs besides its state, passed to the driver as ``data`` (an argument of
    the compiled programs, not constants folded into them)."""

    y: jnp.ndarray  # (N, J) int8: 0, 1, -1 missing
    theta0: jnp.ndarray  # (N,) data-driven starting values (before jitter)
    a0: jnp.ndarray  # (J,)
    d0: jnp.ndarray  # (J,)


def make_data(y) -> Data:
    """:class:`Data` from a (validated) numpy response matrix.

    Parameters
    ----------
    y : array (N, J)
        Binary responses 0/1, -1 for missing.

    Returns
    -------
    Data
        The responses as int8 and the data-driven start of
        :func:`bayesirt.models.twopno.initial_values`.
    """
    y = np.asarray(y)
    start = initial_values(y)
    return Data(
        jnp.asarray(y, jnp.int8),
        jnp.asarray(start["ability"]),
        jnp.asarray(start["discrimination"]),
        jnp.asarray(start["difficulty"]),
    )


def init_from(key, data: Data, jitter: float = 0.5) -> State:
    """A dispersed starting state for one chain: the data-driven start of
    :func:`bayesirt.models.twopno.initial_values` with noise (sd ``jitter`` on abilities and
    difficulties, discriminations times exp(N(0, jitter/2))), so that chains start apart and
    R-hat can see a chain that has not mixed. Z starts at 0; the first sweep draws it.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    data : Data
        The responses and the data-driven start.
    jitter : float
        Sd of the noise.

    Returns
    -------
    State
        Z (N, J) zeros, theta (N,), a (J,), d (J,).
    """
    k_t, k_a, k_d = jax.random.split(key, 3)
    theta = data.theta0 + jitter * jax.random.normal(k_t, data.theta0.shape)
    a = data.a0 * jnp.exp(0.5 * jitter * jax.random.normal(k_a, data.a0.shape))
    d = data.d0 + jitter * jax.random.normal(k_d, data.d0.shape)
    return State(jnp.zeros(data.y.shape, jnp.float32), theta, a, d)


def init(key, y, priors: Priors | None = None, missing: str = "augment", jitter: float = 0.5) -> State:
    """:func:`init_from` on a numpy response matrix (convenience for one chain).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        Not used by the start.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.
    jitter : float
        Sd of the noise.

    Returns
    -------
    State
        A starting state.

    Raises
    ------
    ValueError
        If ``missing`` is not one of ``MISSING_MODES``.
    """
    _check_missing(missing)
    return init_from(key, make_data(y), jitter)


def step(key, state: State, y, priors: Priors | None = None, missing: str = "augment", expand: bool = True) -> State:
    """One sweep: Z, then theta, then (a, d), each block for all persons / items at once; then,
    if ``expand`` and the item prior means are 0, the item-scale move of :func:`expand_items`
    (``expand=False`` gives Albert's plain sampler).

    Parameters
    ----------
    key : jax.Array
        PRNG key, used as given.
    state : State
        The chain's state.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        The model's priors (``Priors()`` by default).
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.
    expand : bool
        Whether to make the moves along the model's symmetries.

    Returns
    -------
    State
        The next state; its Z is the sweep's draw, before the item-scale move.
    """
    priors = priors or Priors()
    # the same key, its hash unrolled: the same draws for a fraction of the launches
    # (bayesirt.inference.unrolled_threefry)
    k_z, k_t, k_i, k_g = jax.random.split(as_unrolled(key), 4)
    z = draw_z(k_z, y, state.theta, state.a, state.d, missing)
    theta = draw_theta(k_t, z, y, state.a, state.d, priors, missing)
    a, d = draw_items(k_i, z, y, theta, priors, missing)
    if expand:
        k_g, k_h = jax.random.split(k_g)
        k_h, k_s = jax.random.split(k_h)
        theta, d = shift_location(k_h, theta, a, d, priors)
        theta, a = rescale(k_s, theta, a, priors)
        if expansion_applies(priors):
            # Z is left unscaled: the next sweep draws Z from its full conditional without
            # reading the old one, so the chain of (theta, a, d) is the same and a pass over
            # the N x J cells is saved. state.z is the sweep's draw before this move.
            _, a, d = expand_items(k_g, z, y, theta, a, d, priors, missing)
    return State(z, theta, a, d)


def record(state: State, abilities: bool = False) -> dict:
    """What is kept per draw: item parameters, and abilities when asked.

    Parameters
    ----------
    state : State
        The chain's state.
    abilities : bool
        Whether to keep the abilities.

    Returns
    -------
    dict
        ``discrimination`` (J,), ``difficulty`` (J,) and, with ``abilities``, ``ability`` (N,).
    """
    out = {"discrimination": state.a, "difficulty": state.d}
    if abilities:
        out["ability"] = state.theta
    return out


def _step_on_data(key, state, data: Data, priors: Priors, missing: str, expand: bool):
    return step(key, state, data.y, priors, missing, expand)


class Kernel(NamedTuple):
    """What the sampling driver takes: ``sample(key, k.init_fn, k.step_fn, k.record_fn,
    settings, coords=k.coords, dims=k.dims, data=k.data)``."""

    init_fn: Callable  # (key, data) -> State
    step_fn: Callable  # (key, state, data) -> State
    record_fn: Callable  # state -> dict
    coords: dict
    dims: dict
    data: Data


def kernel(
    y,
    priors: Priors | None = None,
    missing: str = "augment",
    abilities: bool | None = None,
    item_names=None,
    jitter: float = 0.5,
    where: str = "responses",
    expand: bool = True,
) -> Kernel:
    """Validate the data (see :func:`bayesirt.models.twopno.check_binary_responses`: stops on
    non-binary codes; warns about constant or empty items and about persons with no response,
    who are kept and get prior draws) and build the driver's functions.

    ``abilities=None`` records ability draws only up to ``ABILITY_DRAWS_MAX_PERSONS`` persons.

    Parameters
    ----------
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        The model's priors (``Priors()`` by default).
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.
    abilities : bool, optional
        Whether ability draws are kept.
    item_names : list of str, optional
        Item coordinates of the draws (default ``item0``, ``item1`` ...).
    jitter : float
        Sd of the chains' starting noise (:func:`init_from`).
    where : str
        Name of the data in error and warning messages.
    expand : bool
        Whether each sweep makes the moves along the model's symmetries.

    Returns
    -------
    Kernel
        The chain functions, the draws' coordinates and dimensions, and the chains' data.

    Raises
    ------
    ValueError
        If ``missing`` is not known or the responses are not binary.
    """
    _check_missing(missing)
    priors = priors or Priors()
    y_np = check_binary_responses(y, item_names, where=where)
    n, j = y_np.shape
    if abilities is None:
        abilities = n <= ABILITY_DRAWS_MAX_PERSONS
    names = list(item_names) if item_names is not None else [f"item{k}" for k in range(j)]
    coords = {"item": names}
    dims = {"discrimination": ["item"], "difficulty": ["item"]}
    if abilities:
        coords["person"] = np.arange(n)
        dims["ability"] = ["person"]
    return Kernel(
        init_fn=functools.partial(init_from, jitter=jitter),
        step_fn=functools.partial(_step_on_data, priors=priors, missing=missing, expand=expand),
        record_fn=functools.partial(record, abilities=bool(abilities)),
        coords=coords,
        dims=dims,
        data=make_data(y_np),
    )


@dataclass(frozen=True)
class GibbsSettings:
    """Settings of :func:`fit`: the Markov-chain driver's ``sampler`` settings (chains, warm-up,
    draws ...), the treatment of ``missing`` responses (``MISSING_MODES``), whether ability
    draws are kept (``abilities``; None: up to ``ABILITY_DRAWS_MAX_PERSONS`` persons), the moves
    along the model's symmetries (``expand``) and the chains' starting ``jitter``."""

    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    missing: str = "augment"
    abilities: bool | None = None
    expand: bool = True
    jitter: float = 0.5

    def __post_init__(self):
        _check_missing(self.missing)


def fit(
    key,
    y,
    priors: Priors | None = None,
    settings: GibbsSettings = GibbsSettings(),
    *,
    init: State | None = None,
    item_names=None,
    label: str = "gibbs_2pno",
):
    """Sample the 2PNO posterior with the data-augmentation Gibbs sampler.

    Validates the data, builds the kernel (:func:`kernel`) and runs it through the
    Markov-chain driver (:func:`bayesirt.inference.sampling.sample`).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the driver (chains' starts and sweeps).
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        The model's priors: its structure beyond ``y``'s shape (defaults: ``Priors()``).
    settings : GibbsSettings
        Sampler settings, missing-data treatment, ability draws, symmetry moves, start jitter.
    init : State, optional
        One starting state for every chain (by default each chain starts from the data-driven
        start with noise ``settings.jitter``, :func:`init_from`).
    item_names : list of str, optional
        Item coordinates of the draws (default ``item0``, ``item1`` ...).
    label : str
        Name of the run in the progress log.

    Returns
    -------
    sampling.SampleResult
        Draws (ArviZ InferenceData), summary table, convergence and timings.
    """
    # here, not at the top: the driver imports pandas (half a second), which the chain worker
    # processes, which import this module for the kernel's functions, never need
    from bayesirt.inference.sampling import sample

    k = kernel(y, priors, settings.missing, settings.abilities, item_names, settings.jitter, expand=settings.expand)
    init_fn = k.init_fn if init is None else functools.partial(_fixed_start, state=init)
    return sample(
        key, init_fn, k.step_fn, k.record_fn, settings.sampler, coords=k.coords, dims=k.dims, label=label, data=k.data
    )


def _fixed_start(key, data: Data, state: State) -> State:
    """The same starting state for every chain (``fit(..., init=state)``)."""
    return state
