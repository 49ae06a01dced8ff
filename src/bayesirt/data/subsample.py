"""A random subsample of a data set's persons (seed 000's notebook fits the RWA data "subsampled
to 500 persons")."""

from __future__ import annotations

import numpy as np

from bayesirt.io import ResponseMatrix


def persons(rm: ResponseMatrix, n_persons: int, seed: int, where: str = "subsample") -> ResponseMatrix:
    """``n_persons`` persons of ``rm`` drawn uniformly without replacement with ``seed``, kept in
    their order in the data; ``attrs["subsample"]`` records the draw (the rows kept, 0-based).

    Parameters
    ----------
    rm : ResponseMatrix
        The whole data set.
    n_persons : int
        Persons to keep (at most the data set's).
    seed : int
        Seed of the draw.
    where : str
        The config key named in the error.

    Raises
    ------
    ValueError
        If ``n_persons`` is not between 1 and the data set's persons.
    """
    n = rm.responses.shape[0]
    if not 1 <= int(n_persons) <= n:
        raise ValueError(f"config key '{where}': {n_persons} persons asked, the data set has {n}")
    rows = np.sort(np.random.default_rng(int(seed)).choice(n, size=int(n_persons), replace=False))
    record = {"n_persons": int(n_persons), "of": int(n), "seed": int(seed), "rows": rows.tolist()}
    return ResponseMatrix(rm.responses[rows], list(rm.items), {**rm.attrs, "subsample": record})
