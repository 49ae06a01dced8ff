"""Marginal maximum likelihood (MML) for unidimensional graded response models by quadrature.

Model. Items j = 1..I, each with K_j >= 2 ordered categories (K_j = 2 is the binary 2PL) and
belonging to one factor f(j) of F; person i has one ability per factor, theta_if ~ N(0, 1),
independent across factors, so the F unidimensional GRMs are independent given the data and
fitted together only for convenience. Cumulative logits (the parametrisation of
``bayesirt.models.grm``):

    P(Y_ij >= k | theta) = sigmoid(a_j * theta_{i f(j)} - c_jk),   k = 1..K_j-1,

with discriminations a_j > 0 and increasing cuts c_j1 < ... < c_j,K_j-1 (the difficulty form
``a_j (theta - tau_jk)`` has tau = c / a, returned as ``thresholds``). Missing responses (-1)
drop out of the likelihood. The marginal log-likelihood

    log L = sum_i sum_f log sum_q w_q prod_{j in f, y_ij observed} P(y_ij | theta = x_q)

integrates each ability out with Gauss-Hermite nodes x_q and weights w_q for N(0, 1)
(``n_nodes``, 21 by default as in R ``ltm``). The category log-probabilities at the nodes are
``grm.category_log_probs`` (the one GRM likelihood of the project); a person's log-likelihood at
every node and factor is one contraction of the one-hot responses with that (items x
categories, nodes) grid, so the cost is O(N I K Q) per evaluation with no loop over persons.

Optimisation. Unconstrained parameters: log a, the first cut, and softplus-inverse increments
of the cuts (``grm.ordered_cuts``, so cuts never cross). optax L-BFGS with its zoom line search
minimises the mean negative marginal log-likelihood per person inside one jitted
``lax.while_loop``; it stops when the l2 norm of the gradient (with respect to the
unconstrained parameters, of the mean NLL) falls below ``tol`` (``converged``), after
``max_iter`` iterations (not converged), or when a loss becomes non-finite (the last finite
parameters are kept, not converged, ``reason`` says so). ``tol=0`` runs exactly ``max_iter``
iterations. The jitted program lives at module level and takes the data as arguments, so fits
of equal shapes reuse one compilation.

Abilities: EAP (posterior mean on the nodes) and posterior sd per person and factor, with the
item parameters plugged in. Written by hand because no maintained JAX library fits IRT models
by MML; the optimiser, line search and likelihood are library code.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optax.tree_utils as otu

from bayesirt.models import grm

MISSING = grm.MISSING


class MMLFit(NamedTuple):
    """Result of ``fit``: item parameters, EAP abilities and how the optimiser ended."""

    discrimination: np.ndarray  # (I,) a_j > 0
    cuts: np.ndarray  # (I, Kmax-1): P(Y >= k) = sigmoid(a theta - cut_k); unused entries of short items are filler
    thresholds: np.ndarray  # (I, Kmax-1): cuts / a, the difficulty form a (theta - tau_k)
    ability: np.ndarray  # (N, F) EAP abilities
    ability_sd: np.ndarray  # (N, F) posterior sds
    loglik: float  # total marginal log-likelihood at the estimate
    mean_nll: float  # -loglik / N, the minimised objective
    iterations: int
    grad_norm: float  # l2 norm of the gradient of mean_nll (unconstrained parameters) at the end
    converged: bool
    reason: str
    loss_history: np.ndarray  # (iterations,) mean NLL before each iteration
    wall_seconds: float


class Params(NamedTuple):
    """Unconstrained item parameters."""

    log_a: jax.Array  # (I,)
    base: jax.Array  # (I,) first cut
    inc_raw: jax.Array  # (I, Kmax-2) softplus-inverse of the cut increments


def gauss_hermite(n_nodes: int = 21):
    """Nodes and log-weights of the Gauss-Hermite rule for an N(0, 1) ability (numpy float64).

    Parameters
    ----------
    n_nodes : int
        Q, the number of nodes.

    Returns
    -------
    tuple of numpy.ndarray
        Nodes x_q (Q,) and log weights log w_q (Q,), the weights summing to 1.
    """
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    return x, np.log(w / w.sum())


def item_parameters(params: Params):
    """Discriminations (I,) and increasing cuts (I, Kmax-1) from unconstrained parameters.

    Parameters
    ----------
    params : Params
        Unconstrained item parameters.

    Returns
    -------
    tuple of jax.Array
        Discriminations a = exp(log_a) (I,) and cuts (I, Kmax-1).
    """
    return jnp.exp(params.log_a), grm.ordered_cuts(params.base, jax.nn.softplus(params.inc_raw))


def unconstrain(discrimination, cuts) -> Params:
    """Inverse of ``item_parameters`` (cuts must be strictly increasing along the last axis).

    Parameters
    ----------
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Strictly increasing cuts.

    Returns
    -------
    Params
        The unconstrained parameters.
    """
    a = jnp.asarray(discrimination)
    c = jnp.asarray(cuts)
    inc = jnp.diff(c, axis=-1)
    return Params(jnp.log(a), c[:, 0], inc + jnp.log(-jnp.expm1(-inc)))  # softplus^-1


# ------------------------------------------------------------------------------- data layout


class _Data(NamedTuple):
    onehot: jax.Array  # (N, I*Kmax) indicator of each observed (item, category)
    member: jax.Array  # (I*Kmax, F) which factor each (item, category) column belongs to
    n_categories: jax.Array  # (I,)
    nodes: jax.Array  # (Q,)
    log_w: jax.Array  # (Q,)


def _check(y, n_categories, factor):
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"responses must be persons x items, got shape {y.shape}")
    n_items = y.shape[1]
    if n_categories is None:
        n_categories = np.full(n_items, int(y.max()) + 1)
    n_categories = np.broadcast_to(np.asarray(n_categories, np.int64), (n_items,)).copy()
    factor = np.zeros(n_items, np.int64) if factor is None else np.asarray(factor, np.int64)
    if factor.shape != (n_items,):
        raise ValueError(f"factor must give one factor per item ({n_items}), got shape {factor.shape}")
    if factor.min() < 0 or set(np.unique(factor)) != set(range(int(factor.max()) + 1)):
        raise ValueError(f"factors must be numbered 0..F-1 with every factor used, got {np.unique(factor)}")
    if (n_categories < 2).any():
        raise ValueError(f"item {int(np.argmax(n_categories < 2))} has fewer than 2 categories")
    bad = (y != MISSING) & ((y < 0) | (y >= n_categories[None, :]))
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"response {y[i, j]} of person {i} to item {j} is outside 0..{n_categories[j] - 1} "
            f"and is not {MISSING} (missing)"
        )
    return y, n_categories, factor


def _data(y, n_categories, factor, n_nodes, dtype) -> _Data:
    n, n_items = y.shape
    kmax = int(n_categories.max())
    n_factors = int(factor.max()) + 1
    obs = y != MISSING
    onehot = (y[:, :, None] == np.arange(kmax)) & obs[:, :, None]
    member = np.repeat(np.eye(n_factors)[factor], kmax, axis=0)
    x, log_w = gauss_hermite(n_nodes)
    return _Data(
        jnp.asarray(onehot.reshape(n, n_items * kmax), dtype),
        jnp.asarray(member, dtype),
        jnp.asarray(n_categories, jnp.int32),
        jnp.asarray(x, dtype),
        jnp.asarray(log_w, dtype),
    )


def _node_loglik(a, cuts, data: _Data):
    """(N, F, Q): each person's log-likelihood of its items of factor f at ability x_q."""
    n_items, kmax = cuts.shape[0], cuts.shape[1] + 1
    lp = grm.category_log_probs(data.nodes[:, None] * a[None, :], cuts, data.n_categories)  # (Q, I, Kmax)
    lp = jnp.where(jnp.arange(kmax) < data.n_categories[:, None], lp, 0.0)  # -inf * 0 would be NaN
    grid = lp.reshape(data.nodes.shape[0], n_items * kmax).T  # (I*Kmax, Q)
    return jnp.einsum("nc,cf,cq->nfq", data.onehot, data.member, grid)


