"""A table file (CSV, TSV, other delimited text, or parquet) read into text cells, with the
line (text) or data row (parquet) of every record, for ``bayesirt.data.table`` to check against
the data set's config.

Text files are split with the standard ``csv`` module rather than pandas, because it reports
the line of every record (quoted fields may span lines) and lets a row with too few fields be
an error instead of silently padded.
"""

from __future__ import annotations

import csv
import io as _io
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from bayesirt.io import DataFormatError

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
TEXT_SUFFIXES = {".csv": None, ".txt": None, ".tsv": "\t", ".tab": "\t"}
PARQUET_SUFFIXES = {".parquet", ".pq"}


class Cells(NamedTuple):
    """A table file as text cells.

    Attributes
    ----------
    frame : pandas.DataFrame
        Every column as stripped text, "" for blank / null.
    lines : numpy.ndarray
        The file's line (text) or data row (parquet) of each record.
    where : str
        ``"line"`` or ``"row"``.
    """

    frame: pd.DataFrame  # every column as stripped text, "" for blank / null
    lines: np.ndarray  # the file's line (text) or data row (parquet) of each record
    where: str  # "line" or "row"


def read_text(path: Path, delimiter: str | None) -> Cells:
    """Read a delimited text file into text cells.

    Parameters
    ----------
    path : pathlib.Path
        The file.
    delimiter : str or None
        The delimiter (None: from the file's suffix, else detected from the header).

    Returns
    -------
    Cells
        The cells, with each record's line.

    Raises
    ------
    DataFormatError
        If the file is binary or not UTF-8, its header is empty, a single column or has a
        duplicated name, it is not a readable table, or it has no persons.
    """
    raw = path.read_bytes()
    nul = raw.find(b"\x00", 0, 1 << 16)
    if nul >= 0:
        raise DataFormatError(
            f"{path}: not a text table (binary content: NUL byte at offset {nul}); expected CSV, TSV or parquet"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFormatError(
            f"{path}: line {line}: not UTF-8 text (byte 0x{raw[err.start]:02x} at offset "
            f"{err.start}); save the table as UTF-8 CSV"
        ) from None
    header = text.splitlines()[0] if text.strip() else ""
    if not header.strip():
        raise DataFormatError(f"{path}: line 1: empty header")
    sep = delimiter or TEXT_SUFFIXES.get(path.suffix.lower()) or _detect_delimiter(header)
    if sep not in header:
        others = [d for d in DELIMITERS if d != sep and d in header]
        hint = (
            f"; the header looks {DELIMITERS[others[0]]}-separated"
            if others
            else f"; no delimiter among {', '.join(DELIMITERS.values())} found"
        )
        raise DataFormatError(
            f"{path}: line 1 is a single column when split on {DELIMITERS.get(sep, repr(sep))}"
            f"{hint} (set the data set's delimiter, or fix the file)"
        )
    reader = csv.reader(_io.StringIO(text, newline=""), delimiter=sep)
    try:
        head = [h.strip() for h in next(reader)]
        rows, lines = [], []
        for row in reader:
            if not row:
                continue  # blank line
            if len(row) != len(head):
                raise DataFormatError(
                    f"{path}: line {reader.line_num} has {len(row)} fields, the header has "
                    f"{len(head)} ({DELIMITERS.get(sep, repr(sep))}-separated)"
                )
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as err:
        raise DataFormatError(f"{path}: line {reader.line_num}: not a readable table ({err})") from None
    _check_header(path, head)
    if not rows:
        raise DataFormatError(f"{path}: header only, no persons")
    frame = pd.DataFrame(rows, columns=head, dtype="string").apply(lambda s: s.str.strip())
    return Cells(frame, np.asarray(lines), "line")


def _detect_delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in DELIMITERS}
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def read_parquet(path: Path) -> Cells:
    """Read a parquet file into text cells.

    Parameters
    ----------
    path : pathlib.Path
        The file.

    Returns
    -------
    Cells
        The cells, with each record's row.

    Raises
    ------
    DataFormatError
        If the file is not parquet, has no rows or a duplicated column name.
    """
    try:
        df = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several types for a file that is not parquet
        raise DataFormatError(
            f"{path}: not a readable parquet file ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''})"
        ) from None
    head = [str(c).strip() for c in df.columns]
    _check_header(path, head)
    if len(df) == 0:
        raise DataFormatError(f"{path}: no rows")
    frame = pd.DataFrame({h: _as_text(df[c]) for h, c in zip(head, df.columns)})
    return Cells(frame, np.arange(1, len(df) + 1), "row")


def _as_text(s: pd.Series) -> pd.Series:
    """A parquet column as stripped text; nulls become "" (a blank cell)."""
    text = s.astype("string").str.strip()
    return text.fillna("")


def _check_header(path: Path, head: list[str]) -> None:
    seen = {}
    for k, h in enumerate(head):
        if h in seen:
            raise DataFormatError(
                f"{path}: line 1: column name '{h}' appears twice (columns {seen[h] + 1} and {k + 1})"
            )
        seen[h] = k
