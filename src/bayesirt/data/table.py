"""Your own questionnaire as a response matrix: a CSV, TSV or parquet file of item responses.

The config (``datasets.<name>`` with ``source: table``) names the file and says how to read it:
which columns are items (a list, or a regular expression matched against the header), the
person-id column (optional), the coding (integers from k, or category labels in order), the
missing codes (blank, NA, listed numbers or strings), reverse-keyed items and item groups
(scales or factors). ``load`` returns the same ``ResponseMatrix`` every study reads, the person
ids in matrix order, and a row-count table of what was dropped and why.

Bad input stops here, before any fit, with one ``DataFormatError`` (``FileNotFoundError`` for a
missing file) whose message names the file, the line (the header is line 1; parquet: data row
1 is the first) and the column. Cases: a file that is not a table (binary content, not UTF-8,
not parquet, a single column where another delimiter is evident, rows with the wrong number of
fields), configured columns absent, values that are neither a declared category nor a missing
code (the first few, with their lines), an item with fewer than two observed categories,
duplicate person ids, and persons without any observed response (dropped and counted, or an
error with ``empty_persons="error"``). An item whose corrected item-rest correlation with its
scale is negative or near zero is named in a WARNING (``bayesirt.data.item_direction``): it
may be keyed the wrong way.

The file itself is read into text cells by ``bayesirt.data.table_files``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from bayesirt.data.item_direction import item_rest_correlations, warn_item_direction
from bayesirt.data.table_files import PARQUET_SUFFIXES, Cells, read_parquet, read_text
from bayesirt.io import MISSING, DataFormatError, Item, ResponseMatrix

DEFAULT_MISSING = ("", "NA")
MAX_REPORTED = 5  # bad cells quoted in one message


class Prepared(NamedTuple):
    responses: ResponseMatrix
    person_ids: list[str]  # one per row of ``responses``
    row_counts: pd.DataFrame  # step, persons, removed, reason


def load(
    path,
    *,
    items: Sequence[str] | None = None,
    item_pattern: str | None = None,
    id_column: str | None = None,
    delimiter: str | None = None,
    coding: Mapping | None = None,
    missing_codes: Sequence = DEFAULT_MISSING,
    reverse_keyed: Sequence[str] = (),
    reorient: bool = True,
    scales: Mapping[str, Sequence[str]] | None = None,
    empty_persons: str = "drop",
    key: str = "table",
) -> Prepared:
    """Read and check a table of item responses; see the module docstring.

    coding         ``{"integers_from": k}`` (codes k, k+1, ...; ``"n_categories": K`` declares a
                   top category the data may not show, else K comes from the largest code seen)
                   or ``{"labels": [...]}`` (category labels, lowest first). Default: integers from 1.
    missing_codes  cell values meaning "no response" ("" is a blank or null cell); numbers match
                   however they are written (9, "9", "9.0").
    reorient       map reverse-keyed items' categories k -> K-1-k, so that a high category
                   always means more of the trait (the items keep ``reverse_keyed=True``).
    scales         item groups, name -> item names; every item in exactly one group
                   (default: one group "all").
    key            the config key of the data set, named in messages about the config.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found (config key '{key}.file')")
    if path.is_dir() or path.stat().st_size == 0:
        raise DataFormatError(f"{path}: {'a folder' if path.is_dir() else 'empty file'}, not a table")
    cells = read_parquet(path) if path.suffix.lower() in PARQUET_SUFFIXES else read_text(path, delimiter)
    columns = list(cells.frame.columns)

    names = _item_columns(path, columns, items, item_pattern, key)
    for col, what in [(id_column, "id_column")] if id_column else []:
        if col not in columns:
            raise DataFormatError(
                f"{path}: line 1: column '{col}' (config key '{key}.{what}') is not in the "
                f"header; columns are {_preview(columns)}"
            )
    for name in reverse_keyed:
        if name not in names:
            raise DataFormatError(
                f"{path}: column '{name}' (config key '{key}.reverse_keyed') is not among "
                f"the item columns {_preview(names)}"
            )
    scale_of = _scales(path, names, scales, key)
    ids = _person_ids(path, cells, id_column)

    lookup, n_categories, labels = _coding(cells, names, coding, missing_codes, path)
    y = _codes(path, cells, names, lookup)
    _check_items(path, y, names, labels)  # before re-orientation, so the message quotes the file's labels
    rev = np.array([n in set(reverse_keyed) for n in names])
    if reorient and rev.any():
        y[:, rev] = np.where(y[:, rev] == MISSING, MISSING, n_categories - 1 - y[:, rev])

    counts = [("rows in file", len(y), 0, "")]
    empty = (y == MISSING).all(1)
    if empty.any():
        first = int(np.flatnonzero(empty)[0])
        if empty_persons == "error":
            raise DataFormatError(
                f"{path}: {cells.where} {cells.lines[first]} (person '{ids[first]}'): no observed "
                f"response in any item column; {int(empty.sum())} such person(s) (config key "
                f"'{key}.empty_persons' is error; set it to drop to remove them)"
            )
        y, ids = y[~empty], [i for i, e in zip(ids, empty) if not e]
        counts.append(("persons with a response", len(y), int(empty.sum()), "no observed response"))
    if len(y) == 0:
        raise DataFormatError(f"{path}: no person has an observed response")

    item_list = [Item(n, n_categories, scale_of[n], bool(r)) for n, r in zip(names, rev)]
    missing = y == MISSING
    attrs = {
        "source": "table",
        "file": path.name,
        "sha256": _sha256(path),
        "categories": labels,
        "missing_codes": [str(m) for m in missing_codes],
        "reoriented": bool(reorient and rev.any()),
        "id_column": id_column,
        "factor_names": list(dict.fromkeys(scale_of[n] for n in names)),
        "n_missing_cells": int(missing.sum()),
        "n_persons_with_missing": int(missing.any(1).sum()),
        "n_persons_dropped_without_response": int(empty.sum()),
    }
    table = pd.DataFrame(counts, columns=["step", "persons", "removed", "reason"])
    responses = ResponseMatrix(y.astype(np.int16), item_list, attrs)
    # an item keyed the wrong way is named now, before any fit hides it (bayesirt.data.item_direction)
    warn_item_direction(item_rest_correlations(responses), key)
    return Prepared(responses, ids, table)


