"""Hide observed responses on purpose: MCAR, MAR and MNAR injection with a recorded mask.

``inject`` takes a response matrix (complete or with natural missingness, coded -1) and hides a
fraction ``rate`` of *all* cells (persons x items) on top of what is already missing. It returns
the injected matrix and a boolean mask of the cells it hid, so an evaluation can score
imputations against the values that were there.

How cells are chosen
    Exactly ``round(rate * persons * items)`` observed cells are hidden, so the achieved rate
    equals the target up to rounding (one cell); it is checked against the +-0.5 percentage
    point tolerance and recorded. Cells are drawn without replacement with probabilities
    proportional to a per-cell weight ``w`` (Efraimidis & Spirakis 2006 keys ``log(u) / w``,
    the largest keys win), where

    - ``mcar``: ``w = 1`` for every observed cell;
    - ``mar``: ``w = exp(strength * z_p)``, where ``z_p`` is the person's standardized mean
      response on a set of *driver* items (default: the first item of every scale). Driver
      items are never hidden, so the probability of hiding depends only on values that stay
      observed: missing at random in the strict sense;
    - ``mnar``: ``w = exp(strength * z_pj)``, where ``z_pj`` is the hidden response itself,
      standardized within its item (missing not at random). A positive ``strength`` hides high
      categories more often, a negative one low categories.

    With ``keep_one_per_person`` / ``keep_one_per_item`` one observed cell of every person /
    item (chosen at random among its observed cells, driver cells first for MAR) is protected
    before drawing, which guarantees the property whatever the rate. Persons or items that have
    no observed response to begin with are left alone (there is nothing to keep).

A rate that cannot be met (more cells than are observed and unprotected) raises ``ValueError``
naming the rate and how many cells could be hidden at most.
"""

from __future__ import annotations

import numpy as np

from bayesirt.io import MISSING, ResponseMatrix

KINDS = ("mcar", "mar", "mnar")
RATE_TOLERANCE = 0.005  # achieved rate must be within +-0.5 percentage points of the target


