"""A seeded split of persons into training and held-out parts (e.g. IPIP-FFM, 2.5% held out)."""

from __future__ import annotations

import numpy as np

from bayesirt.io import ResponseMatrix


def holdout_mask(n_persons: int, fraction: float = 0.025, seed: int = 0) -> np.ndarray:
    """Boolean mask of held-out persons: ``round(fraction * n)`` of them, chosen by ``seed``.

    At least one person is held out when ``fraction > 0`` and there are two or more persons.

    Parameters
    ----------
    n_persons : int
        N.
    fraction : float
        Fraction held out, in [0, 1).
    seed : int
        Seed of the choice.

    Returns
    -------
    numpy.ndarray
        Mask, shape (N,), bool.

    Raises
    ------
    ValueError
        If ``fraction`` is outside [0, 1).
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"holdout fraction {fraction} is outside [0, 1)")
    n_hold = int(round(fraction * n_persons))
    if fraction > 0 and n_hold == 0 and n_persons > 1:
        n_hold = 1
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 11]))
    mask = np.zeros(n_persons, dtype=bool)
    mask[rng.choice(n_persons, size=n_hold, replace=False)] = True
    return mask


def split_holdout(rm: ResponseMatrix, fraction: float = 0.025, seed: int = 0) -> tuple[ResponseMatrix, ResponseMatrix]:
    """(training, held-out) response matrices; persons keep their order within each part.

    Parameters
    ----------
    rm : ResponseMatrix
        The responses.
    fraction : float
        Fraction held out, in [0, 1).
    seed : int
        Seed of the choice.

    Returns
    -------
    tuple of ResponseMatrix
        Training and held-out parts, each with a ``split`` entry in ``attrs``.
    """
    mask = holdout_mask(rm.n_persons, fraction, seed)
    info = {"fraction": float(fraction), "seed": int(seed), "n_holdout": int(mask.sum()), "n_train": int((~mask).sum())}
    train = ResponseMatrix(rm.responses[~mask], list(rm.items), {**rm.attrs, "split": {"part": "train", **info}})
    hold = ResponseMatrix(rm.responses[mask], list(rm.items), {**rm.attrs, "split": {"part": "holdout", **info}})
    return train, hold
