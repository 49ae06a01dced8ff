"""VIBO with an averaging ability encoder: the design seed 004 compares its product of experts
against ("We found this design to outperform averaging over non-missing entries").

Everything but the ability encoder is VIBO's (``inference.vibo``): q(d) a mean-field Gaussian
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
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference import networks, vibo
from bayesirt.inference.training import FitResult, Problem, keep_last_good, train_problem
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
    loc = irt2pl.initial_items(y, st)
    log_scale = jax.tree.map(lambda v: jnp.full_like(v, math.log(settings.init_item_scale)), loc)
    k_embed, k_head = jax.random.split(key)
    widths = [int(h) for h in settings.hidden]
    embed = networks.init_mlp(k_embed, [vibo.n_item_features(st) + st.n_categories_max, *widths])
    head = networks.init_mlp(k_head, [widths[-1], widths[-1], 2 * st.n_factors], scale_last=0.1)
    return {"items": {"loc": loc, "log_scale": log_scale}, "encoder": {"embed": embed, "head": head}}


def embedding_table(embed, items: dict, st: irt2pl.Structure):
    """h(d_j, c) for every (item, category): (J, C, H).

    Parameters
    ----------
    embed : list of dict
        The embedding MLP.
    items : dict
        Unconstrained item values by item block (e.g. a draw of q(d)).
    st : irt2pl.Structure
        The model, items, factors and categories.

    Returns
    -------
    jax.Array
        The embeddings, (J, C, H), C = ``st.n_categories_max``.
    """
    feats = jnp.concatenate([items[n].reshape(st.n_items, -1) for n in st.item_shapes()], axis=1)
    cmax = st.n_categories_max
    x = jnp.concatenate(
        [
            jnp.broadcast_to(feats[:, None, :], (st.n_items, cmax, feats.shape[1])),
            jnp.broadcast_to(jnp.eye(cmax, dtype=feats.dtype)[None], (st.n_items, cmax, cmax)),
        ],
        axis=-1,
    )
    # the last layer activated too: the average runs over nonlinear features of each response
    return networks.gelu(networks.apply_mlp(embed, x))


def average_encoder(encoder: dict, items: dict, y, st: irt2pl.Structure):
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

    Returns
    -------
    tuple of jax.Array
        Mean (B, K) and standard deviation (B, K).
    """
    table = embedding_table(encoder["embed"], items, st)
    oh = vibo.response_onehot(y, st.n_categories_max, table.dtype)
    n_observed = jnp.sum(y >= 0, axis=1, keepdims=True).astype(table.dtype)
    # every person answers at least one item (irt2pl.check_responses); the floor only keeps an
    # all-missing row of a scoring call finite (it then gets the head's output at zero)
    pooled = (oh @ table.reshape(-1, table.shape[-1])) / jnp.maximum(n_observed, 1.0)
    out = networks.apply_mlp(encoder["head"], pooled)
    k = st.n_factors
    prec = jax.nn.softplus(out[:, k:] + 1.0) + vibo.MIN_PRECISION
    return out[:, :k], jax.lax.rsqrt(prec)


def _ability_kl(mean, sd):
    return jnp.sum(0.5 * (sd**2 + mean**2 - 1.0) - jnp.log(sd), axis=-1)


def person_terms(params, key, y, index, st: irt2pl.Structure, settings: vibo.VIBOSettings):
    """Per-person VIBO_i without the item KL (B,), averaged over ``settings.n_samples`` draws,
    and the item KL: ``vibo.person_terms`` with the averaging encoder (same draws and keys).

    Parameters
    ----------
    params : dict
        ``{"items", "encoder"}``, as :func:`init` builds them.
    key : jax.Array
        PRNG key of the draws.
    y : array (B, J)
        The batch's responses, -1 for missing.
    index : array (B,)
        The batch persons' rows (the ability draws' keys are folded with them).
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : vibo.VIBOSettings
        Draws per step (``n_samples``) and item priors.

    Returns
    -------
    tuple of jax.Array
        VIBO_i without the item KL (B,), and KL(q(d) || p(d)), a scalar.
    """

    def one(s):
        k_item, k_ab = jax.random.split(jax.random.fold_in(key, s))
        items = vibo.sample_items(k_item, params["items"])
        mean, sd = average_encoder(params["encoder"], items, y, st)
        eps = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(k_ab, i), (st.n_factors,)))(index)
        theta = mean + sd * eps.astype(mean.dtype)
        return irt2pl.log_lik(y, theta, items, st) - _ability_kl(mean, sd)

    values = jax.vmap(one)(jnp.arange(settings.n_samples)).mean(0)
    return values, vibo.item_kl(params["items"], settings.priors)


