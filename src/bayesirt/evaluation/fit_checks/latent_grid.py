"""The type every check takes, a model as a :class:`LatentGrid`, and the numerics the checks share."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Products are einsum's own loops (optimize=False), not BLAS: the arrays are tall and thin
# (persons x a few items), where threaded BLAS gains nothing, and on a loaded machine its
# threads spin against each other (measured on the Performance page).


def _dot(subscripts: str, *operands) -> np.ndarray:
    return np.einsum(subscripts, *operands, optimize=False)


# Probabilities are floored here before the log so that dividing a cell out of a posterior
# (a subtraction in log space) never meets -inf - (-inf); a state at which an observed
# response is impossible keeps a weight of ~1e-300 instead of exactly 0.
_TINY = 1e-300


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


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _n_categories(probs: np.ndarray) -> np.ndarray:
    used = (probs > 0).any(axis=0)  # (I, K)
    return np.where(used.any(axis=1), probs.shape[2] - np.argmax(used[:, ::-1], axis=1), 0)
