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

The parameters, data layout and per-node likelihood are ``inference.marginal.mml_quadrature`` (shared
with the standard errors, ``inference.marginal.mml_information``); the marginal log-likelihood, EAP
abilities and posterior predictive probabilities at given item parameters are
``inference.marginal.mml_posterior``.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optax.tree_utils as otu

from bayesirt.inference.marginal.mml_quadrature import (
    MISSING,
    Params,
    _check,
    _Data,
    _data,
    _dtype,
    _mean_nll,
    _posterior,
    item_parameters,
)


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
