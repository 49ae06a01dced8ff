"""How many Gauss-Hermite nodes a grid needs: the Fisher information of the items and the
spacing rule that resolves the narrowest person posterior.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from bayesirt.evaluation.fit_checks.latent_grid import _TINY


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
