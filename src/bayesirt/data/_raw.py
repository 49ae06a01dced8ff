"""Checks shared by the raw-data loaders (RWA, IPIP-FFM): clear one-line errors naming the place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.io import MISSING, DataFormatError, ResponseMatrix


def require_file(path) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found")
    if path.stat().st_size == 0:
        raise DataFormatError(f"{path}: file is empty")
    return path


def require_columns(path, columns, required) -> None:
    missing = [c for c in required if c not in columns]
    if missing:
        raise DataFormatError(
            f"{path}: column(s) {missing[:5]}{'...' if len(missing) > 5 else ''} "
            f"missing from the header; expected {required[0]}..{required[-1]}"
        )


def integer_codes(
    values: np.ndarray, path, column: str, lo: int, hi: int, row_offset: int = 2, allow_null: bool = False
) -> np.ndarray:
    """Float column (NaN = empty/NULL/non-numeric) -> int16 codes in lo..hi, or a clear error.

    ``row_offset`` turns a 0-based data row into the file's line number (header is line 1).
    NaN cells become ``MISSING`` when ``allow_null``.
    """
    v = np.asarray(values, dtype=np.float64)
    nan = np.isnan(v)
    if nan.any() and not allow_null:
        row = int(np.argmax(nan))
        raise DataFormatError(
            f"{path}: line {row + row_offset}, column '{column}': empty or "
            f"non-numeric cell; expected an integer {lo}..{hi}"
        )
    with np.errstate(invalid="ignore"):
        bad = ~nan & ((v != np.round(v)) | (v < lo) | (v > hi))
    if bad.any():
        row = int(np.argmax(bad))
        raise DataFormatError(
            f"{path}: line {row + row_offset}, column '{column}': code {v[row]:g} "
            f"out of range; expected an integer {lo}..{hi}"
        )
    return np.where(nan, MISSING, v).astype(np.int16)


def numeric_column(series: pd.Series, path, column: str, row_offset: int = 2, null_strings=("NULL", "")) -> np.ndarray:
    """A column read as text -> float64 with NaN for NULL/empty; other text is an error."""
    s = series.astype("string")
    stripped = s.str.strip()
    is_null = stripped.isna() | stripped.isin(list(null_strings))
    num = pd.to_numeric(stripped.where(~is_null), errors="coerce")
    bad = num.isna() & ~is_null
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise DataFormatError(
            f"{path}: line {row + row_offset}, column '{column}': non-numeric cell {str(s.iloc[row])!r}"
        )
    return num.to_numpy(dtype=np.float64, na_value=np.nan)


def check_categories(rm: ResponseMatrix, where) -> None:
    """Every item must show each of its declared categories at least once."""
    y = rm.responses
    for j, item in enumerate(rm.items):
        col = y[:, j]
        counts = np.bincount(col[col != MISSING], minlength=item.n_categories)
        absent = np.flatnonzero(counts[: item.n_categories] == 0)
        if absent.size:
            raise DataFormatError(
                f"{where}: item '{item.name}' never shows categor{'y' if absent.size == 1 else 'ies'} "
                f"{absent.tolist()} of the {item.n_categories} declared (codes 0..{item.n_categories - 1})"
            )


def check_nonempty(rm: ResponseMatrix, where) -> None:
    if rm.n_persons == 0:
        raise DataFormatError(f"{where}: no persons left")
    no_item = np.flatnonzero(~rm.observed.any(0))
    if no_item.size:
        raise DataFormatError(f"{where}: item '{rm.items[no_item[0]].name}' has no observed response")
