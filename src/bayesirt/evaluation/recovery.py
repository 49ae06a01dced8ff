"""Recovery metrics of estimates against reference values (the truth, or another fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def metrics(estimate, reference) -> dict:
    """RMSE, bias (mean of estimate - reference), MSE, correlation and count.

    Parameters
    ----------
    estimate : array
        Estimates.
    reference : array
        Reference values (the truth, or another fit), same shape.

    Returns
    -------
    dict
        ``rmse``, ``bias``, ``mse``, ``corr`` (NaN when undefined) and ``n``.

    Raises
    ------
    ValueError
        If the shapes differ.
    """
    estimate = np.asarray(estimate, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if estimate.shape != reference.shape:
        raise ValueError(f"shapes differ: {estimate.shape} vs {reference.shape}")
    err = estimate - reference
    corr = (
        np.corrcoef(estimate, reference)[0, 1]
        if estimate.size > 1 and estimate.std() > 0 and reference.std() > 0
        else np.nan
    )
    return {
        "rmse": float(np.sqrt(np.mean(err**2))),
        "bias": float(err.mean()),
        "mse": float(np.mean(err**2)),
        "corr": float(corr),
        "n": int(estimate.size),
    }


def recovery_table(
    estimates: pd.DataFrame, reference_column: str = "true", by: tuple = ("parameter", "scale")
) -> pd.DataFrame:
    """One row per group of ``by`` (and per parameter over all scales, scale = 'all').

    Parameters
    ----------
    estimates : pandas.DataFrame
        One row per estimated parameter, with a ``mean`` column, ``reference_column`` and the
        ``by`` columns.
    reference_column : str
        Column of the reference values.
    by : tuple of str
        Grouping columns.

    Returns
    -------
    pandas.DataFrame
        The group's keys and ``metrics`` per group.
    """
    rows = []
    groups = [list(by)] + ([["parameter"]] if "scale" in by else [])
    for keys in groups:
        for values, df in estimates.groupby(keys, sort=True):
            values = values if isinstance(values, tuple) else (values,)
            row = dict(zip(keys, values))
            row.setdefault("scale", "all")
            rows.append({**row, **metrics(df["mean"], df[reference_column])})
    return pd.DataFrame(rows)
