"""What seed 004 claims for VIBO, held against the study's run (the reproduction page,
``bayesirt.studies.reproduction``).

Seed 004 is a note on variational item response theory (Wu et al., 2020): amortized inference
whose ability posterior is a product of Gaussian experts, one per observed response and a prior
expert, which it calls robust to missing data. It reports no numbers, runs no experiment and
names no comparison method; its claims are checked here against NUTS (the reference posterior,
at 1,000 persons), marginal ML with EAP scores and mean-field VI: accuracy, calibration of the
ability intervals, time, and robustness to missing responses (0/10/20% MCAR and 20% MNAR).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.reproduction import (
    Claim,
    clean,
    describe,
    from_verdict,
    markdown_table,
    page_sentence,
    reaches,
    short,
)
from bayesirt.studies.vibo import tables as study_tables

TITLE = "vibo (seed 004): amortized variational IRT with missing responses, at scale"
INTRO = (
    "Seed 004 presents VIBO, amortized variational inference for IRT whose ability posterior is a "
    "product of Gaussian experts (one per observed response, and the prior), and calls it robust to "
    "missing data; it gives no numbers and names no baseline. The run fits a simulated 2PL with 100 "
    "items at 1,000 to 1,000,000 persons, and the GRM at the RWA data's shape and on the real RWA "
    "data, complete and with 10% and 20% of responses missing completely at random and 20% missing "
    "not at random, with VIBO (the seed's prior-per-missing-response variant and a one-prior "
    "variant), mean-field VI, marginal ML with EAP scores, and NUTS at 1,000 persons."
)
FIT_COLUMNS = [
    "design",
    "model",
    "missing",
    "method",
    "rep",
    "n_persons",
    "n_items",
    "converged",
    "status",
    "discrimination_rmse",
    "ability_rmse",
    "ability_corr",
    "coverage_90",
    "hidden_log_score",
    "heldout_loglik",
    "ability_rmse_to_nuts",
]
TABLES = {
    "*/fits.csv": FIT_COLUMNS,
    "*/timings.csv": ["design", "missing", "method", "rep", "wall_seconds"],
}
VIBO = "vibo_one_prior"
SEED_VARIANT = "vibo_prior_per_missing"
COVERAGE_TOLERANCE = 0.03  # a calibrated 90% interval covers within 3 points of 90%


def verdict_claims(fits: pd.DataFrame, timings: pd.DataFrame) -> list[Claim]:
    """The report's own claims (``vibo.tables.claim_verdicts``), per design."""
    rows = []
    for design in dict.fromkeys(fits.design):
        f, t = fits[fits.design == design], timings[timings.design == design]
        for item in study_tables.claim_verdicts(f, t, VIBO):
            v = item["verdict"]
            rows.append(
                Claim(
                    f"{item['claim']} (design `{design}`)",
                    '"robust to missing data"; no number' if "robust" in item["claim"] else "no number in the seed",
                    f"{v.n} paired replication{'s' if v.n != 1 else ''}; mean difference {v.mean_difference:.3g}",
                    from_verdict(v),
                    clean(page_sentence(v)),
                )
            )
    return rows


def calibration_claims(fits: pd.DataFrame) -> list[Claim]:
    """Each VIBO variant's 90% ability intervals: coverage within 3 points of 90%, per design
    and missingness (simulated designs: they have a truth)."""
    rows = []
    known = fits[fits.coverage_90.notna()]
    for (design, missing), g in known.groupby(["design", "missing"], sort=False):
        for method in (VIBO, SEED_VARIANT):
            c = g[g.method == method].coverage_90
            if c.empty:
                continue
            ok, _, _ = reaches(c, 0.9, COVERAGE_TOLERANCE)
            one = c.notna().sum() < 2  # no interval over replications
            rows.append(
                Claim(
                    f"{method}'s 90% ability intervals are calibrated (design `{design}`, {missing})",
                    "implied by a posterior approximation; no number",
                    f"coverage {describe(c)}",
                    "not comparable" if one else "supported" if ok else "not supported",
                    "one replication gives no interval over replications."
                    if one
                    else f"supported where the mean coverage's 95% interval reaches within {COVERAGE_TOLERANCE} "
                    "of 0.90.",
                )
            )
    return rows


def claims(tables: dict) -> list[Claim]:
    return verdict_claims(tables["fits"], tables["timings"]) + calibration_claims(tables["fits"])


def design_table(tables: dict) -> pd.DataFrame:
    fits, timings = tables["fits"], tables["timings"]
    rows = []
    for (design, missing), g in fits.groupby(["design", "missing"], sort=False):
        t = timings[(timings.design == design) & (timings.missing == missing)]
        rows.append(
            {
                "design": design,
                "model": g.model.iloc[0],
                "persons x items": f"{int(g.n_persons.iloc[0])} x {int(g.n_items.iloc[0])}",
                "missing": missing,
                "methods": ", ".join(dict.fromkeys(g.method)),
                "replications": int(g.rep.nunique()),
                "converged": f"{int(g.converged.sum())} of {len(g)}",
                "VIBO fit seconds (median)": f"{t[t.method == VIBO].wall_seconds.median():.1f}",
            }
        )
    return pd.DataFrame(rows)


