"""Simulated response matrices with known parameters, seeded for reproducibility."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.io import Item, ResponseMatrix
from bayesirt.models import factorized_grm

# Shapes of the real questionnaires, so the default config runs every study offline.
PRESETS = {
    # Right-Wing Authoritarianism scale as used in seed 000: 22 items, 9 categories, 2 scales.
    "rwa": {"items_per_scale": [11, 11], "n_categories": 9, "scale_names": ["A", "B"],
            "item_prefix": "Q"},
}


def simulate_factorized_grm(seed: int, n_persons: int, items_per_scale: list[int], n_categories: int,
                   scale_names: list[str] | None = None, item_prefix: str = "Q",
                   ability_corr: float = 0.3) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Responses from the factorized GRM, and the true parameters as a tidy table."""
    if n_persons < 1:
        raise ValueError(f"n_persons must be positive, got {n_persons}")
    if n_categories < 2:
        raise ValueError(f"n_categories must be at least 2, got {n_categories}")
    rng = np.random.default_rng(seed)
    scale_names = scale_names or [f"S{s + 1}" for s in range(len(items_per_scale))]
    truth = factorized_grm.draw_parameters(rng, n_persons, items_per_scale, n_categories, ability_corr)
    scale_index = np.repeat(np.arange(len(items_per_scale)), items_per_scale)
    responses = _sample_responses(rng, truth, scale_index, n_categories)
    items = [Item(f"{item_prefix}{i + 1}", n_categories, scale_names[s])
             for i, s in enumerate(scale_index)]
    rm = ResponseMatrix(responses, items, {"source": "simulated", "model": "factorized_grm",
                                           "seed": seed, "ability_corr": ability_corr})
    return rm, parameters_table(truth, scale_index, scale_names, value_column="value")


def from_preset(preset: str, seed: int, n_persons: int):
    if preset not in PRESETS:
        raise ValueError(f"unknown simulation preset '{preset}'; known: {sorted(PRESETS)}")
    return simulate_factorized_grm(seed, n_persons, **PRESETS[preset])


def _sample_responses(rng, truth, scale_index, n_categories):
    """Inverse-CDF draws in numpy float64 (exact, and independent of JAX versions)."""
    alpha = truth["discrimination"]
    tau = truth["base_difficulty"][:, None] + np.concatenate(
        [np.zeros((alpha.size, 1)), np.cumsum(truth["increments"], axis=1)], axis=1)
    theta = truth["ability"][:, scale_index]  # (N, I)
    p_at_least = 1.0 / (1.0 + np.exp(-alpha[None, :, None] * (theta[:, :, None] - tau[None])))
    u = rng.uniform(size=theta.shape)
    return (u[:, :, None] < p_at_least).sum(-1).astype(np.int16)


def parameters_table(params: dict, scale_index, scale_names, value_column: str) -> pd.DataFrame:
    """Tidy long table of factorized-GRM parameters: parameter, item, person, scale, category."""
    rows = []
    scale_index = np.asarray(scale_index)
    for name in ("discrimination", "base_difficulty"):
        v = np.asarray(params[name])
        rows.append(pd.DataFrame({"parameter": name, "item": np.arange(v.size), "person": -1,
                                  "scale": [scale_names[s] for s in scale_index],
                                  "category": -1, value_column: v}))
    inc = np.asarray(params["increments"])
    ii, kk = np.meshgrid(np.arange(inc.shape[0]), np.arange(inc.shape[1]), indexing="ij")
    rows.append(pd.DataFrame({"parameter": "increments", "item": ii.ravel(), "person": -1,
                              "scale": [scale_names[s] for s in scale_index[ii.ravel()]],
                              "category": kk.ravel() + 1, value_column: inc.ravel()}))
    ab = np.asarray(params["ability"])
    pp, ss = np.meshgrid(np.arange(ab.shape[0]), np.arange(ab.shape[1]), indexing="ij")
    rows.append(pd.DataFrame({"parameter": "ability", "item": -1, "person": pp.ravel(),
                              "scale": [scale_names[s] for s in ss.ravel()],
                              "category": -1, value_column: ab.ravel()}))
    return pd.concat(rows, ignore_index=True)
