"""Non-amortized mean-field VI for the models of ``models.irt2pl``: the VIBO study's baseline.

Same model, priors, item family q(d) and objective as ``inference.variational.vibo``, but each person has
free variational parameters, q(a_i) = N(m_i, diag(s_i^2)), instead of an encoder:

    loss(B) = (1/|B|) sum_{i in B} [-E_q log p(r_i | a_i, d) + KL(q(a_i) || N(0, I))] + KL(q(d) || p(d)) / N,

an unbiased per-person estimate of the negative ELBO (see ``vibo``), minimised with the
project's training driver (reparameterized, ``n_samples`` draws). New persons need a refit
(``score_new``: the items held at q(d), only the new persons' q(a) optimised).
``log_ratios``: log p(y, d, a) - log q(d) q(a) of joint draws of the fit, PSIS's input.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import (
    FitResult,
    Problem,
    TrainSettings,
    keep_last_good,
    train,
    train_problem,
)
from bayesirt.inference.variational import vibo_objective, vibo_programs
from bayesirt.inference.variational.vibo_items import item_kl, item_log_q, normal_log_pdf, sample_items
from bayesirt.models import irt2pl


@dataclass(frozen=True)
class MFVISettings:
    """Settings of :func:`fit` (the model's structure, ``irt2pl.Structure``, is its own argument).

    Attributes
    ----------
    priors : irt2pl.ItemPriors
        Priors of the item parameters.
    n_samples : int
        Reparameterized draws per step.
    init_item_scale : float
        Initial sd of q(d).
    init_ability_scale : float
        Initial sd of q(a).
    train : TrainSettings
        The training driver's settings.
    """

    priors: irt2pl.ItemPriors = irt2pl.ItemPriors()
    n_samples: int = 1
    init_item_scale: float = 0.05
    init_ability_scale: float = 0.5
    train: TrainSettings = field(default_factory=TrainSettings)


def init(st: irt2pl.Structure, settings: MFVISettings, y) -> dict:
    """Initial variational parameters: q(d) at data-based starting values, q(a) at zero.

    Parameters
    ----------
    st : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        The fit's settings.
    y : array (N, J)
        Responses, -1 for missing.

    Returns
    -------
    dict
        ``{"items": {"loc", "log_scale"}, "abilities": {"loc", "log_scale"}}``, abilities (N, K).
    """
    loc = irt2pl.initial_items(y, st)
    n = np.asarray(y).shape[0]
    return {
        "items": {
            "loc": loc,
            "log_scale": jax.tree.map(lambda v: jnp.full_like(v, math.log(settings.init_item_scale)), loc),
        },
        "abilities": {
            "loc": jnp.zeros((n, st.n_factors)),
            "log_scale": jnp.full((n, st.n_factors), math.log(settings.init_ability_scale)),
        },
    }


def _person_terms(
    q_items, q_ab, key, y, index, st: irt2pl.Structure, settings: MFVISettings, fixed_items: bool = False
):
    mean, sd = q_ab["loc"][index], jnp.exp(q_ab["log_scale"][index])

    def one(s):
        k_item, k_ab = jax.random.split(jax.random.fold_in(key, s))
        items = q_items["loc"] if fixed_items else sample_items(k_item, q_items)
        eps = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(k_ab, i), (st.n_factors,)))(index)
        theta = mean + sd * eps
        return irt2pl.log_likelihood(dict(items, ability=theta), y, st)

    recon = jax.vmap(one)(jnp.arange(settings.n_samples)).mean(0)
    return recon - jnp.sum(0.5 * (sd**2 + mean**2 - 1.0) - jnp.log(sd), axis=-1)


def loss_fn(st: irt2pl.Structure, settings: MFVISettings, n_persons: int):
    """The driver's loss: -mean_batch ELBO_i + KL(q(d) || p(d)) / N.

    Parameters
    ----------
    st : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        The fit's settings.
    n_persons : int
        N, the number of persons.

    Returns
    -------
    callable
        ``loss(params, key, batch) -> scalar`` for ``training.train``.
    """

    def loss(params, key, batch):
        values = _person_terms(params["items"], params["abilities"], key, batch["y"], batch["index"], st, settings)
        return -jnp.mean(values) + item_kl(params["items"], settings.priors) / n_persons

    return loss


_init = init  # for ``problem``, whose keyword ``init`` hides the function


def problem(
    key,
    y,
    structure: irt2pl.Structure,
    settings: MFVISettings = MFVISettings(),
    *,
    init: dict | None = None,
    label: str = "mfvi",
) -> Problem:
    """The per-person mean-field VI's fit of responses ``y``, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the training driver as it is (the start is deterministic).
    y : array (N, J)
        Integer responses (0/1 for the 2PL, 0..C_j-1 for the GRM), -1 for missing.
    structure : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        Item priors, draws per step, starting sds of q(d) and q(a), and the training driver's
        settings (``train``).
    init : dict, optional
        Starting variational parameters (``{"items", "abilities"}``; ``mfvi.init`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with others of its
        kind, the bulk driver (``bulk.train_block``).
    """
    y = irt2pl.check_responses(y, structure)
    vibo_objective.check_batch(settings.train.batch_size, y.shape[0])
    params = _init(structure, settings, y) if init is None else init
    loss = loss_fn(structure, settings, y.shape[0])
    return Problem(loss, params, key, {"y": jnp.asarray(y)}, y.shape[0], settings.train, label=label)


def fit(
    key,
    y,
    structure: irt2pl.Structure,
    settings: MFVISettings = MFVISettings(),
    *,
    init: dict | None = None,
    label: str = "mfvi",
) -> FitResult:
    """Fit the per-person mean-field VI to responses ``y`` with the project's training driver:
    ``training.train_problem`` of ``problem``'s fit (the arguments are ``problem``'s).

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the training driver as it is (the start is deterministic).
    y : array (N, J)
        Integer responses (0/1 for the 2PL, 0..C_j-1 for the GRM), -1 for missing.
    structure : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        Item priors, draws per step, starting sds of q(d) and q(a), and the training driver's
        settings (``train``).
    init : dict, optional
        Starting variational parameters (``{"items", "abilities"}``; ``mfvi.init`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        ``params`` holds q(d) (``items``) and q(a) (``abilities``); a fit whose loss becomes
        non-finite returns its last good state, unconverged.
    """
    return keep_last_good(train_problem, problem(key, y, structure, settings, init=init, label=label))


def abilities(params: dict) -> tuple[np.ndarray, np.ndarray]:
    """Means and sds of q(a), the abilities' variational posterior.

    Parameters
    ----------
    params : dict
        A fit's parameters (``FitResult.params``).

    Returns
    -------
    tuple of numpy.ndarray
        Mean (N, K) and sd (N, K).
    """
    q = params["abilities"]
    return np.asarray(q["loc"]), np.asarray(jnp.exp(q["log_scale"]))


@functools.lru_cache(maxsize=8)
def _draws_program(n_draws: int):
    """``draws(params, key)``, jitted once per number of draws: the parameters are arguments,
    so the fits of one shape (a block's replications) share it."""

    def draws(params, key):
        def one(k):
            k_item, k_ab = jax.random.split(k)
            q = params["abilities"]
            noise = jax.random.normal(k_ab, q["loc"].shape)
            return sample_items(k_item, params["items"]), q["loc"] + jnp.exp(q["log_scale"]) * noise

        return jax.vmap(one)(jax.random.split(key, n_draws))

    return jax.jit(draws)


def ability_draws(params: dict, key, n_draws: int):
    """Joint draws (item values, abilities) from q(d) q(a).

    Parameters
    ----------
    params : dict
        A fit's parameters.
    key : jax.Array
        PRNG key.
    n_draws : int
        S, the number of draws.

    Returns
    -------
    tuple
        Item values (dict of (S, ...) arrays) and abilities (S, N, K).
    """
    return _draws_program(int(n_draws))(params, key)


@functools.lru_cache(maxsize=32)
def _log_ratios_program(st: irt2pl.Structure, priors: irt2pl.ItemPriors, n_draws: int):
    """``ratios(params, key, y)``, jitted once per structure, priors and number of draws (the
    parameters are arguments: the fits of a block share it)."""

    def ratios(params, key, y):
        def one(k):
            # the draw of ``_draws_program`` (same key, same draw): d ~ q(d), a ~ q(a)
            k_item, k_ab = jax.random.split(k)
            q = params["abilities"]
            sd = jnp.exp(q["log_scale"])
            theta = q["loc"] + sd * jax.random.normal(k_ab, q["loc"].shape)
            items = sample_items(k_item, params["items"])
            log_q = item_log_q(params["items"], items) + jnp.sum(normal_log_pdf(theta, q["loc"], sd))
            return irt2pl.log_joint(dict(items, ability=theta), y, st, priors) - log_q

        batch = max(1, min(n_draws, vibo_programs.DRAW_BATCH_CELLS // max(y.size, 1)))
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(ratios)


def log_ratios(
    params: dict, st: irt2pl.Structure, settings: MFVISettings, key, y, n_draws: int = vibo_programs.KHAT_DRAWS
) -> np.ndarray:
    """Log importance ratios log p(y, d, a) - log q(d) q(a) of joint draws of the mean-field
    approximation: the input of the fit's PSIS k-hat (``inference.variational.psis``).

    Every latent quantity is drawn: the unconstrained item values from q(d) and every person's
    ability from q(a_i) (the draws of :func:`ability_draws` with the same key). p and q are both
    densities of the unconstrained item values (the priors are defined on them,
    ``models.irt2pl``), so no Jacobian enters.

    Parameters
    ----------
    params : dict
        The fit's parameters (``{"items", "abilities"}``).
    st : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        The fit's settings (item priors).
    key : jax.Array
        PRNG key of the draws.
    y : array (N, J)
        The fit's responses, -1 for missing.
    n_draws : int
        S, joint draws.

    Returns
    -------
    numpy.ndarray
        (S,) log ratios, float32.
    """
    program = _log_ratios_program(st, settings.priors, int(n_draws))
    return np.asarray(program(params, key, jnp.asarray(y)))


def score_new(
    params: dict, st: irt2pl.Structure, settings: MFVISettings, key, y, train_settings: TrainSettings
) -> FitResult:
    """Refit q(a) of new persons with the items fixed at the mean of q(d).

    The non-amortized way to score persons who were not in the training data, trained with
    ``train_settings``.

    Parameters
    ----------
    params : dict
        The fit's parameters (q(d) is used).
    st : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : MFVISettings
        The fit's settings.
    key : jax.Array
        PRNG key of the training.
    y : array (N_new, J)
        The new persons' responses, -1 for missing.
    train_settings : TrainSettings
        The training driver's settings for this refit.

    Returns
    -------
    training.FitResult
        ``params["abilities"]`` holds q(a) of the new persons.
    """
    y = irt2pl.check_responses(y, st)
    items = params["items"]
    n = y.shape[0]
    q_ab = init(st, settings, y)["abilities"]

    def loss(q, key, batch):
        return -jnp.mean(_person_terms(items, q, key, batch["y"], batch["index"], st, settings, fixed_items=True))

    return train(loss, q_ab, key, {"y": jnp.asarray(y)}, n, train_settings, "mfvi-score")
