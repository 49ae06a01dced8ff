"""What seed 004 claims for VIBO, held against the study's run (the reproduction page,
``bayesirt.studies.reproduction``).

Seed 004 is a note on variational item response theory (Wu et al., 2020): amortized inference
whose ability posterior is a product of Gaussian experts, one per item, in which a missing
item's expert is replaced by the prior (a prior expert per missing response, none when every
item is answered), which it calls robust to missing data and says outperforms averaging over
the answered items. It reports no numbers; its claims are checked here against NUTS (the
reference posterior, at 1,000 persons), marginal ML with EAP scores and mean-field VI, and its
one comparison against the averaging encoder: accuracy, calibration of the ability intervals,
time, and robustness to missing responses (0/10/20% MCAR and 20% MNAR). Every claim row names
the VIBO method it judges: the seed's (``vibo_seed``) or this project's (``vibo_one_prior``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.evaluation import verdicts
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.reproduction import (
    DIAGNOSTICS,
    Claim,
    clean,
    describe,
    from_verdict,
    markdown_table,
    page_sentence,
    rests_on,
    seed_source,
    short,
    tolerance_verdict,
)
from bayesirt.studies.reproduction_claims import doubling_check, verdict_doubling
from bayesirt.studies.vibo import gradient_samples
from bayesirt.studies.vibo import tables as study_tables
from bayesirt.studies.vibo.conditions import VIBO_VARIANTS

TITLE = "vibo (seed 004): amortized variational IRT with missing responses, at scale"
INTRO = (
    "Seed 004 presents VIBO, amortized variational inference for IRT whose ability posterior is a "
    "product of Gaussian experts, one per item: an answered item's expert is a network of the item and "
    "the response, and a missing item's expert is replaced by the prior, so the product holds a prior "
    "expert per missing response and none when every item is answered. It calls the design robust to "
    "missing data, says it outperforms averaging over the answered items, and gives no numbers. The "
    "methods: `vibo_seed`, the seed's product with the settings the seed states (N(0, 1) item priors, "
    "one sample per gradient; `docs/reproduction/data/vibo/seed_settings.yaml`); `vibo_average_seed`, "
    "the averaging encoder the seed compares it with, all else as `vibo_seed`; `vibo_prior_per_missing`, "
    "the seed's product with this project's item priors; `vibo_one_prior`, this project's variant, "
    "which gives a missing response no expert and adds one prior expert to every product; mean-field "
    "VI, marginal ML with EAP scores, and NUTS at 1,000 persons. The seed leaves the optimizer, its "
    "rate, the batch, the stopping rule and the network sizes open; every VIBO method here uses this "
    "project's. A method a run did not fit is absent from its tables. The designs: a simulated 2PL with "
    "100 items at 1,000 to 1,000,000 persons, and the GRM at the RWA data's shape and on the real RWA "
    "data, with 0%, 10% and 20% of responses missing completely at random and 20% missing not at random."
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
SEED_VARIANT = "vibo_prior_per_missing"  # the seed's product with this project's item priors
SEED_METHOD = "vibo_seed"  # the seed's product with the settings the seed states
AVERAGE_METHOD = "vibo_average_seed"  # the averaging encoder the seed compares its product with
COVERAGE_TOLERANCE = 0.03  # a calibrated 90% interval covers within 3 points of 90%
ROBUST = seed_source("VIBO", "needs to be robust to missing data")
OUTPERFORM = seed_source("VIBO", "We found this design to outperform averaging over non-missing entries")


def report_claim(item: dict, method: str, design: str, f: pd.DataFrame, t: pd.DataFrame, doubled=None) -> Claim:
    """One of the report's claims (``vibo.tables.claim_verdicts``) as a page row: only the claim
    that the encoder is robust to missing data (MCAR) is the seed's; the thresholds are ours. The
    row rests on the judged methods' fits under the conditions the claim uses, and on the doubling
    check (``report_doubling``) where the diagnostics refitted them."""
    v, text = item["verdict"], item["claim"]
    reference = "nuts" if "NUTS" in text else "mml" if "MML" in text else None
    # the variants' comparison judges both of them, whichever method the row is listed under
    judged = list(VIBO_VARIANTS) if "prior expert" in text else [method] + ([reference] if reference else [])
    seed_claim = "robust" in text and "MNAR" not in text
    word, why = from_verdict(v), clean(page_sentence(v))
    if "faster" in text:
        # VIBO's fits of a condition are one block: its time per fit is one measurement per condition
        shared = t[t.method == method].groupby("missing").wall_seconds.nunique().eq(1).all()
        if shared and word in ("supported", "contradicted"):
            why += (
                f" VIBO's time per fit is one block's per condition, shared by its fits (no spread between its "
                f"replications): the interval holds NUTS's spread only, so the verdict is at most inconclusive "
                f"(the numbers alone say {word})."
            )
            word = "inconclusive"
    claim = Claim(
        f"{text} (`{method}`, design `{design}`)",
        '"robust to missing data"; no number' if "robust" in text else "no number in the seed",
        f"{v.n} paired replication{'s' if v.n != 1 else ''}; mean difference {v.mean_difference:.3g}",
        word,
        why,
        ", ".join(judged),
        **(ROBUST if seed_claim else {}),
    )
    used = f[f.method.isin(judged)]
    if item.get("missing") is not None:
        used = used[used.missing.isin(item["missing"])]
    check = report_doubling(item, method, used, f, t, doubled)
    return rests_on(claim, used, doubling=check, values=v.n)


def report_doubling(item: dict, method: str, used: pd.DataFrame, f: pd.DataFrame, t: pd.DataFrame, doubled=None):
    """The doubling check of a report claim: the claim judged again on the replications the
    diagnostics refitted (``diagnostics.doubled_fits``), once with the refitted fits' figures at
    the run's steps and once doubled, every other method's fits as the run's. None where the claim
    is not judged on a refitted figure, or where a fit it rests on (``used``) that did not meet its
    stopping rule was not refitted (doubling the others' steps would say nothing about it)."""
    figure, keys = item.get("figure"), ["design", "missing", "method", "rep"]
    if doubled is None or doubled.empty or f"{figure}_doubled" not in doubled:
        return None
    d = doubled.merge(f[["design"]].drop_duplicates(), on="design")
    unmet = used[~used.converged.astype(bool)]
    if d.empty or len(unmet.merge(d[keys], on=keys)) < len(unmet):
        return None
    covered = f.merge(d[["design", "missing", "rep"]].drop_duplicates(), on=["design", "missing", "rep"])

    def judged(column: str):
        new = covered.merge(d[[*keys, column]].rename(columns={column: "_refit"}), on=keys, how="left")
        new[figure] = new["_refit"].where(new["_refit"].notna(), new[figure])
        again = study_tables.claim_verdicts(new.drop(columns="_refit"), t, method)
        return next((c["verdict"] for c in again if c["claim"] == item["claim"]), None)

    first, second = judged(figure), judged(f"{figure}_doubled")
    if first is None or second is None:
        return None
    return verdict_doubling(first, second)


def verdict_claims(fits: pd.DataFrame, timings: pd.DataFrame, doubled=None) -> list[Claim]:
    """The report's own claims (``vibo.tables.claim_verdicts``), per design and per VIBO method
    judged: this project's ``vibo_one_prior`` and, where the run has it, the seed's ``vibo_seed``
    (the comparison of the two missing-data variants once, with ``vibo_one_prior``)."""
    rows = []
    for design in dict.fromkeys(fits.design):
        f, t = fits[fits.design == design], timings[timings.design == design]
        judged = [m for m in (VIBO, SEED_METHOD) if m in set(f.method)] or [VIBO]
        # the variants' comparison does not depend on the method judged: once, with ours
        frames = {method: f if method == VIBO else f[f.method != VIBO] for method in judged}
        rows += [
            report_claim(item, method, design, frame, t, doubled)
            for method, frame in frames.items()
            for item in study_tables.claim_verdicts(frame, t, method)
        ]
    return rows


def calibration_claims(fits: pd.DataFrame, doubled=None) -> list[Claim]:
    """Each VIBO variant's 90% ability intervals: coverage within 3 points of 90%, per design
    and missingness (simulated designs: they have a truth)."""
    rows = []
    known = fits[fits.coverage_90.notna()]
    for (design, missing), g in known.groupby(["design", "missing"], sort=False):
        for method in (VIBO, SEED_VARIANT, SEED_METHOD, AVERAGE_METHOD):
            c = g[g.method == method].coverage_90
            if c.empty:
                continue
            word, text = tolerance_verdict(c, 0.9, COVERAGE_TOLERANCE)
            claim = Claim(
                f"{method}'s 90% ability intervals are calibrated (design `{design}`, {missing})",
                "implied by a posterior approximation; no number",
                f"coverage {describe(c)}",
                word,
                f"the mean coverage within {COVERAGE_TOLERANCE} of 0.90: {text}",
                method,
            )
            where = {"design": design, "missing": missing}
            check = doubling_check(doubled, method, "coverage_90", "the mean coverage", where)
            rows.append(rests_on(claim, g[g.method == method], doubling=check))
    return rows


def comparison_claims(fits: pd.DataFrame, doubled=None) -> list[Claim]:
    """The seed's one comparison, "We found this design to outperform averaging over non-missing
    entries", per design: the seed's product (``vibo_seed``) against the averaging encoder
    (``vibo_average_seed``) on the same data sets, by ability RMSE where a truth exists and by
    the held-out log-likelihood of the new persons where it does not (the seed names no measure:
    this project's choice)."""
    rows = []
    for design, f in fits.groupby("design", sort=False):
        if not {SEED_METHOD, AVERAGE_METHOD} <= set(f.method):
            continue
        truth = f.ability_rmse.notna().any()
        column, direction = ("ability_rmse", "lower") if truth else ("heldout_loglik", "higher")
        d = verdicts.paired_differences(
            f, column, claimed=SEED_METHOD, baseline=AVERAGE_METHOD, units=["design", "missing", "rep"]
        )
        what = "ability RMSE" if truth else "held-out log-likelihood per new person"
        v = verdicts.paired_verdict(d, direction=direction, subject=f"the product's {what} minus the average's")
        claim = Claim(
            f"The product of experts outperforms averaging over the answered items "
            f"(`{SEED_METHOD}` against `{AVERAGE_METHOD}`, design `{design}`, {what})",
            '"We found this design to outperform averaging over non-missing entries"; no number',
            f"{v.n} paired replication{'s' if v.n != 1 else ''}; mean difference {v.mean_difference:.3g}",
            from_verdict(v),
            clean(page_sentence(v)),
            f"{SEED_METHOD}, {AVERAGE_METHOD}",
            **OUTPERFORM,
        )
        check = (
            doubling_check(
                doubled, SEED_METHOD, column, where={"design": design}, baseline=AVERAGE_METHOD, on=("missing", "rep")
            )
            if truth
            else None
        )
        rows.append(rests_on(claim, f[f.method.isin([SEED_METHOD, AVERAGE_METHOD])], doubling=check))
    return rows


def claims(tables: dict) -> list[Claim]:
    fits, doubled = tables["fits"], tables.get(f"{DIAGNOSTICS}/doubled_fits")
    samples = tables.get(f"{DIAGNOSTICS}/{gradient_samples.TABLE}")
    return (
        verdict_claims(fits, tables["timings"], doubled)
        + comparison_claims(fits, doubled)
        + calibration_claims(fits, doubled)
        + gradient_samples.claims(samples)  # the diagnostics' (one sample per gradient)
    )


def design_table(tables: dict) -> pd.DataFrame:
    fits, timings = tables["fits"], tables["timings"]
    # the seed's VIBO where the run has it, else ours (one column); the methods table has every method's
    timed = SEED_METHOD if SEED_METHOD in set(fits.method) else VIBO
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
                f"`{timed}` fit seconds (median)": f"{t[t.method == timed].wall_seconds.median():.1f}",
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


def complete_condition(fits: pd.DataFrame) -> str:
    """What the run's 0% conditions were: complete, or (runs before issue 45) with the scored
    cells hidden from the fits."""
    zero = fits[fits.missing.map(lambda m: parse_missing(m)[1] == 0)]
    if zero.empty or "hidden_log_score" not in zero:
        return ""
    if zero.hidden_log_score.notna().any():
        return (
            "**The 0% condition of this run is not complete data.** The run predates the change that "
            "made it so: in every condition, 0% included, a further 15% of each training person's "
            'answered cells (`score_fraction`) were hidden from the fits and scored, so at "0%" every '
            "fit saw about 15% of its cells missing, and the seed's product held about one prior expert "
            "per hidden cell (about 15 per person on the 100-item 2PL designs). Later runs hide no cell at 0%."
        )
    return (
        "The 0% condition is complete data: no cell is hidden from the fits, so the seed's product holds "
        "no prior expert there; it is scored on the truth and the new persons, and has no missing-response "
        "prediction."
    )


def sections(tables: dict) -> list[str]:
    note = complete_condition(tables["fits"])
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
        ),
        *([f"## The complete condition\n\n{note}\n"] if note else []),
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


def diagnostics_section(tables: dict, facts: dict) -> str:
    from bayesirt.studies.vibo import diagnostics

    return diagnostics.section(tables, facts)
