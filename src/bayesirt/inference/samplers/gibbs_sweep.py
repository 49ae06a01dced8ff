"""One sweep of the data-augmentation Gibbs sampler for the two-parameter normal ogive model
(seed 001, Albert 1992): the full conditionals and :func:`step`. ``inference.samplers.gibbs`` wraps the
sweep into the Markov-chain driver's kernel (data checks, starting values, records, settings).

Model (``bayesirt.models.twopno``): y_ij = 1(Z_ij > 0), Z_ij ~ N(eta_ij, 1),
eta_ij = a_j theta_i - d_j, with the priors of :class:`~bayesirt.models.twopno.Priors`.
One sweep draws three blocks, each from its exact full conditional, every person and every
item at once (vectorized; no loop over persons or items):

1. ``Z | theta, a, d``: truncated normal N(eta_ij, 1) on (0, inf) when y_ij = 1 and on
   (-inf, 0] when y_ij = 0 (see :func:`bayesirt.inference.samplers.truncnormal.normal_above`
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
generalized Gibbs steps that leave the posterior invariant (``inference.samplers.gibbs_expansion``),
which raise the item parameters' ESS several times over (the Performance page has the
figure). ``expand=False`` is the plain sampler of the seed.

Random numbers: one uniform per cell per sweep for Z (inverse CDF), so the sweep costs little
more than generating N x J uniforms. The key handed to :func:`step` is used as given, through
the unrolled Threefry hash (:mod:`bayesirt.inference.samplers.unrolled_threefry`: JAX's numbers, bit for
bit, without a loop of kernel launches per draw, which dominated sweeps of small designs).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayesirt.inference.samplers.gibbs_expansion import expand_items, expansion_applies, rescale, shift_location
from bayesirt.inference.samplers.truncnormal import normal_above, truncated_normal
from bayesirt.inference.samplers.unrolled_threefry import as_unrolled
from bayesirt.models.twopno import Priors


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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.

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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.

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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.

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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.

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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.

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
# one sweep


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
        Treatment of missing responses, one of ``gibbs.MISSING_MODES``.
    expand : bool
        Whether to make the moves along the model's symmetries.

    Returns
    -------
    State
        The next state; its Z is the sweep's draw, before the item-scale move.
    """
    priors = priors or Priors()
    # the same key, its hash unrolled: the same draws for a fraction of the launches
    # (bayesirt.inference.samplers.unrolled_threefry)
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