# ------------------------------------------------------------------------------- config against the file


def _item_columns(path, columns, items, pattern, key) -> list[str]:
    if (items is None) == (pattern is None):
        raise ValueError(f"config key '{key}': give exactly one of items (a list) or item_pattern (a regex)")
    if items is not None:
        absent = [c for c in items if c not in columns]
        if absent:
            raise DataFormatError(
                f"{path}: line 1: column '{absent[0]}' (config key '{key}.items') is not in the "
                f"header"
                + (f" ({len(absent)} item columns absent)" if len(absent) > 1 else "")
                + f"; columns are {_preview(columns)}"
            )
        if len(set(items)) != len(items):
            raise ValueError(f"config key '{key}.items': an item is listed twice")
        return list(items)
    rx = re.compile(pattern)
    names = [c for c in columns if rx.fullmatch(c)]
    if not names:
        raise DataFormatError(
            f"{path}: line 1: no column matches item_pattern '{pattern}' (config key "
            f"'{key}.item_pattern'); columns are {_preview(columns)}"
        )
    return names


def _scales(path, names, scales, key) -> dict:
    if not scales:
        return {n: "all" for n in names}
    scale_of = {}
    for scale, members in scales.items():
        for m in members:
            if m not in names:
                raise DataFormatError(
                    f"{path}: column '{m}' (config key '{key}.scales.{scale}') is not among the "
                    f"item columns {_preview(names)}"
                )
            if m in scale_of:
                raise ValueError(f"config key '{key}.scales': item '{m}' is in both '{scale_of[m]}' and '{scale}'")
            scale_of[m] = scale
    left = [n for n in names if n not in scale_of]
    if left:
        raise ValueError(f"config key '{key}.scales': item(s) {left[:5]} belong to no scale; every item needs one")
    return scale_of


def _person_ids(path, cells: Cells, id_column) -> list[str]:
    if not id_column:
        return [str(n) for n in cells.lines]  # the person's line (or row) in the file
    ids = cells.frame[id_column]
    blank = (ids == "").to_numpy()
    if blank.any():
        r = int(np.argmax(blank))
        raise DataFormatError(f"{path}: {cells.where} {cells.lines[r]}, column '{id_column}': empty person id")
    dup = ids.duplicated(keep="first").to_numpy()
    if dup.any():
        r = int(np.argmax(dup))
        first = int(np.flatnonzero((ids == ids.iloc[r]).to_numpy())[0])
        raise DataFormatError(
            f"{path}: {cells.where} {cells.lines[r]}, column '{id_column}': person id "
            f"'{ids.iloc[r]}' repeats {cells.where} {cells.lines[first]} "
            f"({int(dup.sum())} repeated id(s))"
        )
    return ids.tolist()


# ------------------------------------------------------------------------------- coding


def _canonical(values: pd.Series) -> pd.Series:
    """Numbers as the shortest integer text where integral ("9.0" -> "9"), other text as is,
    so that a code matches however the file writes it."""
    num = pd.to_numeric(values, errors="coerce")
    integral = num.notna() & np.isfinite(num) & (num == num.round())
    out = values.astype(object).copy()
    out[integral] = num[integral].astype("int64").astype(str)
    return out


