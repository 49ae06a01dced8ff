"""IPIP-FFM (Big-Five Factor Markers) data from Open Psychometrics, screened as in Urban & Bauer (2021).

Source: ``https://openpsychometrics.org/_rawdata/IPIP-FFM-data-8Nov2018.zip`` ->
``IPIP-FFM-data-8Nov2018/data-final.csv``: tab-separated, about 1,015,341 rows and 110 columns --
50 items EXT1..10, EST1..10, AGR1..10, CSN1..10, OPN1..10 coded 1..5 (0 = no answer), 50 timing
columns ``<item>_E`` (ms), dateload, screenw, screenh, introelapse, testelapse (s), endelapse,
IPC (number of records from the same IP address), country, lat_appx_lots_of_err,
long_appx_lots_of_err; the string ``NULL`` marks empty cells.

Preprocessing (every step switchable, see ``Preprocess``; a row count is kept after each):
 1. read      rows with the wrong number of fields stop with the line number
              (``bad_lines="skip"`` drops and counts them instead)
 2. IPC == 1  drop records that share an IP address with others (an IPC of NULL is not 1)
 3. 0 -> missing (and NULL); drop persons without any response
 4. careless responders: Urban & Bauer's four risk flags (test time, long string, Mahalanobis,
    Guttman errors) and their drop rule; see ``bayesirt.data.careless``
 5. optional held-out split of persons (``bayesirt.data.holdout.split_holdout``, default 2.5%, seeded).

Re-orientation. By default (``reorient=True``, as Urban & Bauer did before fitting) the
reverse-keyed items EXT2,4,6,8,10, EST2,4, AGR1,3,5,7, CSN2,4,6,8, OPN2,4,6 are mapped
k -> 4 - k so that every item loads positively on its factor; ``attrs["reoriented"]`` records it.
Categories are 0..4 (raw code - 1), missing -1.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.data import _raw, careless
from bayesirt.io import MISSING, DataFormatError, Item, ResponseMatrix

log = logging.getLogger("bayesirt")

FACTORS = ("EXT", "EST", "AGR", "CSN", "OPN")
ITEMS = [f"{f}{i}" for f in FACTORS for i in range(1, 11)]
TIME_COLUMNS = [f"{it}_E" for it in ITEMS]
META_COLUMNS = [
    "dateload",
    "screenw",
    "screenh",
    "introelapse",
    "testelapse",
    "endelapse",
    "IPC",
    "country",
    "lat_appx_lots_of_err",
    "long_appx_lots_of_err",
]
COLUMNS = ITEMS + TIME_COLUMNS + META_COLUMNS
REVERSE_KEYED = frozenset(
    {
        "EXT2",
        "EXT4",
        "EXT6",
        "EXT8",
        "EXT10",
        "EST2",
        "EST4",
        "AGR1",
        "AGR3",
        "AGR5",
        "AGR7",
        "CSN2",
        "CSN4",
        "CSN6",
        "CSN8",
        "OPN2",
        "OPN4",
        "OPN6",
    }
)
N_CATEGORIES = 5


@dataclass(frozen=True)
class Preprocess:
    """Preprocessing options (config keys of the same names).

    Attributes
    ----------
    keep_single_ip : bool
        Keep IPC == 1 only.
    drop_empty_persons : bool
        Drop persons with no response.
    screen_careless : bool
        Master switch of the four careless-responder flags.
    flag_test_time, flag_long_string, flag_mahalanobis, flag_guttman : bool
        The flags (``data.careless``).
    test_time_min, test_time_max : float
        Test-time bounds in seconds.
    long_string_length : int
        Shortest run of identical answers that counts.
    mahalanobis_p_high, mahalanobis_p_low : float
        p-values below which the Mahalanobis flag is high / low risk.
    guttman_quantile_high, guttman_quantile_low : float
        Quantiles of the simulated Guttman statistic for the high / low cut-offs.
    guttman_fit_persons : int
        Persons the GRM behind the Guttman cut-offs is fitted to.
    guttman_fit_iterations : int
        Most iterations of that fit.
    guttman_simulated_persons : int
        Persons simulated for the cut-offs.
    guttman_bootstrap : int
        Bootstrap resamples of the cut-offs.
    seed : int
        Seed of the subsample, simulation and bootstrap.
    reorient : bool
        Map reverse-keyed items' categories k -> 4 - k.
    bad_lines : str
        ``"error"`` or ``"skip"``: what a malformed line of the raw file does.
    require_all_categories : bool
        Fail if an item never shows one of its categories.

    Raises
    ------
    ValueError
        If ``bad_lines`` is not ``"error"`` or ``"skip"``.
    """

    keep_single_ip: bool = True  # keep IPC == 1 only
    drop_empty_persons: bool = True  # drop persons with no response
    screen_careless: bool = True  # master switch of the four flags
    flag_test_time: bool = True
    flag_long_string: bool = True
    flag_mahalanobis: bool = True
    flag_guttman: bool = True
    test_time_min: float = 150.0
    test_time_max: float = 3600.0
    long_string_length: int = 10
    mahalanobis_p_high: float = 0.05
    mahalanobis_p_low: float = 0.10
    guttman_quantile_high: float = 0.95
    guttman_quantile_low: float = 0.90
    guttman_fit_persons: int = 20_000
    guttman_fit_iterations: int = 50
    guttman_simulated_persons: int = 100_000
    guttman_bootstrap: int = 200
    seed: int = 0
    reorient: bool = True
    bad_lines: str = "error"  # "error" or "skip"
    require_all_categories: bool = True

    def __post_init__(self):
        if self.bad_lines not in ("error", "skip"):
            raise ValueError(f"preprocessing option bad_lines={self.bad_lines!r}; expected 'error' or 'skip'")


def items() -> list[Item]:
    """The 50 items' metadata (5 categories; the scale is the item's factor prefix).

    Returns
    -------
    list of Item
        One per item.
    """
    return [Item(it, N_CATEGORIES, it[:3], it in REVERSE_KEYED) for it in ITEMS]


# --------------------------------------------------------------------------------------- reading


def read_raw(path, bad_lines: str = "error") -> tuple[dict, int]:
    """Parse the columns the preprocessing needs from the raw file.

    Parameters
    ----------
    path : str or os.PathLike
        The raw ``data-final.csv``.
    bad_lines : str
        ``"error"`` or ``"skip"``.

    Returns
    -------
    tuple of (dict, int)
        ``{"items": (N, 50) int16 raw codes 0..5 with -1 for NULL, "testelapse": (N,) float,
        "IPC": (N,) float}`` and the number of skipped lines.

    Raises
    ------
    DataFormatError
        If the file does not follow the raw format.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = _raw.require_file(path)
    with open(path, "rb") as fh:
        header = fh.readline().decode("utf-8", errors="replace").rstrip("\r\n").split("\t")
    needed = ITEMS + ["testelapse", "IPC"]
    _raw.require_columns(path, header, needed)
    bad: list = []

    def on_invalid(row):
        bad.append((row.number, row.actual_columns, row.expected_columns, row.text))
        return "skip"

    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(
                include_columns=needed,
                column_types={c: pa.float64() for c in needed},
                null_values=["NULL", ""],
                strings_can_be_null=True,
            ),
        )
    except pa.ArrowInvalid as err:
        raise _conversion_error(path, header, str(err)) from None
    if bad and bad_lines == "error":
        number, actual, expected = _first_bad_line(path, len(header))
        raise DataFormatError(
            f"{path}: line {number} has {actual} fields, the header has {expected} "
            f"({len(bad)} such line(s); set bad_lines: skip to drop them)"
        )
    if table.num_rows == 0:
        raise DataFormatError(f"{path}: header only, no persons")
    if bad:
        log.warning("%s: skipped %d line(s) with the wrong number of fields", path, len(bad))
    codes = np.empty((table.num_rows, len(ITEMS)), dtype=np.int16)
    for j, name in enumerate(ITEMS):
        values = table.column(name).to_numpy(zero_copy_only=False)
        codes[:, j] = _raw.integer_codes(values, path, name, 0, 5, allow_null=True)
    out = {
        "items": codes,
        "testelapse": table.column("testelapse").to_numpy(zero_copy_only=False).astype(np.float64),
        "IPC": table.column("IPC").to_numpy(zero_copy_only=False).astype(np.float64),
    }
    return out, len(bad)


