"""Item-parameter posterior sds of the factorized GRM by a Laplace approximation of their
marginal posterior (abilities integrated out), at the estimates of a mean-field VI fit.

Why: mean-field VI treats item parameters and abilities as independent, so its item sds miss
the uncertainty that flows through the abilities, and they come out too narrow (about half the
standard errors of marginal ML on the RWA data). Integrating the abilities out by quadrature
(``inference.marginal.mml_information``, the likelihood ``inference.marginal.mml`` maximises, one standard-normal
ability per scale as the factorized GRM's prior) and taking the curvature of the negative log
marginal posterior (that likelihood and the item priors) at the VI's item means gives item sds
that carry it. The parameters are the fit's own: discrimination, base difficulty and the
increments between successive difficulties.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.marginal import laplace, mml, mml_information
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm


class ItemPosterior(NamedTuple):
    """Draws of the factorized GRM's item parameters from the Laplace approximation, and where
    it is centred."""

    discrimination: np.ndarray  # (S, I)
    base_difficulty: np.ndarray  # (S, I)
    increments: np.ndarray  # (S, I, Kmax-2); filler increments keep the fit's value
    condition_number: float  # of the curvature; very large: a parameter is barely identified
    centre: dict  # the item values at the centre (the mode when ``refine``): as ``means``
    newton_steps: int  # Newton steps taken from the given estimates to the centre (0: not refined)
    converged: bool  # the centre is a mode (gradient small); always True when not refined


def _softplus_inverse(x):
    return x + np.log(-np.expm1(-x))


@functools.lru_cache(maxsize=8)
def _objective(n_categories: tuple, width: int, priors: fgrm.Priors):
    """``f(u, data)``: the negative log marginal posterior (abilities integrated out by
    quadrature, item priors, the softplus Jacobians) of the unconstrained item parameters ``u``
    and the responses in marginal ML's quadrature layout. One function per structure and priors,
    with the data an argument, so that Newton's compiled gradient and Hessian serve every data
    set of one shape (a study's replications) instead of being compiled again for each."""
    n_items = len(n_categories)
    used_inc = jnp.asarray(np.flatnonzero(_used_increments(np.asarray(n_categories), width)))
    # filler cuts of items with fewer categories than the longest do not enter the likelihood;
    # they are held at 0 so that no infinity reaches the quadrature
    used_cut = jnp.asarray(np.arange(width + 1)[None, :] < (np.asarray(n_categories)[:, None] - 1))
    prior = fgrm.priors(priors)

    def f(u, data):
        a = jax.nn.softplus(u[:n_items])
        base = u[n_items : 2 * n_items]
        inc_used = jax.nn.softplus(u[2 * n_items :])
        inc = jnp.zeros(n_items * width, u.dtype).at[used_inc].set(inc_used).reshape(n_items, width)
        cuts = a[:, None] * grm.ordered_cuts(base, inc)
        log_prior = (
            prior["discrimination"].log_prob(a).sum()
            + prior["base_difficulty"].log_prob(base).sum()
            + prior["increments"].log_prob(inc_used).sum()
        )
        log_jacobian = jnp.sum(jax.nn.log_sigmoid(u[:n_items])) + jnp.sum(jax.nn.log_sigmoid(u[2 * n_items :]))
        return mml_information.total_nll(a, jnp.where(used_cut, cuts, 0.0), data) - log_prior - log_jacobian

    return f


def _used_increments(n_categories: np.ndarray, width: int) -> np.ndarray:
    """Which of the (I, width) increments are the model's (the rest are filler), flattened."""
    return (np.arange(width)[None, :] < (n_categories[:, None] - 2)).ravel()


def item_posterior(
    y,
    st: fgrm.Structure,
    means: dict,
    priors: fgrm.Priors = fgrm.Priors(),
    n_draws: int = 500,
    seed: int = 0,
    n_nodes: int = 21,
    refine: bool = True,
) -> ItemPosterior:
    """Draws from a Laplace approximation of the item parameters' marginal posterior.

    The approximation is Gaussian in the unconstrained parameters the VI fit works in
    (softplus^-1 of discriminations and increments, base difficulties as they are), centred at
    the mode of the marginal posterior found by Newton's method from the fit's estimates
    (``refine``; without it, at the estimates themselves), with the curvature there of the
    negative log marginal posterior (marginal likelihood, item priors and the transform's
    Jacobian) as its precision.

    Why refine: mean-field VI's item means are biased as well as its sds too narrow (its
    discriminations 5-7% low on the RWA data), and sds right in size but centred there miss the
    truth as often as not.

    Parameters
    ----------
    y : array (N, I)
        Responses 0..K_j-1, missing -1 (the data the fit saw).
    st : factorized_grm.Structure
        Categories and scale of each item.
    means : dict
        The fit's item estimates: ``discrimination`` (I,), ``base_difficulty`` (I,),
        ``increments`` (I, Kmax-2).
    priors : factorized_grm.Priors
        The fit's priors (their item parts enter the curvature).
    n_draws : int
        Draws to return.
    seed : int
        Seed of the draws.
    n_nodes : int
        Gauss-Hermite nodes per scale.
    refine : bool
        Centre at the marginal posterior mode reached from ``means`` (True) or at ``means``.

    Returns
    -------
    ItemPosterior
        The draws, the curvature's condition number, the centre and how it was reached. When
        Newton's method does not converge the draws are at its last point and ``converged`` is
        False.

    Raises
    ------
    ValueError
        If the curvature is not positive definite at the centre (it is not a mode).
    """
    a0 = np.asarray(means["discrimination"], np.float64)
    inc = np.asarray(means["increments"], np.float64).reshape(len(a0), -1)
    base0 = np.asarray(means["base_difficulty"], np.float64)
    n_categories = np.asarray(st.n_categories)
    used = _used_increments(n_categories, inc.shape[1])
    data = mml_information.quadrature_data(y, mml.Structure(n_categories, np.asarray(st.scale_index)), n_nodes)
    f = _objective(tuple(int(k) for k in n_categories), inc.shape[1], priors)
    start = np.concatenate([_softplus_inverse(a0), base0, _softplus_inverse(inc.ravel()[used])])
    if refine:
        u0, h, steps, converged = laplace.newton(f, start, args=(data,))
    else:
        u0, steps, converged = start, 0, True
        h = mml_information.hessian_program(f)(jnp.asarray(u0, jnp.zeros(()).dtype), data)
    where = "point Newton reached" if refine else "estimates"
    u, condition_number = laplace.gaussian_draws(u0, h, n_draws, seed, where)

    def natural(u):
        """(a, base, increments (..., I, width)) of unconstrained values; filler increments keep
        the fit's."""
        u = np.asarray(u, np.float64)
        sp = np.logaddexp(0.0, u)  # softplus
        n_items = len(a0)
        increments = np.broadcast_to(inc.ravel(), u.shape[:-1] + (inc.size,)).copy()
        increments[..., used] = sp[..., 2 * n_items :]
        return sp[..., :n_items], u[..., n_items : 2 * n_items], increments.reshape(u.shape[:-1] + inc.shape)

    a, base, increments = natural(u)
    centre = dict(zip(("discrimination", "base_difficulty", "increments"), natural(u0), strict=True))
    return ItemPosterior(
        a,
        base,
        increments,
        condition_number,
        centre,
        steps,
        converged,
    )