# the methods table's columns: (fits column, heading); a column no fit of a design has is left blank
METHOD_COLUMNS = [
    ("ability_rmse", "ability RMSE"),
    ("coverage_90", "90% ability coverage"),
    ("discrimination_rmse", "discrimination RMSE"),
    ("ability_rmse_to_nuts", "ability RMSE to NUTS"),
    ("hidden_log_score", "hidden cells' log score"),
    ("heldout_loglik", "held-out log-likelihood"),
]


def methods_table(tables: dict) -> pd.DataFrame:
    """Every method side by side, per design (its missingness conditions pooled: every method
    fitted the same data sets): the mean of each measure over the fits with its 95% interval,
    and the median fit time."""
    fits, timings = tables["fits"], tables["timings"]
    rows = []
    for (design, method), g in fits.groupby(["design", "method"], sort=False):
        t = timings[(timings.design == design) & (timings.method == method)].wall_seconds
        row = {"design": design, "method": method, "fits": len(g), "converged": int(g.converged.sum())}
        row |= {heading: short(g[column]) if column in g else "" for column, heading in METHOD_COLUMNS}
        row["seconds (median)"] = f"{t.median():.3g}" if len(t) else ""
        rows.append(row)
    table = pd.DataFrame(rows)
    # a measure no design has (e.g. the distance to NUTS in a run without NUTS) is not shown
    return table.loc[:, [c for c in table.columns if (table[c] != "").any()]]


def sections(tables: dict) -> list[str]:
    return [
        "\n".join(
            [
                "## The methods side by side",
                "",
                "Per design, pooled over its missingness conditions: the mean over fits with its 95% "
                "interval (RMSEs and coverage against the simulated truth; the log score of the hidden "
                "cells, per cell, and the held-out log-likelihood, per new person, also where no truth exists), "
                "and the median wall time of a fit (a block's time shared among its fits), evaluation excluded.",
                "",
                *markdown_table(methods_table(tables)),
                "",
            ]
        )
    ]


def time_figure(timings: pd.DataFrame):
    """Median wall time of a fit per method, by design (log scale)."""
    designs = list(dict.fromkeys(timings.design))
    methods = list(dict.fromkeys(timings.method))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(designs)), 3.8))
    width = 0.8 / max(len(methods), 1)
    for k, method in enumerate(methods):
        medians = [timings[(timings.design == d) & (timings.method == method)].wall_seconds.median() for d in designs]
        ax.bar(np.arange(len(designs)) + (k - (len(methods) - 1) / 2) * width, medians, width, label=method)
    ax.set_yscale("log")
    ax.set_ylim(top=20 * timings.groupby(["design", "method"]).wall_seconds.median().max())  # room for the legend
    ax.set_ylabel("seconds per fit (median)")
    ax.set_xticks(range(len(designs)), designs)
    ax.legend(fontsize=7, ncol=min(len(methods), 5))
    fig.tight_layout()
    return fig


def accuracy_figure(fits: pd.DataFrame):
    """Ability RMSE and 90% coverage per method, by design and missingness (simulated designs)."""
    known = fits[fits.ability_rmse.notna()]
    groups = list(known.groupby(["design", "missing"], sort=False))
    methods = list(dict.fromkeys(known.method))
    fig, axes = plt.subplots(2, 1, figsize=(max(7, 0.9 * len(groups)), 6.5), sharex=True)
    width = 0.8 / max(len(methods), 1)
    for k, method in enumerate(methods):
        for row, column in enumerate(("ability_rmse", "coverage_90")):
            means, halves = [], []
            for _, g in groups:
                v = g[g.method == method][column].dropna()
                means.append(v.mean() if len(v) else np.nan)
                halves.append(1.96 * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0)
            x = np.arange(len(groups)) + (k - (len(methods) - 1) / 2) * width
            axes[row].errorbar(x, means, yerr=halves, fmt="o", ms=4, capsize=2, label=method)
    axes[1].axhline(0.9, color="black", ls="--", lw=1)
    axes[0].set_ylabel("ability RMSE")
    axes[1].set_ylabel("90% interval coverage")
    axes[1].set_xticks(range(len(groups)), [f"{d}\n{m}" for (d, m), _ in groups], fontsize=7)
    axes[0].legend(fontsize=7, ncol=len(methods))
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    plotting.save(accuracy_figure(tables["fits"]), folder / "accuracy.png")
    plotting.save(time_figure(tables["timings"]), folder / "time.png")
    return [
        (
            "accuracy.png",
            "Ability RMSE against the truth (top) and coverage of the 90% ability intervals (bottom) per method, "
            "mean over replications with its 95% interval, by design and missingness.",
        ),
        ("time.png", "Median wall time of one fit per method and design, evaluation excluded (log scale)."),
    ]
