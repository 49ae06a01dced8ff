"""Profiles, features and the design tensor of a Q-matrix, and the checks of the LCDM's inputs
(``bayesirt.models.lcdm`` holds the likelihood and the priors).

Profile bit order (one order everywhere in the project; ``tests/unit/test_lcdm.py`` fixes it,
and it is the order of ``bayesirt.data.simulate_lcdm``): profile index ``c = sum_a z_a 2^a``,
attribute 1 is the least significant bit ("little-endian"). The label of a profile lists the
attributes in order, so label "10" (attribute 1 mastered, attribute 2 not) has index 1 and
label "01" has index 2.

Features of an item are ordered: intercept, then subsets of its measured attributes by size and
then by attribute (e.g. "intercept", "a1", "a2", "a1:a2"). Items have different numbers of
features ``K_j``; arrays are padded to ``K = max_j K_j`` with the item's features first and a
``feature_mask`` (J, K) marking the real ones. Padded design columns are zero, so padded
coefficients never reach a logit.
"""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple

import numpy as np

# 2^A profiles are held per person (N x 2^A log-likelihoods); beyond this many attributes the
# design tensor (J x 2^A x K) alone outgrows memory for any realistic test, so it is refused.
MAX_ATTRIBUTES = 16
# N x 2^A float32 cells held at once (4 GiB); larger problems are refused with this limit named.
MAX_PROFILE_CELLS = 2**30


def profiles(n_attributes: int) -> np.ndarray:
    """(2^A, A) 0/1 matrix; row c is the profile with index c (attribute a = bit a of c).

    Parameters
    ----------
    n_attributes : int
        A, the number of attributes.

    Returns
    -------
    np.ndarray
        Shape (2^A, A), int8.
    """
    c = np.arange(2**n_attributes)
    return ((c[:, None] >> np.arange(n_attributes)[None, :]) & 1).astype(np.int8)


def profile_index(mastery) -> np.ndarray:
    """Profile index of 0/1 mastery rows (..., A): ``sum_a z_a 2^a``.

    Parameters
    ----------
    mastery : array-like (..., A)
        0/1 mastery of each attribute.

    Returns
    -------
    np.ndarray
        Profile indices, shape (...), int64.
    """
    mastery = np.asarray(mastery, dtype=np.int64)
    return (mastery << np.arange(mastery.shape[-1])).sum(-1)


def profile_label(index: int, n_attributes: int) -> str:
    """Label of profile ``index``: its mastery bits in attribute order (e.g. "10" for index 1).

    Parameters
    ----------
    index : int
        Profile index, 0..2^A-1.
    n_attributes : int
        A, the number of attributes.

    Returns
    -------
    str
        A characters, each "0" or "1".
    """
    return "".join(str(b) for b in profiles(n_attributes)[index])


def item_features(q_row) -> list[tuple[int, ...]]:
    """() for the intercept, then subsets of the measured attributes by size, then attribute.

    Parameters
    ----------
    q_row : array-like (A,)
        The item's 0/1 row of the Q-matrix.

    Returns
    -------
    list of tuple of int
        The (0-based) attributes of each feature; () is the intercept.
    """
    measured = [a for a in range(len(q_row)) if q_row[a]]
    feats: list[tuple[int, ...]] = [()]
    for order in range(1, len(measured) + 1):
        feats += list(combinations(measured, order))
    return feats


def feature_name(feature: tuple[int, ...]) -> str:
    """Name of a feature: "intercept", or its attributes (1-based) joined by ":", e.g. "a1:a2".

    Parameters
    ----------
    feature : tuple of int
        The feature's (0-based) attributes, as ``item_features`` gives them.

    Returns
    -------
    str
        The name.
    """
    return "intercept" if not feature else ":".join(f"a{a + 1}" for a in feature)


class Design(NamedTuple):
    """Arrays derived once from a Q-matrix."""

    delta: np.ndarray  # (J, L, K) float: delta_j(profile l), padded columns zero
    feature_mask: np.ndarray  # (J, K) float: 1 for an item's real features
    n_features: np.ndarray  # (J,) int: K_j
    order: np.ndarray  # (J, K) int: feature order (number of attributes in it; -1 for padding)
    names: list  # per item, the feature names