def loss_fn(st: irt2pl.Structure, settings: vibo.VIBOSettings, n_persons: int):
    """The driver's loss, -mean_batch VIBO_i + KL(q(d) || p(d)) / N, as ``vibo.loss_fn``.

    Parameters
    ----------
    st, settings
        As for :func:`person_terms`.
    n_persons : int
        N, persons in the data.

    Returns
    -------
    callable
        ``loss(params, key, batch)``, a scalar, for ``batch["y"]`` (B, J) and ``batch["index"]`` (B,).
    """

    def loss(params, key, batch):
        values, kl_items = person_terms(params, key, batch["y"], batch["index"], st, settings)
        return -jnp.mean(values) + kl_items / n_persons

    return loss


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
    y = irt2pl.check_responses(y, structure)
    vibo.check_batch(settings.train.batch_size, y.shape[0])
    init_key, train_key = jax.random.split(key)
    params = init(init_key, structure, settings, y)
    loss = loss_fn(structure, settings, y.shape[0])
    return Problem(loss, params, train_key, {"y": jnp.asarray(y)}, y.shape[0], settings.train, label=label)


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
# using a fit: what ``vibo`` offers, with this encoder. q(d) is VIBO's, so the item posterior is
# ``vibo.item_posterior``.

item_posterior = vibo.item_posterior
KHAT_DRAWS = vibo.KHAT_DRAWS


@functools.lru_cache(maxsize=32)
def _score_program(st: irt2pl.Structure, n_item_draws: int):
    @jax.jit
    def score(params, key, y):
        if n_item_draws == 0:
            return average_encoder(params["encoder"], params["items"]["loc"], y, st)
        keys = jax.random.split(key, n_item_draws)
        draw = lambda k: average_encoder(params["encoder"], vibo.sample_items(k, params["items"]), y, st)
        means, sds = jax.vmap(draw)(keys)
        mean = means.mean(0)
        var = (sds**2 + means**2).mean(0) - mean**2
        return mean, jnp.sqrt(jnp.maximum(var, 0.0))

    return score


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
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[1] != st.n_items:
        raise ValueError(f"responses must be persons x {st.n_items} items, got shape {y.shape}")
    top = st.categories[None, :] - 1
    if np.any((y < -1) | (y > top)):
        i, j = map(int, np.argwhere((y < -1) | (y > top))[0])
        raise ValueError(f"response {int(y[i, j])} of person {i} to item {j} is outside the model's categories")
    score = _score_program(st, int(n_item_draws))
    parts = [score(params, key, jnp.asarray(y[a : a + chunk])) for a in range(0, y.shape[0], chunk)]
    return np.concatenate([np.asarray(p[0]) for p in parts]), np.concatenate([np.asarray(p[1]) for p in parts])


def _joint_draw(params, k, y, st: irt2pl.Structure):
    """One joint draw (d, a) of q(d) q(a | d, r), keyed as ``vibo``'s draws are."""
    k_item, k_ab = jax.random.split(k)
    items = vibo.sample_items(k_item, params["items"])
    mean, sd = average_encoder(params["encoder"], items, y, st)
    return items, mean, sd, mean + sd * jax.random.normal(k_ab, mean.shape)


@functools.lru_cache(maxsize=32)
def _draws_program(st: irt2pl.Structure, n_draws: int):
    def draws(params, key, y):
        def one(k):
            items, _, _, theta = _joint_draw(params, k, y, st)
            return items, theta

        batch = max(1, min(n_draws, vibo.DRAW_BATCH_CELLS // max(y.size, 1)))  # memory, as in vibo
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(draws)


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
    return _draws_program(st, int(n_draws))(params, key, jnp.asarray(y))


@functools.lru_cache(maxsize=32)
def _log_ratios_program(st: irt2pl.Structure, priors: irt2pl.ItemPriors, n_draws: int):
    def ratios(params, key, y):
        def one(k):
            items, mean, sd, theta = _joint_draw(params, k, y, st)
            log_q = vibo.item_log_q(params["items"], items) + jnp.sum(vibo.normal_log_pdf(theta, mean, sd))
            return irt2pl.log_joint(dict(items, ability=theta), y, st, priors) - log_q

        batch = max(1, min(n_draws, vibo.DRAW_BATCH_CELLS // max(y.size, 1)))
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(ratios)


def log_ratios(params: dict, st: irt2pl.Structure, settings: vibo.VIBOSettings, key, y, n_draws: int = KHAT_DRAWS):
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
    return np.asarray(_log_ratios_program(st, settings.priors, int(n_draws))(params, key, jnp.asarray(y)))


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
    return vibo.predictive_from_draws(items, theta, st, rows, cols)
