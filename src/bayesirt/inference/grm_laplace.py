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

from bayesirt.inference import mml, mml_information
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm


class ItemPosterior(NamedTuple):
    """Draws of the factorized GRM's item parameters from the Laplace approximation."""

    discrimination: np.ndarray  # (S, I)
    base_difficulty: np.ndarray  # (S, I)
    increments: np.ndarray  # (S, I, Kmax-2); filler increments keep the fit's value
    condition_number: float  # of the curvature; very large: a parameter is barely identified


def _softplus_inverse(x):
    return x + np.log(-np.expm1(-x))


def item_posterior(
    y,
    st: fgrm.Structure,
    means: dict,
    priors: fgrm.Priors = fgrm.Priors(),
    n_draws: int = 500,
    seed: int = 0,
    n_nodes: int = 21,
) -> ItemPosterior:
    """Draws from a Laplace approximation of the item parameters' marginal posterior.

    The approximation is Gaussian in the unconstrained parameters the VI fit works in
    (softplus^-1 of discriminations and increments, base difficulties as they are), centred at
    the fit's estimates, with the curvature there of the negative log marginal posterior
    (marginal likelihood, item priors and the transform's Jacobian) as its precision.

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

    Returns
    -------
    ItemPosterior
        The draws and the curvature's condition number.

    Raises
    ------
    ValueError
        If the curvature is not positive definite at the estimates (they are far from a mode).
    """
    a = np.asarray(means["discrimination"], np.float64)
    inc = np.asarray(means["increments"], np.float64).reshape(len(a), -1)
    base = np.asarray(means["base_difficulty"], np.float64)
    n_categories = np.asarray(st.n_categories)
    tau = np.asarray(grm.ordered_cuts(jnp.asarray(base), jnp.asarray(inc)))
    structure = mml.Structure(n_categories, np.asarray(st.scale_index))
    nll, _, cut_mask = mml_information.marginal_nll(y, a, a[:, None] * tau, structure, n_nodes)
    n_items, width = inc.shape
    used = (np.arange(width)[None, :] < (n_categories[:, None] - 2)).ravel()
    dtype = jnp.zeros(()).dtype
    free_inc = jnp.asarray(np.flatnonzero(used))
    free_cut = jnp.asarray(np.flatnonzero(cut_mask))
    inc0 = jnp.asarray(inc, dtype)
    prior = fgrm.priors(priors)

    def natural(u):
        return jax.nn.softplus(u[:n_items]), u[n_items : 2 * n_items], jax.nn.softplus(u[2 * n_items :])

    def negative_log_density(u):  # of the unconstrained parameters
        a_, base_, inc_used = natural(u)
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

    u0 = np.concatenate([_softplus_inverse(a), base, _softplus_inverse(inc.ravel()[used])])
    h = mml_information.hessian(negative_log_density, jnp.asarray(u0, dtype))
    eigenvalues, vectors = np.linalg.eigh(h)
    if eigenvalues.min() <= 0:
        raise ValueError(
            f"the marginal posterior's curvature is not positive definite at the estimates (smallest eigenvalue "
            f"{eigenvalues.min():.3g})"
        )
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_draws, len(u0)))
    u = u0 + (z / np.sqrt(eigenvalues)) @ vectors.T  # covariance V diag(1/lambda) V^T = H^-1
    sp = np.logaddexp(0.0, u)  # softplus
    increments = np.broadcast_to(inc.ravel(), (n_draws, inc.size)).copy()
    increments[:, used] = sp[:, 2 * n_items :]
    return ItemPosterior(
        sp[:, :n_items],
        u[:, n_items : 2 * n_items],
        increments.reshape(n_draws, n_items, width),
        float(eigenvalues.max() / eigenvalues.min()),
    )
