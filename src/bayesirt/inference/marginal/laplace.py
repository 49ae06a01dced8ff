"""Laplace approximations of a posterior in unconstrained parameters: Newton's method to the
mode with the full Hessian, and Gaussian draws with the Hessian there as precision.

Shared by the models' item-posterior corrections (``grm_laplace``, ``irt2pl_laplace``), which
build the negative log marginal posterior and map the draws back to the model's parameters.
Why hand-written: no maintained JAX library offers a Newton solver that returns the Hessian at
the mode for reuse; the Hessians are ``mml_information.hessian_program``'s (compiled once).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.marginal import mml_information

NEWTON_STEPS = 25  # from VI's estimates the mode is a few steps away; more means something is wrong
MAX_STEP = 1.0  # the largest move of one unconstrained coordinate in a Newton step
GRADIENT_TOL = 1e-3  # Newton decrement g' H^-1 g / 2 at which the centre counts as the mode


@functools.lru_cache(maxsize=16)
def _programs(f):
    """The jitted value-and-gradient and Hessian of ``f(u, *args)``, kept per function, so that a
    function of data passed as arguments is compiled once for every data set of one shape."""
    return jax.jit(jax.value_and_grad(f)), mml_information.hessian_program(f)


def newton(f, u0: np.ndarray, args: tuple = (), max_steps: int = NEWTON_STEPS, tol: float = GRADIENT_TOL):
    """Newton's method on ``f`` from ``u0`` with the full Hessian (``mml_information.hessian_program``).

    Away from the mode the Hessian need not be positive definite, so each step uses its
    eigenvalues' absolute values (floored), which keeps the step a descent direction, and halves
    the step until ``f`` does not increase by more than its rounding. Why not BFGS: the Hessian
    is needed at the end anyway, and from VI's estimates the mode is a few quadratic steps away.

    Parameters
    ----------
    f : callable
        ``f(u, *args)``, a scalar function of a vector (traceable by JAX), the negative log
        posterior. Its compiled gradient and Hessian are kept (for the last few functions):
        pass the data in ``args`` rather than closing over them, and one compilation serves
        every data set of one shape.
    u0 : np.ndarray (P,)
        The starting point.
    args : tuple
        Further arguments of ``f`` (JAX arrays or pytrees of them), held fixed.
    max_steps : int
        Newton steps at most.
    tol : float
        The Newton decrement g' H^-1 g / 2 at which the point counts as the mode.

    Returns
    -------
    tuple
        ``(point, hessian, steps, converged)``: the last point, its Hessian (P, P), the steps
        taken and whether the decrement fell below ``tol`` with a positive definite Hessian.
    """
    dtype = jnp.zeros(()).dtype
    value_and_grad, hessian = _programs(f)  # compiled once for every step (and data set)
    u = np.asarray(u0, np.float64)
    for step in range(max_steps + 1):
        value, g = value_and_grad(jnp.asarray(u, dtype), *args)
        value, g = float(value), np.asarray(g, np.float64)
        h = hessian(jnp.asarray(u, dtype), *args)
        eigenvalues, vectors = np.linalg.eigh(h)
        direction = -(vectors @ ((vectors.T @ g) / np.maximum(np.abs(eigenvalues), 1e-6 * np.abs(eigenvalues).max())))
        decrement = float(-g @ direction) / 2
        if decrement < tol and eigenvalues.min() > 0:
            return u, h, step, True
        if step == max_steps:
            break
        # a full step from far away can jump into another basin (a binary item's discrimination
        # running off to a Guttman-like mode); no coordinate moves by more than MAX_STEP
        direction *= min(1.0, MAX_STEP / np.abs(direction).max())
        slack = 1e-6 * max(abs(value), 1.0)  # the float32 sum's rounding
        t = 1.0
        while t > 1e-4:
            trial = u + t * direction
            if float(value_and_grad(jnp.asarray(trial, dtype), *args)[0]) <= value + slack:
                break
            t /= 2
        u = trial
    return u, h, max_steps, False


def gaussian_draws(centre: np.ndarray, hessian: np.ndarray, n_draws: int, seed: int, where: str = "centre"):
    """Draws from N(centre, hessian^-1), and the Hessian's condition number.

    Parameters
    ----------
    centre : np.ndarray (P,)
        The mean.
    hessian : np.ndarray (P, P)
        The precision (the curvature of the negative log posterior at ``centre``).
    n_draws : int
        Draws to return.
    seed : int
        Seed of the draws.
    where : str
        What the centre is, for the error message.

    Returns
    -------
    tuple
        ``(draws (n_draws, P), condition_number)``.

    Raises
    ------
    ValueError
        If the Hessian is not positive definite (the centre is not a mode).
    """
    eigenvalues, vectors = np.linalg.eigh(hessian)
    if eigenvalues.min() <= 0:
        raise ValueError(
            f"the marginal posterior's curvature is not positive definite at the {where}"
            f" (smallest eigenvalue {eigenvalues.min():.3g})"
        )
    z = np.random.default_rng(seed).standard_normal((n_draws, len(centre)))
    draws = centre + (z / np.sqrt(eigenvalues)) @ vectors.T  # covariance V diag(1/lambda) V^T = H^-1
    return draws, float(eigenvalues.max() / eigenvalues.min())
