"""Item and person tables beside a fit (``items.csv``, ``persons.csv``), from what the fit wrote.

``tables(folder, rm, person_ids)`` reads the fit's record, estimates and (where the method
has draws) ``posterior.nc``, and returns the two tables of ``evaluation.irt_tables``:

* ``factorized_grm`` (rb_imputation, mean-field ADVI): item values from the posterior draws of
  discriminations and thresholds (so b and d have posterior means and sds); person scores are
  the variational posterior means and sds of the abilities, one factor per scale.
* ``mgrm`` (amortized_ifa, IWAE / IWAVB): item values are point estimates (empty sd); person
  scores are the means and sds of the encoder's q(z | x) for confirmatory fits. Exploratory fits
  have no person scores (their factors are rotated after fitting; the encoder's are not), so
  their person table has the columns and no rows.

* ``2pl`` (vibo) and ``2pno`` (gibbs_2pno, probit link): from the posterior draws where the fit
  wrote them (Gibbs samplers, NUTS), else from the means and sds in the estimates (VIBO,
  mean-field VI, MML: the IRT form is then a plug-in of the means, ``sd`` empty); person scores
  are the method's posterior (or encoder's) means and sds on the one factor ``theta``.
* ``grm`` (vibo's GRM designs): the same from the means and sds of the discriminations and the
  cuts (intercepts d_k = -cut_k).

Other models (the mixture GRM of ``n_dimensions`` > 1, the LCDM of dcm_bbvi, whose persons
have attribute profiles rather than abilities) are not in these forms: ``tables`` raises.
"""

from __future__ import annotations

from pathlib import Path

import h5netcdf
import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.data import item_direction
from bayesirt.evaluation import irt_tables

MODELS = ("factorized_grm", "mgrm", "2pl", "2pno", "grm")


def tables(folder, rm: io.ResponseMatrix, person_ids=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, persons) of the fit in ``folder``; ``rm`` is the response matrix it was fitted
    to, ``person_ids`` its persons' ids (default: the row numbers)."""
    folder = Path(folder)
    record = io.read_json(folder / "fit.json")
    estimates = pd.read_csv(folder / "estimates.csv")
    ids = list(person_ids) if person_ids is not None else [str(i) for i in range(rm.n_persons)]
    if len(ids) != rm.n_persons:
        raise ValueError(f"{folder}: {len(ids)} person ids for {rm.n_persons} persons of the fitted data")
    names, scales = [it.name for it in rm.items], [it.scale for it in rm.items]
    model = record.get("model")
    if model == "factorized_grm":
        return _factorized(folder, estimates, rm, names, scales, ids)
    if model == "mgrm":
        return _mgrm(estimates, record, rm, names, scales, ids)
    if model in ("2pl", "2pno"):
        return _binary(folder, estimates, record, rm, names, scales, ids)
    if model == "grm":
        return _grm(estimates, record, rm, names, scales, ids)
    raise ValueError(f"{folder}: item and person tables exist for the models {list(MODELS)}, not '{model}'")


def _posterior_draws(path, names, missing_ok: bool = False) -> dict | None:
    """Arrays of the posterior group of an ArviZ netCDF file, read with h5netcdf (the engine
    the records are written with): the same values as ``arviz.from_netcdf``, without the
    seconds its import costs in a job that only reads three arrays."""
    with h5netcdf.File(path, "r") as f:
        group = f["posterior"]
        if missing_ok and not all(n in group.variables for n in names):
            return None
        return {n: np.asarray(group[n][...]) for n in names}


