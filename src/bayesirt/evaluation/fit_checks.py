"""Model checks for IRT models with missing responses: item fit, person fit, local dependence,
posterior-predictive replications.

Every model (graded response model, 2PL/2PNO binary, LCDM) enters as a :class:`LatentGrid`:
prior weights of Q latent states and each item's category probabilities in each state. The
checks need nothing else, so one implementation serves every model and every fitting method
(plug in a point estimate of the item values; see the constructors ``grm_grid``,
``twopno_grid``, ``lcdm_grid``).

Missing responses (coded -1) are handled by never comparing anything at a missing cell:

* posteriors over the states use each person's observed cells only;
* ``item_fit`` (an S-X2-type statistic) groups the persons who answered an item by their
  leave-one-out expected score E[Y_nj | the person's other observed responses] instead of the
  summed score, which is not comparable across persons with different missing items; its
  expected counts are sums of each person's leave-one-out predictive probabilities;
* ``person_fit`` (lz) and ``residual_correlations`` (Q3) sum or correlate over observed cells
  (pairwise for Q3);
* ``replicate`` draws replicated data sets with each person's missing mask held fixed, so a
  discrepancy computed on replicated data sees exactly the cells the observed one did.

``sx2_complete`` is the classical Orlando & Thissen (2000) S-X2 (Kang & Chen 2008 for
polytomous items), for complete data only; it is the statistic to cross-check against other
software.

The grid is a point estimate of the item values: discrepancies do not propagate item
parameter uncertainty, and chi-square reference distributions are approximate (the df
subtract the number of estimated item parameters by convention). ``predictive_p_values``
calibrates any statistic by simulation instead.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, ndtr
from scipy.stats import chi2

# Products below are einsum's own loops (optimize=False), not BLAS: the arrays are tall and thin
# (persons x a few items), where threaded BLAS gains nothing, and on a loaded machine its
# threads spin against each other (0.04 s one-threaded, 6.7 s measured with 2 busy cores).


def _dot(subscripts: str, *operands) -> np.ndarray:
    return np.einsum(subscripts, *operands, optimize=False)


# Probabilities are floored here before the log so that dividing a cell out of a posterior
# (a subtraction in log space) never meets -inf - (-inf); a state at which an observed
# response is impossible keeps a weight of ~1e-300 instead of exactly 0.
_TINY = 1e-300
_LOG_TINY = np.log(_TINY)


class LatentGrid(NamedTuple):
    """A model as prior weights over latent states and category probabilities per state.

    Attributes
    ----------
    log_weights : np.ndarray (Q,)
        Prior log weights of the states, logsumexp = 0 (each scale has this prior).
    probs : np.ndarray (Q, I, Kmax)
        P(Y_j = k | state q); 0 beyond item j's categories (that is how the number of
        categories of an item is read).
    scale_index : np.ndarray (I,)
        Which independent latent variable (0..S-1) each item loads on.
    order : np.ndarray (Q,) or None
        A score of each state that orders persons (e.g. the theta nodes); None for unordered
        states (LCDM classes).
    """

    log_weights: np.ndarray
    probs: np.ndarray
    scale_index: np.ndarray
    order: np.ndarray | None


# ----------------------------------------------------------------------------------------------
# constructors


def _normal_nodes(n_nodes: int):
    """Gauss-Hermite nodes and log weights for N(0, 1) (probabilists' Hermite)."""
    if n_nodes < 2:
        raise ValueError(f"n_nodes must be at least 2, got {n_nodes}")
    nodes, weights = hermegauss(n_nodes)
    weights = weights / weights.sum()
    return nodes, np.log(weights)


# The grid must resolve the narrowest person posterior. With many informative items a posterior's
# sd is far below the spacing of 41 Gauss-Hermite nodes (about 0.49): 100 probit items of
# discrimination about 1 give sds near 0.13, every person's posterior then sits on one or two
# nodes, and the item fit flags most items of data simulated from the model itself (the test
# test_item_fit_resolves_narrow_posteriors). A sum over nodes h apart of a smooth density of sd
# sigma errs by about exp(-2 pi^2 sigma^2 / h^2) of its mass (the trapezoid rule's aliasing);
# h <= 2.5 sigma keeps the item fit at its level in that test, and costs at most 2.5 times the
# 41 nodes' time where it asks for 101.
SPACING_PER_SD = 2.5
MIN_NODES, MAX_NODES, NODE_STEP = 41, 241, 20
_THETA_CHECKED = np.linspace(-3.0, 3.0, 121)  # where the N(0, 1) prior puts persons


def information(probs_at, scale_index, theta=_THETA_CHECKED, step: float = 1e-4) -> np.ndarray:
    """Fisher information of each scale's ability, sum over its items of sum_k P_k'^2 / P_k,
    from central differences of the category probabilities.

    Parameters
    ----------
    probs_at : callable
        ``probs_at(theta) -> (T, I, K)`` category probabilities at abilities ``theta`` (T,).
    scale_index : array (I,)
        Scale of each item.
    theta : array (T,)
        Abilities at which to evaluate it.
    step : float
        Half-width of the central difference.

    Returns
    -------
    np.ndarray (T, S)
        The information of every scale at every ``theta``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    p = probs_at(theta)
    slope = (probs_at(theta + step) - probs_at(theta - step)) / (2.0 * step)
    per_item = np.where(p > 0, slope**2 / np.maximum(p, _TINY), 0.0).sum(axis=-1)  # (T, I)
    scale_index = np.asarray(scale_index, dtype=np.int64)
    return np.stack([per_item[:, scale_index == s].sum(axis=1) for s in range(scale_index.max() + 1)], axis=1)


def nodes_for(probs_at, scale_index) -> int:
    """The fewest Gauss-Hermite nodes (``MIN_NODES`` up by ``NODE_STEP``, at most ``MAX_NODES``)
    whose local spacing is at most ``SPACING_PER_SD`` times the posterior sd of a person who
    answered every item, 1 / sqrt(1 + information), at every ability in [-3, 3] and on every
    scale.

    Parameters
    ----------
    probs_at : callable
        As in ``information``.
    scale_index : array (I,)
        Scale of each item.

    Returns
    -------
    int
        The number of nodes Q (``MAX_NODES`` where even that many are coarser than the rule).
    """
    sd = 1.0 / np.sqrt(1.0 + information(probs_at, scale_index).max(axis=1))  # (T,)
    for n in range(MIN_NODES, MAX_NODES + 1, NODE_STEP):
        nodes, _ = hermegauss(n)
        spacing = np.interp(_THETA_CHECKED, (nodes[1:] + nodes[:-1]) / 2, np.diff(nodes))
        if np.all(spacing <= SPACING_PER_SD * sd):
            return n
    return MAX_NODES


def grm_grid(discrimination, cuts, n_categories, scale_index=None, n_nodes: int | None = None) -> LatentGrid:
    """Graded response model (binary 2PL when K = 2) on a Gauss-Hermite grid for N(0, 1).

    P(Y_j >= k | theta) = sigmoid(a_j theta - cut_jk), k = 1..K_j-1, with P(Y_j >= 0) = 1 and
    P(Y_j >= K_j) = 0; P(Y_j = k) is the difference of successive cumulative probabilities,
    computed as sigmoid(x_k) sigmoid(-x_{k+1}) (1 - exp(x_{k+1} - x_k)) so that no category
    loses precision to cancellation. With several scales, every scale has its own N(0, 1)
    ability on the same nodes (the factorized GRM).

    Parameters
    ----------
    discrimination : array (I,)
        Slopes a_j.
    cuts : array (I, Kmax-1)
        Increasing cuts per item; entries beyond item j's K_j - 1 are ignored.
    n_categories : array (I,)
        K_j, at least 2 and at most Kmax.
    scale_index : array (I,), optional
        Scale of each item (0..S-1); all items on one scale by default.
    n_nodes : int, optional
        Number of quadrature nodes Q; by default as many as the items' information needs
        (``nodes_for``).

    Returns
    -------
    LatentGrid
        States are the nodes; ``order`` is the node values.
    """
    a = np.asarray(discrimination, dtype=np.float64)
    cuts = np.atleast_2d(np.asarray(cuts, dtype=np.float64))
    n_cat = np.asarray(n_categories, dtype=np.int64)
    n_items = a.shape[0]
    if cuts.shape[0] != n_items or n_cat.shape != (n_items,):
        raise ValueError(
            f"discrimination {a.shape}, cuts {cuts.shape} and n_categories {n_cat.shape} disagree on the items"
        )
    kmax = cuts.shape[1] + 1
    if n_cat.min() < 2 or n_cat.max() > kmax:
        raise ValueError(f"n_categories must lie in 2..{kmax} (cuts has {kmax - 1} columns)")
    scale = np.zeros(n_items, dtype=np.int64) if scale_index is None else np.asarray(scale_index, dtype=np.int64)
    if n_nodes is None:
        n_nodes = nodes_for(lambda theta: _grm_probs(a, cuts, n_cat, theta), scale)
    nodes, log_w = _normal_nodes(n_nodes)
    return LatentGrid(log_w, _grm_probs(a, cuts, n_cat, nodes), scale, nodes)


def _grm_probs(a, cuts, n_cat, nodes) -> np.ndarray:
    """P(Y_j = k | theta) of the GRM at the ``nodes`` (Q,): (Q, I, Kmax), 0 beyond K_j."""
    n_items, kmax = a.shape[0], cuts.shape[1] + 1
    k = np.arange(1, kmax)
    real = k[None, :] < n_cat[:, None]  # (I, Kmax-1): cuts that belong to the item
    # x[q, j, k] = a theta - cut_k for k = 0..Kmax with x_0 = +inf (P(Y >= 0) = 1) and x = -inf
    # from K_j on (P(Y >= K_j) = 0)
    inner = a[None, :, None] * nodes[:, None, None] - cuts[None, :, :]
    inner = np.where(real[None], inner, -np.inf)
    q = nodes.shape[0]
    x = np.concatenate([np.full((q, n_items, 1), np.inf), inner, np.full((q, n_items, 1), -np.inf)], axis=2)
    hi, lo = x[..., :-1], x[..., 1:]
    with np.errstate(invalid="ignore"):
        gap = -np.expm1(lo - hi)  # nan where both are -inf (categories beyond K_j)
    probs = expit(hi) * expit(-lo) * gap
    return np.where(np.isnan(probs), 0.0, probs)


def twopno_grid(a, d, n_nodes: int | None = None) -> LatentGrid:
    """Two-parameter normal ogive model on a Gauss-Hermite grid for N(0, 1).

    P(Y_j = 1 | theta) = Phi(a_j theta - d_j), the convention of
    ``bayesirt.models.twopno.linear_predictor`` (``d`` is a difficulty).

    Parameters
    ----------
    a : array (I,)
        Discriminations.
    d : array (I,)
        Difficulties.
    n_nodes : int, optional
        Number of quadrature nodes Q; by default as many as the items' information needs
        (``nodes_for``).

    Returns
    -------
    LatentGrid
        Binary items (Kmax = 2) on one scale; ``order`` is the node values.
    """
    a = np.asarray(a, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    scale = np.zeros(a.shape[0], dtype=np.int64)
    if n_nodes is None:
        n_nodes = nodes_for(lambda theta: _twopno_probs(a, d, theta), scale)
    nodes, log_w = _normal_nodes(n_nodes)
    return LatentGrid(log_w, _twopno_probs(a, d, nodes), scale, nodes)


def _twopno_probs(a, d, nodes) -> np.ndarray:
    """P(Y_j = k | theta) of the 2PNO at the ``nodes`` (Q,): (Q, I, 2)."""
    eta = nodes[:, None] * a[None, :] - d[None, :]
    # both tails through ndtr of +-eta, never 1 - Phi
    return np.stack([ndtr(-eta), ndtr(eta)], axis=-1)


def lcdm_grid(class_log_probs, correct_probs) -> LatentGrid:
    """A diagnostic model (LCDM or any latent class model of binary items) as a grid.

    Parameters
    ----------
    class_log_probs : array (C,)
        Log probabilities of the attribute profiles (normalised here).
    correct_probs : array (C, I)
        P(Y_j = 1 | profile c).

    Returns
    -------
    LatentGrid
        The classes as states, one scale, ``order`` None (classes are not ordered).
    """
    lw = np.asarray(class_log_probs, dtype=np.float64)
    lw = lw - _logsumexp(lw, axis=0)
    p = np.asarray(correct_probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != lw.shape[0]:
        raise ValueError(f"correct_probs must be (C, I) with C = {lw.shape[0]}, got {p.shape}")
    probs = np.stack([1.0 - p, p], axis=-1)
    return LatentGrid(lw, probs, np.zeros(p.shape[1], dtype=np.int64), None)


# ----------------------------------------------------------------------------------------------
# shared machinery


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


class _Prepared(NamedTuple):
    y: np.ndarray  # (N, I) int, -1 missing
    observed: np.ndarray  # (N, I) bool
    probs: np.ndarray  # (Q, I, K)
    logp: np.ndarray  # (Q, I, K) floored log-probabilities
    log_weights: np.ndarray  # (Q,)
    scale: np.ndarray  # (I,)
    n_scales: int
    n_cat: np.ndarray  # (I,)
    valid: np.ndarray  # (I, K): category k exists for item j


def _n_categories(probs: np.ndarray) -> np.ndarray:
    used = (probs > 0).any(axis=0)  # (I, K)
    return np.where(used.any(axis=1), probs.shape[2] - np.argmax(used[:, ::-1], axis=1), 0)


def _as_responses(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"responses must be a 2-d (persons, items) array, got shape {y.shape}")
    if np.issubdtype(y.dtype, np.floating):
        # a float table (e.g. read with pandas) may carry NaN for missing
        finite = np.isfinite(y)
        if np.any(finite & (y != np.round(y))):
            raise ValueError("responses must be integer category codes (0..K-1, -1 for missing)")
        y = np.where(finite, y, -1).astype(np.int64)
    elif not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        raise ValueError(f"responses must be integer category codes, got dtype {y.dtype}")
    return y.astype(np.int64)


def _prepare(y, grid: LatentGrid) -> _Prepared:
    y = _as_responses(y)
    probs = np.asarray(grid.probs, dtype=np.float64)
    if probs.ndim != 3:
        raise ValueError(f"grid.probs must be (Q, I, Kmax), got shape {probs.shape}")
    n_states, n_items, kmax = probs.shape
    if y.shape[1] != n_items:
        raise ValueError(f"responses have {y.shape[1]} items, the grid {n_items}")
    log_w = np.asarray(grid.log_weights, dtype=np.float64)
    if log_w.shape != (n_states,):
        raise ValueError(f"grid.log_weights must be ({n_states},), got {log_w.shape}")
    log_w = log_w - _logsumexp(log_w, axis=0)
    scale = np.asarray(grid.scale_index, dtype=np.int64)
    if scale.shape != (n_items,) or scale.min() < 0:
        raise ValueError(f"grid.scale_index must be ({n_items},) non-negative integers")
    n_cat = _n_categories(probs)
    if y.min(initial=0) < -1:
        raise ValueError("responses must be 0..K_j-1 or -1 (missing); found values below -1")
    too_high = y >= n_cat[None, :]
    if too_high.any():
        n, j = np.argwhere(too_high)[0]
        raise ValueError(
            f"item {j} has {n_cat[j]} categories in the grid but person {n} answered {y[n, j]}"
            f" ({int(too_high.sum())} such cells)"
        )
    valid = np.arange(kmax)[None, :] < n_cat[:, None]
    with np.errstate(divide="ignore"):
        logp = np.log(np.maximum(probs, _TINY))
    return _Prepared(y, y >= 0, probs, logp, log_w, scale, int(scale.max()) + 1, n_cat, valid)


# Persons per pass of the (persons, items, states) arrays of the leave-one-out predictives: tens
# of MB at a time instead of GB (20,000 persons x 100 items x 101 nodes is 1.6 GB in float64),
# which the memory system streams far faster than one pass over the whole array.
_PERSON_CHUNK = 1024


def _cell_log_probs(p: _Prepared, rows=slice(None)) -> np.ndarray:
    """log P(y_nj | state q) per cell of the persons ``rows``, (n, I, Q); 0 at missing cells."""
    y, observed = p.y[rows], p.observed[rows]
    n_items = y.shape[1]
    logp_t = p.logp.transpose(1, 2, 0)  # (I, K, Q)
    cell = logp_t[np.arange(n_items)[None, :], np.where(observed, y, 0)]
    return np.where(observed[..., None], cell, 0.0)


def _log_posteriors(p: _Prepared, cell: np.ndarray) -> np.ndarray:
    """Normalised log posterior over states per person and scale, (n, S, Q), from the persons'
    cell log-probabilities ``cell`` (``_cell_log_probs``)."""
    return _normalised(p, np.stack([cell[:, p.scale == s, :].sum(1) for s in range(p.n_scales)], axis=1))


def _normalised(p: _Prepared, loglik: np.ndarray) -> np.ndarray:
    """The log posterior over states from each scale's log-likelihood (n, S, Q) and the prior."""
    lp = p.log_weights[None, None, :] + loglik
    return lp - _logsumexp(lp, axis=-1)[..., None]


def _posteriors(p: _Prepared) -> np.ndarray:
    """Normalised log posterior over states per person and scale, (N, S, Q), as
    ``_log_posteriors`` but without the (N, I, Q) cell array: each scale's log-likelihood is
    the contraction of the responses' one-hot codes (N, I, K) with the log-probabilities."""
    n, n_items = p.y.shape
    onehot = np.zeros((n, n_items, p.logp.shape[2]))
    rows, cols = np.nonzero(p.observed)
    onehot[rows, cols, p.y[rows, cols]] = 1.0
    # each scale's items copied C-contiguous: a boolean index on the middle axis returns them
    # items-first in memory, where einsum's loops are ten times slower
    loglik = np.stack(
        [
            _dot("nik,qik->nq", *(np.ascontiguousarray(x[:, p.scale == s]) for x in (onehot, p.logp)))
            for s in range(p.n_scales)
        ],
        axis=1,
    )
    return _normalised(p, loglik)


def _loo_weights(p: _Prepared, cell: np.ndarray, log_post: np.ndarray) -> np.ndarray:
    """p(state | the person's observed cells on j's scale except j), (n, I, Q).

    The cell is divided out of the full posterior (a subtraction in log space) and the result
    renormalised after subtracting its maximum; the floor on the probabilities keeps every
    term finite.
    """
    loo = log_post[:, p.scale, :] - cell
    loo -= loo.max(axis=-1, keepdims=True)
    np.exp(loo, out=loo)
    loo /= loo.sum(axis=-1, keepdims=True)
    return loo


def _mix(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum_q weights[n, j, q] values[q, j, k] -> (N, I, K)."""
    return _dot("niq,qik->nik", weights, values)


def _loo(p: _Prepared, item: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """P(Y_nj = k | person n's other observed cells on j's scale) for every cell, (N, I, K),
    and, where ``item`` is given, that item's leave-one-out weights over the states (N, Q).
    Computed ``_PERSON_CHUNK`` persons at a time (``_loo_weights`` of each chunk)."""
    pred = np.empty(p.y.shape + (p.probs.shape[2],))
    kept = None if item is None else np.empty((p.y.shape[0], p.probs.shape[0]))
    for start in range(0, p.y.shape[0], _PERSON_CHUNK):
        rows = slice(start, start + _PERSON_CHUNK)
        cell = _cell_log_probs(p, rows)
        weights = _loo_weights(p, cell, _log_posteriors(p, cell))
        pred[rows] = _mix(weights, p.probs)
        if kept is not None:
            kept[rows] = weights[:, item, :]
    return pred, kept


# ----------------------------------------------------------------------------------------------
# posteriors and leave-one-out predictives


def person_posteriors(y, grid: LatentGrid) -> np.ndarray:
    """Log posterior over the grid's states per person and scale, from observed cells only.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, S, Q)
        log p(state q | person n's observed responses on scale s); a person with no observed
        item on a scale gets the prior.
    """
    return _posteriors(_prepare(y, grid))


def leave_one_out_predictive(y, grid: LatentGrid) -> np.ndarray:
    """P(Y_nj = k | person n's other observed responses on j's scale), for observed cells.

    Computed by dividing cell j out of the person's posterior in log space, for all cells at
    once (no refit, no loop over items).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, I, Kmax)
        The leave-one-out predictive distribution of each observed cell; NaN at missing cells;
        0 for categories beyond an item's K_j.
    """
    p = _prepare(y, grid)
    return np.where(p.observed[..., None], _loo(p)[0], np.nan)


def summed_score_distribution(grid: LatentGrid, items=None) -> np.ndarray:
    """P(summed score = s | state q) by the Lord-Wingersky (1984) recursion over items.

    Parameters
    ----------
    grid : LatentGrid
        The model.
    items : array of int, optional
        The items whose scores are summed (all items by default).

    Returns
    -------
    np.ndarray (Q, T+1)
        T = sum over the items of (K_j - 1).
    """
    probs = np.asarray(grid.probs, dtype=np.float64)
    n_cat = _n_categories(probs)
    items = np.arange(probs.shape[1]) if items is None else np.asarray(items, dtype=np.int64)
    return _lord_wingersky(probs, n_cat, items)


def _lord_wingersky(probs: np.ndarray, n_cat: np.ndarray, items) -> np.ndarray:
    n_states = probs.shape[0]
    dist = np.ones((n_states, 1))
    for j in items:
        top = dist.shape[1] - 1
        new = np.zeros((n_states, top + n_cat[j]))
        for k in range(n_cat[j]):
            new[:, k : k + top + 1] += dist * probs[:, j, k][:, None]
        dist = new
    return dist


# ----------------------------------------------------------------------------------------------
# item fit


def _pool(observed: np.ndarray, expected: np.ndarray, min_expected: float, two_categories: bool):
    """Merge adjacent rows (groups) of (G, K) tables until no row is small.

    A row is small when one of its expected counts is below ``min_expected`` (a structural zero
    included) or, with ``two_categories``, when fewer than two categories are observed in it.
    The lowest small row is merged first: the first row into the second, the last into the one
    before, an inner row into the neighbour with fewer persons (the lower one on a tie). Stops
    at one row. Returns the pooled tables and the number of merges.
    """
    obs = observed.astype(np.float64).copy()
    exp = expected.astype(np.float64).copy()
    merges = 0
    while obs.shape[0] > 1:
        small = (exp < min_expected).any(axis=1)
        if two_categories:
            small |= np.count_nonzero(obs, axis=1) < 2
        if not small.any():
            break
        i = int(np.argmax(small))
        if i == 0:
            target = 1
        elif i == obs.shape[0] - 1:
            target = i - 1
        else:
            target = i - 1 if obs[i - 1].sum() <= obs[i + 1].sum() else i + 1
        obs[target] += obs[i]
        exp[target] += exp[i]
        obs = np.delete(obs, i, axis=0)
        exp = np.delete(exp, i, axis=0)
        merges += 1
    return obs, exp, merges


def _pearson(obs: np.ndarray, exp: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(exp > 0, (obs - exp) ** 2 / exp, np.where(obs > 0, np.inf, 0.0))
    return float(terms.sum())


def _default_parameters(n_cat: np.ndarray, n_parameters) -> np.ndarray:
    if n_parameters is None:
        return n_cat.astype(np.int64)  # a slope and K_j - 1 cuts
    m = np.broadcast_to(np.asarray(n_parameters, dtype=np.int64), n_cat.shape)
    return m.copy()


def _fit_row(j, n_obs, obs, exp, merges, n_cat_j, m_j, alpha):
    groups = obs.shape[0]
    df = groups * (n_cat_j - 1) - m_j
    stat = _pearson(obs, exp) if groups else np.nan
    p_value = float(chi2.sf(stat, df)) if df > 0 and np.isfinite(stat) else np.nan
    return {
        "item": j,
        "n_observed": int(n_obs),
        "statistic": stat,
        "df": int(df),
        "p_value": p_value,
        "groups": int(groups),
        "pooled": int(merges),
        "flagged": bool(p_value < alpha) if np.isfinite(p_value) else False,
    }


def _loo_groups(p: _Prepared, pred: np.ndarray, j: int, n_groups: int):
    """Persons who answered j, sorted by E[Y_nj | rest], split into nearly equal groups."""
    persons = np.flatnonzero(p.observed[:, j])
    # Rounded: persons with the same other responses must tie exactly. Unrounded, dividing
    # the cell out of the posterior leaves rounding noise that depends on y_nj itself, which
    # would sort a tie block by the response and put its 0s and 1s in different groups.
    score = np.round(_dot("nk,k->n", pred[persons, j, :], np.arange(pred.shape[2], dtype=np.float64)), 9)
    persons = persons[np.argsort(score, kind="stable")]
    return [g for g in np.array_split(persons, min(n_groups, max(len(persons), 1))) if len(g)]


def _group_tables(p: _Prepared, pred: np.ndarray, j: int, groups):
    k = p.n_cat[j]
    obs = np.stack([np.bincount(p.y[g, j], minlength=k)[:k] for g in groups])
    exp = np.stack([pred[g, j, :k].sum(axis=0) for g in groups])
    return obs, exp


def _item_predictives(y, grid: LatentGrid, seed, item: int | None = None):
    """The prepared data and the leave-one-out predictives of ``item_fit`` (with ``item``'s
    leave-one-out weights, as ``_loo``): from the data completed by ``complete`` (seeded by
    ``seed``), or from the observed cells alone when ``seed`` is None or nothing is missing.
    Groups and counts read the prepared data's real answers; only the predictives see drawn
    cells."""
    p = _prepare(y, grid)
    completed = p if seed is None or p.observed.all() else _prepare(complete(seed, p.y, grid), grid)
    return (p, *_loo(completed, item))


def item_fit(
    y,
    grid: LatentGrid,
    n_groups: int = 10,
    n_parameters=None,
    alpha: float = 0.05,
    min_expected: float = 1.0,
    seed=0,
) -> pd.DataFrame:
    """S-X2-type item fit that works with missing responses (leave-one-out grouping).

    The missing cells are first completed by one draw from the model (``complete``, seeded by
    ``seed``). For item j, the persons who answered it are ordered by their leave-one-out
    expected score E[Y_nj | their other responses on j's scale, completed] (for the GRM and 2PL
    monotone in the ability estimate without item j, in place of the summed score of S-X2,
    which missing responses make incomparable) and cut into ``n_groups`` groups of nearly equal
    size. In group g, O_gk counts the persons answering k (real answers only: no drawn cell of
    item j enters) and E_gk sums their leave-one-out predictive probabilities of k, and

        X2_j = sum_g sum_k (O_gk - E_gk)^2 / E_gk,   df_j = G_j (K_j - 1) - m_j.

    Because the grouping uses only the other responses, the persons' y_nj are independent
    given the grouping with exactly those probabilities under the model, so with known item
    values X2_j is close to chi-square with G_j (K_j - 1) df (slightly below it: the probabilities
    vary within a group); m_j subtracts the estimated parameters by the S-X2 convention, an
    approximation. Why complete first: under MAR the other items' missing cells may depend on
    y_nj (an item that drives the missingness), so the observed rest alone, together with which
    cells are missing, says more about y_nj than the model's predictive from the observed rest;
    completed data have the model's distribution under any MAR mechanism (``complete``), so the
    predictive from the completed rest is the right one. With ``seed=None`` the predictive
    conditions on the observed rest only, which is exact under MCAR.

    Pooling: a group with an expected count below ``min_expected`` in some category, or with
    fewer than two categories observed, is merged with a neighbour (the lowest such group
    first; an end group inward, an inner group into the neighbour with fewer persons) until
    none is left; ``pooled`` counts the merges.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model (item values at their estimates).
    n_groups : int
        Groups per item before pooling.
    n_parameters : int or array (I,), optional
        m_j, the item's estimated parameters; default K_j (a slope and K_j - 1 cuts, right for
        the GRM and 2PL; pass it for other models, or 0 for known item values).
    alpha : float
        Level of ``flagged``.
    min_expected : float
        Smallest expected count a cell may keep without pooling.
    seed : int, numpy.random.Generator, JAX PRNG key or None
        Seeds the completion of the missing cells; None: no completion (see above).

    Returns
    -------
    pandas.DataFrame
        One row per item: item, n_observed, statistic, df, p_value, groups, pooled, flagged
        (p_value < alpha). Items with df <= 0 get p_value NaN and are not flagged.
    """
    p, pred, _ = _item_predictives(y, grid, seed)
    m = _default_parameters(p.n_cat, n_parameters)
    rows = []
    for j in range(p.y.shape[1]):
        groups = _loo_groups(p, pred, j, n_groups)
        n_obs = sum(len(g) for g in groups)
        if n_obs == 0:
            rows.append(
                _fit_row(j, 0, np.zeros((0, p.n_cat[j])), np.zeros((0, p.n_cat[j])), 0, p.n_cat[j], m[j], alpha)
            )
            continue
        obs, exp = _group_tables(p, pred, j, groups)
        obs, exp, merges = _pool(obs, exp, min_expected, two_categories=True)
        rows.append(_fit_row(j, n_obs, obs, exp, merges, p.n_cat[j], m[j], alpha))
    return pd.DataFrame(rows)


def observed_expected(y, grid: LatentGrid, item: int, n_groups: int = 10, seed=0) -> pd.DataFrame:
    """The observed and expected table behind ``item_fit`` for one item, before pooling.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    item : int
        The item.
    n_groups : int
        Groups of persons (ordered by the leave-one-out expected score, as in ``item_fit``).
    seed : int, numpy.random.Generator, JAX PRNG key or None
        Seeds the completion of the missing cells, as in ``item_fit``.

    Returns
    -------
    pandas.DataFrame
        Long table, one row per (group, category): group, category, n (persons in the group),
        observed, expected, mean_order (the group's mean leave-one-out posterior mean of
        ``grid.order``, e.g. theta; NaN when the grid has no order) and mean_expected_score
        (the group's mean E[Y_nj | rest]).
    """
    j = int(item)
    p, pred, item_weights = _item_predictives(y, grid, seed, j)
    groups = _loo_groups(p, pred, j, n_groups)
    if not groups:
        cols = ["group", "category", "n", "observed", "expected", "mean_order", "mean_expected_score"]
        return pd.DataFrame(columns=cols)
    obs, exp = _group_tables(p, pred, j, groups)
    k = p.n_cat[j]
    scores = pred[:, j, :] @ np.arange(pred.shape[2])
    order = None if grid.order is None else np.asarray(grid.order, dtype=np.float64)
    rows = []
    for g, persons in enumerate(groups):
        mean_order = float(np.mean(item_weights[persons] @ order)) if order is not None else np.nan
        for c in range(k):
            rows.append(
                {
                    "group": g,
                    "category": c,
                    "n": len(persons),
                    "observed": int(obs[g, c]),
                    "expected": float(exp[g, c]),
                    "mean_order": mean_order,
                    "mean_expected_score": float(scores[persons].mean()),
                }
            )
    return pd.DataFrame(rows)


def sx2_complete(
    y, grid: LatentGrid, n_parameters=None, alpha: float = 0.05, min_expected: float = 1.0
) -> pd.DataFrame:
    """Orlando & Thissen's (2000) S-X2 item fit for complete data (Kang & Chen 2008 for K > 2).

    With the summed score S over all items (T = sum_j (K_j - 1)), the Lord-Wingersky recursion
    over the grid gives f(s | q) for all items and f_{-j}(s | q) for all items but j, and

        E_jk(s) = sum_q w_q P_j(k | q) f_{-j}(s - k | q) / sum_q w_q f(s | q),

    the model-implied proportion answering k among persons with summed score s (marginal over
    the latent variable, no ability estimates). Score groups are s = 1..T-1: the lowest and
    highest possible scores are left out (each determines every response). With N_s persons
    at score s and O_jks of them answering k,

        S-X2_j = sum_s sum_k (O_jks - N_s E_jk(s))^2 / (N_s E_jk(s)),

    which for binary items is the familiar sum_s N_s (O - E)^2 / (E (1 - E)) in proportions.

    Pooling rule: adjacent score groups are merged while any group has an expected count
    N_s E_jk(s) below ``min_expected`` (default 1) in some category, structural zeros (a
    category impossible at that score, only for K_j > 2) and empty score groups included. The
    lowest such group is merged first: the lowest group into the next, the highest into the
    one below, an inner group into the neighbour with fewer persons (the lower one on a tie),
    until no small group is left or one group remains. The rule is modelled on the final "merge
    across" step of mirt's (R) ``itemfit``; mirt also drops empty score groups, merges groups
    of one person and collapses categories of polytomous items within a group first, which
    this function does not do, so polytomous items and sparse edge cases can differ from it.

    Degrees of freedom: df_j = G_j (K_j - 1) - m_j with G_j the score groups after pooling
    (for binary items G_j - m_j, as in Orlando & Thissen and mirt).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1; no missing cell allowed.
    grid : LatentGrid
        The model, one scale, e.g. ``grm_grid`` at the estimates.
    n_parameters : int or array (I,), optional
        m_j, default K_j (a slope and K_j - 1 cuts); 0 for known item values.
    alpha : float
        Level of ``flagged``.
    min_expected : float
        The pooling threshold on expected counts.

    Returns
    -------
    pandas.DataFrame
        One row per item: item, n_observed, statistic, df, p_value, groups, pooled (merges),
        flagged (p_value < alpha; never when df <= 0).

    Raises
    ------
    ValueError
        If any response is missing, or the grid has more than one scale.
    """
    p = _prepare(y, grid)
    n_missing = int((~p.observed).sum())
    if n_missing:
        raise ValueError(
            f"sx2_complete needs complete data: {n_missing} of {p.y.size} cells are missing"
            " (use item_fit for data with missing responses)"
        )
    if p.n_scales != 1 or np.unique(p.scale).size != 1:
        raise ValueError(f"sx2_complete needs a single scale; the grid has {np.unique(p.scale).size}")
    n_items = p.y.shape[1]
    m = _default_parameters(p.n_cat, n_parameters)
    w = np.exp(p.log_weights)
    total = int((p.n_cat - 1).sum())
    f_all = _lord_wingersky(p.probs, p.n_cat, range(n_items))
    p_score = w @ f_all  # P(S = s), (T+1,)
    scores = p.y.sum(axis=1)
    n_s = np.bincount(scores, minlength=total + 1).astype(np.float64)
    inner = slice(1, total)  # s = 1..T-1
    rows = []
    for j in range(n_items):
        k_j = p.n_cat[j]
        f_rest = _lord_wingersky(p.probs, p.n_cat, [i for i in range(n_items) if i != j])
        numer = np.zeros((total + 1, k_j))
        for k in range(k_j):
            numer[k : k + f_rest.shape[1], k] = (w * p.probs[:, j, k]) @ f_rest
        proportion = numer / p_score[:, None]
        obs = np.zeros((total + 1, k_j))
        np.add.at(obs, (scores, p.y[:, j]), 1.0)
        exp = n_s[:, None] * proportion
        pooled_obs, pooled_exp, merges = _pool(obs[inner], exp[inner], min_expected, two_categories=False)
        rows.append(_fit_row(j, p.y.shape[0], pooled_obs, pooled_exp, merges, k_j, m[j], alpha))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# person fit


def _point_log_probs(p: _Prepared, grid: LatentGrid, log_post: np.ndarray) -> np.ndarray:
    """log P(Y_nj = k) at each person's point estimate on j's scale, (N, I, K); -inf beyond K_j.

    With an order (theta nodes) the point is the EAP and the log-probabilities are interpolated
    linearly between the two neighbouring nodes, then renormalised over the item's categories;
    without one (classes) the point is the posterior mode class.
    """
    n_items = p.y.shape[1]
    item = np.arange(n_items)[None, :]
    if grid.order is None:
        mode = np.argmax(log_post, axis=-1)[:, p.scale]  # (N, I)
        out = p.logp[mode, item, :]
    else:
        order = np.asarray(grid.order, dtype=np.float64)
        sort = np.argsort(order)
        nodes = order[sort]
        logp = p.logp[sort]
        eap = _dot("nsq,q->ns", np.exp(log_post), np.asarray(order, np.float64))  # (N, S)
        theta = eap[:, p.scale]  # (N, I)
        hi = np.clip(np.searchsorted(nodes, theta), 1, nodes.size - 1)
        t = np.clip((theta - nodes[hi - 1]) / (nodes[hi] - nodes[hi - 1]), 0.0, 1.0)[..., None]
        out = (1.0 - t) * logp[hi - 1, item, :] + t * logp[hi, item, :]
    out = np.where(p.valid[None], out, -np.inf)
    return out - _logsumexp(out, axis=-1)[..., None]


def person_fit(y, grid: LatentGrid, threshold: float = -1.645) -> pd.DataFrame:
    """Standardised log-likelihood lz (Drasgow, Levine & Williams 1985) over observed items.

    At the person's point estimate (the EAP on each scale, or the posterior-mode class when
    the grid has no order), with p_jk = P(Y_j = k | estimate) and sums over the person's
    observed items only:

        l0 = sum_j log p_{j y_j},  E = sum_j sum_k p_jk log p_jk,
        Var = sum_j [sum_k p_jk (log p_jk)^2 - (sum_k p_jk log p_jk)^2],  lz = (l0 - E) / sqrt(Var).

    With several scales the sums run over all observed items, each at its own scale's EAP
    (items of different scales are independent given the abilities). Between grid nodes the
    log-probabilities are interpolated linearly. lz is not corrected for the estimation of the
    ability (Snijders 2001), so under the model its variance is a little below 1.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    threshold : float
        ``flagged`` is lz < threshold (one-sided, 5% under a standard normal by default).

    Returns
    -------
    pandas.DataFrame
        N rows: person, n_observed, lz, flagged. Persons with fewer than two observed items
        get lz NaN and are not flagged.
    """
    p = _prepare(y, grid)
    log_post = _posteriors(p)
    lp = _point_log_probs(p, grid, log_post)  # (N, I, K)
    prob = np.exp(lp)
    plogp = np.where(p.valid[None], prob * np.where(np.isfinite(lp), lp, 0.0), 0.0)
    mean_j = plogp.sum(-1)
    second_j = np.where(p.valid[None], prob * np.where(np.isfinite(lp), lp, 0.0) ** 2, 0.0).sum(-1)
    var_j = np.maximum(second_j - mean_j**2, 0.0)
    obs = p.observed
    picked = np.take_along_axis(lp, np.where(obs, p.y, 0)[..., None], axis=-1)[..., 0]
    l0 = np.where(obs, picked, 0.0).sum(1)
    e = np.where(obs, mean_j, 0.0).sum(1)
    v = np.where(obs, var_j, 0.0).sum(1)
    n_obs = obs.sum(1)
    ok = (n_obs >= 2) & (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lz = np.where(ok, (l0 - e) / np.sqrt(v), np.nan)
    return pd.DataFrame(
        {
            "person": np.arange(p.y.shape[0]),
            "n_observed": n_obs,
            "lz": lz,
            "flagged": np.where(ok, lz < threshold, False),
        }
    )


# ----------------------------------------------------------------------------------------------
# local dependence


def residual_correlations(y, grid: LatentGrid, min_pairs: int = 10) -> np.ndarray:
    """Yen's Q3: correlations of the residuals y_nj - E[Y_nj | person n's posterior], pairwise.

    E is the posterior mean of the item's expected score given all the person's observed
    responses on the item's scale. Each pair of items is correlated over the persons who
    answered both. Under local independence Q3 is close to -1/(I - 1), not 0, for short tests
    (Yen 1984): judge the values relative to their average or to replicated data.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    min_pairs : int
        Pairs answered by fewer persons than this get NaN.

    Returns
    -------
    np.ndarray (I, I)
        Symmetric; 1 on the diagonal (NaN for items with fewer than ``min_pairs`` answers).
    """
    p = _prepare(y, grid)
    log_post = _posteriors(p)
    item_mean = p.probs @ np.arange(p.probs.shape[2], dtype=np.float64)  # (Q, I)
    post = np.exp(log_post)  # (N, S, Q)
    expected = _dot("nsq,qi->nsi", post, item_mean)[:, p.scale, np.arange(p.y.shape[1])]
    m = p.observed.astype(np.float64)
    r = np.where(p.observed, p.y - expected, 0.0)
    n = _dot("ni,nj->ij", m, m)
    sx = _dot("ni,nj->ij", r, m)  # [i, j]: sum of r_i over persons who answered i and j
    sxx = _dot("ni,nj->ij", r**2, m)
    sxy = _dot("ni,nj->ij", r, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        cov = sxy - sx * sx.T / n
        var_i = sxx - sx**2 / n
        corr = cov / np.sqrt(var_i * var_i.T)
    corr = np.where(n >= min_pairs, corr, np.nan)
    diag = np.diag(n) >= min_pairs
    corr[np.diag_indices_from(corr)] = np.where(diag, 1.0, np.nan)
    return corr


def max_abs_residual_correlation(y, grid: LatentGrid, min_pairs: int = 10) -> float:
    """The largest |Q3| over distinct item pairs (a summary of local dependence).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    min_pairs : int
        As in ``residual_correlations``.

    Returns
    -------
    float
        max over i != j of |Q3_ij|, ignoring NaN pairs; NaN if no pair qualifies.
    """
    corr = residual_correlations(y, grid, min_pairs)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    off = off[np.isfinite(off)]
    return float(np.max(np.abs(off))) if off.size else np.nan


def _item_max_q3(y, grid: LatentGrid, min_pairs: int) -> np.ndarray:
    corr = residual_correlations(y, grid, min_pairs)
    np.fill_diagonal(corr, np.nan)
    return np.where(np.isfinite(corr).any(1), np.nan_to_num(corr, nan=-np.inf).max(1), np.nan)


def local_dependence(
    y, grid: LatentGrid, n_replications: int = 50, seed=0, alpha: float = 0.05, min_pairs: int = 10
) -> pd.DataFrame:
    """Each item's largest residual correlation (Q3) with any other item, and its predictive
    p-value.

    The largest, not the largest in size: items that share a second factor have positive
    residual correlations with each other, and the negative ones they then have with every
    other item (the ability absorbs part of the second factor) are its by-product. Q3 under
    local independence is neither 0 nor the same for every pair (about -1/(I - 1) on average,
    more or less with the items' categories and the missing cells), so the reference is
    simulation: ``predictive_p_values`` over replications that keep each person's
    missing cells. With item values at a point estimate this is a parametric bootstrap at the
    estimates (the item values are not redrawn).

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    n_replications : int
        Replicated data sets.
    seed : int
        Seed of the replications.
    alpha : float
        Level of ``flagged``.
    min_pairs : int
        As in ``residual_correlations``.

    Returns
    -------
    pandas.DataFrame
        One row per item: item, max_q3, partner (the item it is reached with), p_value,
        flagged (p_value < alpha).
    """
    corr = residual_correlations(y, grid, min_pairs)
    np.fill_diagonal(corr, np.nan)
    partner = np.nan_to_num(corr, nan=-np.inf).argmax(1)
    observed = _item_max_q3(y, grid, min_pairs)
    p = predictive_p_values(y, grid, lambda d: _item_max_q3(d, grid, min_pairs), n_replications, seed)
    return pd.DataFrame(
        {
            "item": np.arange(corr.shape[0]),
            "max_q3": observed,
            "partner": np.where(np.isfinite(observed), partner, -1),
            "p_value": p,
            "flagged": np.nan_to_num(p, nan=1.0) < alpha,
        }
    )


# ----------------------------------------------------------------------------------------------
# replications


def _generator(key_or_seed) -> np.random.Generator:
    if isinstance(key_or_seed, np.random.Generator):
        return key_or_seed
    if isinstance(key_or_seed, (int, np.integer)):
        return np.random.default_rng(int(key_or_seed))
    arr = key_or_seed
    if "key<" in str(getattr(arr, "dtype", "")):
        # a typed JAX key (jax.random.key): its raw words seed the generator
        import jax

        arr = jax.random.key_data(arr)
    return np.random.default_rng(np.asarray(arr).astype(np.uint64).ravel().tolist())


def _draw_categorical(rng: np.random.Generator, cdf: np.ndarray) -> np.ndarray:
    u = rng.random(cdf.shape[:-1] + (1,))
    return np.minimum((u > cdf).sum(-1), cdf.shape[-1] - 1)


def _response_sampler(p: _Prepared):
    """A function rng -> one response in every cell, (N, I): each person's latent state on every
    scale drawn from their posterior given their observed cells, then each cell from
    P(Y_j | state). The posteriors are computed once, here."""
    post_cdf = np.cumsum(np.exp(_posteriors(p)), axis=-1)  # (N, S, Q)
    post_cdf[..., -1] = 1.0
    # the last category of each item closes its cdf at exactly 1, so rounding can never draw a
    # category beyond K_j
    last = np.arange(p.probs.shape[2])[None, :] >= (p.n_cat - 1)[:, None]  # (I, K)
    cat_cdf = np.where(last[None], 1.0, np.cumsum(p.probs, axis=-1))  # (Q, I, K)
    items = np.arange(p.y.shape[1])[None, :]

    def draw(rng: np.random.Generator) -> np.ndarray:
        state = _draw_categorical(rng, post_cdf)  # (N, S)
        return _draw_categorical(rng, cat_cdf[state[:, p.scale], items, :])  # from (N, I, K) cdfs

    return draw


def complete(key_or_seed, y, grid: LatentGrid) -> np.ndarray:
    """The data with every missing cell drawn from the model given the person's observed cells.

    One draw of each person's latent state from their posterior, then each missing cell from
    P(Y_j | state); observed cells are kept. With the model's item values, the completed data
    have the model's own distribution whatever the missingness, as long as it is MAR: the
    observed part is p(y_obs) p(m | y_obs) and the drawn part p(y_mis | y_obs), so summed over
    the masks m their product is p(y). Checks of completed data therefore need no model of the
    missingness (Gelman, Van Mechelen, Verbeke, Heitjan & Meulders, 2005).

    Parameters
    ----------
    key_or_seed : int, numpy.random.Generator or JAX PRNG key
        Source of randomness (a JAX key's words seed a numpy Generator).
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, I)
        int64 responses with no missing cell, equal to ``y`` where ``y`` is observed.
    """
    p = _prepare(y, grid)
    return np.where(p.observed, p.y, _response_sampler(p)(_generator(key_or_seed)))


def replicate(key_or_seed, y, grid: LatentGrid, n: int = 1) -> np.ndarray:
    """Posterior-predictive replicated data sets with each person's missing mask held fixed.

    Each replication draws every person's latent state on every scale from their posterior on
    the grid (given their observed cells), then every observed cell from P(Y_j | state);
    missing cells stay -1.

    Parameters
    ----------
    key_or_seed : int, numpy.random.Generator or JAX PRNG key
        Source of randomness (a JAX key's words seed a numpy Generator).
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    n : int
        Number of replicated data sets.

    Returns
    -------
    np.ndarray (n, N, I)
        int64 replicated responses, -1 exactly where ``y`` is missing.
    """
    rng = _generator(key_or_seed)
    p = _prepare(y, grid)
    draw = _response_sampler(p)
    out = np.empty((n,) + p.y.shape, dtype=np.int64)
    for r in range(n):
        out[r] = np.where(p.observed, draw(rng), -1)
    return out


def predictive_p_values(y, grid: LatentGrid, statistic, n_replications: int = 100, seed=0) -> np.ndarray:
    """Simulation p-values of any discrepancy: p = (1 + #{T_rep >= T_obs}) / (1 + R), elementwise.

    The replications come from ``replicate`` (latent states drawn from each person's posterior,
    missing masks kept). The grid holds point estimates of the item values and no parameter
    draws are made, so this is a parametric bootstrap at the estimates (a posterior-predictive
    check with the item values fixed), not a full posterior-predictive check; like those it
    tends to be conservative, since the states are drawn given the observed data.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    statistic : callable
        ``statistic(y) -> array`` (or float), larger meaning worse fit, e.g.
        ``lambda y: item_fit(y, grid)["statistic"].to_numpy()``.
    n_replications : int
        R.
    seed : int, numpy.random.Generator or JAX PRNG key
        Seeds ``replicate``.

    Returns
    -------
    np.ndarray
        The shape of ``statistic(y)``. Replications where an element is NaN are left out of
        that element's count and of its R; an element NaN in the data gets NaN.
    """
    t_obs = np.asarray(statistic(y), dtype=np.float64)
    reps = replicate(seed, y, grid, n_replications)
    exceed = np.zeros(t_obs.shape)
    used = np.zeros(t_obs.shape)
    for y_rep in reps:
        t_rep = np.asarray(statistic(y_rep), dtype=np.float64)
        finite = np.isfinite(t_rep)
        used += finite
        exceed += finite & (t_rep >= t_obs)
    return np.where(np.isfinite(t_obs), (1.0 + exceed) / (1.0 + used), np.nan)


# ----------------------------------------------------------------------------------------------
# every check at once


class FitChecks(NamedTuple):
    """Every check of one fit: per item, per person, and the summary."""

    items: pd.DataFrame  # item_fit's columns, then local dependence's (prefixed ld_), flagged = either
    persons: pd.DataFrame  # person_fit's columns
    summary: dict  # counts, shares and the largest residual correlation with its p-value


def check(
    y,
    grid: LatentGrid,
    n_parameters=None,
    n_replications: int = 50,
    seed=0,
    alpha: float = 0.05,
    n_groups: int = 10,
) -> FitChecks:
    """Item fit, local dependence and person fit of one fitted model, and a summary.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model at the fit's item values.
    n_parameters : int or array (I,), optional
        As in ``item_fit``.
    n_replications : int
        Replications of the local-dependence p-values.
    seed : int
        Seed of the replications and of the item fit's completion of missing cells.
    alpha : float
        Level of every flag.
    n_groups : int
        As in ``item_fit``.

    Returns
    -------
    FitChecks
        ``items`` (one row per item; ``flagged`` when the item fit or the local dependence
        flags it), ``persons`` and ``summary``.
    """
    # the item fit's completion draws from a stream of its own, apart from the replications'
    completion = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1,)))
    fit = item_fit(y, grid, n_groups=n_groups, n_parameters=n_parameters, alpha=alpha, seed=completion)
    ld = local_dependence(y, grid, n_replications=n_replications, seed=seed, alpha=alpha)
    items = fit.rename(columns={"flagged": "fit_flagged"}).merge(
        ld.rename(columns={c: f"ld_{c}" for c in ld.columns if c != "item"}), on="item"
    )
    items["flagged"] = items["fit_flagged"] | items["ld_flagged"]
    persons = person_fit(y, grid)
    finite = items["ld_max_q3"].notna()
    worst = int(items.loc[finite, "ld_max_q3"].idxmax()) if finite.any() else None
    summary = {
        "persons": int(np.asarray(y).shape[0]),
        "items": int(np.asarray(y).shape[1]),
        "latent_states": int(grid.log_weights.shape[0]),
        "observed_share": float((np.asarray(y) >= 0).mean()),
        "alpha": alpha,
        "items_flagged": int(items["flagged"].sum()),
        "items_misfit": int(items["fit_flagged"].sum()),
        "items_local_dependence": int(items["ld_flagged"].sum()),
        "items_pooled": int((items["pooled"] > 0).sum()),
        "persons_flagged_share": float(persons["flagged"].mean()),
        "max_q3": float(items.loc[worst, "ld_max_q3"]) if worst is not None else None,
        "max_q3_items": [worst, int(items.loc[worst, "ld_partner"])] if worst is not None else None,
        "max_q3_p_value": float(items.loc[worst, "ld_p_value"]) if worst is not None else None,
        "replications": n_replications,
        "reference": (
            "item fit: leave-one-out predictives at the estimates, the other items' missing cells"
            " completed by one draw from the model; local dependence: parametric bootstrap at the"
            " estimates, each person's missing cells held fixed"
        ),
    }
    return FitChecks(items, persons, summary)