def _mean_nll(params: Params, data: _Data):
    ll = jax.nn.logsumexp(_node_loglik(*item_parameters(params), data) + data.log_w, axis=-1)  # (N, F)
    return -ll.sum() / data.onehot.shape[0]


def _posterior(a, cuts, data: _Data):
    """Per-person marginal log-likelihood (N,), EAP (N, F) and posterior sd (N, F)."""
    lj = _node_loglik(a, cuts, data) + data.log_w
    norm = jax.nn.logsumexp(lj, axis=-1)
    post = jnp.exp(lj - norm[..., None])
    mean = post @ data.nodes
    var = post @ data.nodes**2 - mean**2
    return norm.sum(-1), mean, jnp.sqrt(jnp.maximum(var, 0.0))


# ------------------------------------------------------------------------------ the program


def _fit_program(params: Params, data: _Data, tol, max_iter, history_len: int):
    opt = optax.lbfgs()

    def loss(p):
        return _mean_nll(p, data)

    value_and_grad = optax.value_and_grad_from_state(loss)

    def cond(carry):
        _, state, _, failed, _ = carry
        count = otu.tree_get(state, "count")
        gnorm = otu.tree_norm(otu.tree_get(state, "grad"))
        return (count == 0) | ((count < max_iter) & (gnorm >= tol) & ~failed)

    def body(carry):
        p, state, last_good, _, history = carry
        value, grad = value_and_grad(p, state=state)
        updates, new_state = opt.update(grad, state, p, value=value, grad=grad, value_fn=loss)
        new_p = optax.apply_updates(p, updates)
        history = history.at[otu.tree_get(state, "count")].set(value)
        new_value = otu.tree_get(new_state, "value")
        ok = jnp.isfinite(new_value) & jnp.isfinite(otu.tree_norm(otu.tree_get(new_state, "grad")))
        return new_p, new_state, jax.tree.map(lambda n, o: jnp.where(ok, n, o), new_p, last_good), ~ok, history

    history = jnp.full(history_len, jnp.nan, data.nodes.dtype)
    carry = (params, opt.init(params), params, jnp.array(False), history)
    _, state, p, failed, history = jax.lax.while_loop(cond, body, carry)
    value, grad = jax.value_and_grad(loss)(p)
    loglik, eap, sd = _posterior(*item_parameters(p), data)
    count = otu.tree_get(state, "count")
    return p, value, otu.tree_norm(grad), count, failed, history, loglik, eap, sd


