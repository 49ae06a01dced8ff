"""Data-augmentation Gibbs sampler for the two-parameter normal ogive model (seed 001, Albert 1992).

Model (``bayesirt.models.twopno``): y_ij = 1(Z_ij > 0), Z_ij ~ N(eta_ij, 1),
eta_ij = a_j theta_i - d_j, with the priors of :class:`~bayesirt.models.twopno.Priors`.
One sweep draws three blocks, each from its exact full conditional, every person and every
item at once (vectorized; no loop over persons or items):

1. ``Z | theta, a, d``: truncated normal N(eta_ij, 1) on (0, inf) when y_ij = 1 and on
   (-inf, 0] when y_ij = 0 (see :func:`normal_above` for the algorithm).
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

Moves along the model's symmetries (``expand=True``, the default). The likelihood is
unchanged by theta -> theta + h, d -> d + a h (location), by theta -> g theta, a -> a / g
(scale) and, on the augmented model, by (Z_.j, a_j, d_j) -> g_j (Z_.j, a_j, d_j) (one item's
scale). Only the priors pin these directions down, weakly, so Albert's three blocks crawl
along them (item ESS a few percent of the draws). After the three blocks, each sweep draws
h exactly (Gaussian), g by a Metropolis step and every g_j exactly (Gamma, when both item
prior means are 0): generalized Gibbs steps (Liu & Wu 1999, Liu & Sabatti 2000) that leave
the posterior invariant, cost O(N + J) plus one pass over the cells, and raise the item
parameters' ESS about fivefold at N = 1000, J = 20. ``expand=False`` is the plain sampler of
the seed.

Random numbers: one uniform per cell per sweep for Z (inverse CDF), so the sweep costs little
more than generating N x J uniforms. The key handed to :func:`step` is used as given.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import threefry_2x32
from jax.scipy.special import ndtri

from bayesirt.models.twopno import Priors, check_binary_responses, initial_values

MISSING_MODES = ("augment", "omit")
# Above this truncation point (in sd units) the inverse CDF hands over to Robert's rejection
# sampler; below it U * Phi(-c) >= 2^-24 * Phi(-10) ~ 5e-31 stays a normal float32.
TAIL_START = 10.0
_SQRT_HALF = 1.0 / math.sqrt(2.0)
# Person draws are kept by default only up to this many persons (memory of the draws).
ABILITY_DRAWS_MAX_PERSONS = 100_000


class State(NamedTuple):
    z: jnp.ndarray  # (N, J) latent normals (0 in missing cells under missing="omit")
    theta: jnp.ndarray  # (N,)
    a: jnp.ndarray  # (J,) discrimination, > 0
    d: jnp.ndarray  # (J,) difficulty


# --------------------------------------------------------------------------------------------
# truncated normal


def _robert_tail(key, c, todo, max_rounds: int = 64):
    """Robert (1995): X ~ N(0, 1) | X > c for c > 0 by rejection from c + Exp(alpha),
    alpha = (c + sqrt(c^2 + 4)) / 2 (the optimal rate), accepted with probability
    exp(-(X - alpha)^2 / 2). Only the cells flagged ``todo`` are drawn; the loop runs until
    every one of them is accepted (acceptance > 0.99 for c >= 10, so one or two rounds), and
    not at all when no cell is flagged. Non-finite c is never flagged (NaN propagates to the
    caller's non-finite guard instead of hanging the loop); ``max_rounds`` is a backstop only
    (the chance of reaching it is below 0.01^64 per cell)."""
    todo = todo & jnp.isfinite(c)
    c = jnp.where(todo, c, TAIL_START)
    alpha = 0.5 * (c + jnp.sqrt(c * c + 4.0))

    def cond(carry):
        return jnp.any(carry[2]) & (carry[3] < max_rounds)

    def body(carry):
        key, x, todo, rounds = carry
        key, k_e, k_u = jax.random.split(key, 3)
        prop = c + jax.random.exponential(k_e, c.shape, c.dtype) / alpha
        u = jax.random.uniform(k_u, c.shape, c.dtype, minval=jnp.finfo(c.dtype).tiny)
        ok = todo & (jnp.log(u) <= -0.5 * (prop - alpha) ** 2)
        return key, jnp.where(ok, prop, x), todo & ~ok, rounds + 1

    _, x, _, _ = lax.while_loop(cond, body, (key, c, todo, jnp.int32(0)))
    return x


def ndtri_f32(p):
    """Phi^{-1}(p) by Wichura's (1988) algorithm AS 241, PPND7: rational approximations with
    relative error about 1e-7 (float32 precision) over 1e-37 < p < 1, about half the cost of
    ``jax.scipy.special.ndtri`` (which evaluates degree-8 rational functions on three
    branches). Written by hand because no maintained JAX library offers a float32-grade
    inverse normal CDF; the truncated-normal draw spends most of its time here. Checked against
    scipy in the unit tests. Float64 input should use ``jax.scipy.special.ndtri``."""
    q = p - 0.5
    r = 0.180625 - q * q
    central = q * (((59.10937472 * r + 159.29113202) * r + 50.434271938) * r + 3.3871327179) / (
        ((67.1875636 * r + 78.757757664) * r + 17.895169469) * r + 1.0)
    r = jnp.sqrt(-jnp.log(jnp.minimum(p, 1.0 - p)))
    r1 = r - 1.6
    near = (((0.17023821103 * r1 + 1.3067284816) * r1 + 2.75681539) * r1 + 1.4234372777) / (
        (0.12021132975 * r1 + 0.7370016425) * r1 + 1.0)
    r2 = r - 5.0
    far = (((0.017337203997 * r2 + 0.42868294337) * r2 + 3.081226386) * r2 + 6.657905115) / (
        (0.012258202635 * r2 + 0.24197894225) * r2 + 1.0)
    tail = jnp.where(r <= 5.0, near, far)
    tail = jnp.where(q < 0, -tail, tail)
    return jnp.where(jnp.abs(q) <= 0.425, central, tail)


def _ndtri(p):
    return ndtri_f32(p) if p.dtype == jnp.float32 else ndtri(p)


def uniform_open(key, shape, dtype=jnp.float32):
    """Uniform(0, 1) draws that are never 0 or 1 (the float32 grid k 2^-23, shifted by 2^-24).

    Float32 bits come straight from JAX's Threefry-2x32 hash of the counters 0..n-1 (what
    ``jax.random.bits`` does with ``jax_threefry_partitionable`` off): each Threefry block
    yields two 32-bit words. With the flag on (JAX's default) ``jax.random`` spends one block
    per word, 1.5x the time, and this draw is most of a sweep's cost. The key is used as
    given; a key gives the same numbers on every platform."""
    if dtype != jnp.float32:
        step = jnp.finfo(dtype).eps
        return jax.random.uniform(key, shape, dtype) * (1.0 - step) + step / 2
    n = math.prod(shape)
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    bits = threefry_2x32(data, lax.iota(jnp.uint32, n + n % 2))[:n].reshape(shape)
    unit = lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32) - 1.0
    return unit + jnp.float32(2.0**-24)


def normal_above(key, c, u=None):
    """X ~ N(0, 1) conditioned on X > c, elementwise, for any c in [-inf, inf).

    Algorithm. For c <= ``TAIL_START`` (10): the inverse CDF written on the far side,
    X = -Phi^{-1}(U * Phi(-c)) with U ~ Uniform(0, 1): it works with the kept tail mass
    Phi(-c) itself (computed as erfc(c / sqrt 2) / 2, accurate in relative terms far into the
    tail), never with 1 - Phi(c), so no cancellation occurs however far c is in the upper
    tail, and Phi^{-1} of a tiny probability is accurate in relative terms (its tail branch
    works in sqrt(-log p)). One uniform per draw, no loop: the cheapest exact method for the
    bulk of the cells. ``c = -inf`` gives the untruncated normal. For c > 10 the product
    U Phi(-c) would leave the float32 range (Phi(-13.5) < 1e-38); there Robert's (1995)
    exponential rejection sampler is exact and stable for any c (its acceptance tends to 1),
    run in a vectorized ``lax.while_loop`` over only those cells, and skipped when there are
    none, as in a well-fitted model. The result is never below c.
    """
    dtype = c.dtype if jnp.issubdtype(c.dtype, jnp.floating) else jnp.float32
    c = c.astype(dtype)
    k_u, k_tail = jax.random.split(key)
    if u is None:
        u = uniform_open(k_u, c.shape, dtype)
    cc = jnp.minimum(c, TAIL_START)
    mass = 0.5 * lax.erfc(cc * _SQRT_HALF)  # Phi(-c)
    x = jnp.maximum(-_ndtri(u * mass), c)
    tail = c > TAIL_START
    return jnp.where(tail, _robert_tail(k_tail, c, tail), x)


def truncated_normal(key, mean, sd, lower):
    """N(mean, sd^2) restricted to (lower, inf), exact (see :func:`normal_above`)."""
    return mean + sd * normal_above(key, (lower - mean) / sd)


def truncated_normal_moments(c):
    """Mean and variance of N(0, 1) | X > c (numpy, float64), for tests and checks:
    mean = phi(c) / Phi(-c) (the inverse Mills ratio), var = 1 + c * mean - mean^2."""
    from scipy.special import log_ndtr

    c = np.asarray(c, dtype=np.float64)
    lam = np.exp(-0.5 * c * c - 0.5 * np.log(2 * np.pi) - log_ndtr(-c))
    return lam, 1.0 + c * lam - lam * lam


# --------------------------------------------------------------------------------------------
# full conditionals


def _cells(y):
    """Sign s (+1 for y = 1 or missing, -1 for y = 0) and the observation mask, as floats."""
    obs = y >= 0
    s = jnp.where(y == 0, -1.0, 1.0)
    return s, obs


def draw_z(key, y, theta, a, d, missing: str = "augment"):
    """Z_ij | theta, a, d for every cell: N(eta, 1) truncated to the side of y_ij; missing
    cells untruncated (``augment``) or 0 (``omit``). Z = eta + s X with X ~ N(0,1) | X > -s eta."""
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
    """Mean and variance of theta_i | Z, a, d (vectors over persons)."""
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
    mean, var = theta_conditional(z, y, a, d, priors, missing)
    return mean + jnp.sqrt(var) * jax.random.normal(key, mean.shape, mean.dtype)


def item_conditional(z, y, theta, priors: Priors, missing: str = "augment"):
    """Precision entries (P11, P12, P22) and linear terms (b1, b2) of xi_j = (a_j, d_j) given
    Z and theta, before the restriction a_j > 0 (vectors over items).
    Unrestricted mean = P^-1 b, covariance = P^-1."""
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
    """(a, d) | Z, theta exactly: a_j from its truncated marginal, then d_j | a_j."""
    p11, p12, p22, b1, b2 = item_conditional(z, y, theta, priors, missing)
    det = p11 * p22 - p12 * p12
    mean_a = (p22 * b1 - p12 * b2) / det
    sd_a = jnp.sqrt(p22 / det)
    k_a, k_d = jax.random.split(key)
    a = truncated_normal(k_a, mean_a, sd_a, jnp.zeros_like(mean_a))
    a = jnp.maximum(a, jnp.finfo(a.dtype).tiny)
    d = (b2 - p12 * a) / p22 + jax.random.normal(k_d, a.shape, a.dtype) / jnp.sqrt(p22)
    return a, d


def expansion_applies(priors: Priors) -> bool:
    """The item-scale move is drawn exactly (conjugately) when both item prior means are 0."""
    return priors.discrimination_mean == 0.0 and priors.difficulty_mean == 0.0


def expand_items(key, z, y, theta, a, d, priors: Priors, missing: str = "augment"):
    """Parameter-expanded move of each item's scale (Liu & Wu 1999; Liu & Sabatti 2000).

    For g_j > 0 the map (Z_.j, a_j, d_j) -> g_j (Z_.j, a_j, d_j) keeps every Z on its side of 0,
    a_j > 0 and the other blocks. Drawing g_j from p(T_g x) |J_g| dg/g (the generalized Gibbs
    step with the group's Haar measure) leaves the posterior invariant. With both item prior
    means 0 that density is g^(n_j + 1) exp(-g^2 R_j / 2), R_j = sum_i (Z_ij - eta_ij)^2
    + a_j^2/s2_a + d_j^2/s2_d, i.e. g_j^2 ~ Gamma((n_j + 2)/2, rate R_j/2), where n_j counts the
    latent normals of the item (all N under ``augment``, the observed cells under ``omit``).
    Why: plain data augmentation moves (a_j, d_j) in steps of their conditional sd given Z,
    about 1/sqrt(N), while their posterior sd is several times larger for items with extreme
    proportions (lag-1 autocorrelation ~0.95); the scale move rescales Z and xi together and
    removes most of that coupling (van Dyk & Meng 2001 show the same for probit regression).
    Callers skip it unless :func:`expansion_applies`."""
    eta = theta[:, None] * a[None, :] - d[None, :]
    resid = z - eta
    if missing == "omit":
        obs = y >= 0
        resid = jnp.where(obs, resid, 0.0)
        n = jnp.sum(obs, axis=0).astype(z.dtype)
    else:
        n = jnp.full(a.shape, z.shape[0], z.dtype)
    r = jnp.sum(resid * resid, axis=0) + a * a / priors.discrimination_var + d * d / priors.difficulty_var
    g2 = jax.random.gamma(key, 0.5 * (n + 2.0), a.shape, z.dtype) / (0.5 * r)
    g = jnp.sqrt(g2)
    return z * g[None, :], a * g, d * g


def shift_location(key, theta, a, d, priors: Priors):
    """Move along the model's location symmetry: theta_i -> theta_i + h, d_j -> d_j + a_j h
    leaves every eta_ij (hence Z's law) unchanged, so only the priors weigh h, a Gaussian:
    precision P = N/s2_theta + sum_j a_j^2/s2_d, mean -(sum_i (theta_i - mu_theta)/s2_theta
    + sum_j a_j (d_j - mu_d)/s2_d) / P. Translations have Jacobian 1 and Lebesgue Haar measure,
    so drawing h exactly is a generalized Gibbs step (Liu & Sabatti 2000). It frees the slow
    joint drift of all abilities against all difficulties; O(N + J)."""
    p_t, p_d = 1.0 / priors.ability_var, 1.0 / priors.difficulty_var
    prec = theta.shape[0] * p_t + jnp.sum(a * a) * p_d
    mean = -(jnp.sum(theta - priors.ability_mean) * p_t + jnp.sum(a * (d - priors.difficulty_mean)) * p_d) / prec
    h = mean + jax.random.normal(key, (), theta.dtype) / jnp.sqrt(prec)
    return theta + h, d + a * h


def rescale(key, theta, a, priors: Priors, step_size=None):
    """Move along the model's scale symmetry: theta -> g theta, a -> a / g leaves every eta_ij
    unchanged, so only the priors and the Jacobian g^(N - J) weigh g. No standard family fits
    that density in general (a generalized inverse Gaussian when both prior means are 0), so
    g = exp(eps), eps ~ N(0, step^2) is proposed and accepted with probability
    min(1, p(g theta) p(a / g) g^(N - J) / (p(theta) p(a))) (a Metropolis step along a
    deterministic, volume-tracked map; eps and -eps are equally likely, so the move is
    reversible). Step 1.7 / sqrt(2 N): the prior pins the scale to about 1 / sqrt(2 N).
    It frees the slow joint drift of the ability spread against all discriminations; O(N + J)."""
    n, j = theta.shape[0], a.shape[0]
    step_size = 1.7 / math.sqrt(2.0 * n) if step_size is None else step_size
    k_e, k_u = jax.random.split(key)
    eps = step_size * jax.random.normal(k_e, (), theta.dtype)
    g = jnp.exp(eps)

    def log_prior(th, aa):
        return (-0.5 * jnp.sum((th - priors.ability_mean) ** 2) / priors.ability_var
                - 0.5 * jnp.sum((aa - priors.discrimination_mean) ** 2) / priors.discrimination_var)

    log_r = log_prior(g * theta, a / g) - log_prior(theta, a) + (n - j) * eps
    accept = jnp.log(jax.random.uniform(k_u, (), theta.dtype)) < log_r
    g = jnp.where(accept, g, 1.0)
    return theta * g, a / g


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
    """:class:`Data` from a (validated) numpy response matrix."""
    y = np.asarray(y)
    start = initial_values(y)
    return Data(jnp.asarray(y, jnp.int8), jnp.asarray(start["ability"]),
                jnp.asarray(start["discrimination"]), jnp.asarray(start["difficulty"]))


def init_from(key, data: Data, jitter: float = 0.5) -> State:
    """A dispersed starting state for one chain: the data-driven start of
    :func:`bayesirt.models.twopno.initial_values` with noise (sd ``jitter`` on abilities and
    difficulties, discriminations times exp(N(0, jitter/2))), so that chains start apart and
    R-hat can see a chain that has not mixed. Z starts at 0; the first sweep draws it."""
    k_t, k_a, k_d = jax.random.split(key, 3)
    theta = data.theta0 + jitter * jax.random.normal(k_t, data.theta0.shape)
    a = data.a0 * jnp.exp(0.5 * jitter * jax.random.normal(k_a, data.a0.shape))
    d = data.d0 + jitter * jax.random.normal(k_d, data.d0.shape)
    return State(jnp.zeros(data.y.shape, jnp.float32), theta, a, d)


def init(key, y, priors: Priors | None = None, missing: str = "augment", jitter: float = 0.5) -> State:
    """:func:`init_from` on a numpy response matrix (convenience for one chain)."""
    _check_missing(missing)
    return init_from(key, make_data(y), jitter)


def step(key, state: State, y, priors: Priors | None = None, missing: str = "augment",
         expand: bool = True) -> State:
    """One sweep: Z, then theta, then (a, d), each block for all persons / items at once; then,
    if ``expand`` and the item prior means are 0, the item-scale move of :func:`expand_items`
    (``expand=False`` gives Albert's plain sampler)."""
    priors = priors or Priors()
    k_z, k_t, k_i, k_g = jax.random.split(key, 4)
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
    """What is kept per draw: item parameters, and abilities when asked."""
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


def kernel(y, priors: Priors | None = None, missing: str = "augment", abilities: bool | None = None,
           item_names=None, jitter: float = 0.5, where: str = "responses", expand: bool = True) -> Kernel:
    """Validate the data (see :func:`bayesirt.models.twopno.check_binary_responses`: stops on
    non-binary codes; warns about constant or empty items and about persons with no response,
    who are kept and get prior draws) and build the driver's functions.

    ``abilities=None`` records ability draws only up to ``ABILITY_DRAWS_MAX_PERSONS`` persons.
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


def run(key, y, settings, priors: Priors | None = None, missing: str = "augment",
        abilities: bool | None = None, item_names=None, label: str = "gibbs_2pno", expand: bool = True):
    """Validate, build the kernel and run it through the Markov-chain driver
    (:func:`bayesirt.inference.sampling.sample`); returns its ``SampleResult``."""
    from bayesirt.inference.sampling import sample

    k = kernel(y, priors, missing, abilities, item_names, expand=expand)
    return sample(key, k.init_fn, k.step_fn, k.record_fn, settings, coords=k.coords, dims=k.dims,
                  label=label, data=k.data)
