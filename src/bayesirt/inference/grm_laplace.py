"""Item-parameter posterior sds of the factorized GRM by a Laplace approximation of their
marginal posterior (abilities integrated out), at the estimates of a mean-field VI fit.

Why: mean-field VI treats item parameters and abilities as independent, so its item sds miss
the uncertainty that flows through the abilities, and they come out too narrow (about half the
standard errors of marginal ML on the RWA data). Integrating the abilities out by quadrature
(``inference.mml_information``, the likelihood ``inference.mml`` maximises, one standard-normal
ability per scale as the factorized GRM's prior) and taking the curvature of the negative log
marginal posterior (that likelihood and the item priors) at the VI's item means gives item sds
that carry it. The parameters are the fit's own: discrimination, base difficulty and the
increments between successive difficulties.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference import laplace, mml, mml_information
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


class _Objective(NamedTuple):
    f: object  # negative log marginal posterior of the unconstrained item parameters (JAX)
    u0: np.ndarray  # the given estimates, unconstrained
    natural: object  # u (numpy) -> (a, base, increments (I, Kmax-2)), the filler kept


def _objective(y, st: fgrm.Structure, means: dict, priors: fgrm.Priors, n_nodes: int) -> _Objective:
    """The negative log marginal posterior (abilities integrated out by quadrature, item priors,
    the softplus Jacobians) as a function of the unconstrained item parameters."""
    a = np.asarray(means["discrimination"], np.float64)
    inc = np.asarray(means["increments"], np.float64).reshape(len(a), -1)
    base = np.asarray(means["base_difficulty"], np.float64)
    n_categories = np.asarray(st.n_categories)
    tau = np.asarray(grm.ordered_cuts(jnp.asarray(base), jnp.asarray(inc)))
    structure = mml.Structure(n_categories, np.asarray(st.scale_index))
    nll, _, cut_mask = mml_information.marginal_nll(y, a, a[:, None] * tau, structure, n_nodes)
    n_items, width = inc.shape
    used = (np.arange(width)[None, :] < (n_categories[:, None] - 2)).ravel()
    free_inc = jnp.asarray(np.flatnonzero(used))
    free_cut = jnp.asarray(np.flatnonzero(cut_mask))
    inc0 = jnp.asarray(inc, jnp.zeros(()).dtype)
    prior = fgrm.priors(priors)

    def f(u):
        a_, base_, inc_used = jax.nn.softplus(u[:n_items]), u[n_items : 2 * n_items], jax.nn.softplus(u[2 * n_items :])
        inc_ = inc0.ravel().at[free_inc].set(inc_used).reshape(n_items, width)
        cuts = a_[:, None] * grm.ordered_cuts(base_, inc_)
        values = jnp.concatenate([a_, cuts.ravel()])[free_cut]
        log_prior = (
            prior["discrimination"].log_prob(a_).sum()
            + prior["base_difficulty"].log_prob(base_).sum()
            + prior["increments"].log_prob(inc_used).sum()
        )
        log_jacobian = jnp.sum(jax.nn.log_sigmoid(u[:n_items])) + jnp.sum(jax.nn.log_sigmoid(u[2 * n_items :]))
        return nll(values) - log_prior - log_jacobian

    def natural(u):
        u = np.asarray(u, np.float64)
        sp = np.logaddexp(0.0, u)  # softplus
        increments = np.broadcast_to(inc.ravel(), u.shape[:-1] + (inc.size,)).copy()
        increments[..., used] = sp[..., 2 * n_items :]
        return sp[..., :n_items], u[..., n_items : 2 * n_items], increments.reshape(u.shape[:-1] + (n_items, width))

    u0 = np.concatenate([_softplus_inverse(a), base, _softplus_inverse(inc.ravel()[used])])
    return _Objective(f, u0, natural)


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
    objective = _objective(y, st, means, priors, n_nodes)
    if refine:
        u0, h, steps, converged = laplace.newton(objective.f, objective.u0)
    else:
        u0, steps, converged = objective.u0, 0, True
        h = mml_information.hessian(objective.f, jnp.asarray(u0, jnp.zeros(()).dtype))
    where = "point Newton reached" if refine else "estimates"
    u, condition_number = laplace.gaussian_draws(u0, h, n_draws, seed, where)
    a, base, increments = objective.natural(u)
    a0, base0, inc0 = objective.natural(u0)
    return ItemPosterior(
        a,
        base,
        increments,
        condition_number,
        {"discrimination": a0, "base_difficulty": base0, "increments": inc0},
        steps,
        converged,
    )
