"""The constructors of a ``LatentGrid`` (``latent_grid``) for each model: the graded response model
(binary 2PL when K = 2), the two-parameter normal ogive and a diagnostic (latent class) model.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, ndtr

from bayesirt.evaluation.fit_checks.latent_grid import _TINY, LatentGrid, _logsumexp
from bayesirt.evaluation.fit_checks.nodes import _normal_nodes, nodes_for


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
    return binary_probs(np.stack([ndtr(-eta), ndtr(eta)], axis=-1))


def binary_probs(probs: np.ndarray) -> np.ndarray:
    """(..., 2) probabilities of a binary item's two categories, each at least ``_TINY``.

    A grid reads an item's categories from the probabilities that are not 0, and a saturated
    fit (a logit past about 37, or a 2PNO predictor past 38) rounds one of them to exactly 0 at
    every state: the item would read as having one category and every observed answer of the
    other as out of range. Held at ``_TINY``, the floor every check's logarithm already takes,
    both categories stay and no figure moves."""
    return np.maximum(probs, _TINY)


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
    probs = binary_probs(np.stack([1.0 - p, p], axis=-1))
    return LatentGrid(lw, probs, np.zeros(p.shape[1], dtype=np.int64), None)
