"""Simulated diagnostic-classification data: the LCDM with a Q-matrix (the design behind seed 002).

Model (log-linear cognitive diagnosis model). Person p has an attribute profile
``z_p in {0,1}^A``; item j measures the attributes with ``Q[j, a] = 1``. Its correct-response
probability is ``sigmoid(beta_j . delta_j(z_p))``, where ``delta_j`` holds 1 (intercept), the
mastery indicators of each measured attribute (main effects), and their products (interactions
of every order among the measured attributes).

Default design (seed 002): 1,000 persons, A = 2 attributes with uniform profile probabilities,
30 items whose Q-matrix rows are drawn uniformly from {00, 01, 10, 11} (an all-zero row gives an
intercept-only item); intercepts U(-1.15, -1.05); an item measuring one attribute has main
effect U(2.9, 3.1); an item measuring several has main effects U(1.45, 1.55) and interactions
U(0.45, 0.55). (For A > 2 the same ranges are used for every main effect / interaction order.)
An interaction range whose lower end is ``None`` starts at minus the smallest main effect of the
attributes it joins, U(-min main effect, high): the rule that keeps every item monotone in each
attribute (a master of more attributes never has a lower success probability).

Profile labelling. Profile index ``c = sum_a z_a * 2**a`` (attribute 1 is the least significant
bit, "little-endian"); the label string lists attributes in order, so label "10" means attribute
1 mastered, attribute 2 not, and has index 1; "01" has index 2. This matches the labels used in
seed 002 (its 1-based profile 2 is "10", profile 3 is "01"). Score classification accuracy by
comparing profile *indices* computed with ``profile_index`` on both sides.

Returns ``(ResponseMatrix, truth, q_matrix)``. The Q-matrix (items x attributes, 0/1) is also in
``rm.attrs["q_matrix"]`` so that it travels in the JSON sidecar. Truth is a tidy table with the
standard keys (parameter, item, person, scale, category) plus ``feature``:
    beta                 item j, category = feature position in beta_j, feature "intercept",
                         "a1", "a2", "a1:a2", ...
    profile              person p, value = profile index
    mastery              person p, category = attribute (0-based), value 0/1
    profile_probability  category = profile index
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy.special import expit

from bayesirt.io import Item, ResponseMatrix

SEED_002_DESIGN = {
    "n_persons": 1000,
    "n_attributes": 2,
    "n_items": 30,
    "intercept": (-1.15, -1.05),
    "main_single": (2.9, 3.1),
    "main_multi": (1.45, 1.55),
    "interaction": (0.45, 0.55),
}


def profiles(n_attributes: int) -> np.ndarray:
    """(2^A, A) 0/1 matrix; row c is the profile with index c (attribute a = bit a of c).

    Parameters
    ----------
    n_attributes : int
        A.

    Returns
    -------
    numpy.ndarray
        Profiles, shape (2^A, A), int8.
    """
    c = np.arange(2**n_attributes)
    return ((c[:, None] >> np.arange(n_attributes)[None, :]) & 1).astype(np.int8)


def profile_index(mastery: np.ndarray) -> np.ndarray:
    """Profile index of 0/1 mastery rows (..., A): ``sum_a z_a 2^a``.

    Parameters
    ----------
    mastery : numpy.ndarray (..., A)
        0/1 mastery.

    Returns
    -------
    numpy.ndarray
        Indices, shape (...).
    """
    mastery = np.asarray(mastery, dtype=np.int64)
    return (mastery << np.arange(mastery.shape[-1])).sum(-1)


def profile_label(index: int, n_attributes: int) -> str:
    """The profile with index ``index`` as a string of 0/1, attribute 1 first.

    Parameters
    ----------
    index : int
        Profile index.
    n_attributes : int
        A.

    Returns
    -------
    str
        E.g. ``"101"``.
    """
    return "".join(str(b) for b in profiles(n_attributes)[index])


def item_features(q_row: np.ndarray) -> list[tuple[int, ...]]:
    """Feature list of an item: () for the intercept, then subsets of its measured attributes.

    Ordered by size and then by attribute.

    Parameters
    ----------
    q_row : numpy.ndarray (A,)
        The item's row of the Q-matrix.

    Returns
    -------
    list of tuple of int
        The features.
    """
    measured = [a for a in range(len(q_row)) if q_row[a]]
    feats = [()]
    for order in range(1, len(measured) + 1):
        feats += list(combinations(measured, order))
    return feats


def feature_name(feature: tuple[int, ...]) -> str:
    """Name of a feature: ``"intercept"``, or its attributes as ``"a1:a2"``.

    Parameters
    ----------
    feature : tuple of int
        Attribute subset (0-based).

    Returns
    -------
    str
        The name.
    """
    return "intercept" if not feature else ":".join(f"a{a + 1}" for a in feature)


def design_matrix(q_row: np.ndarray, n_attributes: int) -> np.ndarray:
    """(2^A, L_j): delta_j for every profile (row c = profile index c).

    Parameters
    ----------
    q_row : numpy.ndarray (A,)
        The item's row of the Q-matrix.
    n_attributes : int
        A.

    Returns
    -------
    numpy.ndarray
        delta_j, shape (2^A, L_j).
    """
    prof = profiles(n_attributes)
    return np.stack(
        [prof[:, list(f)].prod(1) if f else np.ones(len(prof), np.int8) for f in item_features(q_row)], axis=1
    ).astype(np.float64)


def simulate_lcdm(
    seed: int,
    n_persons: int = 1000,
    n_attributes: int = 2,
    n_items: int = 30,
    profile_probabilities=None,
    q_matrix=None,
    intercept=(-1.15, -1.05),
    main_single=(2.9, 3.1),
    main_multi=(1.45, 1.55),
    interaction=(0.45, 0.55),
    item_prefix: str = "D",
) -> tuple[ResponseMatrix, pd.DataFrame, np.ndarray]:
    """Binary responses from the LCDM; the seed-002 design by default.

    Coefficients are drawn uniformly from the given (low, high) ranges.

    Parameters
    ----------
    seed : int
        Seed of the numpy generator.
    n_persons, n_attributes, n_items : int
        N, A and J (positive).
    profile_probabilities : array (2^A,), optional
        Probabilities of the profiles (non-negative, summing to 1); default uniform.
    q_matrix : array (J, A), optional
        0/1 Q-matrix; drawn by default.
    intercept : tuple of float
        Range of the intercepts.
    main_single : tuple of float
        Range of the main effect of an item measuring one attribute.
    main_multi : tuple of float
        Range of the main effects of an item measuring several.
    interaction : tuple of float
        Range of the interactions.
    item_prefix : str
        Prefix of the item names.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame, numpy.ndarray)
        The responses, the truth table (``truth_table``) and the Q-matrix.

    Raises
    ------
    ValueError
        If a size is not positive, or the profile probabilities or the Q-matrix are malformed.
    """
    if n_persons < 1 or n_items < 1 or n_attributes < 1:
        raise ValueError(
            f"n_persons, n_items and n_attributes must be positive, got {n_persons}, {n_items}, {n_attributes}"
        )
    n_profiles = 2**n_attributes
    if profile_probabilities is None:
        probs = np.full(n_profiles, 1.0 / n_profiles)
    else:
        probs = np.asarray(profile_probabilities, dtype=np.float64)
        if probs.shape != (n_profiles,) or np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
            raise ValueError(f"profile_probabilities must be {n_profiles} non-negative numbers summing to 1")
    rng = np.random.default_rng(int(seed))
    if q_matrix is None:
        q = profiles(n_attributes)[rng.integers(0, n_profiles, size=n_items)]
    else:
        q = np.asarray(q_matrix, dtype=np.int8)
        if q.shape != (n_items, n_attributes) or not np.isin(q, (0, 1)).all():
            raise ValueError(f"q_matrix must be a 0/1 array of shape ({n_items}, {n_attributes}), got {q.shape}")

    betas = []
    for j in range(n_items):
        feats = item_features(q[j])
        n_measured = int(q[j].sum())
        beta = np.empty(len(feats))
        for f, feat in enumerate(feats):
            lo, hi = (
                intercept
                if len(feat) == 0
                else (main_single if n_measured == 1 else main_multi)
                if len(feat) == 1
                else interaction
            )
            if lo is None:
                # features are ordered by size, so the main effects of feat are already drawn
                lo = -min(beta[feats.index((a,))] for a in feat)
            beta[f] = rng.uniform(lo, hi)
        betas.append(beta)

    profile = rng.choice(n_profiles, size=n_persons, p=probs)
    # (2^A, I) probability of a correct answer for every profile and item
    p_class = np.stack([expit(design_matrix(q[j], n_attributes) @ betas[j]) for j in range(n_items)], axis=1)
    y = (rng.uniform(size=(n_persons, n_items)) < p_class[profile]).astype(np.int16)

    items = [Item(f"{item_prefix}{j + 1}", 2) for j in range(n_items)]
    attrs = {
        "source": "simulated",
        "model": "lcdm",
        "seed": int(seed),
        "n_attributes": n_attributes,
        "q_matrix": q.astype(int).tolist(),
        "profile_order": "index c = sum_a z_a 2^a (attribute 1 = least significant bit)",
        "profile_probabilities": probs.tolist(),
    }
    rm = ResponseMatrix(y, items, attrs)
    return rm, truth_table(q, betas, profile, probs, n_attributes), q


def truth_table(q, betas, profile, probs, n_attributes) -> pd.DataFrame:
    """The true values as a tidy table: coefficients per item, profile probabilities, persons' mastery.

    Parameters
    ----------
    q : numpy.ndarray (J, A)
        The Q-matrix.
    betas : list of numpy.ndarray
        Per item, its coefficients.
    profile : numpy.ndarray (N,)
        Each person's profile index.
    probs : numpy.ndarray (2^A,)
        Profile probabilities.
    n_attributes : int
        A.

    Returns
    -------
    pandas.DataFrame
        Rows with ``parameter`` beta, profile and mastery.
    """
    rows = []
    for j, beta in enumerate(betas):
        feats = item_features(q[j])
        rows.append(
            pd.DataFrame(
                {
                    "parameter": "beta",
                    "item": j,
                    "person": -1,
                    "scale": "all",
                    "category": np.arange(len(feats)),
                    "feature": [feature_name(f) for f in feats],
                    "value": beta,
                }
            )
        )
    n = len(profile)
    rows.append(
        pd.DataFrame(
            {
                "parameter": "profile",
                "item": -1,
                "person": np.arange(n),
                "scale": "all",
                "category": -1,
                "feature": "",
                "value": profile.astype(np.float64),
            }
        )
    )
    mastery = profiles(n_attributes)[profile]
    pp, aa = np.meshgrid(np.arange(n), np.arange(n_attributes), indexing="ij")
    rows.append(
        pd.DataFrame(
            {
                "parameter": "mastery",
                "item": -1,
                "person": pp.ravel(),
                "scale": "all",
                "category": aa.ravel(),
                "feature": [f"a{a + 1}" for a in aa.ravel()],
                "value": mastery.ravel().astype(np.float64),
            }
        )
    )
    rows.append(
        pd.DataFrame(
            {
                "parameter": "profile_probability",
                "item": -1,
                "person": -1,
                "scale": "all",
                "category": np.arange(len(probs)),
                "feature": [profile_label(c, n_attributes) for c in range(len(probs))],
                "value": probs,
            }
        )
    )
    return pd.concat(rows, ignore_index=True)
