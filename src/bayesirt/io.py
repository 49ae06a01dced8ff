"""Files that pass between pipeline stages.

Response matrix (one format for every data set)
    ``<stem>.parquet``  persons x items, one int8 column per item, categories 0..K-1,
                        missing coded -1, in item order.
    ``<stem>.json``     sidecar: ``{"format": "bayesirt.responses/1", "n_persons", "items":
                        [{"name", "n_categories", "scale", "reverse_keyed"}, ...], "attrs"}``.

Fit outputs (one folder per fit)
    ``fit.json``        the fit record (method, study, data set, seed, timings, convergence, ...).
    ``estimates.csv``   tidy table: parameter, item, person, scale, category, mean, sd, true.
    ``loss.csv``        loss history: step, loss.
    ``posterior.nc``    ArviZ InferenceData with draws (where a method has draws).

Everything is written through a temporary file and renamed, so a failing job leaves no
final output behind.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

RESPONSES_FORMAT = "bayesirt.responses/1"
MISSING = -1


class DataFormatError(ValueError):
    """A data file does not follow the expected format; the message names file and place.

    A ``ValueError``.
    """


@dataclass(frozen=True)
class Item:
    """One item's metadata.

    Attributes
    ----------
    name : str
        The item's name (its column).
    n_categories : int
        K, categories 0..K-1.
    scale : str
        The scale the item belongs to.
    reverse_keyed : bool
        Whether the item is keyed the other way.
    """

    name: str
    n_categories: int
    scale: str = "all"
    reverse_keyed: bool = False


@dataclass
class ResponseMatrix:
    """Integer responses (persons x items), categories 0..K-1, missing -1, with item metadata.

    Attributes
    ----------
    responses : numpy.ndarray (N, J)
        Integer responses, -1 for missing.
    items : list of Item
        The items' metadata, one per column.
    attrs : dict
        Further metadata (source, screening ...).

    Raises
    ------
    DataFormatError
        If the responses do not match the items (see ``validate_responses``).
    """

    responses: np.ndarray
    items: list[Item]
    attrs: dict = field(default_factory=dict)

    def __post_init__(self):
        self.responses = np.asarray(self.responses)
        validate_responses(self.responses, self.items, where="response matrix")

    @property
    def n_persons(self) -> int:
        return self.responses.shape[0]

    @property
    def n_items(self) -> int:
        return self.responses.shape[1]

    @property
    def n_categories(self) -> np.ndarray:
        return np.array([it.n_categories for it in self.items], dtype=np.int32)

    @property
    def scales(self) -> list[str]:
        """Scale names in order of first appearance."""
        return list(dict.fromkeys(it.scale for it in self.items))

    @property
    def scale_index(self) -> np.ndarray:
        """For each item, the position of its scale in ``self.scales``."""
        lookup = {s: k for k, s in enumerate(self.scales)}
        return np.array([lookup[it.scale] for it in self.items], dtype=np.int32)

    @property
    def observed(self) -> np.ndarray:
        return self.responses != MISSING


def validate_responses(responses: np.ndarray, items: list[Item], where: str) -> None:
    """Check responses against item metadata.

    Parameters
    ----------
    responses : numpy.ndarray (N, J)
        Responses, -1 for missing.
    items : list of Item
        One per column.
    where : str
        Names the data in messages.

    Raises
    ------
    DataFormatError
        If ``responses`` is not a 2-d integer array with one column per item, or a code is
        outside 0..K_j-1 and -1.
    """
    if responses.ndim != 2:
        raise DataFormatError(f"{where}: expected a 2-d persons x items array, got shape {responses.shape}")
    if responses.shape[1] != len(items):
        raise DataFormatError(f"{where}: {responses.shape[1]} item columns but {len(items)} items in the metadata")
    if not np.issubdtype(responses.dtype, np.integer):
        raise DataFormatError(f"{where}: responses must be integers, got {responses.dtype}")
    for j, item in enumerate(items):
        col = responses[:, j]
        bad = (col < MISSING) | (col >= item.n_categories)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataFormatError(
                f"{where}: item '{item.name}' row {row} has code {int(col[row])}; "
                f"expected 0..{item.n_categories - 1} or {MISSING} for missing"
            )


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Yields
    ------
    pathlib.Path
        The temporary path to write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(obj, path) -> None:
    """Write ``obj`` as indented JSON, atomically.

    Parameters
    ----------
    obj : dict
        JSON-serializable (numpy scalars and arrays are converted).
    path : str or os.PathLike
        The file.
    """
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def write_npz(path, **arrays) -> None:
    """Like ``np.savez``, but byte-for-byte reproducible.

    numpy stamps each member with the current time; here every member carries the zip epoch.
    ``np.load`` reads it as usual.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    **arrays
        Name -> array.
    """
    import zipfile

    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for name, value in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)


def read_json(path) -> dict:
    """Read a JSON file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    dict
        The parsed JSON.
    """
    return json.loads(Path(path).read_text())


def _json_default(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.bool_):
        return bool(x)
    raise TypeError(f"not JSON serialisable: {type(x)}")


def write_table(df: pd.DataFrame, path) -> None:
    """CSV with full float precision (round-trips exactly, so reruns compare bit for bit).

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    path : str or os.PathLike
        The file.
    """
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.17g")


def write_responses(rm: ResponseMatrix, parquet_path) -> None:
    """Write a response matrix as parquet, with its item metadata in a JSON sidecar.

    Parameters
    ----------
    rm : ResponseMatrix
        The responses.
    parquet_path : str or os.PathLike
        The ``.parquet`` file; the sidecar is the same path with ``.json``.

    Raises
    ------
    ValueError
        If the path does not end in ``.parquet``.
    """
    parquet_path = Path(parquet_path)
    if parquet_path.suffix != ".parquet":
        raise ValueError(f"{parquet_path}: response matrices are written as .parquet")
    df = pd.DataFrame(rm.responses.astype(np.int8), columns=[it.name for it in rm.items])
    sidecar = {
        "format": RESPONSES_FORMAT,
        "n_persons": rm.n_persons,
        "items": [asdict(it) for it in rm.items],
        "attrs": rm.attrs,
    }
    with atomic_path(parquet_path) as tmp:
        df.to_parquet(tmp, index=False)
    write_json(sidecar, parquet_path.with_suffix(".json"))


def read_responses(parquet_path) -> ResponseMatrix:
    """Read a response matrix written by ``write_responses``.

    Parameters
    ----------
    parquet_path : str or os.PathLike
        The ``.parquet`` file (its ``.json`` sidecar beside it).

    Returns
    -------
    ResponseMatrix
        The responses and item metadata.

    Raises
    ------
    FileNotFoundError
        If the parquet file does not exist.
    DataFormatError
        If the sidecar is missing, of another format, or does not match the file.
    """
    parquet_path = Path(parquet_path)
    sidecar_path = parquet_path.with_suffix(".json")
    if not parquet_path.exists():
        raise FileNotFoundError(f"{parquet_path}: response matrix not found")
    if not sidecar_path.exists():
        raise DataFormatError(f"{sidecar_path}: item metadata sidecar missing")
    meta = read_json(sidecar_path)
    if meta.get("format") != RESPONSES_FORMAT:
        raise DataFormatError(f"{sidecar_path}: format is {meta.get('format')!r}, expected {RESPONSES_FORMAT!r}")
    items = [Item(**it) for it in meta["items"]]
    df = pd.read_parquet(parquet_path)
    names = [it.name for it in items]
    if list(df.columns) != names:
        raise DataFormatError(f"{parquet_path}: columns {list(df.columns)[:5]}... do not match sidecar items")
    if len(df) != meta["n_persons"]:
        raise DataFormatError(f"{parquet_path}: {len(df)} rows but sidecar says {meta['n_persons']}")
    return ResponseMatrix(df.to_numpy(dtype=np.int16), items, meta.get("attrs", {}))


LIBRARIES = (
    "bayesirt",
    "jax",
    "jaxlib",
    "tfp-nightly",
    "optax",
    "numpyro",
    "numpy",
    "scipy",
    "pandas",
    "arviz",
    "snakemake",
)


def library_versions() -> dict:
    """Versions of Python and the libraries a fit record names (None where not installed).

    Returns
    -------
    dict
        Library name -> version string or None.
    """
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    # TFP's JAX substrate comes as tfp-nightly (the lock) or, in an environment of the user's
    # own, possibly as tensorflow-probability: a record names whichever is installed
    if versions["tfp-nightly"] is None:
        del versions["tfp-nightly"]
        try:
            versions["tensorflow-probability"] = metadata.version("tensorflow-probability")
        except metadata.PackageNotFoundError:
            versions["tensorflow-probability"] = None
    return versions


def device_info() -> dict:
    """The JAX device a fit ran on, the CPU count and ``XLA_FLAGS``.

    Returns
    -------
    dict
        ``platform``, ``device``, ``kind`` (the hardware's name, e.g. the GPU model),
        ``cpu_count``, ``xla_flags``.
    """
    import jax

    dev = jax.devices()[0]
    # XLA_FLAGS can change XLA's optimization level (bayesirt.runtime), and with it the timings
    # and the last float32 bits
    return {
        "platform": dev.platform,
        "device": str(dev),
        "kind": getattr(dev, "device_kind", ""),
        "cpu_count": os.cpu_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
