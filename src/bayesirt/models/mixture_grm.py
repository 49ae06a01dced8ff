"""Discrimination-weighted mixture GRM: the multidimensional extension of seed 000, section 1.3.

Within the factorized structure (items in S disjoint scales), each person has D abilities per
scale and each item a positive discrimination per dimension. A response is a mixture over the
dimensions of one-dimensional GRMs that share the item's thresholds:

    P(Y_ni = k) = sum_d w_id P_d(Y_ni = k),   w_id = alpha_id / sum_d' alpha_id',
    P_d(Y_ni >= k) = sigmoid(alpha_id * (theta_{n, s(i), d} - tau_ik)).

(The seed writes |alpha_id|; the discriminations are positive here, so the absolute value is
the identity.) With D = 1 this is exactly ``factorized_grm``. Each dimension's probabilities
come from the shared GRM core (``grm.log_prob``); the mixture is a log-sum-exp over d.

Parameters (a dict of arrays):
    discrimination   (I, D)     alpha_id > 0
    base_difficulty  (I,)       delta_i0
    increments       (I, K-2)   Delta_ij > 0
    ability          (N, S, D)  theta_nsd          (local)

The dimensions of one scale are exchangeable (relabelling them leaves the likelihood
unchanged), so estimates are identified only up to a permutation of d within each scale.
Priors are those of ``factorized_grm.Priors``, applied elementwise.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm

LOCAL = fgrm.LOCAL
priors = fgrm.priors
bijectors = fgrm.bijectors


class Structure(NamedTuple):
    """``factorized_grm.Structure`` plus the number of mixture dimensions.

    Attributes
    ----------
    scale_index : jax.Array (I,)
        Scale of each item.
    n_categories : jax.Array (I,)
        Categories per item.
    n_scales : int
        S.
    max_categories : int
        Kmax.
    n_dimensions : int
        D, mixture dimensions.
    """

    scale_index: jnp.ndarray
    n_categories: jnp.ndarray
    n_scales: int
    max_categories: int
    n_dimensions: int


def structure_of(rm, n_dimensions: int) -> Structure:
    """The structure of a response matrix with ``n_dimensions`` mixture dimensions.

    Parameters
    ----------
    rm : ResponseMatrix
        Anything with ``scale_index``, ``n_categories`` and ``scales``.
    n_dimensions : int
        D (a positive integer).

    Returns
    -------
    Structure
        The structure.

    Raises
    ------
    ValueError
        If ``n_dimensions`` is not a positive integer.
    """
    if int(n_dimensions) != n_dimensions or n_dimensions < 1:
        raise ValueError(f"n_dimensions must be a positive integer, got {n_dimensions!r}")
    return Structure(*fgrm.structure_of(rm), int(n_dimensions))


def parameter_shapes(st: Structure, n_persons: int) -> dict:
    """Shape of each parameter block.

    Parameters
    ----------
    st : Structure
        Scales, categories and mixture dimensions.
    n_persons : int
        N.

    Returns
    -------
    dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2),
        ``ability`` (N, S, D).
    """
    n_items = st.scale_index.shape[0]
    return {
        "discrimination": (n_items, st.n_dimensions),
        "base_difficulty": (n_items,),
        "increments": (n_items, max(st.max_categories - 2, 0)),
        "ability": (n_persons, st.n_scales, st.n_dimensions),
    }


def mixture_weights(params):
    """(I, D) weights w_id = alpha_id / sum_d alpha_id.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).

    Returns
    -------
    jax.Array
        Weights, shape (I, D).
    """
    alpha = params["discrimination"]
    return alpha / alpha.sum(-1, keepdims=True)


def cell_terms(params, st: Structure):
    """Per-dimension scores (D, ..., N, I) and cuts (D, I, K-1) of the shared GRM core.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).
    st : Structure
        Scales, categories and mixture dimensions.

    Returns
    -------
    tuple of jax.Array
        Scores (D, ..., N, I) and cuts (D, I, K-1).
    """
    alpha = params["discrimination"]  # (I, D)
    tau = grm.ordered_cuts(params["base_difficulty"], params["increments"])  # (I, K-1)
    theta = params["ability"][..., st.scale_index, :]  # (..., N, I, D)
    score = jnp.moveaxis(alpha * theta, -1, 0)
    cuts = alpha.T[:, :, None] * tau[None]
    return score, cuts


def log_likelihood(params, y, st: Structure):
    """Per-person log-likelihood (N,) of responses y (N, I), -1 for missing.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).
    y : array (N, I)
        Responses, -1 for missing.
    st : Structure
        Scales, categories and mixture dimensions.

    Returns
    -------
    jax.Array
        Log-likelihoods, shape (N,).
    """
    score, cuts = cell_terms(params, st)
    per_dim = jax.vmap(lambda s, c: grm.log_prob(y, s, c, st.n_categories))(score, cuts)  # (D, N, I)
    log_w = jnp.log(mixture_weights(params)).T[:, None, :]  # (D, 1, I)
    cell = jax.nn.logsumexp(per_dim + log_w, axis=0)
    return jnp.where(y != grm.MISSING, cell, 0.0).sum(-1)


def category_probs(params, persons, items, st: Structure):
    """Category probabilities of the cells (persons[c], items[c]).

    The mixture of each dimension's GRM probabilities (``grm.category_probs``, the factorized
    model's form); the imputation objectives' cell-probability hook.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).
    persons, items : array of int
        Arrays that broadcast together (e.g. (C,) and (C,), or (I, Cmax) and (I, 1)).
    st : Structure
        Scales, categories and mixture dimensions.

    Returns
    -------
    jax.Array
        Their broadcast shape + (Kmax,), zero beyond an item's categories.
    """
    alpha = params["discrimination"]  # (I, D)
    tau = grm.ordered_cuts(params["base_difficulty"], params["increments"])  # (I, K-1)
    e, gap = jax.vmap(lambda c: grm.exp_cut_tables(c, st.n_categories))(alpha.T[:, :, None] * tau[None])
    a = alpha[items]  # (..., D)
    score = a * params["ability"][persons, st.scale_index[items]]  # (..., D)
    top = grm.top_category_mask(st.n_categories[items], st.max_categories, a.dtype)
    per_dim = jax.vmap(
        lambda e_d, gap_d, s_d: grm.category_probs(s_d, e_d[items], gap_d[items], top), in_axes=(0, 0, -1), out_axes=-2
    )(e, gap, score)  # (..., D, Kmax)
    return jnp.einsum("...d,...dk->...k", a / a.sum(-1, keepdims=True), per_dim)


def category_log_probs(params, st: Structure):
    """(N, I, Kmax) log-probabilities of every category (checks and simulation).

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).
    st : Structure
        Scales, categories and mixture dimensions.

    Returns
    -------
    jax.Array
        Log-probabilities, shape (N, I, Kmax).
    """
    score, cuts = cell_terms(params, st)
    per_dim = jax.vmap(lambda s, c: grm.category_log_probs(s, c, st.n_categories))(score, cuts)
    log_w = jnp.log(mixture_weights(params)).T[:, None, :, None]  # (D, 1, I, 1)
    return jax.nn.logsumexp(per_dim + log_w, axis=0)


def log_prior(params, p: fgrm.Priors, st: Structure, local: bool):
    """As ``factorized_grm.log_prior``; the local term is summed over scales and dimensions.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I, D), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S, D).
    p : factorized_grm.Priors
        The prior scales.
    st : Structure
        Scales, categories and mixture dimensions.
    local : bool
        False: the global parameters (a scalar); True: the abilities, per person.

    Returns
    -------
    jax.Array
        A scalar (global) or shape (N,) (local).
    """
    if local:
        return priors(p)["ability"].log_prob(params["ability"]).sum((-2, -1))
    return fgrm.log_prior(params, p, st, local=False)


def initial_values(y, st: Structure) -> dict:
    """The factorized model's starting point, spread over the dimensions.

    Identical dimensions would be a saddle of the likelihood (symmetric in d), so dimension d
    starts from the one-dimensional abilities scaled by a factor between 0.8 and 1.2 and
    discriminations between 0.8 and 1.2: distinct, deterministic, and near the D = 1 answer.

    Parameters
    ----------
    y : array (N, I)
        Responses, -1 for missing.
    st : Structure
        Scales, categories and mixture dimensions.

    Returns
    -------
    dict
        Constrained starting values of every parameter block.
    """
    n_dimensions = st.n_dimensions
    base = fgrm.initial_values(y, fgrm.Structure(*st[:4]))
    spread = np.linspace(0.8, 1.2, n_dimensions) if n_dimensions > 1 else np.ones(1)
    return {
        "discrimination": base["discrimination"][:, None] * spread[None],
        "base_difficulty": base["base_difficulty"],
        "increments": base["increments"],
        "ability": base["ability"][:, :, None] * spread[None, None],
    }


def draw_parameters(
    rng: np.random.Generator, n_persons: int, items_per_scale: list[int], n_categories: int, n_dimensions: int
) -> dict:
    """True parameters for simulation.

    Thresholds as in ``factorized_grm.draw_parameters``, discriminations log-normal per
    dimension, independent standard-normal abilities.

    Parameters
    ----------
    rng : numpy.random.Generator
        Random numbers.
    n_persons : int
        N.
    items_per_scale : list of int
        Items of each scale.
    n_categories : int
        Categories of every item.
    n_dimensions : int
        D.

    Returns
    -------
    dict
        ``discrimination`` (I, D), ``base_difficulty``, ``increments``, ``ability`` (N, S, D).
    """
    base = fgrm.draw_parameters(rng, n_persons, items_per_scale, n_categories)
    n_items = sum(items_per_scale)
    alpha = np.exp(rng.normal(np.log(1.5), 0.5, (n_items, n_dimensions)))
    theta = rng.normal(size=(n_persons, len(items_per_scale), n_dimensions))
    return {**base, "discrimination": alpha, "ability": theta}
