"""The compiled programs that use a fitted VIBO-style approximation q(d) q(a | d, r): amortized
scoring of persons, joint draws, the log importance ratios behind the fit's PSIS k-hat
(``inference.variational.psis``), and the posterior predictive of hidden cells.

Each program is built for an encoder (``encoder(encoder_params, items, y, st, settings) ->
(mean, sd)``, see ``vibo_encoder``: VIBO's product of experts or ``vibo_average``'s averaging
encoder), a model structure, the settings the encoder reads and the number of draws, and jitted
once per such tuple (``functools.lru_cache``): the fit's parameters are arguments, so the fits
of one shape (a block's replications) share one program. ``vibo`` and ``vibo_average`` call
these with their own encoder.

Draws go through ``jax.lax.map`` in batches whose per-cell arrays (batch x N x J floats) stay
near ``DRAW_BATCH_CELLS``: all S draws at once would hold S x N x J floats (80 GB at the
paper's 1M persons, 100 items and 200 draws); the batches draw the same numbers.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.variational.vibo_items import item_log_q, normal_log_pdf, sample_items
from bayesirt.models import irt2pl

DRAW_BATCH_CELLS = 100_000_000  # person-item cells per batch of draws (``draws_program``)
KHAT_DRAWS = 200  # joint draws of q behind a fit's PSIS k-hat (VIBO and mean-field VI)
PREDICTIVE_CELLS = 250_000  # cells per call of the predictive program (``predictive_from_draws``)


@functools.lru_cache(maxsize=32)
def score_program(encoder, st: irt2pl.Structure, settings, n_item_draws: int):
    """Jitted amortized scoring ``score(params, key, y) -> (mean, sd)`` of the marginal
    q(a | r) = E_q(d) q(a | d, r), by moment matching over ``n_item_draws`` draws of d (with
    ``n_item_draws = 0``, q(a | d = E_q[d], r)). New persons need no refit: only the encoder.

    Parameters
    ----------
    encoder : callable
        ``encoder(encoder_params, items, y, st, settings) -> (mean, sd)``.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : object
        What ``encoder`` reads of the fit's settings (passed through).
    n_item_draws : int
        Draws of d for the moment matching (0: q(d)'s mean).

    Returns
    -------
    callable
        ``score(params, key, y)``: mean (B, K) and sd (B, K) for responses ``y`` (B, J); cached
        per arguments.
    """

    @jax.jit
    def score(params, key, y):
        if n_item_draws == 0:
            return encoder(params["encoder"], params["items"]["loc"], y, st, settings)
        keys = jax.random.split(key, n_item_draws)
        means, sds = jax.vmap(lambda k: encoder(params["encoder"], sample_items(k, params["items"]), y, st, settings))(
            keys
        )
        mean = means.mean(0)
        var = (sds**2 + means**2).mean(0) - mean**2
        return mean, jnp.sqrt(jnp.maximum(var, 0.0))

    return score


def score_in_chunks(score, params: dict, st: irt2pl.Structure, key, y, chunk: int):
    """Abilities' mean and sd (N, K) for responses ``y`` (checked) from a scoring program, in
    chunks of ``chunk`` persons.

    Parameters
    ----------
    score : callable
        ``score(params, key, y) -> (mean, sd)`` (:func:`score_program`).
    params, st, key, y, chunk
        As for ``vibo.encode``: the fit's parameters, the model, the key of the draws of d (the
        same for every chunk), the responses (N, J) and persons per call.

    Returns
    -------
    tuple of numpy.ndarray
        Mean (N, K) and sd (N, K); a bad ``y`` raises ``ValueError`` as ``vibo.encode`` says.
    """
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[1] != st.n_items:
        raise ValueError(f"responses must be persons x {st.n_items} items, got shape {y.shape}")
    top = st.categories[None, :] - 1
    if np.any((y < -1) | (y > top)):
        i, j = map(int, np.argwhere((y < -1) | (y > top))[0])
        raise ValueError(f"response {int(y[i, j])} of person {i} to item {j} is outside the model's categories")
    parts = [score(params, key, jnp.asarray(y[a : a + chunk])) for a in range(0, y.shape[0], chunk)]
    return np.concatenate([np.asarray(p[0]) for p in parts]), np.concatenate([np.asarray(p[1]) for p in parts])


def _joint_draw(encoder, params, k, y, st: irt2pl.Structure, settings):
    """One joint draw of q(d) q(a | d, r) from key ``k``: d, the encoder's mean and sd, and a."""
    k_item, k_ab = jax.random.split(k)
    items = sample_items(k_item, params["items"])
    mean, sd = encoder(params["encoder"], items, y, st, settings)
    return items, mean, sd, mean + sd * jax.random.normal(k_ab, mean.shape)


