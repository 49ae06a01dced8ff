"""Model checks beside a fit (``item_fit.csv``, ``person_fit.csv``, ``global_fit.json``), from
what the fit wrote: its record and its item table (``items.csv``, ``studies.fit_tables``).

The checks are ``evaluation.fit_checks.check`` at the fit's item values: the slope-intercept
rows of ``items.csv`` (posterior means where the fit has draws, else its estimates), one factor
per item with independent standard-normal abilities (the factorized GRM's scales, the
unidimensional 2PL, 2PNO and GRM), the logit link but for the 2PNO's probit. Their reference
distributions are replications at those values with each person's missing cells held fixed: a
parametric bootstrap at the point estimates (the item values are not redrawn), and the files
say so.

The LCDM (dcm_bbvi) enters with its attribute profiles as the latent states: the profile
probabilities and each item's probability of a correct answer per profile, from the means of
its ``estimates.csv`` and the Q-matrix the data carry.

Models whose abilities are correlated factors (amortized_ifa's MGRM) or that have neither
(the mixture GRM) are refused with the reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import io, records
from bayesirt.evaluation import fit_checks
from bayesirt.models import lcdm

FILES = ("item_fit.csv", "person_fit.csv", "global_fit.json")
MODELS = ("factorized_grm", "2pl", "2pno", "grm", "lcdm")
REPLICATIONS = 50
MAX_PERSONS = 20_000  # beyond it a random subset is checked (memory grows as persons x items x nodes)


def grid(folder, rm: io.ResponseMatrix) -> fit_checks.LatentGrid:
    """The latent grid of the fit in ``folder`` (its model at the item values of its
    ``items.csv``), for the response matrix ``rm`` it was fitted to.

    Parameters
    ----------
    folder : path
        The fit's folder (``fit.json``, ``items.csv``).
    rm : io.ResponseMatrix
        The responses the fit saw.

    Returns
    -------
    fit_checks.LatentGrid
        The model on a Gauss-Hermite grid per factor.

    Raises
    ------
    ValueError
        A one-line message naming the fit when it has no item values to check, or its model
        is not one the checks handle.
    """
    folder = Path(folder)
    record = io.read_json(folder / "fit.json")
    model = record.get("model")
    if model not in MODELS:
        raise ValueError(f"{folder}: model checks exist for the models {list(MODELS)}, not '{model}'")
    if model == "lcdm":
        return _lcdm_grid(folder, rm)
    path = folder / "items.csv"
    items = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["form", "parameter", "item", "mean"])
    rows = items[items["form"] == "slope_intercept"]
    a_rows = rows[rows["parameter"] == "a"].sort_values("item")
    d_rows = rows[rows["parameter"] == "d"]
    if a_rows.empty or not np.isfinite(a_rows["mean"]).all() or not np.isfinite(d_rows["mean"]).all():
        raise ValueError(f"{folder}: the fit kept no item estimates or draws to check (items.csv missing or empty)")
    if a_rows["item"].duplicated().any():
        raise ValueError(f"{folder}: items load on several factors; the checks need one factor per item")
    a = a_rows["mean"].to_numpy()
    factors = a_rows["factor"].astype(str).tolist()
    scale_index = np.unique(factors, return_inverse=True)[1]
    if model == "2pno":
        d = d_rows.sort_values("item")["mean"].to_numpy()
        return fit_checks.twopno_grid(a, -d)._replace(scale_index=scale_index)
    cuts = np.full((rm.n_items, int(rm.n_categories.max()) - 1), 0.0)
    cuts[d_rows["item"].to_numpy(), d_rows["category"].to_numpy() - 1] = -d_rows["mean"].to_numpy()
    return fit_checks.grm_grid(a, cuts, rm.n_categories, scale_index)


def _lcdm_grid(folder: Path, rm: io.ResponseMatrix) -> fit_checks.LatentGrid:
    """Profiles as states: the means of the profile probabilities and of the coefficients."""
    path = folder / "estimates.csv"
    est = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["parameter", "item", "category", "mean"])
    beta_rows = est[est["parameter"] == "beta"]
    pi_rows = est[est["parameter"] == "profile_probability"].sort_values("category")
    if beta_rows.empty or pi_rows.empty or "q_matrix" not in rm.attrs:
        raise ValueError(f"{folder}: the fit kept no coefficient and profile estimates, or the data no Q-matrix")
    q = np.asarray(rm.attrs["q_matrix"])
    design = lcdm.design(q)
    beta = np.zeros(design.feature_mask.shape)
    beta[beta_rows["item"].to_numpy(), beta_rows["category"].to_numpy()] = beta_rows["mean"].to_numpy()
    logits = np.einsum("jck,jk->cj", design.delta, beta)  # (profiles, items)
    pi = pi_rows["mean"].to_numpy()
    return fit_checks.lcdm_grid(np.log(pi / pi.sum()), 1 / (1 + np.exp(-logits)))


def write(
    folder, rm: io.ResponseMatrix, n_replications: int = REPLICATIONS, max_persons: int = MAX_PERSONS
) -> fit_checks.FitChecks:
    """Write ``item_fit.csv``, ``person_fit.csv`` and ``global_fit.json`` beside the fit.

    With more than ``max_persons`` persons, a random subset of that many (seeded by the fit's
    seed) is checked, and ``global_fit.json`` says so (``persons_checked``); ``person_fit.csv``
    then has the subset's rows, by their row in the fitted matrix.

    Parameters
    ----------
    folder : path
        The fit's folder.
    rm : io.ResponseMatrix
        The responses the fit saw.
    n_replications : int
        Replicated data sets of the local-dependence p-values.
    max_persons : int
        The most persons checked.

    Returns
    -------
    fit_checks.FitChecks
        The checks written.
    """
    folder = Path(folder)
    record = io.read_json(folder / "fit.json")
    seed = int(record.get("seed") or 0)
    rows = np.arange(rm.n_persons)
    if rm.n_persons > max_persons:
        rows = np.sort(np.random.default_rng(seed).choice(rm.n_persons, max_persons, replace=False))
    # the LCDM's items have one coefficient per feature of their Q-matrix row, the others one
    # slope and K_j - 1 intercepts (item_fit's default)
    m = lcdm.design(np.asarray(rm.attrs["q_matrix"])).n_features if record.get("model") == "lcdm" else None
    checks = fit_checks.check(
        rm.responses[rows], grid(folder, rm), n_parameters=m, n_replications=n_replications, seed=seed
    )
    checks = checks._replace(persons=checks.persons.assign(person=rows[checks.persons["person"].to_numpy()]))
    names = np.array([it.name for it in rm.items])
    scales = np.array([it.scale for it in rm.items])
    items = checks.items.assign(item_name=names[checks.items["item"]], scale=scales[checks.items["item"]])
    items.insert(1, "item_name", items.pop("item_name"))
    items.insert(2, "scale", items.pop("scale"))
    io.write_table(items, folder / "item_fit.csv")
    io.write_table(checks.persons, folder / "person_fit.csv")
    summary = {"model": record.get("model"), **checks.summary, "persons": rm.n_persons, "persons_checked": len(rows)}
    io.write_json(summary, folder / "global_fit.json")
    return checks._replace(summary=summary)


def collected(results_dir) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The checks of every fit under ``results_dir``
    (``<design>/<missing>/<method>/blocks/block<b>/rep<r>/``, as the block jobs wrote them), for
    a report: one row per fit with its flagged shares, and the item and person tables pooled.

    Parameters
    ----------
    results_dir : path
        A study's results folder.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(fits, items, persons)``: ``fits`` has design, missing, method, rep and the shares of
        items flagged (any check, item fit, local dependence) and of persons flagged; ``items``
        and ``persons`` are the fits' ``item_fit.csv`` and ``person_fit.csv`` with the same keys.
    """
    base = Path(results_dir)
    fits, items, persons = [], [], []
    # in the order of the fits' names, <design>/<missing>/<method>/rep<r>
    for path in sorted(base.glob("*/*/*/blocks/block*/rep*/global_fit.json"), key=records.fit_name):
        folder = path.parent
        design, missing, method, rep = records.fit_name(folder.relative_to(base)).parts
        keys = {"design": design, "missing": missing, "method": method, "rep": int(rep.removeprefix("rep"))}
        summary = io.read_json(path)
        fits.append(
            {
                **keys,
                "items flagged": summary["items_flagged"] / summary["items"],
                "item misfit": summary["items_misfit"] / summary["items"],
                "local dependence": summary["items_local_dependence"] / summary["items"],
                "persons flagged": summary["persons_flagged_share"],
            }
        )
        items.append(pd.read_csv(folder / "item_fit.csv").assign(**keys))
        persons.append(pd.read_csv(folder / "person_fit.csv").assign(**keys))
    if not fits:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    return pd.DataFrame(fits), pd.concat(items, ignore_index=True), pd.concat(persons, ignore_index=True)