def inject(
    rm: ResponseMatrix,
    kind: str = "mcar",
    rate: float = 0.15,
    seed: int = 0,
    keep_one_per_person: bool = True,
    keep_one_per_item: bool = True,
    **kind_options,
) -> tuple[ResponseMatrix, np.ndarray]:
    """Hide ``rate`` of all cells; return the injected matrix and the mask of hidden cells.

    Parameters
    ----------
    rm : ResponseMatrix
        The responses.
    kind : str
        ``"mcar"``, ``"mar"`` or ``"mnar"``.
    rate : float
        Fraction of all cells to hide, in [0, 1).
    seed : int
        Seed.
    keep_one_per_person, keep_one_per_item : bool
        Never hide a person's or an item's last observed response.
    **kind_options
        mar: ``strength`` (default 1.0, log-weight per SD of the driver mean), ``drivers`` (item
        names never hidden whose values drive the probability; default the first item of every
        scale). mnar: ``strength`` (default 1.0, log-weight per within-item SD of the response).

    Returns
    -------
    tuple of (ResponseMatrix, numpy.ndarray)
        The matrix with the cells hidden (-1) and the mask of hidden cells (N, J).

    Raises
    ------
    ValueError
        If the kind, rate or options are not valid, or the rate cannot be met (more cells than
        are observed and unprotected).
    """
    if kind not in KINDS:
        raise ValueError(f"missingness kind '{kind}' is not known; expected one of {list(KINDS)}")
    rate = float(rate)
    if not np.isfinite(rate) or not 0.0 <= rate < 1.0:
        raise ValueError(f"missingness rate {rate} is outside [0, 1)")
    allowed = {"mcar": set(), "mar": {"strength", "drivers"}, "mnar": {"strength"}}[kind]
    unknown = sorted(set(kind_options) - allowed)
    if unknown:
        raise ValueError(f"option(s) {unknown} do not apply to missingness kind '{kind}'; allowed: {sorted(allowed)}")

    y = np.asarray(rm.responses)
    n_persons, n_items = y.shape
    n_cells = n_persons * n_items
    observed = y != MISSING
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), _KIND_SALT[kind]]))

    eligible = observed.copy()
    options: dict = {}
    if kind == "mar":
        drivers = _driver_columns(rm, kind_options.get("drivers"))
        strength = float(kind_options.get("strength", 1.0))
        options = {"strength": strength, "drivers": [rm.items[j].name for j in drivers]}
        eligible[:, drivers] = False
        log_w = np.broadcast_to(strength * _driver_score(y, drivers)[:, None], y.shape)
    elif kind == "mnar":
        strength = float(kind_options.get("strength", 1.0))
        options = {"strength": strength}
        log_w = strength * _standardize_within_items(y)
    else:
        drivers = np.array([], dtype=int)
        log_w = None

    protected = _protect(rng, observed, eligible, keep_one_per_person, keep_one_per_item)
    candidates = eligible & ~protected
    n_target = int(round(rate * n_cells))
    n_available = int(candidates.sum())
    if n_target > n_available:
        raise ValueError(
            f"missingness rate {rate} cannot be met: it needs {n_target} hidden cells but at most "
            f"{n_available} of {n_cells} ({n_available / n_cells:.4f}) can be hidden "
            f"({int(observed.sum())} observed, {int(protected.sum())} kept to leave one response "
            f"per person/item{', driver items never hidden' if kind == 'mar' else ''})"
        )

    flat = np.flatnonzero(candidates.ravel())
    hidden = np.zeros(n_cells, dtype=bool)
    if n_target > 0:
        u = rng.random(flat.size)
        # Efraimidis-Spirakis: key = log(u) / w; with w = exp(log_w): log(u) * exp(-log_w).
        keys = np.log(u) if log_w is None else np.log(u) * np.exp(-np.asarray(log_w).ravel()[flat])
        chosen = np.argpartition(-keys, n_target - 1)[:n_target] if n_target < flat.size else np.arange(flat.size)
        hidden[flat[chosen]] = True
    hidden = hidden.reshape(n_persons, n_items)

    achieved = float(hidden.sum()) / n_cells if n_cells else 0.0
    if abs(achieved - rate) > RATE_TOLERANCE:  # cannot happen with exact counts; kept as a guard
        raise ValueError(f"missingness rate {rate}: achieved {achieved:.4f}, outside +-0.5 points")
    out = np.where(hidden, MISSING, y).astype(y.dtype)
    record = {
        "kind": kind,
        "target_rate": rate,
        "achieved_rate": achieved,
        "seed": int(seed),
        "n_hidden": int(hidden.sum()),
        "n_cells": n_cells,
        "natural_missing_rate": float((~observed).sum()) / n_cells if n_cells else 0.0,
        "total_missing_rate": float((out == MISSING).sum()) / n_cells if n_cells else 0.0,
        "keep_one_per_person": bool(keep_one_per_person),
        "keep_one_per_item": bool(keep_one_per_item),
        **options,
    }
    attrs = {**rm.attrs, "missingness": record}
    return ResponseMatrix(out, list(rm.items), attrs), hidden


# Different kinds with the same seed draw from different streams.
_KIND_SALT = {"mcar": 1, "mar": 2, "mnar": 3}


def _driver_columns(rm: ResponseMatrix, drivers) -> np.ndarray:
    names = [it.name for it in rm.items]
    if drivers is None:
        first = {}
        for j, it in enumerate(rm.items):
            first.setdefault(it.scale, j)
        cols = sorted(first.values())
    else:
        if isinstance(drivers, str):
            drivers = [drivers]
        missing = [d for d in drivers if d not in names]
        if missing:
            raise ValueError(f"missingness option 'drivers': item(s) {missing} not in the matrix")
        cols = sorted({names.index(d) for d in drivers})
    if len(cols) >= len(names):
        raise ValueError("missingness option 'drivers': every item is a driver, nothing left to hide")
    return np.asarray(cols, dtype=int)


def _driver_score(y: np.ndarray, drivers: np.ndarray) -> np.ndarray:
    """Standardized mean of each person's observed driver responses (0 where none observed)."""
    sub = y[:, drivers].astype(np.float64)
    obs = sub != MISSING
    count = obs.sum(1)
    mean = np.where(count > 0, np.where(obs, sub, 0.0).sum(1) / np.maximum(count, 1), np.nan)
    return _zscore(mean)