def _canonical_one(value) -> str:
    return str(_canonical(pd.Series([str(value).strip()], dtype="string")).iloc[0])


def _coding(cells: Cells, names, coding, missing_codes, path):
    """(text -> category lookup with missing codes -> MISSING, K, category labels)."""
    coding = dict(coding or {"integers_from": 1})
    missing = {_canonical_one(m) for m in missing_codes}
    if "labels" in coding:
        labels = [_canonical_one(v) for v in coding["labels"]]
        clash = missing.intersection(labels)
        if clash:
            raise ValueError(f"coding: {sorted(clash)[0]!r} is both a category label and a missing code")
        lookup = {lab: k for k, lab in enumerate(labels)}
    else:
        start = int(coding.get("integers_from", 1))
        k_max = coding.get("n_categories")
        if k_max is None:
            # K from the largest valid integer code seen in any item column
            seen = -1
            for n in names:
                num = pd.to_numeric(_canonical(cells.frame[n]).where(lambda s: ~s.isin(missing)), errors="coerce")
                ok = num[(num >= start) & (num == num.round())]
                if len(ok):
                    seen = max(seen, int(ok.max()))
            k_max = max(seen - start + 1, 2)
        labels = [str(start + k) for k in range(int(k_max))]
        lookup = {lab: k for k, lab in enumerate(labels)}
    lookup.update({m: MISSING for m in missing})
    return lookup, len(labels), labels


def _codes(path, cells: Cells, names, lookup) -> np.ndarray:
    y = np.empty((len(cells.frame), len(names)), np.int16)
    bad = []
    n_bad = 0
    for j, n in enumerate(names):
        text = _canonical(cells.frame[n])
        mapped = text.map(lookup)
        wrong = mapped.isna().to_numpy()
        if wrong.any():
            n_bad += int(wrong.sum())
            bad += [(int(r), n, cells.frame[n].iloc[r]) for r in np.flatnonzero(wrong)[:MAX_REPORTED]]
            continue
        y[:, j] = mapped.to_numpy(dtype=np.int16)
    if bad:
        bad.sort()
        where = "; ".join(f"{cells.where} {cells.lines[r]}, column '{c}': {v!r}" for r, c, v in bad[:MAX_REPORTED])
        categories = [k for k, v in lookup.items() if v != MISSING]
        missing = sorted(k for k, v in lookup.items() if v == MISSING)
        raise DataFormatError(
            f"{path}: {n_bad} cell(s) neither a declared category {_preview(categories)} nor a "
            f"missing code {missing}, first: {where}"
        )
    return y


def _check_items(path, y, names, labels) -> None:
    for j, n in enumerate(names):
        seen = np.unique(y[:, j][y[:, j] != MISSING])
        if seen.size < 2:
            what = "no observed response" if seen.size == 0 else f"only category {labels[int(seen[0])]!r} observed"
            raise DataFormatError(
                f"{path}: column '{n}': {what}; an item needs at least two observed categories "
                f"(drop it from the items, or merge categories)"
            )


def _preview(values, n: int = 8) -> str:
    values = list(values)
    return "[" + ", ".join(map(str, values[:n])) + (", ..." if len(values) > n else "") + "]"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def person_table(ids: Sequence[str], part: str) -> pd.DataFrame:
    """The person ids of one part of a prepared data set (``persons.csv``): row (0-based, the
    row of the response matrix), person_id, part (train | holdout)."""
    return pd.DataFrame({"row": np.arange(len(ids)), "person_id": list(ids), "part": part})


class Split(NamedTuple):
    train: ResponseMatrix
    holdout: ResponseMatrix
    persons: pd.DataFrame  # row, person_id, part: every kept person, in matrix order per part
    row_counts: pd.DataFrame


def split(prepared: Prepared, fraction: float, seed: int) -> Split:
    """Hold out ``fraction`` of the persons (seeded, ``data.holdout``) for a held-out
    log-likelihood; the person ids and the row counts follow the split."""
    from bayesirt.data.holdout import holdout_mask, split_holdout

    rm = prepared.responses
    mask = holdout_mask(rm.n_persons, fraction, seed)
    train, hold = split_holdout(rm, fraction, seed)  # the same seeded mask
    ids = np.asarray(prepared.person_ids, dtype=object)
    persons = pd.concat([person_table(ids[~mask], "train"), person_table(ids[mask], "holdout")], ignore_index=True)
    counts = prepared.row_counts
    if mask.any():
        counts = pd.concat(
            [
                counts,
                pd.DataFrame(
                    [("training persons", train.n_persons, hold.n_persons, "held out for the held-out log-likelihood")],
                    columns=counts.columns,
                ),
            ],
            ignore_index=True,
        )
    return Split(train, hold, persons, counts)
