"""Synthetic files in the exact raw format of the IPIP-FFM ``data-final.csv`` (test fixtures
and the full-size parsing benchmark); see ``bayesirt.data.ipip`` for the format."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from bayesirt.data.grm_sampling import sample_grm
from bayesirt.data.ipip import COLUMNS, ITEMS, REVERSE_KEYED, TIME_COLUMNS
from bayesirt.io import atomic_path


def write_synthetic_raw(
    path,
    n_persons: int,
    seed: int = 0,
    careless_fraction: float = 0.05,
    multi_ip_fraction: float = 0.3,
    null_rows: int = 0,
    zero_fraction: float = 0.002,
) -> dict:
    """Write a file in the exact raw format of ``data-final.csv`` (for tests and benchmarks).

    Responses come from a five-factor GRM (10 items per factor, reverse-keyed items reversed);
    a ``careless_fraction`` of persons answer uniformly at random within 40-140 s or give one
    long string; ``multi_ip_fraction`` of persons get IPC > 1; ``null_rows`` rows are NULL in
    every item and timing column; ``zero_fraction`` of item cells are 0 (no answer).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    n_persons : int
        Rows.
    seed : int
        Seed.
    careless_fraction, multi_ip_fraction, zero_fraction : float
        As above.
    null_rows : int
        As above.

    Returns
    -------
    dict
        The planted truth (careless row indices, IPC, ...).
    """
    rng = np.random.default_rng(seed)
    n = n_persons
    factor = np.repeat(np.arange(5), 10)
    a = np.exp(rng.normal(0.3, 0.25, size=50))
    cuts = np.sort(rng.normal(0, 1.2, size=(50, 4)), axis=1) + np.linspace(-0.6, 0.6, 4)
    theta = rng.normal(size=(n, 5))
    y = sample_grm(rng, theta[:, factor] * a, cuts) + 1  # 1..5 oriented
    rev = np.array([it in REVERSE_KEYED for it in ITEMS])
    y[:, rev] = 6 - y[:, rev]
    careless = rng.random(n) < careless_fraction
    kind = rng.random(n)
    rand_rows = careless & (kind < 0.6)
    string_rows = careless & (kind >= 0.6)
    y[rand_rows] = rng.integers(1, 6, size=(rand_rows.sum(), 50))
    y[string_rows] = rng.choice([1, 5], size=string_rows.sum())[:, None]
    y[rng.random(y.shape) < zero_fraction] = 0
    times = rng.lognormal(8.3, 0.5, size=(n, 50)).astype(np.int64)
    testelapse = np.where(
        careless & (rng.random(n) < 0.7),
        rng.integers(40, 140, size=n),
        rng.lognormal(5.7, 0.5, size=n).astype(np.int64),
    )
    ipc = np.where(rng.random(n) < multi_ip_fraction, rng.integers(2, 40, size=n), 1)
    null = np.zeros(n, dtype=bool)
    if null_rows:
        null[rng.choice(n, size=min(null_rows, n), replace=False)] = True
    start = np.datetime64("2016-03-03T02:01:01") + rng.integers(0, 8e7, size=n).astype("timedelta64[s]")
    date = np.datetime_as_string(start, unit="s")
    date = np.char.replace(date.astype("U19"), "T", " ")
    countries = np.array(["US", "GB", "DE", "IN", "CA", "AU", "PH", "NONE"])

    def as_text(values, null_mask):
        arr = pc.cast(pa.array(values), pa.string())
        return pc.if_else(pa.array(null_mask), pa.scalar("NULL"), arr) if null_mask.any() else arr

    cols = {}
    for j, name in enumerate(ITEMS):
        cols[name] = as_text(y[:, j], null)
    for j, name in enumerate(TIME_COLUMNS):
        cols[name] = as_text(times[:, j], null)
    cols["dateload"] = pa.array(date)
    cols["screenw"] = as_text(rng.choice([768, 1024, 1366, 1920, 375], size=n), np.zeros(n, bool))
    cols["screenh"] = as_text(rng.choice([1024, 768, 1080, 667], size=n), np.zeros(n, bool))
    cols["introelapse"] = as_text(rng.integers(1, 300, size=n), np.zeros(n, bool))
    cols["testelapse"] = as_text(testelapse, null)
    cols["endelapse"] = as_text(rng.integers(1, 60, size=n), np.zeros(n, bool))
    cols["IPC"] = as_text(ipc, np.zeros(n, bool))
    cols["country"] = pa.array(countries[rng.integers(0, len(countries), size=n)])
    cols["lat_appx_lots_of_err"] = as_text(np.round(rng.uniform(-40, 60, size=n), 4), np.zeros(n, bool))
    cols["long_appx_lots_of_err"] = as_text(np.round(rng.uniform(-120, 150, size=n), 4), np.zeros(n, bool))
    table = pa.table(cols)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(("\t".join(COLUMNS) + "\n").encode())  # pyarrow would quote the header
        pacsv.write_csv(
            table, fh, write_options=pacsv.WriteOptions(delimiter="\t", quoting_style="none", include_header=False)
        )
    return {"careless": careless, "ipc": ipc, "null_rows": null, "n_persons": n}