def _standardize_within_items(y: np.ndarray) -> np.ndarray:
    yf = np.where(y == MISSING, np.nan, y.astype(np.float64))
    with np.errstate(invalid="ignore"):
        mu = np.nanmean(yf, axis=0) if y.size else np.zeros(y.shape[1])
        sd = np.nanstd(yf, axis=0)
    z = (yf - mu) / np.where(sd > 0, sd, 1.0)
    return np.nan_to_num(z, nan=0.0)


def _zscore(x: np.ndarray) -> np.ndarray:
    ok = np.isfinite(x)
    if ok.sum() < 2:
        return np.zeros_like(x)
    sd = x[ok].std()
    z = (x - x[ok].mean()) / (sd if sd > 0 else 1.0)
    return np.where(ok, z, 0.0)


def _protect(rng, observed, eligible, per_person: bool, per_item: bool) -> np.ndarray:
    """One observed cell per person and/or item that injection must not hide.

    Cells that are already ineligible (MAR drivers) count as kept, so a person whose driver
    response is observed needs no further protection.
    """
    protected = np.zeros_like(observed)
    kept = observed & ~eligible  # observed cells that will never be hidden anyway
    if per_person:
        need = observed.any(1) & ~kept.any(1)
        rows = np.flatnonzero(need)
        if rows.size:
            cols = _random_true_per_row(rng, observed[rows])
            protected[rows, cols] = True
    if per_item:
        covered = (kept | protected).any(0)
        need = observed.any(0) & ~covered
        cols = np.flatnonzero(need)
        if cols.size:
            rows = _random_true_per_row(rng, observed[:, cols].T)
            protected[rows, cols] = True
    return protected


def _random_true_per_row(rng, mask: np.ndarray) -> np.ndarray:
    """For each row of a boolean matrix with at least one True, the column of a random True."""
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    return keys.argmax(1)


def hidden_to_frame(rm: ResponseMatrix, hidden: np.ndarray):
    """The hidden-cell mask as a table with one bool column per item (for parquet output).

    Parameters
    ----------
    rm : ResponseMatrix
        The matrix (its item names).
    hidden : numpy.ndarray (N, J)
        The mask.

    Returns
    -------
    pandas.DataFrame
        One bool column per item.

    Raises
    ------
    ValueError
        If the mask's shape differs from the matrix.
    """
    import pandas as pd

    if hidden.shape != rm.responses.shape:
        raise ValueError(f"hidden mask shape {hidden.shape} differs from the matrix {rm.responses.shape}")
    return pd.DataFrame(hidden.astype(bool), columns=[it.name for it in rm.items])


def write_hidden(rm: ResponseMatrix, hidden: np.ndarray, path) -> None:
    """Write the hidden-cell mask as parquet (atomically), columns named after the items.

    Parameters
    ----------
    rm : ResponseMatrix
        The matrix (its item names).
    hidden : numpy.ndarray (N, J)
        The mask.
    path : str or os.PathLike
        The parquet file.
    """
    from bayesirt.io import atomic_path

    df = hidden_to_frame(rm, hidden)
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def read_hidden(path, rm: ResponseMatrix | None = None) -> np.ndarray:
    """Read a hidden-cell mask; with ``rm`` check that its columns match the matrix's items.

    Parameters
    ----------
    path : str or os.PathLike
        The parquet file.
    rm : ResponseMatrix, optional
        The matrix to check against.

    Returns
    -------
    numpy.ndarray
        The mask (N, J), bool.

    Raises
    ------
    ValueError
        If the columns do not match ``rm``'s items.
    """
    import pandas as pd

    df = pd.read_parquet(path)
    if rm is not None:
        names = [it.name for it in rm.items]
        if list(df.columns) != names or len(df) != rm.n_persons:
            raise ValueError(
                f"{path}: hidden mask does not match the response matrix "
                f"({len(df)} x {df.shape[1]} vs {rm.n_persons} x {rm.n_items})"
            )
    return df.to_numpy(dtype=bool)
