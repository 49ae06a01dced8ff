"""Diagnostics behind gibbs_2pno's reproduction page: the doubling check of the rows whose Gibbs fits
did not all meet their convergence rule (R-hat and ESS).

On the study's own simulated data sets (the run's data, masks and fit seeds, rebuilt from the
config's seed as the workflow builds them), each Gibbs sampler of ``DOUBLED`` (the seed's plain
one, then ours) is fitted as the study fits it, as a block, and again with twice the warm-up and
twice the draws. Two figures per fit, each at the run's length and doubled: the mean 90%
coverage of the item parameters (the coverage rows), and, where the design fits NUTS, the share
of item-parameter means more than three Monte Carlo errors from NUTS's (the agreement rows, the
seed's claim), NUTS fitted once per data set as the study fits it. Where the fits behind a row
did not all converge, the row keeps its verdict only if doubling moves its figure by less than
its interval (``reproduction_claims.doubling``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from bayesirt.seeds import derive
from bayesirt.studies.gibbs_2pno.conditions import STUDY, Condition
from bayesirt.studies.reproduction_diagnostics import doubled_rows

DOUBLED = ("gibbs_seed", "gibbs")
FIGURES = ("sweeps", "converged", "max_r_hat", "coverage_90", "z_share")  # each at the run's length and doubled
COLUMNS = ["design", "missing", "method", "rep", *FIGURES, *(f"{c}_doubled" for c in FIGURES), "seconds"]


def data_set(config: dict, design: str, missing: str, rep: int):
    """(responses, truth, fit seed) of one replication of a simulated design, as the workflow builds it."""
    from bayesirt.studies.gibbs_2pno import data

    seed, spec = config["seed"], config["studies"][STUDY]["designs"][design]
    rm, truth = data.simulate_condition(
        spec,
        missing,
        derive(seed, "data", STUDY, design, rep),
        missing_seed=derive(seed, "missing", STUDY, design, missing, rep),
    )
    return rm, truth, derive(seed, "fit", STUDY, design, missing, rep)


def with_sweeps(settings, factor: int = 2):
    """The study's settings with the Gibbs samplers' warm-up and draws ``factor`` times as long."""
    g = settings.gibbs
    return replace(settings, gibbs=replace(g, n_warmup=factor * g.n_warmup, n_samples=factor * g.n_samples))


def z_share(estimates: pd.DataFrame, nuts: pd.DataFrame | None) -> float:
    """The share of item-parameter means more than 3 Monte Carlo errors from NUTS's (NaN without NUTS)."""
    from bayesirt.studies.gibbs_2pno.tables import compare

    if nuts is None:
        return float("nan")
    return float((compare(estimates, nuts, ("gibbs", "nuts")).z.abs() > 3).mean())


def figures_of(out, nuts: pd.DataFrame | None) -> dict:
    from bayesirt import records

    rec, ev = out.record, out.record.get("evaluation", {})
    return {
        "sweeps": int(rec["steps"]),
        "converged": bool(records.is_converged(rec)),
        "max_r_hat": float(rec["diagnostics"]["max_r_hat"]),
        "coverage_90": (ev.get("discrimination_coverage_90", np.nan) + ev.get("difficulty_coverage_90", np.nan)) / 2,
        "z_share": z_share(out.estimates, nuts),
    }


