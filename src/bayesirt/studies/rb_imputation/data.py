"""The data of one ``rb_imputation`` fit: the responses it fits (complete for the reference,
with the replication's hidden cells for an objective), the truth where the data are simulated,
and the replication's imputation model (the pairwise ordinal stacking model of seed 000,
section 4), fitted, checked and scored on the hidden cells here."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.data import missingness
from bayesirt.imputation import stacking
from bayesirt.imputation.checks import validate_imputation_model


class Data(NamedTuple):
    responses: io.ResponseMatrix  # what the method fits: -1 for missing cells
    truth: pd.DataFrame | None = None  # simulated data: the true parameters
    imputation: stacking.StackingModel | None = None  # the objectives' imputation model


def read(responses, truth=None, imputation=None) -> Data:
    """A fit's data from the workflow's files (``truth`` empty or None on real data)."""
    return Data(
        io.read_responses(responses),
        pd.read_csv(truth) if truth else None,
        stacking.load(imputation) if imputation else None,
    )


def mask(rm_complete: io.ResponseMatrix, kind: str, rate: float, seed: int) -> tuple[io.ResponseMatrix, np.ndarray]:
    """One replication's responses: ``rate`` of the cells hidden by ``kind``, and the mask."""
    return missingness.inject(rm_complete, kind=kind, rate=rate, seed=seed)


def fit_imputation_model(rm_missing: io.ResponseMatrix, settings: stacking.StackingSettings):
    """Fit the stacking imputation model and run the five checks (raises on a failing one)."""
    model = stacking.fit(rm_missing, settings)
    checks = validate_imputation_model(model, [it.name for it in rm_missing.items], rm_missing.n_categories)
    return model, checks


def imputation_scores(model, rm_missing: io.ResponseMatrix, rm_complete: io.ResponseMatrix, hidden) -> dict:
    """Log score and accuracy of the imputation PMFs on the cells hidden by injection."""
    return stacking.imputation_accuracy(model, rm_missing.responses, rm_complete.responses, hidden)
