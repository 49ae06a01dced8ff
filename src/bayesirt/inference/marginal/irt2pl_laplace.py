"""Item-parameter posterior sds of the logistic IRT models of ``models.irt2pl`` (1PL, 2PL, GRM)
by a Laplace approximation of the items' marginal posterior, from a variational fit's estimates.

Why: VIBO and per-person mean-field VI approximate the items' posterior by a Gaussian per item
value, independent of the abilities (mean-field VI) or of an encoder's abilities (VIBO), and
their item sds come out too narrow and their means biased when the abilities are uncertain
(90% intervals of RWA-size GRM discriminations covered 0-62% of the truth). Integrating the
one-dimensional N(0, 1) ability out by Gauss-Hermite quadrature (marginal ML's, whose GRM is
this one) gives the items' marginal posterior exactly up to the quadrature; its mode is reached
by Newton's method from the fit's item means (``inference.marginal.laplace``), and the curvature there
is the precision of a Gaussian in the unconstrained item values (the space of the fit and of
its priors, so no Jacobian enters).
The same correction for the factorized GRM of rb_imputation is ``inference.marginal.grm_laplace``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bayesirt.inference.marginal import laplace, mml, mml_information
from bayesirt.models import irt2pl

# Gauss-Hermite nodes: at the RWA size (9,881 persons, discriminations up to 2.6) 21 nodes bias
# marginal ML's discriminations 3% low, many standard errors; 61 take the bias below 1%
NODES = 61


class ItemLaplace(NamedTuple):
    """The Laplace approximation's item values as ``vibo_items.item_posterior`` gives a fit's, and
    where it is centred."""

    summary: dict  # (mean, sd) numpy arrays by constrained parameter: discrimination (J, K), difficulty or cuts
    centre: dict  # the unconstrained item values at the centre (the marginal posterior mode)
    newton_steps: int
    converged: bool  # Newton's decrement fell below its tolerance at a positive definite curvature
    condition_number: float  # of the curvature; very large: a parameter is barely identified


@functools.lru_cache(maxsize=8)
def _objective(st: irt2pl.Structure, priors: irt2pl.ItemPriors):
    """``f(u, data)``: -log p(items | y) up to a constant, of the flat unconstrained item values
    ``u`` (``ravel_pytree``'s order) and the responses in marginal ML's quadrature layout. One
    function per model and priors, with the data an argument, so that Newton's compiled
    gradient and Hessian serve every data set of one shape (a study's replications)."""
    width = st.n_categories_max - 1
    _, unravel = ravel_pytree({k: jnp.zeros(s) for k, s in st.item_shapes().items()})
    # filler cuts of items with fewer categories than the longest do not enter the likelihood;
    # they are held at 0 so that no infinity reaches the quadrature
    used = jnp.asarray(np.arange(width)[None, :] < (np.asarray(st.categories)[:, None] - 1))

    def f(u, data):
        items = unravel(u)
        c = irt2pl.constrain(items, st)
        cuts = c["cuts"] if st.model == "grm" else c["difficulty"][:, None]
        nll = mml_information.total_nll(c["discrimination"][:, 0], jnp.where(used, cuts, 0.0), data)
        return nll - irt2pl.item_log_prior(items, priors)

    return f


def _quadrature_data(y, st: irt2pl.Structure, n_nodes: int):
    if st.n_factors != 1:
        raise ValueError(f"the Laplace correction integrates one ability dimension; the model has {st.n_factors}")
    y = irt2pl.check_responses(np.asarray(y), st).astype(np.int64)
    # P(y >= c) = sigmoid(a theta - cut_c) is marginal ML's own GRM (a binary item: one cut, its
    # difficulty), so its vectorized quadrature serves
    structure = mml.Structure(st.categories, np.zeros(st.n_items, np.int64))
    return mml_information.quadrature_data(y, structure, n_nodes)


def negative_log_marginal_posterior(y, st: irt2pl.Structure, priors: irt2pl.ItemPriors, n_nodes: int = NODES):
    """-log p(items | y) up to a constant, as a function of the unconstrained item values (a dict
    of ``st.item_shapes()``), the one-dimensional ability integrated out by quadrature.

    Parameters
    ----------
    y : array (N, J)
        Integer responses, -1 for missing.
    st : irt2pl.Structure
        The model; one ability dimension.
    priors : irt2pl.ItemPriors
        The item priors.
    n_nodes : int
        Gauss-Hermite nodes.

    Returns
    -------
    callable
        ``items (dict) -> scalar``, traceable by JAX.

    Raises
    ------
    ValueError
        For more than one ability dimension (the quadrature here is one-dimensional).
    """
    data = _quadrature_data(y, st, n_nodes)
    f = _objective(st, priors)
    return lambda items: f(ravel_pytree(items)[0], data)


def item_posterior(
    y,
    st: irt2pl.Structure,
    items: dict,
    priors: irt2pl.ItemPriors | None = None,
    n_draws: int = 1000,
    seed: int = 0,
    n_nodes: int = NODES,
) -> ItemLaplace:
    """The Laplace approximation of the items' marginal posterior at its mode, from ``items``.

    Parameters
    ----------
    y : array (N, J)
        Integer responses, -1 for missing (the data the fit saw).
    st : irt2pl.Structure
        The model; one ability dimension.
    items : dict
        Unconstrained item values to start Newton's method from (a fit's means).
    priors : irt2pl.ItemPriors, optional
        The fit's item priors (default ``irt2pl.ItemPriors()``).
    n_draws : int
        Draws behind the constrained parameters' means and sds.
    seed : int
        Seed of the draws.
    n_nodes : int
        Gauss-Hermite nodes.

    Returns
    -------
    ItemLaplace
        Means and sds of the constrained item parameters over draws from the approximation, its
        centre and how Newton's method ended (when it does not converge the draws are at its
        last point and ``converged`` is False).

    Raises
    ------
    ValueError
        For more than one ability dimension, item values that do not fit the model, or a
        curvature that is not positive definite.
    """
    dtype = jnp.zeros(()).dtype
    shapes = {k: tuple(np.shape(v)) for k, v in items.items()}
    if shapes != st.item_shapes():
        raise ValueError(f"item values of shapes {shapes} do not fit the model's {st.item_shapes()}")
    start, unravel = ravel_pytree({k: jnp.asarray(v, dtype) for k, v in items.items()})
    data = _quadrature_data(y, st, n_nodes)
    objective = _objective(st, priors or irt2pl.ItemPriors())
    u, h, steps, converged = laplace.newton(objective, np.asarray(start, np.float64), args=(data,))
    draws, condition_number = laplace.gaussian_draws(u, h, n_draws, seed, "point Newton reached")
    constrained = jax.vmap(lambda v: irt2pl.constrain(unravel(v), st))(jnp.asarray(draws, dtype))
    summary = {k: (np.asarray(v.mean(0), np.float64), np.asarray(v.std(0), np.float64)) for k, v in constrained.items()}
    centre = {k: np.asarray(v, np.float64) for k, v in unravel(jnp.asarray(u, dtype)).items()}
    return ItemLaplace(summary, centre, steps, converged, condition_number)