# max_iter is traced; only the length of the loss-history buffer is static (256, or the next
# power of two above max_iter), so fits with different iteration limits share one compilation
_fit_jit = jax.jit(_fit_program, static_argnames=("history_len",))
_posterior_jit = jax.jit(_posterior)


def _dtype():
    return jnp.zeros(()).dtype  # float32, or float64 when x64 is enabled


# -------------------------------------------------------------------------------- public API


def initial_values(y, n_categories=None) -> Params:
    """Starting values: a = 1; cuts from the logits of the observed proportions P(Y >= k),
    stretched by 1.4 (the logistic scale of a standard normal ability with a = 1), made increasing.

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).

    Returns
    -------
    Params
        Unconstrained starting values (a = 1, increments at least 0.05), in the default float dtype.

    Raises
    ------
    ValueError
        If ``y`` is not persons x items, an item has fewer than 2 categories or a response is
        outside its item's categories.
    """
    y, n_categories, _ = _check(y, n_categories, None)
    kmax = int(n_categories.max())
    obs = y != MISSING
    n_obs = np.maximum(obs.sum(0), 1)
    p_ge = np.stack([((y >= k) & obs).sum(0) / n_obs for k in range(1, kmax)], axis=1)
    p_ge = np.clip(p_ge, 1e-3, 1 - 1e-3)
    cut0 = np.maximum.accumulate(-np.log(p_ge / (1 - p_ge)) * 1.4, axis=1)
    inc0 = np.maximum(np.diff(cut0, axis=1), 0.05)
    dtype = _dtype()
    return Params(
        jnp.zeros(y.shape[1], dtype), jnp.asarray(cut0[:, 0], dtype), jnp.asarray(np.log(np.expm1(inc0)), dtype)
    )


class Structure(NamedTuple):
    """The model's structure for :func:`fit`: ``n_categories`` (I,) or a scalar, the categories
    per item (>= 2; None: max(y) + 1 for every item); ``factor`` (I,) the factor of each item,
    0..F-1 (None: one factor)."""

    n_categories: object = None
    factor: object = None


