"""Right-Wing Authoritarianism Scale (RWAS) data from Open Psychometrics, as a response matrix.

Source: ``https://openpsychometrics.org/_rawdata/RWAS.zip`` -> ``RWAS/data.csv`` (comma-separated,
90 columns, 9,881 rows). Q1..Q22 are the 22 RWA items answered on a 1..9 scale, 0 = no answer.
Here they become categories 0..8 (code - 1) and missing (-1); the other 68 columns (timings,
TIPI, vocabulary check list, demographics) are read only to check the file's shape.

Item metadata
    reverse_keyed  True for Q4, Q6, Q8, Q9, Q11, Q13, Q15, Q18, Q20, Q21 (agreeing with these
                   expresses *low* authoritarianism), as in the codebook of the data set.
    scale          two item groups, ``pro_trait`` (the 12 pro-trait worded items Q1, Q2, Q3, Q5,
                   Q7, Q10, Q12, Q14, Q16, Q17, Q19, Q22) and ``con_trait`` (the 10 reverse-keyed
                   items). Seed 000 fits "two subscales of the RWA questionnaire" without saying
                   which items form them, and neither the codebook nor Altemeyer's scale defines an
                   authoritative two-subscale split (the scale is scored as one total; proposed
                   three-facet splits -- aggression, submission, conventionalism -- do not map
                   onto two groups). Factor analyses of the RWA scale typically find two factors
                   that follow the wording direction, and seed 000's half-normal (positive)
                   discrimination prior needs every item of a scale to load in the same direction
                   when the raw coding is kept. We therefore use the pro-trait vs con-trait
                   (reverse-keyed) items as the two scales; this is our choice, not the seed's.

Re-orientation
    ``load(path, reorient=True)`` maps the reverse-keyed items' categories k -> 8 - k so that a
    high category always means high authoritarianism; ``attrs["reoriented"]`` records it (the
    items keep ``reverse_keyed=True``, which describes the questionnaire key).

On the real file: 9,881 persons, 352 missing cells in 201 persons; 3 of them answered no item.
They are kept by default (the matrix has all 9,881 rows, ``attrs["n_persons_without_response"]``
counts them); ``drop_empty_persons=True`` removes them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.data import _raw
from bayesirt.io import MISSING, DataFormatError, Item, ResponseMatrix

ITEMS = [f"Q{i}" for i in range(1, 23)]
REVERSE_KEYED = frozenset({"Q4", "Q6", "Q8", "Q9", "Q11", "Q13", "Q15", "Q18", "Q20", "Q21"})
N_CATEGORIES = 9
SCALES = {
    "pro_trait": [q for q in ITEMS if q not in REVERSE_KEYED],
    "con_trait": [q for q in ITEMS if q in REVERSE_KEYED],
}
SCALE_DEFINITION = "wording direction: pro_trait = pro-trait worded items, con_trait = reverse-keyed items"


def items() -> list[Item]:
    """The 22 scored items' metadata (9 categories; scale con_trait for the reverse-keyed, else pro_trait).

    Returns
    -------
    list of Item
        One per item.
    """
    return [
        Item(q, N_CATEGORIES, "con_trait" if q in REVERSE_KEYED else "pro_trait", q in REVERSE_KEYED) for q in ITEMS
    ]


def load(
    path, reorient: bool = False, require_all_categories: bool = True, drop_empty_persons: bool = False
) -> ResponseMatrix:
    """Read ``RWAS/data.csv`` into a response matrix (22 items, 9 categories, missing -1).

    Parameters
    ----------
    path : str or os.PathLike
        The raw file.
    reorient : bool
        Map the reverse-keyed items' categories k -> 8 - k (see the module docstring).
    require_all_categories : bool
        Fail if an item never shows one of its 9 categories.
    drop_empty_persons : bool
        Remove persons with no response.

    Returns
    -------
    ResponseMatrix
        The responses.

    Raises
    ------
    DataFormatError
        Naming file, line and column, for an empty file, missing item columns, rows with the
        wrong number of fields, non-numeric or out-of-range codes, and (with
        ``require_all_categories``) an item that never shows one of its 9 categories.
    """
    path = _raw.require_file(path)
    _check_field_counts(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=lambda c: c in ITEMS)
    except pd.errors.EmptyDataError as err:
        raise DataFormatError(f"{path}: no data ({err})") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DataFormatError(f"{path}: not a readable CSV file ({err})") from None
    _raw.require_columns(path, list(df.columns), ITEMS)
    if len(df) == 0:
        raise DataFormatError(f"{path}: header only, no persons")
    raw = np.column_stack(
        [_raw.integer_codes(_raw.numeric_column(df[q], path, q, null_strings=("",)), path, q, 0, 9) for q in ITEMS]
    )
    y = np.where(raw == 0, MISSING, raw - 1).astype(np.int16)
    if reorient:
        rev = np.array([q in REVERSE_KEYED for q in ITEMS])
        y[:, rev] = np.where(y[:, rev] == MISSING, MISSING, N_CATEGORIES - 1 - y[:, rev])
    empty = (y == MISSING).all(1)
    n_empty = int(empty.sum())
    if drop_empty_persons:
        y = y[~empty]
    missing = y == MISSING
    attrs = {
        "source": "rwa",
        "file": path.name,
        "reoriented": bool(reorient),
        "scale_definition": SCALE_DEFINITION,
        "n_missing_cells": int(missing.sum()),
        "n_persons_with_missing": int(missing.any(1).sum()),
        "n_persons_without_response": int(missing.all(1).sum()),
        "n_persons_dropped_without_response": n_empty if drop_empty_persons else 0,
    }
    rm = ResponseMatrix(y, items(), attrs)
    _raw.check_nonempty(rm, path)
    if require_all_categories:
        _raw.check_categories(rm, path)
    return rm


def _check_field_counts(path: Path) -> None:
    """Every line must have as many fields as the header (quoted commas handled by csv)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise DataFormatError(f"{path}: file is empty") from None
        n = len(header)
        for row in reader:
            if len(row) != n and row:
                raise DataFormatError(f"{path}: line {reader.line_num} has {len(row)} fields, the header has {n}")


def summary(rm: ResponseMatrix) -> dict:
    """Figures reported by the ``rwa_real`` benchmark and the prepare step's log.

    Parameters
    ----------
    rm : ResponseMatrix
        The responses.

    Returns
    -------
    dict
        ``persons``, ``items``, ``categories``, ``missing_cells``, ``persons_with_missing``,
        ``persons_without_response``, ``reverse_keyed``, ``scale_sizes``, ``reoriented``.
    """
    missing = rm.responses == MISSING
    return {
        "persons": rm.n_persons,
        "items": rm.n_items,
        "categories": sorted(set(int(k) for k in rm.n_categories)),
        "missing_cells": int(missing.sum()),
        "persons_with_missing": int(missing.any(1).sum()),
        "persons_without_response": int(missing.all(1).sum()),
        "reverse_keyed": [it.name for it in rm.items if it.reverse_keyed],
        "scale_sizes": {s: int(sum(it.scale == s for it in rm.items)) for s in rm.scales},
        "reoriented": bool(rm.attrs.get("reoriented", False)),
    }
