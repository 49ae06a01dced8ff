"""The one numpy sampler of graded-response-model responses, for every simulator.

Inverse CDF: with P(Y >= k) = sigmoid(a * (score - cut_k)) decreasing in k, the category is
the number of thresholds k with u < P(Y >= k), for one uniform u per cell. A mixture of GRMs
(``models.mixture_grm``) mixes those probabilities over a last axis of dimensions with
weights w (I, D). numpy float64 with a seeded Generator, so a seed gives the same responses
on every machine and with every JAX version.

Every simulator draws exactly one uniform per cell here and nothing else, so moving a
simulator onto this function left its random stream, and its data, unchanged.
"""

from __future__ import annotations

import numpy as np


def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x)).

    Parameters
    ----------
    x : array
        Input.

    Returns
    -------
    numpy.ndarray
        sigmoid(x).
    """
    return 1.0 / (1.0 + np.exp(-x))


def sample_grm(rng: np.random.Generator, score, cuts, discrimination=None, weights=None, dtype=np.int16) -> np.ndarray:
    """Responses (N, I), categories 0..K-1.

    Parameters
    ----------
    rng : numpy.random.Generator
        Random numbers.
    score : array (N, I)
        Scores; with ``weights``, (N, I, D): one score per mixture dimension.
    cuts : array (I, K-1)
        Increasing thresholds.
    discrimination : array, optional
        Multiplies ``score - cut`` (broadcasts against ``score``); None: 1.
    weights : array (I, D), optional
        Mixture weights, rows summing to 1; None: a single GRM.
    dtype : dtype
        Type of the result.

    Returns
    -------
    numpy.ndarray
        Responses, shape (N, I).
    """
    score = np.asarray(score)
    cuts = np.asarray(cuts)
    mixture = weights is not None
    u = rng.uniform(size=score.shape[:-1] if mixture else score.shape)
    out = np.zeros(u.shape, dtype)
    for k in range(cuts.shape[-1]):  # one threshold at a time: memory stays (N, I)
        cut = cuts[:, None, k] if mixture else cuts[:, k]
        logit = score - cut if discrimination is None else discrimination * (score - cut)
        at_least = sigmoid(logit)
        if mixture:
            at_least = np.einsum("id,nid->ni", weights, at_least)
        out += u < at_least
    return out
