"""The quadrature behind marginal maximum likelihood of unidimensional GRMs (``inference.marginal.mml``):
the parameters, the data layout and the per-node likelihood that the fit (``mml``), its standard
errors (``mml_information``) and the posteriors at given item parameters (``mml_posterior``) share.

Cumulative logits (the parametrisation of ``bayesirt.models.grm``):

    P(Y_ij >= k | theta) = sigmoid(a_j * theta_{i f(j)} - c_jk),   k = 1..K_j-1,

with discriminations a_j > 0 and increasing cuts c_j1 < ... < c_j,K_j-1. Each ability
theta_if ~ N(0, 1) is integrated out with Gauss-Hermite nodes x_q and weights w_q
(:func:`gauss_hermite`). The category log-probabilities at the nodes are
``grm.category_log_probs`` (the one GRM likelihood of the project); a person's log-likelihood at
every node and factor is one contraction of the one-hot responses with that (items x
categories, nodes) grid, so the cost is O(N I K Q) per evaluation with no loop over persons.
Missing responses (-1) drop out.

Unconstrained parameters (:class:`Params`): log a, the first cut, and softplus-inverse
increments of the cuts (``grm.ordered_cuts``, so cuts never cross).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import grm

MISSING = grm.MISSING


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


def _dtype():
    return jnp.zeros(()).dtype  # float32, or float64 when x64 is enabled
