"""Simulated response matrices with known parameters, seeded for reproducibility: the
factorized GRM of seed 000 and its discrimination-weighted mixture extension (section 1.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.data.grm_presets import PRESETS
from bayesirt.data.grm_sampling import sample_grm
from bayesirt.io import Item, ResponseMatrix
from bayesirt.models import factorized_grm, mixture_grm
from bayesirt.tables import factorized_grm_table, mixture_grm_table


def simulate_factorized_grm(
    seed: int,
    n_persons: int,
    items_per_scale: list[int],
    n_categories: int,
    scale_names: list[str] | None = None,
    item_prefix: str = "Q",
    ability_corr: float = 0.3,
) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Responses from the factorized GRM, and the true parameters as a tidy table.

    Parameters
    ----------
    seed : int
        Seed of the numpy generator.
    n_persons : int
        N (positive).
    items_per_scale : list of int
        Items of each scale.
    n_categories : int
        Categories of every item (at least 2).
    scale_names : list of str, optional
        Names of the scales (default S1, S2 ...).
    item_prefix : str
        Prefix of the item names.
    ability_corr : float
        Correlation of the abilities between scales.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses and the true parameters as a tidy table.

    Raises
    ------
    ValueError
        If ``n_persons`` is not positive or ``n_categories`` is below 2.
    """
    if n_persons < 1:
        raise ValueError(f"n_persons must be positive, got {n_persons}")
    if n_categories < 2:
        raise ValueError(f"n_categories must be at least 2, got {n_categories}")
    rng = np.random.default_rng(seed)
    scale_names = scale_names or [f"S{s + 1}" for s in range(len(items_per_scale))]
    truth = factorized_grm.draw_parameters(rng, n_persons, items_per_scale, n_categories, ability_corr)
    scale_index = np.repeat(np.arange(len(items_per_scale)), items_per_scale)
    responses = sample_grm(rng, truth["ability"][:, scale_index], thresholds(truth), truth["discrimination"])
    items = [Item(f"{item_prefix}{i + 1}", n_categories, scale_names[s]) for i, s in enumerate(scale_index)]
    rm = ResponseMatrix(
        responses, items, {"source": "simulated", "model": "factorized_grm", "seed": seed, "ability_corr": ability_corr}
    )
    return rm, factorized_grm_table(truth, scale_index, scale_names)


def from_preset(preset: str, seed: int, n_persons: int):
    """``simulate_factorized_grm`` with a questionnaire shape of ``PRESETS`` by name.

    Parameters
    ----------
    preset : str
        A name in ``PRESETS`` (``data.grm_presets``).
    seed : int
        Seed.
    n_persons : int
        N.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses and the true parameters as a tidy table.

    Raises
    ------
    ValueError
        If the preset is not known.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown simulation preset '{preset}'; known: {sorted(PRESETS)}")
    return simulate_factorized_grm(seed, n_persons, **PRESETS[preset])


def simulate_mixture_grm(
    seed: int,
    n_persons: int,
    items_per_scale: list[int],
    n_categories: int,
    n_dimensions: int,
    scale_names: list[str] | None = None,
) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Responses from the mixture GRM and its true parameters (tidy, with a ``dimension``).

    Parameters
    ----------
    seed : int
        Seed of the numpy generator.
    n_persons : int
        N.
    items_per_scale : list of int
        Items of each scale.
    n_categories : int
        Categories of every item.
    n_dimensions : int
        D, mixture dimensions.
    scale_names : list of str, optional
        Names of the scales (default S1, S2 ...).

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses and the true parameters as a tidy table.
    """
    rng = np.random.default_rng(seed)
    scale_names = scale_names or [f"S{s + 1}" for s in range(len(items_per_scale))]
    truth = mixture_grm.draw_parameters(rng, n_persons, items_per_scale, n_categories, n_dimensions)
    scale_index = np.repeat(np.arange(len(items_per_scale)), items_per_scale)
    alpha = np.asarray(truth["discrimination"])  # (I, D)
    responses = sample_grm(
        rng,
        np.asarray(truth["ability"])[:, scale_index, :],
        thresholds(truth),
        alpha,
        weights=alpha / alpha.sum(-1, keepdims=True),
    )
    items = [Item(f"Q{i + 1}", n_categories, scale_names[s]) for i, s in enumerate(scale_index)]
    rm = ResponseMatrix(
        responses, items, {"source": "simulated", "model": "mixture_grm", "seed": seed, "n_dimensions": n_dimensions}
    )
    return rm, mixture_grm_table(truth, scale_index, scale_names)


def thresholds(params: dict) -> np.ndarray:
    """(I, K-1) thresholds tau: the base difficulty plus the cumulated increments.

    Parameters
    ----------
    params : dict
        ``base_difficulty`` (I,) and ``increments`` (I, K-2).

    Returns
    -------
    numpy.ndarray
        Thresholds, shape (I, K-1).
    """
    base = np.asarray(params["base_difficulty"])
    return base[:, None] + np.concatenate([np.zeros((base.size, 1)), np.cumsum(params["increments"], axis=1)], axis=1)
