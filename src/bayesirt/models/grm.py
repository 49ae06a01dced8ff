"""The graded response model's category probabilities: the one GRM likelihood of the project.

Every GRM variant (the factorized model of seed 000, the multidimensional model of seed 003)
is written as cumulative logits ``P(Y >= k) = sigmoid(score - cut_k)``, k = 1..K-1, with a
per-cell ``score`` (e.g. ``alpha * theta`` or ``beta . z``) and per-item increasing ``cuts``
(e.g. ``alpha * tau_k`` or ``-intercept_k``). The probability of category k is the difference
of two neighbouring cumulative probabilities, computed in log space (see DESIGN.md, Numerics):

    for a > b:  log(sigmoid(a) - sigmoid(b)) = log sigmoid(a) + log sigmoid(-b) + log1mexp(a - b)

with ``a = score - cut_k`` and ``b = score - cut_{k+1}``; ``a - b = cut_{k+1} - cut_k`` does not
depend on the score. The lowest category is ``log sigmoid(-b)``, the highest ``log sigmoid(a)``.
Missing responses are coded -1 and contribute exactly zero.

The same probabilities as products and quotients of cumulative probabilities, the forms a
training step of the imputation objectives uses, live in ``bayesirt.models.grm_cumulative``;
their names are importable from here too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesirt.models.grm_cumulative import (  # noqa: F401  (the GRM's names, importable from here as before)
    category_probs,
    cumulative_probs,
    exp_cut_tables,
    log_mixture_prob,
    log_prob_from_cumulative,
    top_category_mask,
)

MISSING = -1


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, accurate near 0 and for large x (Maechler 2012).

    Parameters
    ----------
    x : array
        Positive values.

    Returns
    -------
    jax.Array
        log(1 - exp(-x)), the shape of ``x``.
    """
    return jnp.where(x < jnp.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def ordered_cuts(base, increments):
    """Increasing thresholds from a free first threshold and positive increments.

    base: (I,), increments: (I, K-2) > 0  ->  (I, K-1) with cuts[:, 0] = base.

    Parameters
    ----------
    base : array (I,)
        The first threshold of each item.
    increments : array (I, K-2)
        Positive gaps between neighbouring thresholds.

    Returns
    -------
    jax.Array
        Cuts, shape (I, K-1), increasing along the last axis.
    """
    # a NumPy float64 input becomes JAX's float32 here, silently, rather than in jnp.zeros,
    # which warns about the dtype it cannot give
    increments = jnp.asarray(increments)
    zero = jnp.zeros(increments.shape[:-1] + (1,), increments.dtype)
    return base[..., None] + jnp.concatenate([zero, jnp.cumsum(increments, axis=-1)], axis=-1)


def log_prob(y, score, cuts, n_categories):
    """Log-probability of each observed response; 0 where ``y`` is missing.

    y: (..., I) integer codes 0..K_i-1 or -1; score: (..., I); cuts: (I, Kmax-1) increasing
    along the last axis; n_categories: (I,) number of categories of each item (<= Kmax).
    Only the two cuts around the observed category are touched, so the cost does not grow
    with the number of categories. ``score`` may carry extra leading axes (e.g. importance
    draws) that ``y`` broadcasts against; the cuts are gathered at ``y``'s shape, before the
    broadcast, so their gradient is reduced over those axes before the scatter.

    Parameters
    ----------
    y : array (..., I)
        Integer category codes 0..K_i-1, or -1 (missing).
    score : array (..., I)
        Per-cell score; may carry extra leading axes that ``y`` broadcasts against.
    cuts : array (I, Kmax-1)
        Per-item cuts, increasing along the last axis.
    n_categories : array (I,)
        Number of categories of each item (<= Kmax).

    Returns
    -------
    jax.Array
        Log-probability of each cell, the broadcast shape of ``y`` and ``score``; 0 where ``y`` is
        missing.
    """
    observed = y != MISSING
    top = n_categories - 1
    yk = jnp.clip(y, 0, top)
    has_lo = yk > 0  # a cut below the category exists
    has_hi = yk < top  # a cut above it exists
    item = jnp.arange(cuts.shape[0])
    # cut below the category (k-1) and above it (k); clipped indices keep the gathers valid,
    # the masks drop the terms that do not exist.
    cut_lo = cuts[item, jnp.clip(yk - 1, 0, cuts.shape[1] - 1)]
    cut_hi = cuts[item, jnp.clip(yk, 0, cuts.shape[1] - 1)]
    both = has_lo & has_hi
    gap = jnp.where(both, cut_hi - cut_lo, 1.0)
    term_gap = jnp.where(both, log1mexp(gap), 0.0)
    lp = _log_sigmoid_pair(score - cut_lo, score - cut_hi, has_lo, has_hi) + term_gap
    return jnp.where(observed, lp, 0.0)


@jax.custom_jvp
def _log_sigmoid_pair(a, b, has_lo, has_hi):
    """[has_lo] log sigmoid(a) + [has_hi] log sigmoid(-b), with 2 exp and 1 log per cell.

    log sigmoid(a) + log sigmoid(-b) = min(a, 0) + min(-b, 0) - log((1 + e^-|a|)(1 + e^-|b|)).
    Its derivatives sigmoid(-a) and -sigmoid(b) reuse the same two exponentials (custom JVP;
    JAX's generic log_sigmoid pair costs more per training step on a CPU; the Performance page
    has the measurement).
    A custom JVP (not VJP) keeps forward-mode and Hessians (Laplace approximations) working.
    """
    return _log_sigmoid_pair_parts(a, b, has_lo, has_hi)[0]


def _log_sigmoid_pair_parts(a, b, has_lo, has_hi):
    ea = jnp.where(has_lo, jnp.exp(-jnp.abs(a)), 0.0)
    eb = jnp.where(has_hi, jnp.exp(-jnp.abs(b)), 0.0)
    linear = jnp.where(has_lo, jnp.minimum(a, 0.0), 0.0) + jnp.where(has_hi, jnp.minimum(-b, 0.0), 0.0)
    value = linear - jnp.log((1.0 + ea) * (1.0 + eb))
    da = jnp.where(has_lo, jnp.where(a >= 0, ea, 1.0) / (1.0 + ea), 0.0)  # sigmoid(-a)
    db = jnp.where(has_hi, -jnp.where(b >= 0, 1.0, eb) / (1.0 + eb), 0.0)  # -sigmoid(b)
    return value, da, db


@_log_sigmoid_pair.defjvp
def _log_sigmoid_pair_jvp(primals, tangents):
    a, b, has_lo, has_hi = primals
    ta, tb = tangents[0], tangents[1]
    value, da, db = _log_sigmoid_pair_parts(a, b, has_lo, has_hi)
    return value, da * ta + db * tb


def category_log_probs(score, cuts, n_categories):
    """Log-probabilities of every category: (..., I) scores -> (..., I, Kmax).

    Categories an item does not have (k >= K_i) get -inf. Used to simulate data, for the
    exact marginal over imputation distributions, and for checks.

    Parameters
    ----------
    score : array (..., I)
        Per-cell score.
    cuts : array (I, Kmax-1)
        Per-item cuts, increasing along the last axis.
    n_categories : array (I,)
        Number of categories of each item (<= Kmax).

    Returns
    -------
    jax.Array
        log P(Y = k), shape (..., I, Kmax); -inf for k >= K_i.
    """
    kmax = cuts.shape[-1] + 1
    logits = score[..., None] - cuts  # (..., I, Kmax-1): log-odds of Y >= k, k = 1..Kmax-1
    zeros = jnp.zeros(logits.shape[:-1] + (1,), logits.dtype)
    # P(Y >= k) for k = 0..Kmax: log sigmoid(a) below, log sigmoid(-b) above each category.
    term_a = jnp.concatenate([zeros, jax.nn.log_sigmoid(logits)], axis=-1)
    term_b = jnp.concatenate([jax.nn.log_sigmoid(-logits), zeros], axis=-1)
    k = jnp.arange(kmax)
    top = (n_categories - 1)[:, None]
    gap = jnp.diff(cuts, axis=-1)  # (I, Kmax-2), cut_{k+1} - cut_k
    interior = (k > 0) & (k < top)
    gap_k = jnp.concatenate([jnp.ones(gap.shape[:-1] + (1,)), gap, jnp.ones(gap.shape[:-1] + (1,))], -1)
    gap_k = jnp.where(interior, gap_k, 1.0)
    term_gap = jnp.where(interior, log1mexp(gap_k), 0.0)
    # the highest category of an item with fewer than Kmax categories has no upper cut
    term_b = jnp.where(k == top, 0.0, term_b)
    lp = term_a + term_b + term_gap
    return jnp.where(k <= top, lp, -jnp.inf)


def sample(key, score, cuts, n_categories):
    """Draw responses from the GRM: (..., I) scores -> (..., I) integer categories.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    score : array (..., I)
        Per-cell score.
    cuts : array (I, Kmax-1)
        Per-item cuts, increasing along the last axis.
    n_categories : array (I,)
        Number of categories of each item (<= Kmax).

    Returns
    -------
    jax.Array
        Categories 0..K_i-1, shape (..., I).
    """
    logits = category_log_probs(score, cuts, n_categories)
    return jax.random.categorical(key, logits, axis=-1)
