"""Standard errors of marginal-ML item parameters, from the observed information.

The observed information is the Hessian of the total negative marginal log-likelihood (the one
``inference.marginal.mml`` maximises, by the same Gauss-Hermite quadrature) at the estimate, taken by
automatic differentiation in the natural parameters: each item's discrimination a_j and its
K_j - 1 cuts (P(Y >= k) = sigmoid(a theta - cut_k)). At a maximum the inverse Hessian in these
parameters equals the delta-method transform of the inverse Hessian in any smooth
reparameterisation, so no Jacobian of ``mml``'s unconstrained parameters is needed. Thresholds
tau_k = cut_k / a get theirs by the delta method.

The Hessian is built column by column from Hessian-vector products (forward over reverse),
``COLUMNS_AT_ONCE`` at a time, so memory stays that of a few gradients however many items there
are. Filler cuts of items with fewer categories than the longest do not enter the likelihood and
are left out (their standard errors are nan).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.marginal.mml import Structure

# the data layout and per-node likelihood of the fit (one quadrature for the fit and its errors)
from bayesirt.inference.marginal.mml_quadrature import _check, _data, _dtype, _node_loglik

COLUMNS_AT_ONCE = 8  # Hessian columns computed together (memory: about that many gradients)


class ItemStandardErrors(NamedTuple):
    """Standard errors of marginal-ML item parameters (nan where a parameter is filler)."""

    discrimination: np.ndarray  # (I,)
    cuts: np.ndarray  # (I, Kmax-1)
    thresholds: np.ndarray  # (I, Kmax-1): tau = cut / a
    covariance: np.ndarray  # (P, P) of the free parameters: a (I,), then each item's used cuts in order
    condition_number: float  # of the observed information; very large: a parameter is barely identified


def free_mask(n_categories: np.ndarray, kmax: int) -> np.ndarray:
    """Which entries of (a, cuts.ravel()) are free: every a_j, and cut k of item j for k < K_j - 1.

    Parameters
    ----------
    n_categories : array (I,)
        Categories per item.
    kmax : int
        The most categories of any item (cuts have ``kmax - 1`` columns).

    Returns
    -------
    np.ndarray
        Boolean mask of length I + I * (kmax - 1).
    """
    used = np.arange(kmax - 1)[None, :] < (np.asarray(n_categories)[:, None] - 1)
    return np.concatenate([np.ones(len(n_categories), bool), used.ravel()])


def marginal_nll(y, discrimination, cuts, structure: Structure = Structure(), n_nodes: int = 21):
    """The total negative marginal log-likelihood as a function of the free item parameters.

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1 (as given to ``mml.fit``).
    discrimination : array (I,)
        Discriminations at the estimate.
    cuts : array (I, Kmax-1)
        Cuts at the estimate; the filler cuts stay at these values.
    structure : mml.Structure
        Categories per item and the factor of each item, as in the fit.
    n_nodes : int
        Gauss-Hermite nodes per factor, as in the fit.

    Returns
    -------
    tuple
        ``(nll, point, mask)``: the function of the free parameters (a JAX function of a vector),
        the free parameters at the estimate, and their mask in ``(a, cuts.ravel())`` (``free_mask``).
    """
    data = quadrature_data(y, structure, n_nodes)
    f, point, mask = _free_nll(discrimination, cuts, data)
    return (lambda values: f(values, data)), point, mask


def _free_nll(discrimination, cuts, data):
    """``(f, point, mask)`` as ``marginal_nll``'s, with ``f(values, data)`` taking the data as an
    argument: a compiled Hessian of ``f`` then reads them as an input instead of holding them as
    constants, which XLA would fold at compile time."""
    dtype = _dtype()
    a0 = jnp.asarray(discrimination, dtype)
    c0 = jnp.asarray(cuts, dtype)
    n_items, kmax = c0.shape[0], c0.shape[1] + 1
    mask = free_mask(np.asarray(data.n_categories), kmax)
    free = jnp.asarray(np.flatnonzero(mask))
    theta0 = jnp.concatenate([a0, c0.ravel()])

    def f(values, data):
        theta = theta0.at[free].set(values)
        return total_nll(theta[:n_items], theta[n_items:].reshape(n_items, kmax - 1), data)

    return f, theta0[free], mask


def quadrature_data(y, structure: Structure = Structure(), n_nodes: int = 21):
    """The responses in ``mml``'s quadrature layout, the data argument of ``total_nll``.

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1 (as given to ``mml.fit``).
    structure : mml.Structure
        Categories per item and the factor of each item.
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    NamedTuple
        mml's data layout: JAX arrays of the one-hot responses, factor membership, categories
        per item, nodes and log weights.

    Raises
    ------
    ValueError
        As ``mml.fit`` for responses that do not fit the structure.
    """
    y, n_categories, factor = _check(y, structure.n_categories, structure.factor)
    return _data(y, n_categories, factor, n_nodes, _dtype())


def total_nll(discrimination, cuts, data):
    """The total negative marginal log-likelihood of the responses in ``data`` at the given item
    parameters; a JAX function of all three, so one compiled program serves any responses of
    the same shape.

    Parameters
    ----------
    discrimination : jax.Array (I,)
        Discriminations.
    cuts : jax.Array (I, Kmax-1)
        Cuts, P(Y >= k) = sigmoid(a theta - cut_k); filler cuts of short items must be finite.
    data : NamedTuple
        The responses in mml's quadrature layout (``quadrature_data``).

    Returns
    -------
    jax.Array
        A scalar.
    """
    return -jax.nn.logsumexp(_node_loglik(discrimination, cuts, data) + data.log_w, axis=-1).sum()


def observed_information(y, discrimination, cuts, structure: Structure = Structure(), n_nodes: int = 21):
    """The observed information of the free item parameters at ``(discrimination, cuts)``.

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1 (as given to ``mml.fit``).
    discrimination : array (I,)
        Discriminations at the estimate.
    cuts : array (I, Kmax-1)
        Cuts at the estimate.
    structure : mml.Structure
        Categories per item and the factor of each item, as in the fit.
    n_nodes : int
        Gauss-Hermite nodes per factor, as in the fit.

    Returns
    -------
    tuple of np.ndarray
        The information (P, P), float64, and the free mask (``free_mask``) that places its rows.
    """
    data = quadrature_data(y, structure, n_nodes)
    nll, point, mask = _free_nll(discrimination, cuts, data)
    return hessian_program(nll)(point, data), mask


def hessian_program(f):
    """The compiled function ``(point, *args) -> Hessian of f in point`` (float64 numpy,
    symmetrised), built column by column from Hessian-vector products (forward over reverse),
    ``COLUMNS_AT_ONCE`` columns at a time; compiled once per shape of its arguments, so repeated
    Hessians of one function (Newton's method), and of one function of data passed in ``args``
    (many data sets of one shape), reuse it.

    Parameters
    ----------
    f : callable
        ``f(point, *args)``, a scalar function of a vector and any further JAX arguments
        (traceable by JAX).

    Returns
    -------
    callable
        ``(point (P,), *args) -> np.ndarray (P, P)``.
    """
    grad = jax.grad(f)

    @jax.jit
    def columns(point, *args):
        def column(direction):
            return jax.jvp(lambda p: grad(p, *args), (point,), (direction,))[1]

        return jax.lax.map(column, jnp.eye(point.shape[0], dtype=point.dtype), batch_size=COLUMNS_AT_ONCE)

    def of(point, *args) -> np.ndarray:
        h = np.asarray(columns(point, *args), np.float64)
        return 0.5 * (h + h.T)

    return of


def standard_errors(
    y, discrimination, cuts, structure: Structure = Structure(), n_nodes: int = 21
) -> ItemStandardErrors:
    """Standard errors of discriminations, cuts and thresholds: the square roots of the diagonal
    of the inverse observed information (``observed_information``).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1 (as given to ``mml.fit``).
    discrimination : array (I,)
        Discriminations at the estimate (``MMLFit.discrimination``).
    cuts : array (I, Kmax-1)
        Cuts at the estimate (``MMLFit.cuts``).
    structure : mml.Structure
        As in the fit.
    n_nodes : int
        As in the fit.

    Returns
    -------
    ItemStandardErrors
        The standard errors, the covariance of the free parameters and the information's
        condition number. A non-positive-definite information (not a maximum) raises.

    Raises
    ------
    ValueError
        If the observed information is not positive definite at the given parameters.
    """
    info, mask = observed_information(y, discrimination, cuts, structure, n_nodes)
    eigenvalues = np.linalg.eigvalsh(info)
    if eigenvalues.min() <= 0:
        raise ValueError(
            f"the observed information is not positive definite (smallest eigenvalue {eigenvalues.min():.3g}): "
            "the parameters are not at a maximum of the marginal likelihood"
        )
    cov = np.linalg.inv(info)
    a = np.asarray(discrimination, np.float64)
    c = np.asarray(cuts, np.float64)
    n_items, width = c.shape
    full = np.full(mask.size, np.nan)
    full[mask] = np.sqrt(np.diag(cov))
    se_a, se_c = full[:n_items], full[n_items:].reshape(n_items, width)
    # delta method for tau = c / a: gradient (-c / a^2) in a, (1 / a) in c
    position = np.full(mask.size, -1)
    position[mask] = np.arange(mask.sum())
    se_tau = np.full_like(c, np.nan)
    for j in range(n_items):
        for k in range(width):
            pc = position[n_items + j * width + k]
            if pc < 0:
                continue
            pa = position[j]
            g = np.array([-c[j, k] / a[j] ** 2, 1.0 / a[j]])
            sub = cov[np.ix_([pa, pc], [pa, pc])]
            se_tau[j, k] = float(np.sqrt(g @ sub @ g))
    return ItemStandardErrors(se_a, se_c, se_tau, cov, float(eigenvalues.max() / eigenvalues.min()))