def doubled_fits(config: dict, n_data_sets: int, progress=print) -> pd.DataFrame:
    """``DOUBLED`` (those the config fits) on the first ``n_data_sets`` data sets of every simulated
    design, under each of its missingness conditions: a block at the run's length, and again doubled."""
    from bayesirt.studies.gibbs_2pno import methods
    from bayesirt.studies.gibbs_2pno.settings import Settings

    study, base = config["studies"][STUDY], Settings.from_config(config)
    samplers = [m for m in DOUBLED if m in study["methods"]]
    rows = []
    for design, spec in study["designs"].items():
        if "dataset" in spec or not samplers:
            continue  # real data: no truth to cover
        n = min(n_data_sets, int(spec["replications"]), int(spec["block_size"]))
        for missing in spec["missing"]:
            sets = [data_set(config, design, missing, rep) for rep in range(n)]
            nuts = [None] * n
            if spec["nuts"] and "nuts" in study["methods"]:
                fits = [(rm, t, Condition(design, missing, "nuts", rep), s) for rep, (rm, t, s) in enumerate(sets)]
                nuts = [methods.fit(rm, t, cond, base, seed=s).estimates for rm, t, cond, s in fits]
            for method in samplers:
                reps = [
                    methods.Replication(rm, truth, Condition(design, missing, method, rep), seed)
                    for rep, (rm, truth, seed) in enumerate(sets)
                ]
                t0 = time.perf_counter()
                first, second = (
                    [figures_of(o, e) for o, e in zip(methods.fit_block(reps, s), nuts, strict=True)]
                    for s in (base, with_sweeps(base))
                )
                seconds = round((time.perf_counter() - t0) / n, 1)
                labels = {"design": design, "missing": missing, "method": method}
                rows += doubled_rows(labels, first, second, FIGURES, seconds)
                cover = [np.mean([f["coverage_90"] for f in fits]) for fits in (first, second)]
                progress(
                    f"{design} {missing} {method}: converged {sum(f['converged'] for f in first)} -> "
                    f"{sum(f['converged'] for f in second)} of {n}; coverage {cover[0]:.3f} -> {cover[1]:.3f}"
                )
    return pd.DataFrame(rows, columns=COLUMNS)


# The page's diagnostic table (``tools/reproduction.py diagnose gibbs_2pno``): the doubling check
# of the seed's plain sampler and ours on the study's own simulated data sets.
PARTS = {"doubled_fits": doubled_fits}


# ---- the page's section ---------------------------------------------------------------------------


def summary(doubled: pd.DataFrame) -> pd.DataFrame:
    """A row per design, missingness and sampler: convergence, R-hat, coverage and agreement with
    NUTS, at the run's length and doubled."""
    rows = []
    for (design, missing, method), d in doubled.groupby(["design", "missing", "method"], sort=False):
        agree = d.z_share.notna().any()
        rows.append(
            {
                "condition": f"design `{design}`, {missing}",
                "sampler": f"`{method}`",
                "data sets": len(d),
                "sweeps -> doubled": f"{d.sweeps.iloc[0]:,} -> {d.sweeps_doubled.iloc[0]:,}",
                "converged -> doubled": f"{int(d.converged.sum())} -> {int(d.converged_doubled.sum())} of {len(d)}",
                "largest R-hat -> doubled": f"{d.max_r_hat.max():.4f} -> {d.max_r_hat_doubled.max():.4f}",
                "90% coverage -> doubled": f"{d.coverage_90.mean():.3f} -> {d.coverage_90_doubled.mean():.3f}",
                "|z| > 3 against NUTS -> doubled": (
                    f"{d.z_share.mean():.2%} -> {d.z_share_doubled.mean():.2%}" if agree else "no NUTS here"
                ),
            }
        )
    return pd.DataFrame(rows)


def section(tables: dict, facts: dict) -> str:
    from bayesirt.studies.reproduction import markdown_table
    from bayesirt.studies.reproduction_diagnostics import made_by, part_facts

    doubled = tables.get("doubled_fits")
    if doubled is None or doubled.empty:
        return ""
    designs = list(dict.fromkeys(doubled.design))
    named = ("design " if len(designs) == 1 else "designs ") + ", ".join(f"`{d}`" for d in designs)
    return "\n".join(
        [
            "## Diagnostics: twice the sweeps",
            "",
            f"The seed's plain sampler and ours refitted on the first {doubled.rep.nunique()} data sets of {named} "
            "(the run's data, masks and fit seeds), as a block at the run's length and again with "
            "twice the warm-up and twice the draws; NUTS once per data set where the design fits it "
            f"({made_by(part_facts(facts, 'doubled_fits'))}; "
            "`bayesirt.studies.gibbs_2pno.diagnostics`). Where the fits "
            "behind a row did not all converge, the row keeps its verdict only if doubling moves its figure by less "
            "than its interval (the row says so).",
            "",
            *markdown_table(summary(doubled)),
            "",
        ]
    )