class MMLSettings(NamedTuple):
    """Settings of :func:`fit`: at most ``max_iter`` L-BFGS iterations; stop when the gradient
    norm of the mean NLL per person is below ``tol`` (0: never); ``n_nodes`` Gauss-Hermite
    nodes per factor."""

    max_iter: int = 200
    tol: float = 1e-4
    n_nodes: int = 21


def fit(
    key,
    y,
    structure: Structure = Structure(),
    settings: MMLSettings = MMLSettings(),
    *,
    init: Params | None = None,
    label: str = "mml",
) -> MMLFit:
    """Marginal ML of independent unidimensional GRMs, one per factor.

    Parameters
    ----------
    key : jax.Array or None
        Unused: the method is deterministic; accepted so that every fit is called the same way.
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    structure : Structure
        Categories per item and the factor of each item.
    settings : MMLSettings
        Iteration limit, gradient tolerance and quadrature nodes.
    init : Params, optional
        Unconstrained starting values (``initial_values`` by default).
    label : str
        Unused (the fit logs nothing); accepted for the common calling convention.

    Returns
    -------
    MMLFit
        Item parameters, EAP abilities and sds, the log-likelihood and how the optimiser ended.
        Persons with no observed response contribute nothing and get the prior (EAP 0, sd 1).
    """
    n_categories, factor = structure.n_categories, structure.factor
    max_iter, tol, n_nodes = settings.max_iter, settings.tol, settings.n_nodes
    t0 = time.perf_counter()
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter}")
    y, n_categories, factor = _check(y, n_categories, factor)
    unobserved = ~(y != MISSING).any(0)
    if unobserved.any():
        raise ValueError(f"item {int(np.flatnonzero(unobserved)[0])} has no observed response")
    dtype = _dtype()
    data = _data(y, n_categories, factor, n_nodes, dtype)
    params = initial_values(y, n_categories) if init is None else Params(*(jnp.asarray(v, dtype) for v in init))
    p, value, gnorm, count, failed, history, loglik, eap, sd = _fit_jit(
        params,
        data,
        jnp.asarray(tol, dtype),
        jnp.asarray(int(max_iter), jnp.int32),
        history_len=max(256, 1 << (int(max_iter) - 1).bit_length()),
    )
    a, cuts = item_parameters(p)
    a, cuts = np.asarray(a, np.float64), np.asarray(cuts, np.float64)
    count, gnorm, failed = int(count), float(gnorm), bool(failed)
    converged = (not failed) and gnorm < tol
    if failed:
        reason = f"non-finite loss or gradient at iteration {count}; kept the last finite parameters"
    elif converged:
        reason = f"gradient norm {gnorm:.3g} below tol={tol:g} after {count} iterations"
    else:
        reason = f"reached max_iter={max_iter} with gradient norm {gnorm:.3g} (tol={tol:g})"
    return MMLFit(
        discrimination=a,
        cuts=cuts,
        thresholds=cuts / a[:, None],
        ability=np.asarray(eap, np.float64),
        ability_sd=np.asarray(sd, np.float64),
        loglik=float(np.asarray(loglik, np.float64).sum()),
        mean_nll=float(value),
        iterations=count,
        grad_norm=gnorm,
        converged=converged,
        reason=reason,
        loss_history=np.asarray(history, np.float64)[:count],
        wall_seconds=time.perf_counter() - t0,
    )


def fit_arrays(y, n_categories=None, factor=None, max_iter: int = 200) -> MMLFit:
    """:func:`fit` with its structure and iteration limit as plain arguments: the GRM fitter
    that ``data.careless`` (which cannot import the inference layer) calls back as
    ``fit_grm(y, n_categories, factor, max_iter=...)``.

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    max_iter : int
        At most this many L-BFGS iterations.

    Returns
    -------
    MMLFit
        As :func:`fit` returns it.
    """
    return fit(None, y, Structure(n_categories, factor), MMLSettings(max_iter=max_iter))


def marginal_loglik(y, discrimination, cuts, n_categories=None, factor=None, n_nodes: int = 21) -> np.ndarray:
    """Per-person marginal log-likelihood log p(y_i | a, cuts), summed over factors, (N,).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    numpy.ndarray
        Log-likelihoods, shape (N,), float64.
    """
    return posterior(y, discrimination, cuts, n_categories, factor, n_nodes)[0]


