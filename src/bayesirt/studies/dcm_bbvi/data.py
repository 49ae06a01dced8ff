"""The data of one ``dcm_bbvi`` condition: LCDM responses simulated from a design
(``conditions.DESIGNS``, with the config's sizes) with MCAR missingness at the condition's rate,
the truth (coefficients, profile probabilities, each person's profile) and the Q-matrix; and
``Problem``, one data set as every method takes it (here, where both the methods and the
tables that score their fits read it)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.data import missingness
from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.models import lcdm


def q_matrix(spec: dict, rng: np.random.Generator) -> np.ndarray | None:
    a, j = spec["n_attributes"], spec["n_items"]
    if spec["q_rows"] == "uniform":
        return None  # the simulator's default: rows uniform over all 2^A patterns
    q = np.zeros((j, a), np.int8)
    for i in range(j):
        q[i, rng.choice(a, size=rng.integers(1, 3), replace=False)] = 1
    q[:a] = np.eye(a, dtype=np.int8)  # every attribute measured, alone, at least once
    return q


def simulate(spec: dict, missing: float, seed: int, n_persons: int | None = None):
    """(ResponseMatrix with -1 for hidden cells, truth table, Q-matrix) for one design."""
    rng = np.random.default_rng(seed)
    n = n_persons or spec["n_persons"]
    rm, truth, q = simulate_lcdm(
        seed,
        n_persons=n,
        n_attributes=spec["n_attributes"],
        n_items=spec["n_items"],
        q_matrix=q_matrix(spec, rng),
        intercept=spec["intercept"],
        main_single=spec["main_single"],
        main_multi=spec["main_multi"],
        interaction=spec["interaction"],
    )
    if missing > 0:
        rm, _ = missingness.inject(rm, kind="mcar", rate=missing, seed=seed + 1)
    return rm, truth, q


def read(responses, truth) -> tuple[io.ResponseMatrix, pd.DataFrame, np.ndarray]:
    """(responses, truth, Q-matrix) of a condition from the workflow's files (the Q-matrix is in
    the responses' sidecar)."""
    rm = io.read_responses(responses)
    return rm, pd.read_csv(truth), np.asarray(rm.attrs["q_matrix"])


def true_beta(truth: pd.DataFrame, des: lcdm.Design) -> np.ndarray:
    """The truth table's coefficients, padded as the models hold them (J, K)."""
    tb = truth[truth.parameter == "beta"]
    items = range(des.delta.shape[0])
    return np.asarray(lcdm.pack_beta([tb[tb.item == j].value.to_numpy() for j in items], des.delta.shape[2]))


def true_profiles(truth: pd.DataFrame) -> np.ndarray:
    """Each person's true profile index (N,), from the truth table."""
    return truth[truth.parameter == "profile"].value.to_numpy().astype(int)


class Problem(NamedTuple):
    """One data set as every method takes it."""

    y: np.ndarray  # responses, -1 for missing
    q: np.ndarray  # Q-matrix
    prob: Any  # bbvi.prepare(y, q): design and data arrays
    key: Any  # the fit's PRNG key
    truth: pd.DataFrame | None
    fields: dict  # the record's condition fields
    allow_zero_rows: bool
