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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MISSING = -1


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, accurate near 0 and for large x (Maechler 2012)."""
    return jnp.where(x < jnp.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def ordered_cuts(base, increments):
    """Increasing thresholds from a free first threshold and positive increments.

    base: (I,), increments: (I, K-2) > 0  ->  (I, K-1) with cuts[:, 0] = base.
    """
    zero = jnp.zeros(increments.shape[:-1] + (1,), increments.dtype)
    return base[..., None] + jnp.concatenate([zero, jnp.cumsum(increments, axis=-1)], axis=-1)


def log_prob(y, score, cuts, n_categories):
    """Log-probability of each observed response; 0 where ``y`` is missing.

    y: (..., I) integer codes 0..K_i-1 or -1; score: (..., I); cuts: (I, Kmax-1) increasing
    along the last axis; n_categories: (I,) number of categories of each item (<= Kmax).
    Only the two cuts around the observed category are touched, so the cost does not grow
    with the number of categories.
    """
    observed = y != MISSING
    top = n_categories - 1
    yk = jnp.clip(y, 0, top)
    is_bottom = yk == 0
    is_top = yk == top
    item = jnp.arange(cuts.shape[0])
    # cut below the category (k-1) and above it (k); clipped indices keep the gathers valid,
    # the where() below drops the terms that do not exist.
    cut_lo = cuts[item, jnp.clip(yk - 1, 0, cuts.shape[1] - 1)]
    cut_hi = cuts[item, jnp.clip(yk, 0, cuts.shape[1] - 1)]
    a = score - cut_lo
    b = score - cut_hi
    term_a = jnp.where(is_bottom, 0.0, jax.nn.log_sigmoid(a))
    term_b = jnp.where(is_top, 0.0, jax.nn.log_sigmoid(-b))
    gap = jnp.where(is_bottom | is_top, 1.0, cut_hi - cut_lo)
    term_gap = jnp.where(is_bottom | is_top, 0.0, log1mexp(gap))
    return jnp.where(observed, term_a + term_b + term_gap, 0.0)


def category_log_probs(score, cuts, n_categories):
    """Log-probabilities of every category: (..., I) scores -> (..., I, Kmax).

    Categories an item does not have (k >= K_i) get -inf. Used to simulate data, for the
    exact marginal over imputation distributions, and for checks.
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
    """Draw responses from the GRM: (..., I) scores -> (..., I) integer categories."""
    logits = category_log_probs(score, cuts, n_categories)
    return jax.random.categorical(key, logits, axis=-1)
