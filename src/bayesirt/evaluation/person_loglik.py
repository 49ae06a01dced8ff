"""Per-person marginal log-likelihood by importance sampling, one evaluator for every method.

    log p(r_i | items) ~= log (1/R) sum_s p(r_i | a_s, items) N(a_s; 0, I) / g_i(a_s),   a_s ~ g_i,

with ``g_i`` a Gaussian proposal per person. The proposal is either a method's own (its
posterior mean and sd of the abilities) or, the default and the same for every method, the
Laplace approximation of p(a | r_i, items) (Newton's method on the log joint from a = 0; the
logistic and GRM log-likelihoods are concave in a and the prior is Gaussian, so the mode is
unique) with its covariance inflated by ``inflation``^2. The item values are a method's point
estimate; ``log_lik(y, theta)`` (``theta`` (..., B, K) -> (..., B)) closes over them, so the
evaluator knows nothing of the model. Persons are processed in chunks of ``chunk``.

With ``params``, the item values are an argument instead, ``log_lik(params, y, theta)``: the
compiled programs are then kept per ``log_lik`` function (the same object for every fit of one
model shape) and shared by every call, where a closure over the values traced and compiled
them again for every fit (a block's replications, ``inference.execution.bulk``, share them).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

_PROGRAMS: dict = {}


def _jitted(build, log_lik, params, *static):
    """``jax.jit(build())``: kept per (``build``'s name, ``log_lik``, static settings) when the
    item values come as ``params``; built afresh for a closure (no params)."""
    if params is None:
        return jax.jit(build())
    key = (build.__name__, log_lik, *static)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = jax.jit(build())
    return _PROGRAMS[key]


def _with(log_lik, params):
    """``log_lik`` as ``f(params, y, theta)`` (a closure's params are ignored)."""
    return log_lik if params is not None else (lambda _, y, theta: log_lik(y, theta))


def laplace_proposal(log_lik, y, n_factors: int, n_newton: int = 25):
    """Mode (B, K) and Cholesky factor (B, K, K) of the inverse negative Hessian.

    Parameters
    ----------
    log_lik : callable
        ``log_lik(y, theta)``: theta (..., B, K) -> (..., B), closing over the item values.
    y : array (B, J)
        Responses, -1 for missing.
    n_factors : int
        K.
    n_newton : int
        Newton steps from a = 0.

    Returns
    -------
    tuple of jax.Array
        Modes (B, K) and Cholesky factors (B, K, K).
    """

    def log_joint(theta, yi):
        return log_lik(yi[None], theta[None])[0] - 0.5 * jnp.sum(theta**2)

    grad = jax.grad(log_joint)
    hess = jax.hessian(log_joint)

    def newton(yi):
        def body(_, th):
            h = hess(th, yi) - 1e-6 * jnp.eye(n_factors)
            step = jnp.linalg.solve(h, grad(th, yi))
            step = jnp.clip(step, -2.0, 2.0)  # damped first steps from far away
            return th - step

        th = jax.lax.fori_loop(
            0, n_newton, body, jnp.zeros(n_factors, y.dtype if jnp.issubdtype(y.dtype, jnp.floating) else jnp.float32)
        )
        cov = jnp.linalg.inv(-hess(th, yi))
        return th, jnp.linalg.cholesky(cov)

    return jax.vmap(newton)(y)


def importance_loglik(
    key, log_lik, y, mean, chol, n_samples: int = 1000, inflation: float = 1.2, chunk: int = 2000, params=None
) -> np.ndarray:
    """(B,) importance-sampled log p(r_i) with a Gaussian proposal per person.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    log_lik : callable
        ``log_lik(y, theta)``: theta (..., B, K) -> (..., B), closing over the item values.
    y : array (B, J)
        Responses, -1 for missing.
    mean : array (B, K)
        Proposal means.
    chol : array
        (B, K, K) Cholesky factors, or a (B, K) sd (diagonal).
    n_samples : int
        R, importance samples per person.
    inflation : float
        Factor on the proposal's scale.
    chunk : int
        Persons per compiled call.
    params : pytree, optional
        The item values; then ``log_lik(params, y, theta)`` (see the module docstring).

    Returns
    -------
    numpy.ndarray
        Log-likelihoods, shape (B,).
    """
    y = jnp.asarray(y)
    mean = jnp.asarray(mean, jnp.float32)
    chol = jnp.asarray(chol, jnp.float32)
    if chol.ndim == 2:
        chol = jax.vmap(jnp.diag)(chol)
    chol = inflation * chol
    k = mean.shape[-1]
    ll = _with(log_lik, params)

    def build_importance():
        def block(params, key, yb, mb, lb):
            eps = jax.random.normal(key, (n_samples,) + mb.shape)
            theta = mb + jnp.einsum("bkl,sbl->sbk", lb, eps)
            log_det = jnp.sum(jnp.log(jnp.abs(jax.vmap(jnp.diag)(lb))), -1)
            log_g = -0.5 * jnp.sum(eps**2, -1) - log_det - 0.5 * k * math.log(2 * math.pi)
            log_p = ll(params, yb, theta) - 0.5 * jnp.sum(theta**2, -1) - 0.5 * k * math.log(2 * math.pi)
            return jax.scipy.special.logsumexp(log_p - log_g, axis=0) - math.log(n_samples)

        return block

    block = _jitted(build_importance, log_lik, params, k, n_samples)
    out = [
        np.asarray(
            block(params, jax.random.fold_in(key, a), y[a : a + chunk], mean[a : a + chunk], chol[a : a + chunk])
        )
        for a in range(0, y.shape[0], chunk)
    ]
    return np.concatenate(out).astype(np.float64)


def laplace_importance_loglik(
    key, log_lik, y, n_factors: int, n_samples: int = 1000, inflation: float = 1.2, chunk: int = 2000, params=None
) -> np.ndarray:
    """The method-independent evaluator: Laplace proposal, then ``importance_loglik``.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    log_lik : callable
        ``log_lik(y, theta)``: theta (..., B, K) -> (..., B), closing over the item values.
    y : array (N, J)
        Responses, -1 for missing.
    n_factors : int
        K.
    n_samples : int
        R, importance samples per person.
    inflation : float
        Factor on the Laplace covariance's scale.
    chunk : int
        Persons per compiled call.
    params : pytree, optional
        The item values; then ``log_lik(params, y, theta)`` (see the module docstring).

    Returns
    -------
    numpy.ndarray
        Log-likelihoods, shape (N,).
    """
    y = jnp.asarray(y)
    means, chols = [], []
    ll = _with(log_lik, params)

    def build_proposal():
        return lambda params, yb: laplace_proposal(lambda yy, t: ll(params, yy, t), yb, n_factors)

    prop = _jitted(build_proposal, log_lik, params, n_factors)
    for a in range(0, y.shape[0], chunk):
        m, c = prop(params, y[a : a + chunk])
        means.append(m)
        chols.append(c)
    return importance_loglik(
        key, log_lik, y, jnp.concatenate(means), jnp.concatenate(chols), n_samples, inflation, chunk, params
    )