def _conversion_error(path, header, message: str) -> DataFormatError:
    m = re.search(r"column #(\d+):(?: Row #(\d+):)? .*invalid value '([^']*)'", message)
    if m:
        col, value = int(m.group(1)), m.group(3)
        name = header[col] if col < len(header) else f"#{col}"
        # with parallel parsing pyarrow does not know the row: find the first such cell
        line = int(m.group(2)) if m.group(2) else _find_cell(path, col, value)
        return DataFormatError(f"{path}: line {line}, column '{name}': non-numeric cell {value!r}")
    return DataFormatError(f"{path}: not readable as the IPIP-FFM tab-separated format ({message.splitlines()[0]})")


def _find_cell(path, col: int, value: str) -> int:
    target = value.encode()
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            cells = line.rstrip(b"\r\n").split(b"\t")
            if number > 1 and col < len(cells) and cells[col] == target:
                return number
    return -1


def _first_bad_line(path, n_fields) -> tuple[int, int, int]:
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            k = line.rstrip(b"\r\n").count(b"\t") + 1
            if number > 1 and k != n_fields and line.strip():
                return number, k, n_fields
    return -1, -1, n_fields


# --------------------------------------------------------------------------------- preprocessing


def load(path, fit_grm=None, **preprocess_options) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Read and preprocess the raw file; return the response matrix and the row-count table.

    The table has one row per step: ``step``, ``persons`` (after the step), ``removed``.

    Parameters
    ----------
    path : str or os.PathLike
        The raw ``data-final.csv``.
    fit_grm : callable, optional
        The GRM fitter behind the Guttman cut-offs (``bayesirt.inference.marginal.mml.fit_arrays``; its
        expected signature is in ``bayesirt.data.careless``), needed unless the Guttman flag or
        the whole careless screen is switched off.
    **preprocess_options
        Fields of ``Preprocess``.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses and the row-count table.

    Raises
    ------
    DataFormatError
        If the file does not follow the raw format.
    ValueError
        If an option is not valid or the Guttman flag is on without ``fit_grm``.
    """
    opt = Preprocess(**preprocess_options)  # the config schema names unknown keys first
    t0 = time.perf_counter()
    raw, n_skipped = read_raw(path, opt.bad_lines)
    log.info("%s: read %d rows in %.1f s", Path(path).name, raw["items"].shape[0], time.perf_counter() - t0)
    rm, counts, _ = preprocess(raw, opt, where=path, n_skipped=n_skipped, fit_grm=fit_grm)
    rm.attrs["file"] = Path(path).name
    log.info("%s: %d persons after preprocessing (%.1f s)", Path(path).name, rm.n_persons, time.perf_counter() - t0)
    return rm, counts


def preprocess(raw: dict, opt: Preprocess, where="IPIP-FFM data", n_skipped: int = 0, fit_grm=None):
    """Steps 2-4 on parsed columns (see ``read_raw``).

    Parameters
    ----------
    raw : dict
        Parsed columns (``read_raw``).
    opt : Preprocess
        The options.
    where : str
        Names the data in messages.
    n_skipped : int
        Lines skipped while reading.
    fit_grm : callable, optional
        As in ``load``.

    Returns
    -------
    tuple
        The response matrix, the row-count table and the indices of the kept rows among the
        parsed ones.
    """
    careless.require_fitter(opt, fit_grm)
    codes, testelapse = raw["items"].copy(), np.asarray(raw["testelapse"], np.float64)
    rows = np.arange(codes.shape[0])
    steps = [("read", codes.shape[0], n_skipped)]

    def keep(mask, step):
        nonlocal codes, testelapse, rows
        codes, testelapse, rows = codes[mask], testelapse[mask], rows[mask]
        steps.append((step, int(mask.sum()), int((~mask).sum())))

    if opt.keep_single_ip:
        keep(np.asarray(raw["IPC"]) == 1, "IPC == 1")
    codes[codes == 0] = MISSING  # 0 = no answer; NULL is already -1
    if opt.drop_empty_persons:
        keep((codes != MISSING).any(1), "drop persons without response")
    screening: dict = {"enabled": bool(opt.screen_careless)}
    if opt.screen_careless:
        if codes.shape[0] == 0:
            raise DataFormatError(f"{where}: no persons left to screen")
        oriented = reorient(np.where(codes == MISSING, MISSING, codes - 1))
        factor = np.repeat(np.arange(len(FACTORS)), len(ITEMS) // len(FACTORS))
        flags, screening = careless.careless_flags(codes, oriented, testelapse, factor, N_CATEGORIES, opt, fit_grm)
        keep(~careless.drop_rule(flags), "careless-responder screen")

    y = np.where(codes == MISSING, MISSING, codes - 1).astype(np.int16)
    if opt.reorient:
        y = reorient(y)
    counts = pd.DataFrame(steps, columns=["step", "persons", "removed"])
    attrs = {
        "source": "ipip_ffm",
        "reoriented": bool(opt.reorient),
        "preprocess": dataclasses.asdict(opt),
        "row_counts": counts.to_dict(orient="records"),
        "screening": screening,
        "n_missing_cells": int((y == MISSING).sum()),
    }
    rm = ResponseMatrix(y, items(), attrs)
    _raw.check_nonempty(rm, where)
    if opt.require_all_categories:
        _raw.check_categories(rm, where)
    return rm, counts, rows


def reorient(y: np.ndarray) -> np.ndarray:
    """Map reverse-keyed items' categories k -> 4 - k (missing stays -1).

    Parameters
    ----------
    y : numpy.ndarray (N, 50)
        Categories 0..4, missing -1.

    Returns
    -------
    numpy.ndarray
        The re-oriented responses.
    """
    rev = np.array([it in REVERSE_KEYED for it in ITEMS])
    out = y.copy()
    out[:, rev] = np.where(y[:, rev] == MISSING, MISSING, N_CATEGORIES - 1 - y[:, rev])
    return out
