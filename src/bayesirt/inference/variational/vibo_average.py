"""VIBO with an averaging ability encoder: the design seed 004 compares its product of experts
against ("We found this design to outperform averaging over non-missing entries").

Everything but the ability encoder is VIBO's (``inference.variational.vibo``): q(d) a mean-field Gaussian
over the unconstrained item values, the same objective and its batch scaling, the same draws
and keys, the same ``VIBOSettings`` (whose ``missing`` this encoder does not read: a missing
response simply does not enter the average, so there is no prior expert of any kind).

Encoder. Each observed response gives an embedding h(d_j, r_ij) = gelu(MLP_embed([d_j,
onehot(r_ij)])) of width ``hidden[-1]``; a person's embeddings are averaged over the items
they answered, and a head MLP maps the average to a Gaussian q(a_i | d, r_i) = N(mu, diag(1 /
prec)), with prec = softplus(. + 1) as VIBO's experts have it. The seed writes the average as
(1/M) sum_j q(a_i | d_j, r_ij), an average of the experts' densities; read literally that is a
mixture, not the Normal the seed asks every variational distribution to be ("we define all
variational distributions ... as Normal distributions with diagonal covariance"). This module
averages inside the network instead (a set encoder of the observed cells) and keeps q Normal;
the widths (``hidden`` for the embedding, one hidden layer of ``hidden[-1]`` in the head) are
this project's choice, as are VIBO's own.

As in ``vibo``, one draw of d serves a whole batch, so the embeddings are a J x C table and a
person's average is a contraction of the one-hot responses with it (no loop over persons).
The objective, the fit and the uses of a fit are VIBO's own functions (``vibo_objective``,
``vibo_programs``) called with :func:`average_encoder`; q(d)'s item posterior is
``vibo_items.item_posterior``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import FitResult, Problem, keep_last_good, train_problem
from bayesirt.inference.variational import networks, vibo, vibo_objective, vibo_programs
from bayesirt.inference.variational.vibo_encoder import (
    MIN_PRECISION,
    item_category_inputs,
    n_item_features,
    response_onehot,
)
from bayesirt.inference.variational.vibo_items import init_items
from bayesirt.models import irt2pl


def init(key, st: irt2pl.Structure, settings: vibo.VIBOSettings, y) -> dict:
    """Initial parameters: q(d) as ``vibo.init`` starts it, the embedding MLP
    (F + C, *hidden) and the head MLP (hidden[-1], hidden[-1], 2 K).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the two networks.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        ``hidden`` (embedding widths) and ``init_item_scale``.
    y : array (N, J)
        Responses, -1 for missing (for q(d)'s data-based start).

    Returns
    -------
    dict
        ``{"items": {"loc", "log_scale"}, "encoder": {"embed", "head"}}``.
    """
    k_embed, k_head = jax.random.split(key)
    widths = [int(h) for h in settings.hidden]
    embed = networks.init_mlp(k_embed, [n_item_features(st) + st.n_categories_max, *widths])
    head = networks.init_mlp(k_head, [widths[-1], widths[-1], 2 * st.n_factors], scale_last=0.1)
    items = init_items(y, st, settings.init_item_scale)
    return {"items": items, "encoder": {"embed": embed, "head": head}}


def embedding_table(embed, items: dict, st: irt2pl.Structure):
    """h(d_j, c) for every (item, category): (J, C, H).

    Parameters
    ----------
    embed : list of dict
        The embedding MLP.
    items, st
        As for ``vibo_encoder.expert_table`` (item values d by block, and the model).

    Returns
    -------
    jax.Array
        The embeddings, (J, C, H), C = ``st.n_categories_max``.
    """
    # the last layer activated too: the average runs over nonlinear features of each response
    return networks.gelu(networks.apply_mlp(embed, item_category_inputs(items, st)))


def average_encoder(encoder: dict, items: dict, y, st: irt2pl.Structure, settings=None):
    """q(a | d, r) for a batch: mean (B, K) and standard deviation (B, K) from the average of
    the embeddings of each person's observed responses.

    Parameters
    ----------
    encoder : dict
        ``{"embed", "head"}``, the two MLPs.
    items : dict
        Unconstrained item values d by item block.
    y : array (B, J)
        Responses, -1 for missing.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings, optional
        Not read (an encoder's signature, ``vibo_encoder``: no setting shapes this one).

    Returns
    -------
    tuple of jax.Array
        Mean (B, K) and standard deviation (B, K).
    """
    table = embedding_table(encoder["embed"], items, st)
    oh = response_onehot(y, st.n_categories_max, table.dtype)
    n_observed = jnp.sum(y >= 0, axis=1, keepdims=True).astype(table.dtype)
    # every person answers at least one item (irt2pl.check_responses); the floor only keeps an
    # all-missing row of a scoring call finite (it then gets the head's output at zero)
    pooled = (oh @ table.reshape(-1, table.shape[-1])) / jnp.maximum(n_observed, 1.0)
    out = networks.apply_mlp(encoder["head"], pooled)
    k = st.n_factors
    prec = jax.nn.softplus(out[:, k:] + 1.0) + MIN_PRECISION
    return out[:, :k], jax.lax.rsqrt(prec)


def loss_fn(st: irt2pl.Structure, settings: vibo.VIBOSettings, n_persons: int):
    """The driver's loss, -mean_batch VIBO_i + KL(q(d) || p(d)) / N: ``vibo_objective.loss_fn``
    with the averaging encoder (the same draws and keys as VIBO's).

    Parameters
    ----------
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Draws per step (``n_samples``) and item priors.
    n_persons : int
        N, persons in the data.

    Returns
    -------
    callable
        ``loss(params, key, batch)``, a scalar, for ``batch["y"]`` (B, J) and ``batch["index"]`` (B,).
    """
    return vibo_objective.loss_fn(st, settings, n_persons, average_encoder)


def problem(
    key, y, structure: irt2pl.Structure, settings: vibo.VIBOSettings, *, label: str = "vibo_average"
) -> Problem:
    """The averaging encoder's fit of responses ``y`` for the training driver (or, with others
    of its kind, the bulk driver); arguments and checks as ``vibo.problem``.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the initialisation's key and the training driver's.
    y : array (N, J)
        Integer responses, -1 for missing.
    structure : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Item priors, embedding widths, draws per step, starting sd of q(d), ``train``.
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit, started at :func:`init`. Bad responses or a batch larger than N raise ``ValueError``.
    """
    return vibo_objective.encoder_problem(key, y, structure, settings, init, average_encoder, None, label)


def fit(key, y, structure: irt2pl.Structure, settings: vibo.VIBOSettings, *, label: str = "vibo_average") -> FitResult:
    """Fit with the project's training driver (``problem``'s fit); a fit whose loss becomes
    non-finite returns its last good state, unconverged.

    Parameters
    ----------
    key, y, structure, settings, label
        As for :func:`problem`.

    Returns
    -------
    training.FitResult
        ``params`` holds q(d) (``items``) and the encoder.
    """
    return keep_last_good(train_problem, problem(key, y, structure, settings, label=label))


# ---------------------------------------------------------------------------------------------
# using a fit: VIBO's programs (``vibo_programs``) with this encoder. Their cache keys hold no
# settings (``None``): this encoder reads none, so fits of any settings share a program.


def encode(
    params: dict,
    st: irt2pl.Structure,
    settings: vibo.VIBOSettings,
    key,
    y,
    n_item_draws: int = 16,
    chunk: int = 100_000,
):
    """Abilities' mean and sd (N, K) of q(a | r) = E_q(d) q(a | d, r), moment-matched over
    ``n_item_draws`` draws of d, as ``vibo.encode`` (responses checked the same way), in
    chunks of ``chunk`` persons.

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Not read (the signature is ``vibo.encode``'s).
    key : jax.Array
        PRNG key of the draws of d (the same for every chunk).
    y : array (N, J)
        Responses, -1 for missing.
    n_item_draws, chunk : int
        Draws of d (0: q(d)'s mean alone), and persons per call.

    Returns
    -------
    tuple of numpy.ndarray
        Mean (N, K) and sd (N, K); a bad ``y`` raises ``ValueError`` as in ``vibo.encode``.
    """
    score = vibo_programs.score_program(average_encoder, st, None, int(n_item_draws))
    return vibo_programs.score_in_chunks(score, params, st, key, y, chunk)


def ability_draws(params: dict, st: irt2pl.Structure, settings: vibo.VIBOSettings, key, y, n_draws: int):
    """Joint draws (item values by block (S, ...), abilities (S, N, K)) from q(d) q(a | d, r).

    Parameters
    ----------
    params, st, settings, key, y, n_draws
        As for :func:`encode`; ``n_draws`` (int) is S, the number of joint draws.

    Returns
    -------
    tuple
        Unconstrained item values, a dict of (S, ...) arrays by block, and abilities (S, N, K).
    """
    program = vibo_programs.draws_program(average_encoder, st, None, int(n_draws))
    return program(params, key, jnp.asarray(y))


def log_ratios(
    params: dict, st: irt2pl.Structure, settings: vibo.VIBOSettings, key, y, n_draws: int = vibo_programs.KHAT_DRAWS
):
    """(S,) log p(y, d, a) - log q(d) q(a | d, r) of joint draws: the fit's PSIS k-hat input
    (``vibo.log_ratios`` with this encoder).

    Parameters
    ----------
    params, st, settings, key, y, n_draws
        As for :func:`ability_draws`, but ``settings.priors`` (the item priors) are read.

    Returns
    -------
    numpy.ndarray
        (S,) log ratios.
    """
    program = vibo_programs.log_ratios_program(average_encoder, st, None, settings.priors, int(n_draws))
    return np.asarray(program(params, key, jnp.asarray(y)))


def predictive_probs(
    params: dict, st: irt2pl.Structure, settings: vibo.VIBOSettings, key, y, rows, cols, n_draws: int = 200
):
    """Posterior predictive P(y_ij = c) at cells (rows, cols) hidden in ``y``, averaged over
    joint draws of q(d) q(a | d, r): (n_cells, C).

    Parameters
    ----------
    params, st, settings, key, y, n_draws
        As for :func:`ability_draws`, with the scored cells hidden in ``y``.
    rows, cols : array (n_cells,)
        Persons and items of the cells.

    Returns
    -------
    numpy.ndarray
        P(y_ij = c), shape (n_cells, C), C = ``st.n_categories_max``.
    """
    items, theta = ability_draws(params, st, settings, key, y, n_draws)
    return vibo_programs.predictive_from_draws(items, theta, st, rows, cols)
