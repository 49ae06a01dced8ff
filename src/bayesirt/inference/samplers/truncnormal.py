"""Exact draws from the truncated normal, in float32, for the 2PNO Gibbs sampler's latent normals.

One job: X ~ N(0, 1) | X > c elementwise (:func:`normal_above`) and its location-scale form
(:func:`truncated_normal`), with the two pieces they are built of, both cheaper than JAX's own
in float32: Uniform(0, 1) draws that are never 0 or 1 straight from the Threefry hash
(:func:`uniform_open`) and Wichura's inverse normal CDF (:func:`ndtri_f32`). Up to ``TAIL_START``
sd the draw is one inverse-CDF evaluation per cell; beyond it Robert's (1995) exponential
rejection sampler takes over. :func:`truncated_normal_moments` gives the exact mean and
variance (numpy) for tests and checks.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import ndtri
from scipy.special import log_ndtr

from bayesirt.inference.samplers.unrolled_threefry import hash_2x32

# Above this truncation point (in sd units) the inverse CDF hands over to Robert's rejection
# sampler; below it U * Phi(-c) >= 2^-24 * Phi(-10) ~ 5e-31 stays a normal float32.
TAIL_START = 10.0
_SQRT_HALF = 1.0 / math.sqrt(2.0)


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
    """Phi^{-1}(p) in float32 by Wichura's (1988) algorithm AS 241, PPND7.

    Rational approximations with relative error about 1e-7 (float32 precision) over
    1e-37 < p < 1, about half the cost of ``jax.scipy.special.ndtri`` (which evaluates degree-8
    rational functions on three branches). Written by hand because no maintained JAX library
    offers a float32-grade inverse normal CDF; the truncated-normal draw spends most of its time
    here. Checked against scipy in the unit tests. Float64 input should use
    ``jax.scipy.special.ndtri``.

    Parameters
    ----------
    p : array
        Probabilities in (0, 1), float32.

    Returns
    -------
    jax.Array
        Phi^{-1}(p), same shape.
    """
    q = p - 0.5
    r = 0.180625 - q * q
    central = (
        q
        * (((59.10937472 * r + 159.29113202) * r + 50.434271938) * r + 3.3871327179)
        / (((67.1875636 * r + 78.757757664) * r + 17.895169469) * r + 1.0)
    )
    r = jnp.sqrt(-jnp.log(jnp.minimum(p, 1.0 - p)))
    r1 = r - 1.6
    near = (((0.17023821103 * r1 + 1.3067284816) * r1 + 2.75681539) * r1 + 1.4234372777) / (
        (0.12021132975 * r1 + 0.7370016425) * r1 + 1.0
    )
    r2 = r - 5.0
    far = (((0.017337203997 * r2 + 0.42868294337) * r2 + 3.081226386) * r2 + 6.657905115) / (
        (0.012258202635 * r2 + 0.24197894225) * r2 + 1.0
    )
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
    given; a key gives the same numbers on every platform.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    shape : tuple of int
        Shape of the draws.
    dtype : dtype
        float32 (the fast path) or another float type.

    Returns
    -------
    jax.Array
        Uniforms in (0, 1).
    """
    if dtype != jnp.float32:
        step = jnp.finfo(dtype).eps
        return jax.random.uniform(key, shape, dtype) * (1.0 - step) + step / 2
    n = math.prod(shape)
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    # the counters 0..n-1 (padded to even) hashed in two halves, as jax.extend.random's
    # threefry_2x32 does, by the unrolled hash (bayesirt.inference.samplers.unrolled_threefry: the same
    # bits, fused with the arithmetic that follows instead of a loop of kernel launches)
    half = (n + n % 2) // 2
    counters = lax.iota(jnp.uint32, half)
    words = hash_2x32(data[0], data[1], counters, counters + jnp.uint32(half))
    bits = jnp.concatenate(words)[:n].reshape(shape)
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

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    c : array
        Truncation points.
    u : array, optional
        Uniforms to use (drawn with ``uniform_open`` by default).

    Returns
    -------
    jax.Array
        Draws, the shape of ``c``.
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
    """N(mean, sd^2) restricted to (lower, inf), exact (see :func:`normal_above`).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    mean, sd, lower : array
        Mean, standard deviation and lower bound (broadcast together).

    Returns
    -------
    jax.Array
        Draws.
    """
    return mean + sd * normal_above(key, (lower - mean) / sd)


def truncated_normal_moments(c):
    """Mean and variance of N(0, 1) | X > c (numpy, float64), for tests and checks.

    mean = phi(c) / Phi(-c) (the inverse Mills ratio), var = 1 + c * mean - mean^2.

    Parameters
    ----------
    c : array
        Truncation points.

    Returns
    -------
    tuple of numpy.ndarray
        Means and variances.
    """
    c = np.asarray(c, dtype=np.float64)
    lam = np.exp(-0.5 * c * c - 0.5 * np.log(2 * np.pi) - log_ndtr(-c))
    return lam, 1.0 + c * lam - lam * lam