def _factorized(folder, estimates, rm, names, scales, ids):
    post = _posterior_draws(folder / "posterior.nc", ("discrimination", "base_difficulty", "increments"))
    a = post["discrimination"].reshape(-1, rm.n_items)  # (S, I): chains x draws
    base = post["base_difficulty"].reshape(-1, rm.n_items)
    inc = post["increments"].reshape(a.shape[0], rm.n_items, -1)
    # the model's ordered thresholds: first threshold plus the cumulative increments
    tau = base[..., None] + np.concatenate([np.zeros_like(base)[..., None], np.cumsum(inc, -1)], -1)
    slopes = np.zeros((a.shape[0], rm.n_items, len(rm.scales)))
    slopes[:, np.arange(rm.n_items), rm.scale_index] = a
    items = irt_tables.item_table(
        slopes, irt_tables.thresholds_to_slope_intercept(a, tau), rm.n_categories, names, scales, rm.scales
    )
    ab = estimates[estimates.parameter == "ability"]
    mean = _grid(ab, "scale", rm.scales, rm.n_persons, "mean")
    sd = _grid(ab, "scale", rm.scales, rm.n_persons, "sd")
    loads = np.eye(len(rm.scales), dtype=bool)[rm.scale_index]
    persons = irt_tables.person_table(
        mean,
        sd,
        rm.scales,
        ids,
        irt_tables.answered_per_factor(rm.observed, loads),
        "posterior mean and sd (mean-field ADVI)",
    )
    return items, persons


def _mgrm(estimates, record, rm, names, scales, ids):
    lam = estimates[estimates.parameter == "loading"]
    factors = lam.drop_duplicates("factor").sort_values("factor")["factor_name"].astype(str).tolist()
    slopes = np.zeros((1, rm.n_items, len(factors)))
    slopes[0, lam["item"].to_numpy(), lam["factor"].to_numpy()] = lam["mean"].to_numpy()
    ints = estimates[estimates.parameter == "intercept"]
    d = np.zeros((1, rm.n_items, int(rm.n_categories.max()) - 1))
    d[0, ints["item"].to_numpy(), ints["category"].to_numpy() - 1] = ints["mean"].to_numpy()
    items = irt_tables.item_table(slopes, d, rm.n_categories, names, scales, factors)
    ab = estimates[estimates.parameter == "ability"]
    if ab.empty:
        return items, pd.DataFrame(columns=irt_tables.PERSON_COLUMNS)
    mean = _grid(ab, "factor_name", factors, rm.n_persons, "mean")
    sd = _grid(ab, "factor_name", factors, rm.n_persons, "sd")
    loads = slopes[0] != 0
    persons = irt_tables.person_table(
        mean,
        sd,
        factors,
        ids,
        irt_tables.answered_per_factor(rm.observed, loads),
        f"encoder q(z|x) mean and sd ({record.get('method')})",
    )
    return items, persons


def _binary(folder, estimates, record, rm, names, scales, ids):
    """2PL (vibo) and 2PNO (gibbs_2pno): eta = a theta - difficulty, so the slope-intercept
    intercept is d = -difficulty and b = difficulty / a. Draws where the fit kept them in
    posterior.nc (Gibbs samplers, NUTS), else the means with the method's sds."""
    path = folder / "posterior.nc"
    draws = _posterior_draws(path, ("discrimination", "difficulty"), missing_ok=True) if path.exists() else None
    if draws is not None and draws["discrimination"].shape[-1] == rm.n_items:
        a = draws["discrimination"].reshape(-1, rm.n_items, 1)
        d = -draws["difficulty"].reshape(-1, rm.n_items, 1)
        a_sd = d_sd = None
    else:
        item_rows = {
            p: estimates[estimates.parameter == p].sort_values("item") for p in ("discrimination", "difficulty")
        }
        a = item_rows["discrimination"]["mean"].to_numpy().reshape(1, rm.n_items, 1)
        d = -item_rows["difficulty"]["mean"].to_numpy().reshape(1, rm.n_items, 1)
        a_sd = item_rows["discrimination"]["sd"].to_numpy().reshape(rm.n_items, 1)
        d_sd = item_rows["difficulty"]["sd"].to_numpy().reshape(rm.n_items, 1)
    items = irt_tables.item_table(a, d, rm.n_categories, names, scales, ["theta"], a_sd, d_sd)
    ab = estimates[estimates.parameter == "ability"].assign(factor_name="theta")
    mean = _grid(ab, "factor_name", ["theta"], rm.n_persons, "mean")
    sd = _grid(ab, "factor_name", ["theta"], rm.n_persons, "sd")
    persons = irt_tables.person_table(
        mean, sd, ["theta"], ids, rm.observed.sum(1, keepdims=True), f"posterior mean and sd ({record.get('method')})"
    )
    return items, persons


