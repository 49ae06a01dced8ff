"""The graded response model's category probabilities from cumulative probabilities, with one
exponential per cell: products and quotients that XLA fuses inside a training step, where
the log-space forms of ``bayesirt.models.grm`` cost far more in their backward pass. Used by
the imputation objectives and the exact per-cell marginal over imputation distributions.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp


def cumulative_probs(score, cuts, item=None, clip: float = 40.0):
    """S_k = P(Y >= k) and T_k = P(Y < k) = 1 - S_k at every cut, k = 1..K-1, with one
    exponential per cell: u_k = e^{cut_k} e^{-score}, S_k = 1 / (1 + u_k), T_k = u_k S_k (so a
    small T_k is accurate, not 1 minus something near 1). Arguments are clipped to +-``clip``.

    score: (...); cuts: (..., K-1) per cell, or, with ``item`` ((...) integers), per item
    (I, K-1), exponentiated once per item and then gathered. Cuts an item does not have must be
    >= ``clip`` (a large finite value; avoid inf under jit), which makes S ~ 0 and T ~ 1 there.

    Used by the imputation objectives: inside every training step the per-category log-space
    form (``category_log_probs``) costs far more in its backward pass on a CPU (XLA does not
    fuse its selects and concatenations), while these products and quotients fuse.

    Parameters
    ----------
    score : array (...)
        Per-cell score.
    cuts : array (..., K-1) or (I, K-1)
        Cuts per cell, or per item when ``item`` is given; cuts an item does not have >= ``clip``.
    item : array (...) of int, optional
        Item of each cell (a row of ``cuts``); None: ``cuts`` are per cell.
    clip : float
        Scores and cuts are clipped to +-``clip`` before the exponential.

    Returns
    -------
    tuple of jax.Array
        S_k = P(Y >= k) and T_k = P(Y < k), each of shape (..., K-1).
    """
    exp_cuts = jnp.exp(jnp.clip(cuts, -clip, clip))
    if item is not None:
        exp_cuts = exp_cuts[item]
    u = exp_cuts * jnp.exp(-jnp.clip(score, -clip, clip))[..., None]
    s = 1.0 / (1.0 + u)
    return s, u * s


def log_prob_from_cumulative(y, s, t):
    """log P(Y = y) from ``cumulative_probs``: y (...) in 0..K-1 (clipped), s, t (..., K-1).

    P(Y = y) = S_y - S_{y+1} = T_{y+1} - T_y (S_0 = 1, T_0 = 0, and past the last cut S = 0,
    T = 1). The form whose two terms are both <= 1/2 at the lower end is used (S when
    S_y <= 1/2, i.e. the category lies above the person, T otherwise), so the difference never
    cancels two numbers near 1; its relative error is ~1e-7 / (1 - e^-gap) for the gap between
    the two cuts. Floored at 1e-37 before the log.

    Parameters
    ----------
    y : array (...)
        Integer categories 0..K-1 (clipped into that range).
    s, t : array (..., K-1)
        S_k and T_k from ``cumulative_probs``.

    Returns
    -------
    jax.Array
        log P(Y = y), shape (...).
    """
    n_cuts = s.shape[-1]
    y = jnp.clip(y, 0, n_cuts)
    k = jnp.arange(n_cuts)
    at_lo = k == (y - 1)[..., None]  # the cut below category y (none for y = 0)
    at_hi = k == y[..., None]  # the cut above (none for y = K-1)
    s_lo = jnp.where(y == 0, 1.0, jnp.sum(jnp.where(at_lo, s, 0.0), -1))
    s_hi = jnp.sum(jnp.where(at_hi, s, 0.0), -1)
    t_lo = jnp.sum(jnp.where(at_lo, t, 0.0), -1)
    t_hi = jnp.where(y == n_cuts, 1.0, jnp.sum(jnp.where(at_hi, t, 0.0), -1))
    p = jnp.where(s_lo <= 0.5, s_lo - s_hi, t_hi - t_lo)
    return jnp.log(jnp.maximum(p, 1e-37))


def log_mixture_prob(q, score, cuts, item=None, clip: float = 40.0):
    """log sum_k q_k P(Y = k) for one PMF ``q`` (..., K) over the categories per cell (zero
    beyond an item's categories); ``score``, ``cuts``, ``item``, ``clip`` as in
    ``cumulative_probs``. Used by the exact per-cell marginal over imputation distributions.

    Telescoped over the cuts: sum_k q_k (S_k - S_{k+1}) = q_0 + sum_{k>=1} (q_k - q_{k-1}) S_k.
    Accuracy: the signed sum has an absolute rounding error of a few float32 ulps (~1e-7), so
    the result is accurate to ~1e-7 / value relative; the value is at least the PMF's mass on
    the categories the model finds likely, so this degrades only where the imputation PMF puts
    almost no mass where the model puts it. Floored at 1e-37 before the log.

    Parameters
    ----------
    q : array (..., K)
        PMF over the categories of each cell, zero beyond the item's categories.
    score, cuts, item, clip
        As in ``cumulative_probs``.

    Returns
    -------
    jax.Array
        log sum_k q_k P(Y = k), one value per cell.
    """
    s, _ = cumulative_probs(score, cuts, item, clip)
    dq = jnp.diff(q, axis=-1)  # (..., K-1): q_k - q_{k-1}, k = 1..K-1
    value = q[..., 0] + jnp.sum(dq * s, axis=-1)
    return jnp.log(jnp.maximum(value, 1e-37))


def exp_cut_tables(cuts, n_categories, clip: float = 40.0):
    """Per-item tables for ``category_probs``: cuts (I, Kmax-1) increasing, n_categories (I,).

    Returns ``e`` (I, Kmax+1): e^{cut_k} at the cut below category k, k = 0..Kmax, with 0
    where there is no cut (k = 0, "cut" -inf) and beyond the item's top category (unused);
    ``gap`` (I, Kmax): e^{cut above k} - e^{cut below k} for the categories below the item's
    top, computed without cancellation as e^{cut above} (1 - e^{-(cut above - cut below)}),
    and 0 from the top category on. Cuts are clipped to +-``clip`` (as ``cumulative_probs``);
    cuts an item does not have may hold any finite value.

    Parameters
    ----------
    cuts : array (I, Kmax-1)
        Per-item cuts, increasing along the last axis.
    n_categories : array (I,)
        Number of categories of each item (<= Kmax).
    clip : float
        Cuts are clipped to +-``clip``.

    Returns
    -------
    tuple of jax.Array
        ``e`` (I, Kmax+1) and ``gap`` (I, Kmax), as described above.
    """
    kmax = cuts.shape[-1] + 1
    k = jnp.arange(kmax)
    top = (n_categories - 1)[:, None]
    c = jnp.clip(cuts, -clip, clip)
    zero = jnp.zeros(c.shape[:-1] + (1,), c.dtype)
    below_top = k < top
    c_hi = jnp.concatenate([c, zero], axis=-1)  # (I, Kmax): the cut above category k
    e_hi = jnp.where(below_top, jnp.exp(c_hi), 0.0)
    width = jnp.concatenate([zero, jnp.diff(c, axis=-1), zero], axis=-1)  # cut above - cut below
    interior = below_top & (k > 0)
    gap = jnp.where(interior, e_hi * -jnp.expm1(-jnp.where(interior, width, 1.0)), e_hi)
    e = jnp.concatenate([zero, e_hi], axis=-1)
    return e, gap


def top_category_mask(n_categories, kmax: int, dtype=jnp.float32):
    """(..., Kmax): 1 at each item's highest category, else 0 (the ``top`` of ``category_probs``).

    Parameters
    ----------
    n_categories : array (...)
        Number of categories of each item (or of each cell's item).
    kmax : int
        Kmax, the length of the last axis.
    dtype : dtype
        Type of the result.

    Returns
    -------
    jax.Array
        Shape (..., Kmax): 1 at category K_i - 1, else 0.
    """
    return (jnp.arange(kmax) == (n_categories - 1)[..., None]).astype(dtype)


@partial(jax.custom_vjp, nondiff_argnums=(4,))
def category_probs(score, e, gap, top, clip: float = 40.0):
    """P(Y = k) of every category as a product of positive factors: no difference of
    probabilities, so the relative error is a few float32 ulps for every category and score.

    score: (...) per cell; ``e`` (..., Kmax+1), ``gap`` (..., Kmax): rows of ``exp_cut_tables``
    at the cells' items; ``top`` (..., Kmax): ``top_category_mask`` of the cells' items; the
    leading axes of the tables broadcast against ``score`` (e.g. (I, 1, .) tables for an
    (I, C) block of cells of item i in row i). With v = e^{-score} (score clipped to
    +-``clip``) and S_k = P(Y >= k) = 1 / (1 + e_k v),

        P(Y = k) = S_k - S_{k+1} = S_k * gap_k v S_{k+1}   below the item's top category,
        P(Y = top) = S_top,

    and 0 beyond it. Returns (..., Kmax) probabilities (not logs). The backward pass is
    written out (custom VJP): XLA's own is slower on a CPU (see the Performance page).

    Parameters
    ----------
    score : array (...)
        Per-cell score.
    e : array (..., Kmax+1)
        ``e`` table of ``exp_cut_tables`` at the cells' items.
    gap : array (..., Kmax)
        ``gap`` table of ``exp_cut_tables`` at the cells' items.
    top : array (..., Kmax)
        ``top_category_mask`` of the cells' items.
    clip : float
        Scores are clipped to +-``clip`` (static: not differentiated).

    Returns
    -------
    jax.Array
        P(Y = k), shape (..., Kmax); 0 beyond each item's top category.
    """
    return _category_probs_fwd(score, e, gap, top, clip)[0]


def _category_probs_fwd(score, e, gap, top, clip=40.0):
    v = jnp.exp(-jnp.clip(score, -clip, clip))[..., None]
    s = 1.0 / (1.0 + e * v)
    p = s[..., :-1] * (top + gap * v * s[..., 1:])
    return p, (score, v, s, e, gap, top)


def _sum_to(x, shape):
    """Sum ``x`` over the axes that ``shape`` broadcast along (the reverse of broadcasting)."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    return jnp.sum(x, axis=axes).reshape(shape) if axes else x


def _category_probs_bwd(clip, res, g):
    score, v, s, e, gap, top = res
    lo, hi = s[..., :-1], s[..., 1:]
    g_lo = g * (top + gap * v * hi)
    g_prod = g * lo  # cotangent of gap * v * S_{k+1}
    zero = jnp.zeros_like(g[..., :1])
    g_s = jnp.concatenate([g_lo, zero], -1) + jnp.concatenate([zero, g_prod * gap * v], -1)
    g_s = g_s * s * s  # cotangent of S times -dS/d(e v)
    g_v = jnp.sum(g_prod * gap * hi, -1) - jnp.sum(g_s * e, -1)
    g_score = jnp.where(jnp.abs(score) <= clip, -v[..., 0] * g_v, 0.0)
    return (
        _sum_to(g_score, jnp.shape(score)),
        _sum_to(-g_s * v, e.shape),
        _sum_to(g_prod * v * hi, gap.shape),
        jnp.zeros_like(top),
    )


category_probs.defvjp(_category_probs_fwd, _category_probs_bwd)