def posterior(y, discrimination, cuts, n_categories=None, factor=None, n_nodes: int = 21):
    """Per-person marginal log-likelihood (N,), EAP abilities (N, F) and posterior sds (N, F)
    at given item parameters (``cuts`` increasing up to each item's K_j - 1; later columns unused).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    tuple of numpy.ndarray
        Marginal log-likelihood (N,), EAP abilities (N, F) and posterior sds (N, F), float64.

    Raises
    ------
    ValueError
        If ``y`` is not persons x items, an item has fewer than 2 categories, a response is
        outside its item's categories, or ``factor`` is not one of 0..F-1 per item with every
        factor used.
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    dtype = _dtype()
    data = _data(y, n_categories, factor, n_nodes, dtype)
    a = jnp.asarray(discrimination, dtype)
    c = jnp.asarray(cuts, dtype)[:, : int(n_categories.max()) - 1]
    return tuple(np.asarray(v, np.float64) for v in _posterior_jit(a, c, data))


def mean_nll(params: Params, y, n_categories=None, factor=None, n_nodes: int = 21):
    """The objective of ``fit`` at unconstrained ``params`` (a JAX scalar; differentiable with
    ``jax.grad`` through a closure over this function's data arguments).

    Parameters
    ----------
    params : Params
        Unconstrained item parameters.
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    jax.Array
        Mean negative marginal log-likelihood per person, a scalar.
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    return _mean_nll(params, _data(y, n_categories, factor, n_nodes, _dtype()))


PREDICTIVE_CELLS = 250_000  # cells per chunk of ``predictive_probs``


def predictive_probs(
    y, discrimination, cuts, rows, cols, n_categories=None, factor=None, n_nodes: int = 21
) -> np.ndarray:
    """Posterior predictive P(y_ij = k | person i's observed responses) at the cells (rows, cols),
    (n_cells, Kmax): the GRM category probabilities at the nodes averaged over the person's
    posterior on the nodes of the item's factor, item parameters plugged in. The cells are
    meant to be missing in ``y`` (a hidden response must not inform its own prediction).

    Parameters
    ----------
    y : array (N, I)
        Integer categories 0..K_j-1, missing -1.
    discrimination : array (I,)
        Discriminations a_j > 0.
    cuts : array (I, Kmax-1)
        Cuts, increasing up to each item's K_j - 1.
    rows, cols : array (n_cells,)
        Persons and items of the cells.
    n_categories : array (I,) or int, optional
        Categories per item, >= 2 (None: max(y) + 1 for every item).
    factor : array (I,), optional
        Factor of each item, 0..F-1 (None: one factor).
    n_nodes : int
        Gauss-Hermite nodes per factor.

    Returns
    -------
    numpy.ndarray
        P(y_ij = k), shape (n_cells, Kmax), float64 (0 beyond an item's categories).
    """
    y, n_categories, factor = _check(y, n_categories, factor)
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    persons, which = np.unique(rows, return_inverse=True)
    dtype = _dtype()
    data = _data(y[persons], n_categories, factor, n_nodes, dtype)
    a = jnp.asarray(discrimination, dtype)
    c = jnp.asarray(cuts, dtype)[:, : int(n_categories.max()) - 1]
    lj = _node_loglik(a, c, data) + data.log_w  # (P, F, Q)
    post = np.asarray(jax.nn.softmax(lj, axis=-1), np.float64)
    probs = np.exp(
        np.asarray(grm.category_log_probs(data.nodes[:, None] * a[None, :], c, data.n_categories), np.float64)
    )  # (Q, I, Kmax)
    # in chunks of cells: all at once held (cells, Q) and (Q, cells, Kmax) float64 arrays,
    # 22 GB for the 15 million scored cells of the paper's 1M-person design
    out = np.empty((len(rows), probs.shape[-1]))
    for a0 in range(0, len(rows), PREDICTIVE_CELLS):
        w, j = which[a0 : a0 + PREDICTIVE_CELLS], cols[a0 : a0 + PREDICTIVE_CELLS]
        out[a0 : a0 + len(j)] = np.einsum("nq,qnk->nk", post[w, factor[j]], probs[:, j])
    return out