def _grm(estimates, record, rm, names, scales, ids):
    """Unidimensional GRM (vibo, ``models.irt2pl``): P(Y >= k) = sigmoid(a theta - cut_k), so the
    slope-intercept intercepts are d_k = -cut_k; item values from the means with the method's
    sds (the IRT form a plug-in of the means)."""
    a_rows = estimates[estimates.parameter == "discrimination"].sort_values("item")
    cuts = estimates[estimates.parameter == "cut"]
    width = int(rm.n_categories.max()) - 1
    d, d_sd = np.full((rm.n_items, width), np.nan), np.full((rm.n_items, width), np.nan)
    d[cuts["item"].to_numpy(), cuts["category"].to_numpy() - 1] = -cuts["mean"].to_numpy()
    d_sd[cuts["item"].to_numpy(), cuts["category"].to_numpy() - 1] = cuts["sd"].to_numpy()
    a = a_rows["mean"].to_numpy().reshape(1, rm.n_items, 1)
    items = irt_tables.item_table(
        a, d[None], rm.n_categories, names, scales, ["theta"], a_rows["sd"].to_numpy().reshape(rm.n_items, 1), d_sd
    )
    ab = estimates[estimates.parameter == "ability"].assign(factor_name="theta")
    persons = irt_tables.person_table(
        _grid(ab, "factor_name", ["theta"], rm.n_persons, "mean"),
        _grid(ab, "factor_name", ["theta"], rm.n_persons, "sd"),
        ["theta"],
        ids,
        rm.observed.sum(1, keepdims=True),
        f"posterior mean and sd ({record.get('method')})",
    )
    return items, persons


def _grid(rows: pd.DataFrame, column: str, names, n_persons: int, value: str) -> np.ndarray:
    """(N, P) of ``value`` from tidy ability rows keyed by person and ``column`` (a factor name)."""
    out = np.full((n_persons, len(names)), np.nan)
    col = {str(n): p for p, n in enumerate(names)}
    out[rows["person"].to_numpy(), rows[column].astype(str).map(col).to_numpy()] = rows[value].to_numpy()
    if np.isnan(out).any():
        raise ValueError(f"ability estimates do not cover {int(np.isnan(out).sum())} person x factor cells")
    return out


def write(folder, rm: io.ResponseMatrix, person_ids_csv=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``items.csv`` and ``persons.csv`` beside the fit in ``folder`` (after
    ``records.write_fit``); ``person_ids_csv`` is a table data set's ``persons.csv``."""
    folder = Path(folder)
    items, persons = tables(folder, rm, read_person_ids(person_ids_csv) if person_ids_csv else None)
    irt_tables.warn_items_at_bound(
        items,
        str(folder),
        item_direction.item_rest_correlations(rm)  # keyed the wrong way?
        if rm.attrs.get("source") == "table"
        else None,
    )
    io.write_table(items, folder / "items.csv")
    io.write_table(persons, folder / "persons.csv")
    return items, persons


def read_person_ids(persons_csv, part: str = "train") -> list[str]:
    """Ids of one part of a prepared table data set (``persons.csv`` of ``data.table``), in matrix order."""
    p = pd.read_csv(persons_csv, dtype={"person_id": str}, keep_default_na=False)
    return p[p.part == part].sort_values("row")["person_id"].tolist()
