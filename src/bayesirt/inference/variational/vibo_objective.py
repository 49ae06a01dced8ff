"""VIBO's objective (seed 004) for any ability encoder, and the training driver's fit of it.

Per person i, with q(d) the mean-field Gaussian over the unconstrained item values
(``vibo_items``) and q(a_i | d, r_i) an encoder ``encoder(encoder_params, items, y, st,
settings) -> (mean, sd)`` (``vibo_encoder``),

    VIBO_i = E_q(d) q(a_i|d,r_i)[log p(r_i | a_i, d)] - E_q(d)[KL(q(a_i | d, r_i) || N(0, I))],

and the loss of a batch B is (1/|B|) sum_{i in B} -VIBO_i + KL(q(d) || p(d)) / N (``vibo``'s
docstring says why the item KL is scaled by 1/N). ``settings`` is a ``vibo.VIBOSettings``
(draws per step, item priors, and what the encoder reads). The product of experts
(``vibo``) and the averaging encoder (``vibo_average``) share these functions.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from bayesirt.inference.execution.training import Problem
from bayesirt.inference.variational.vibo_encoder import product_of_experts
from bayesirt.inference.variational.vibo_items import item_kl, sample_items
from bayesirt.models import irt2pl


def _ability_kl(mean, sd):
    return jnp.sum(0.5 * (sd**2 + mean**2 - 1.0) - jnp.log(sd), axis=-1)


def person_terms(params, key, y, index, st: irt2pl.Structure, settings, encoder: Callable = product_of_experts):
    """Per-person VIBO_i (without the item KL) for ``y`` (B, J) at rows ``index``, averaged
    over ``settings.n_samples`` draws, and the item KL (which the draws do not touch).

    Parameters
    ----------
    params : dict
        ``{"items", "encoder"}``, as ``vibo.init`` builds them.
    key : jax.Array
        PRNG key of the draws.
    y : array (B, J)
        Responses of the batch, -1 for missing.
    index : array (B,)
        The batch persons' row numbers (the ability draws' keys are folded with them).
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Draws per step, missing-data variant, item priors.
    encoder : callable
        ``encoder(encoder_params, items, y, st, settings) -> (mean, sd)``, q(a | d, r)
        (default: the product of experts).

    Returns
    -------
    tuple of jax.Array
        VIBO_i without the item KL (B,), and KL(q(d) || p(d)), a scalar.
    """

    def one(s):
        k_item, k_ab = jax.random.split(jax.random.fold_in(key, s))
        items = sample_items(k_item, params["items"])
        mean, sd = encoder(params["encoder"], items, y, st, settings)
        eps = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(k_ab, i), (st.n_factors,)))(index)
        theta = mean + sd * eps.astype(mean.dtype)
        return irt2pl.log_likelihood(dict(items, ability=theta), y, st) - _ability_kl(mean, sd)

    values = jax.vmap(one)(jnp.arange(settings.n_samples)).mean(0)
    return values, item_kl(params["items"], settings.priors)


def loss_fn(st: irt2pl.Structure, settings, n_persons: int, encoder: Callable = product_of_experts):
    """The driver's loss: -mean_batch VIBO_i + KL(q(d) || p(d)) / N (see the module docstring).

    Parameters
    ----------
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Draws per step, missing-data variant, item priors.
    n_persons : int
        N, persons in the data.
    encoder : callable
        q(a | d, r), as for :func:`person_terms` (default: the product of experts).

    Returns
    -------
    callable
        ``loss(params, key, batch)``, a scalar, for ``batch["y"]`` (B, J) and ``batch["index"]`` (B,).
    """

    def loss(params, key, batch):
        values, kl_items = person_terms(params, key, batch["y"], batch["index"], st, settings, encoder)
        return -jnp.mean(values) + kl_items / n_persons

    return loss


def check_batch(batch_size, n_persons: int) -> None:
    """Check that a minibatch is no larger than the data.

    Parameters
    ----------
    batch_size : int or None
        Persons per batch (None: full batch).
    n_persons : int
        N, persons in the data.

    Raises
    ------
    ValueError
        If ``batch_size`` is larger than ``n_persons``.
    """
    if batch_size is not None and batch_size > n_persons:
        raise ValueError(f"batch_size {batch_size} is larger than the {n_persons} persons")


def encoder_problem(
    key, y, structure: irt2pl.Structure, settings, init_fn: Callable, encoder: Callable, init, label: str
) -> Problem:
    """The training driver's fit of q(d) and an encoder (VIBO's or ``vibo_average``'s) to ``y``.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the initialisation's key and the training driver's.
    y : array (N, J)
        Integer responses, -1 for missing (checked by ``irt2pl.check_responses``).
    structure : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        The fit's settings; ``settings.train`` the training driver's.
    init_fn : callable
        ``init_fn(key, structure, settings, y) -> params``, the starting parameters.
    encoder : callable
        q(a | d, r), as for :func:`person_terms`.
    init : dict or None
        Starting parameters that replace ``init_fn``'s.
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit. Bad responses, an all-missing person or item, or a batch larger than N raise
        a one-line ``ValueError``.
    """
    y = irt2pl.check_responses(y, structure)
    check_batch(settings.train.batch_size, y.shape[0])
    init_key, train_key = jax.random.split(key)
    params = init_fn(init_key, structure, settings, y) if init is None else init
    loss = loss_fn(structure, settings, y.shape[0], encoder)
    return Problem(loss, params, train_key, {"y": jnp.asarray(y)}, y.shape[0], settings.train, label=label)
