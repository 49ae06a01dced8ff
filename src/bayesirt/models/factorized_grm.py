"""Factorized graded response model (seed 000, sections 1-2).

Items are split into S disjoint scales; each person has one ability per scale, and item i
depends only on the ability of its own scale:

    P(Y_ni >= k) = sigmoid(alpha_i * (theta_{n, s(i)} - tau_ik)),
    tau_i1 = delta_i0,  tau_ik = delta_i0 + sum_{j<k} Delta_ij,  Delta_ij > 0.

Parameters (a dict of arrays):
    discrimination   (I,)       alpha_i > 0
    base_difficulty  (I,)       delta_i0
    increments       (I, K-2)   Delta_ij > 0
    ability          (N, S)     theta_ns          (per person: the "local" parameter)

Because the scales share nothing, fitting all scales jointly with block-diagonal structure is
the same model as fitting each scale alone; one joint fit is simpler and vectorizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from tensorflow_probability.substrates import jax as tfp

from bayesirt.models import grm

tfd = tfp.distributions
tfb = tfp.bijectors

LOCAL = ("ability",)


@dataclass(frozen=True)
class Priors:
    """Prior scales. Defaults give an identified model on the standard-normal ability scale.

    Seed 000 uses ability ~ N(0, 5) and base difficulty ~ N(3, 1); with a free ability scale
    the discriminations are then estimated on that scale (alpha / 5), not on the scale data
    are usually simulated on. Set ``ability_scale: 5``, ``base_difficulty_loc: 3`` and
    ``base_difficulty_scale: 1`` in the config to reproduce the seed exactly.

    Attributes
    ----------
    discrimination_scale : float
        kappa of the HalfNormal(kappa) prior of the discriminations.
    base_difficulty_loc, base_difficulty_scale : float
        Normal prior of the first threshold.
    increment_scale : float
        HalfNormal prior scale of the threshold increments.
    ability_loc, ability_scale : float
        Normal prior of the abilities.
    """

    discrimination_scale: float = 2.0  # HalfNormal(kappa)
    base_difficulty_loc: float = 0.0
    base_difficulty_scale: float = 3.0
    increment_scale: float = 1.0  # HalfNormal(1)
    ability_loc: float = 0.0
    ability_scale: float = 1.0


class Structure(NamedTuple):
    """Static facts about the data the model needs (arrays, so jit traces them once).

    Attributes
    ----------
    scale_index : jax.Array (I,)
        Scale of each item.
    n_categories : jax.Array (I,)
        Categories per item.
    n_scales : int
        S, the number of scales.
    max_categories : int
        Kmax.
    """

    scale_index: jnp.ndarray  # (I,) scale of each item
    n_categories: jnp.ndarray  # (I,) categories per item
    n_scales: int
    max_categories: int


def structure(n_categories, scale_index=None) -> Structure:
    """The structure of items with ``n_categories`` categories each.

    Parameters
    ----------
    n_categories : array (I,)
        Categories per item (at least 2).
    scale_index : array (I,), optional
        Item i's scale, 0..S-1 (None: every item on one scale).

    Returns
    -------
    Structure
        The structure.

    Raises
    ------
    ValueError
        If ``n_categories`` is not a 1-d array of integers >= 2 or ``scale_index`` does not give
        a scale 0..S-1 for each item.
    """
    n_categories = np.asarray(n_categories, dtype=np.int32)
    if n_categories.ndim != 1 or n_categories.size == 0 or (n_categories < 2).any():
        raise ValueError(f"n_categories must be a 1-d array of integers >= 2, got {n_categories}")
    scale_index = np.zeros(n_categories.size, np.int32) if scale_index is None else np.asarray(scale_index, np.int32)
    if scale_index.shape != n_categories.shape or (scale_index < 0).any():
        raise ValueError(f"scale_index must give a scale 0..S-1 for each of the {n_categories.size} items")
    return Structure(
        jnp.asarray(scale_index), jnp.asarray(n_categories), int(scale_index.max()) + 1, int(n_categories.max())
    )


def structure_of(rm) -> Structure:
    """The structure of a response matrix.

    Parameters
    ----------
    rm : ResponseMatrix
        Anything with ``scale_index``, ``n_categories`` and ``scales``.

    Returns
    -------
    Structure
        The structure.
    """
    return Structure(
        jnp.asarray(rm.scale_index), jnp.asarray(rm.n_categories), len(rm.scales), int(rm.n_categories.max())
    )


def parameter_shapes(st: Structure, n_persons: int) -> dict:
    """Shape of each parameter block.

    Parameters
    ----------
    st : Structure
        Scales and categories per item.
    n_persons : int
        N.

    Returns
    -------
    dict
        ``discrimination`` (I,), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2),
        ``ability`` (N, S).
    """
    n_items = st.scale_index.shape[0]
    return {
        "discrimination": (n_items,),
        "base_difficulty": (n_items,),
        "increments": (n_items, max(st.max_categories - 2, 0)),
        "ability": (n_persons, st.n_scales),
    }


def priors(p: Priors) -> dict:
    """Prior of each parameter (elementwise; sum the log-densities).

    Parameters
    ----------
    p : Priors
        The prior scales.

    Returns
    -------
    dict
        Parameter name -> TFP distribution.
    """
    return {
        "discrimination": tfd.HalfNormal(p.discrimination_scale),
        "base_difficulty": tfd.Normal(p.base_difficulty_loc, p.base_difficulty_scale),
        "increments": tfd.HalfNormal(p.increment_scale),
        "ability": tfd.Normal(p.ability_loc, p.ability_scale),
    }


def bijectors() -> dict:
    """Map from the real line to each parameter's support (the surrogate lives on the left).

    Returns
    -------
    dict
        Parameter name -> TFP bijector.
    """
    return {
        "discrimination": tfb.Softplus(),
        "base_difficulty": tfb.Identity(),
        "increments": tfb.Softplus(),
        "ability": tfb.Identity(),
    }


def cell_terms(params, st: Structure):
    """Scores and cuts of the shared GRM core: score = alpha*theta, cut_k = alpha*tau_k.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I,), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S).
    st : Structure
        Scales and categories per item.

    Returns
    -------
    tuple of jax.Array
        Scores (..., N, I) and cuts (I, Kmax-1).
    """
    alpha = params["discrimination"]
    tau = grm.ordered_cuts(params["base_difficulty"], params["increments"])
    theta = params["ability"][..., st.scale_index]  # (..., N, I)
    return alpha * theta, alpha[:, None] * tau


def log_likelihood(params, y, st: Structure):
    """Per-person log-likelihood, shape (N,), of responses y (N, I) with -1 for missing.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I,), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S).
    y : array (N, I)
        Responses, -1 for missing.
    st : Structure
        Scales and categories per item.

    Returns
    -------
    jax.Array
        Log-likelihoods, shape (N,).
    """
    score, cuts = cell_terms(params, st)
    return grm.log_prob(y, score, cuts, st.n_categories).sum(-1)


def category_log_probs(params, st: Structure):
    """(N, I, Kmax) log-probabilities of every category for every person and item.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I,), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S).
    st : Structure
        Scales and categories per item.

    Returns
    -------
    jax.Array
        Log-probabilities, shape (N, I, Kmax).
    """
    score, cuts = cell_terms(params, st)
    return grm.category_log_probs(score, cuts, st.n_categories)


def log_prior(params, p: Priors, st: Structure, local: bool):
    """Summed prior log-density of the global parameters, or per person of the local ones.

    Parameters
    ----------
    params : dict
        ``discrimination`` (I,), ``base_difficulty`` (I,), ``increments`` (I, Kmax-2), ``ability`` (N, S).
    p : Priors
        The prior scales.
    st : Structure
        Scales and categories per item.
    local : bool
        False: the global parameters (a scalar); True: the abilities, per person.

    Returns
    -------
    jax.Array
        A scalar (global) or shape (N,) (local).
    """
    dists = priors(p)
    if local:
        return dists["ability"].log_prob(params["ability"]).sum(-1)
    # Increments an item does not use (fewer categories than Kmax) keep their prior, so
    # they stay proper in the posterior without touching the likelihood.
    return (
        dists["discrimination"].log_prob(params["discrimination"]).sum()
        + dists["base_difficulty"].log_prob(params["base_difficulty"]).sum()
        + dists["increments"].log_prob(params["increments"]).sum()
    )


def draw_parameters(
    rng: np.random.Generator, n_persons: int, items_per_scale: list[int], n_categories: int, ability_corr: float = 0.0
) -> dict:
    """Plausible true parameters for simulation (numpy, float64).

    Discriminations log-normal around 1.5 (0.8..2.8 typical), thresholds spread symmetric
    around an item location in N(0, 0.5), increments that keep the middle categories in use,
    abilities standard normal per scale with correlation ``ability_corr`` between scales.

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
    ability_corr : float
        Correlation of the abilities between scales.

    Returns
    -------
    dict
        ``discrimination``, ``base_difficulty``, ``increments``, ``ability`` (N, S).
    """
    n_scales = len(items_per_scale)
    n_items = sum(items_per_scale)
    alpha = np.exp(rng.normal(np.log(1.5), 0.3, n_items))
    span = rng.uniform(3.0, 5.0, n_items)  # distance between first and last threshold
    raw = rng.dirichlet(np.full(n_categories - 2, 8.0), n_items) if n_categories > 2 else np.zeros((n_items, 0))
    increments = raw * span[:, None]
    location = rng.normal(0.0, 0.5, n_items)
    base = location - span / 2
    cov = np.full((n_scales, n_scales), ability_corr) + (1 - ability_corr) * np.eye(n_scales)
    ability = rng.multivariate_normal(np.zeros(n_scales), cov, n_persons)
    return {"discrimination": alpha, "base_difficulty": base, "increments": increments, "ability": ability}


def initial_values(y, st: Structure) -> dict:
    """A data-driven starting point from responses ``y``.

    Abilities from standardized mean scores per scale, thresholds from the marginal category
    proportions (logistic-normal approximation with alpha = 1), discriminations 1. Starts the
    optimizer near the answer instead of at 0.

    Parameters
    ----------
    y : array (N, I)
        Responses, -1 for missing.
    st : Structure
        Scales and categories per item.

    Returns
    -------
    dict
        Constrained starting values of every parameter block.
    """
    responses = np.asarray(y)
    y = responses.astype(np.float64)
    obs = responses != grm.MISSING
    st_scale = np.asarray(st.scale_index)
    n_categories = np.asarray(st.n_categories)
    n_persons, n_items = responses.shape
    ability = np.zeros((n_persons, st.n_scales))
    for s in range(st.n_scales):
        cols = st_scale == s
        frac = np.where(obs[:, cols], y[:, cols] / (n_categories[cols] - 1), 0.0).sum(1)
        mean = frac / np.maximum(obs[:, cols].sum(1), 1)
        ability[:, s] = (mean - mean.mean()) / max(mean.std(), 1e-6)
    kmax = int(n_categories.max())
    tau = np.zeros((n_items, kmax - 1))
    for i in range(n_items):
        yi = responses[obs[:, i], i]
        k = np.arange(1, kmax)
        p_at_least = np.clip([(yi >= kk).mean() if yi.size else 0.5 for kk in k], 0.01, 0.99)
        t = -np.log(p_at_least / (1 - p_at_least)) * np.sqrt(1 + np.pi / 8)
        tau[i] = np.maximum.accumulate(t)
    increments = np.maximum(np.diff(tau, axis=1), 0.05)
    return {
        "discrimination": np.ones(n_items),
        "base_difficulty": tau[:, 0],
        "increments": increments,
        "ability": ability,
    }
