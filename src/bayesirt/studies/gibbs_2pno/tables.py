"""The tables of one gibbs_2pno design from its fit records and estimates (``aggregate``), and
the study's claim about two fits of the same data (``agreement``: do their posteriors agree
within Monte Carlo error?)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.studies.gibbs_2pno.conditions import ITEM_PARAMETERS, PARAMETERS


def fit_row(record: dict) -> dict:
    """One row of fits.csv from a fit record (no timings: those go to timings.csv)."""
    d = record["diagnostics"]
    return {
        "design": record["design"],
        "missing": record["missing"],
        "method": record["method"],
        "rep": record["replication"],
        "n_persons": record["n_persons"],
        "n_items": record["n_items"],
        "missing_rate": record["missing_rate"],
        "n_chains": record["n_chains"],
        "sweeps": record["steps"],
        "converged": records.is_converged(record),
        "status": records.convergence_status(record),
        "max_r_hat": d["max_r_hat"],
        "min_ess_bulk": d["min_ess_bulk"],
        "min_ess_tail": d["min_ess_tail"],
        **record.get("evaluation", {}),
    }


def _diagnostics(rec: dict, est: pd.DataFrame) -> list[dict]:
    rows = []
    for par in PARAMETERS:
        e = est[est.parameter == par]
        if not len(e):
            continue
        rows.append(
            {
                "missing": rec["missing"],
                "method": rec["method"],
                "rep": rec["replication"],
                "parameter": par,
                "n": len(e),
                "max_r_hat": e["r_hat"].max(),
                "share_r_hat_below_1.01": float(np.mean(e["r_hat"] < 1.01)),
                "min_ess_bulk": e["ess_bulk"].min(),
                "median_ess_bulk": e["ess_bulk"].median(),
                "min_ess_tail": e["ess_tail"].min(),
                "max_mcse_mean": e["mcse_mean"].max(),
            }
        )
    return rows


def compare(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> pd.DataFrame:
    """Item parameters of two fits of the same data side by side: means, sds, 90% intervals,
    MCSEs, and the difference of means in units of its Monte Carlo error
    z = (m_a - m_b) / sqrt(mcse_a^2 + mcse_b^2), and the ratio of sds."""
    cols = ["parameter", "item", "mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk"]
    ia, ib = (x[x.parameter.isin(ITEM_PARAMETERS)] for x in (a, b))
    keep = cols + (["true"] if "true" in ia else [])
    m = ia[keep].merge(ib[cols], on=["parameter", "item"], suffixes=tuple(f"_{n}" for n in names))
    na, nb = names
    m["z"] = (m[f"mean_{na}"] - m[f"mean_{nb}"]) / np.sqrt(m[f"mcse_mean_{na}"] ** 2 + m[f"mcse_mean_{nb}"] ** 2)
    m["sd_ratio"] = m[f"sd_{na}"] / m[f"sd_{nb}"]
    return m


def _recovery(fits: pd.DataFrame) -> pd.DataFrame:
    metric_cols = [c for c in fits.columns if c.endswith(("_rmse", "_corr", "_coverage_90"))]
    group = fits.groupby(["design", "missing", "method"], sort=True)
    recovery = group[metric_cols].mean().add_suffix("_mean").join(group[metric_cols].std().add_suffix("_sd"))
    recovery.insert(0, "replications", group.size())
    recovery.insert(1, "n_chains", group["n_chains"].first())
    recovery.insert(2, "converged", group["converged"].mean())
    return recovery.reset_index()


def _pairs(by_key: dict, other: str, names: tuple[str, str], samplers=("gibbs",)) -> pd.DataFrame:
    """Each Gibbs sampler of ``samplers`` against the method ``other`` on every condition with
    both, the sampler in column ``method`` (the columns named by ``names`` whichever it is)."""
    out = []
    for (missing, method, rep), (_, e) in sorted(by_key.items()):
        if method in samplers and (missing, other, rep) in by_key:
            c = compare(e, by_key[(missing, other, rep)][1], names)
            c.insert(0, "method", method)
            c.insert(0, "rep", rep)
            c.insert(0, "missing", missing)
            out.append(c)
    return (
        pd.concat(out, ignore_index=True)
        if out
        else pd.DataFrame(columns=["missing", "rep", "method", "parameter", "item", "z", "sd_ratio"])
    )


def _timings(fit_records: list[dict]) -> pd.DataFrame:
    timings = pd.DataFrame(
        [
            {
                "design": r["design"],
                "missing": r["missing"],
                "method": r["method"],
                "rep": r["replication"],
                "n_chains": r["n_chains"],
                "sweeps": r["steps"],
                **{
                    k: r["timing"][k]
                    for k in (
                        "wall_seconds",
                        "compile_seconds",
                        "item_min_ess_bulk",
                        "item_median_ess_bulk",
                        "item_min_ess_per_second",
                        "item_median_ess_per_second",
                    )
                },
            }
            for r in fit_records
        ]
    ).sort_values(["missing", "method", "rep"], kind="stable")
    return timings.reset_index(drop=True)


def aggregate(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one design from its fits:

    ``fits``         one row per fit: convergence, worst diagnostics, recovery
    ``recovery``     mean and sd over replications of RMSE, correlation and 90% coverage per
                     missingness x method, with the number of replications
    ``diagnostics``  R-hat and ESS per parameter block of every fit
    ``nuts``         Gibbs (augmented; ``method`` gibbs, and the seed's plain sampler, gibbs_seed)
                     against NUTS, every item parameter (empty without NUTS)
    ``missing``      augmented against omitted missing cells, every item parameter
    ``timings``      wall and compile seconds, item ESS and ESS per second (run-dependent)
    """
    fits = pd.DataFrame([fit_row(r) for r in fit_records]).sort_values(["missing", "method", "rep"], kind="stable")
    fits = fits.reset_index(drop=True)
    recovery = _recovery(fits)

    by_key = {(r["missing"], r["method"], r["replication"]): (r, e) for r, e in zip(fit_records, estimates)}
    diagnostics = pd.DataFrame([row for r, e in by_key.values() for row in _diagnostics(r, e)])
    diagnostics = diagnostics.sort_values(["missing", "method", "rep", "parameter"], kind="stable")
    diagnostics = diagnostics.reset_index(drop=True)

    return {
        "fits": fits,
        "recovery": recovery,
        "diagnostics": diagnostics,
        # ours and the seed's plain sampler against the same NUTS fits
        "nuts": _pairs(by_key, "nuts", ("gibbs", "nuts"), samplers=("gibbs", "gibbs_seed")),
        "missing": _pairs(by_key, "gibbs_omit", ("augment", "omit")),
        "timings": _timings(fit_records),
    }


def agreement(pairs: pd.DataFrame) -> dict:
    """Summary of a side-by-side table: how many item parameters, the largest |z|, the share
    with |z| < 3 (agreement within Monte Carlo error) and the range of the sd ratios."""
    if pairs.empty:
        return {"n": 0}
    z = pairs["z"].abs()
    return {
        "n": int(len(pairs)),
        "max_abs_z": float(z.max()),
        "share_abs_z_below_3": float(np.mean(z < 3)),
        "sd_ratio_min": float(pairs["sd_ratio"].min()),
        "sd_ratio_max": float(pairs["sd_ratio"].max()),
    }