def _draw_batch(n_draws: int, y) -> int:
    """Draws per batch of ``jax.lax.map``: the per-cell arrays near ``DRAW_BATCH_CELLS``."""
    return max(1, min(n_draws, DRAW_BATCH_CELLS // max(y.size, 1)))


@functools.lru_cache(maxsize=32)
def draws_program(encoder, st: irt2pl.Structure, settings, n_draws: int):
    """``draws(params, key, y)``, joint draws (item values, abilities) of q(d) q(a | d, r),
    jitted once per encoder, structure, settings and number of draws.

    Parameters
    ----------
    encoder, st, settings
        As for :func:`score_program`.
    n_draws : int
        S, joint draws.

    Returns
    -------
    callable
        ``draws(params, key, y)``: unconstrained item values, a dict of (S, ...) arrays by item
        block, and abilities (S, N, K).
    """

    def draws(params, key, y):
        def one(k):
            items, _, _, theta = _joint_draw(encoder, params, k, y, st, settings)
            return items, theta

        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=_draw_batch(n_draws, y))

    return jax.jit(draws)


@functools.lru_cache(maxsize=32)
def log_ratios_program(encoder, st: irt2pl.Structure, settings, priors: irt2pl.ItemPriors, n_draws: int):
    """``ratios(params, key, y)``, the (S,) log importance ratios log p(y, d, a) - log q(d)
    q(a | d, r) of the joint draws of :func:`draws_program` (same key, same draws), jitted once
    per encoder, structure, settings, item priors and number of draws.

    p and q are both densities of the unconstrained item values (the priors are defined on
    them, ``models.irt2pl``), so no Jacobian enters.

    Parameters
    ----------
    encoder, st, settings
        As for :func:`score_program`.
    priors : irt2pl.ItemPriors
        The item priors of p.
    n_draws : int
        S, joint draws.

    Returns
    -------
    callable
        ``ratios(params, key, y)``: the log ratios, (S,).
    """

    def ratios(params, key, y):
        def one(k):
            items, mean, sd, theta = _joint_draw(encoder, params, k, y, st, settings)
            log_q = item_log_q(params["items"], items) + jnp.sum(normal_log_pdf(theta, mean, sd))
            log_p = irt2pl.log_joint(dict(items, ability=theta), y, st, priors)
            return log_p - log_q

        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=_draw_batch(n_draws, y))

    return jax.jit(ratios)


@functools.lru_cache(maxsize=32)
def _predictive_program(st: irt2pl.Structure):
    def probs(items, theta, rows, cols):
        return jax.lax.map(lambda a: irt2pl.cell_category_probs(a[1][rows], a[0], st, cols), (items, theta)).mean(0)

    return jax.jit(probs)


def predictive_from_draws(items: dict, theta, st: irt2pl.Structure, rows, cols):
    """Mean over draws of P(y_ij = c): ``items`` dict of (S, ...) unconstrained item draws,
    ``theta`` (S, N, K). Shared by every method that has draws (one compiled program per
    structure and shapes). Returns (n_cells, C).

    The cells go through in chunks of ``PREDICTIVE_CELLS`` (the last padded with cell 0): the
    program holds S probabilities per cell before averaging them, 24 GB for the 15 million
    scored cells of the paper's 1M-person design at 200 draws. Each cell's mean is the same
    arithmetic whatever its chunk.

    Parameters
    ----------
    items : dict
        Unconstrained item draws by item block, each (S, ...).
    theta : array (S, N, K)
        Ability draws.
    st : irt2pl.Structure
        The model, items, factors and categories.
    rows, cols : array (n_cells,)
        Persons and items of the cells.

    Returns
    -------
    numpy.ndarray
        P(y_ij = c), shape (n_cells, C), C = ``st.n_categories_max``.
    """
    rows, cols = np.asarray(rows), np.asarray(cols)
    program, size = _predictive_program(st), min(PREDICTIVE_CELLS, max(len(rows), 1))
    parts = []
    for a in range(0, len(rows), size):
        r, c = rows[a : a + size], cols[a : a + size]
        pad = size - len(r)
        r, c = np.pad(r, (0, pad)), np.pad(c, (0, pad))
        parts.append(np.asarray(program(items, theta, jnp.asarray(r), jnp.asarray(c)))[: size - pad])
    if not parts:
        return np.asarray(program(items, theta, jnp.asarray(rows), jnp.asarray(cols)))
    return np.concatenate(parts)