def check_q_matrix(q, n_items: int | None = None, where: str = "Q-matrix", allow_zero_rows: bool = False) -> np.ndarray:
    """A 0/1 (J, A) Q-matrix with no zero row or column, or a one-line ValueError naming the
    item or attribute. A zero row (an item measuring nothing: intercept only, carrying no
    information on profiles) is usually a coding error; the seed-002 design draws such rows on
    purpose, so ``allow_zero_rows=True`` accepts them.

    Parameters
    ----------
    q : array-like (J, A)
        The Q-matrix.
    n_items : int, optional
        Number of items of the responses, which the rows must match (None: not checked).
    where : str
        Prefix of the error message.
    allow_zero_rows : bool
        Accept items that measure no attribute.

    Returns
    -------
    np.ndarray
        The Q-matrix, shape (J, A), as int8.

    Raises
    ------
    ValueError
        If ``q`` is not 2-d, has another number of rows than ``n_items``, holds entries other than
        0 and 1, has more than ``MAX_ATTRIBUTES`` columns, a zero row (unless allowed) or a zero
        column.
    """
    q = np.asarray(q)
    if q.ndim != 2:
        raise ValueError(f"{where}: expected a 2-d items x attributes array, got shape {q.shape}")
    if n_items is not None and q.shape[0] != n_items:
        raise ValueError(f"{where}: has {q.shape[0]} rows but the responses have {n_items} items")
    if not np.isin(q, (0, 1)).all():
        raise ValueError(f"{where}: entries must be 0 or 1")
    if q.shape[1] > MAX_ATTRIBUTES:
        raise ValueError(
            f"{where}: {q.shape[1]} attributes give 2^{q.shape[1]} profiles; at most "
            f"{MAX_ATTRIBUTES} attributes are supported"
        )
    zero_rows = np.flatnonzero(q.sum(1) == 0)
    if zero_rows.size and not allow_zero_rows:
        raise ValueError(
            f"{where}: item {int(zero_rows[0]) + 1} (row {int(zero_rows[0])}) measures no attribute "
            f"(pass allow_zero_rows for intercept-only items)"
        )
    zero_cols = np.flatnonzero(q.sum(0) == 0)
    if zero_cols.size:
        raise ValueError(
            f"{where}: attribute {int(zero_cols[0]) + 1} (column {int(zero_cols[0])}) is measured by no item"
        )
    return q.astype(np.int8)


def check_responses(y, where: str = "responses") -> np.ndarray:
    """Integer (N, J) responses coded 0/1 with -1 for missing, or a one-line ValueError naming
    the first item holding anything else.

    Parameters
    ----------
    y : array-like (N, J)
        Responses.
    where : str
        Prefix of the error message.

    Returns
    -------
    np.ndarray
        The responses, shape (N, J), as int32.

    Raises
    ------
    ValueError
        If ``y`` is not 2-d or holds a code other than 0, 1 and -1.
    """
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"{where}: expected a persons x items array, got shape {y.shape}")
    bad = ~np.isin(y, (-1, 0, 1))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"{where}: item {int(j) + 1} (column {int(j)}) holds {y[i, j].item()!r} at person {int(i)}; "
            f"the LCDM needs binary responses 0/1 (missing -1)"
        )
    return y.astype(np.int32)


def check_size(n_persons: int, n_attributes: int, where: str = "LCDM") -> None:
    """Refuse a problem whose N x 2^A per-profile log-likelihoods exceed ``MAX_PROFILE_CELLS`` cells.

    Parameters
    ----------
    n_persons : int
        N.
    n_attributes : int
        A.
    where : str
        Prefix of the error message.

    Raises
    ------
    ValueError
        If N x 2^A > ``MAX_PROFILE_CELLS``.
    """
    cells = n_persons * 2**n_attributes
    if cells > MAX_PROFILE_CELLS:
        raise ValueError(
            f"{where}: {n_persons} persons x 2^{n_attributes} profiles = {cells} cells exceed "
            f"the limit of {MAX_PROFILE_CELLS} held at once; use fewer attributes or persons"
        )


def design(q) -> Design:
    """Padded design tensor of a (checked) Q-matrix.

    Parameters
    ----------
    q : array-like (J, A)
        A Q-matrix that passed ``check_q_matrix``.

    Returns
    -------
    Design
        ``delta`` (J, 2^A, K), ``feature_mask`` (J, K), ``n_features`` (J,), ``order`` (J, K) and
        the feature ``names`` of each item.
    """
    q = np.asarray(q)
    n_items, n_attr = q.shape
    prof = profiles(n_attr)
    feats = [item_features(q[j]) for j in range(n_items)]
    k = max(len(f) for f in feats)
    delta = np.zeros((n_items, 2**n_attr, k))
    mask = np.zeros((n_items, k))
    order = np.full((n_items, k), -1, dtype=np.int32)
    for j, fj in enumerate(feats):
        for f, feat in enumerate(fj):
            delta[j, :, f] = prof[:, list(feat)].prod(1) if feat else 1.0
            mask[j, f] = 1.0
            order[j, f] = len(feat)
    return Design(
        delta, mask, np.array([len(f) for f in feats]), order, [[feature_name(f) for f in fj] for fj in feats]
    )


def pack_beta(betas, k: int) -> np.ndarray:
    """List of per-item coefficient vectors -> padded (J, K) array.

    Parameters
    ----------
    betas : sequence of array
        Each item's K_j coefficients, in feature order.
    k : int
        K, the padded width (at least every K_j).

    Returns
    -------
    np.ndarray
        Shape (J, K), float64, zero beyond each item's K_j.
    """
    out = np.zeros((len(betas), k))
    for j, b in enumerate(betas):
        out[j, : len(b)] = b
    return out
