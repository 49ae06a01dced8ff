"""What seed 000 argues, held against the study's run on the real RWA data (the reproduction
page, ``bayesirt.studies.reproduction``).

Seed 000 fits a factorized GRM by mean-field ADVI to the RWA data with 15% of responses hidden
completely at random, imputes the hidden cells M times from a pairwise ordinal stacking model,
and argues by Jensen's inequality that averaging the M copies' likelihoods (Rao-Blackwellized,
a log-mean-exp) is better than averaging their log-likelihoods; zero-fill (the observed cells
only) is its baseline. It reports no numbers. The run adds the missingness the argument is about:
hidden cells that depend on the person (MAR, given the person's other items) and on the hidden
response itself (MNAR). Every error is an RMSE against the complete-data fit of the same data.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.rb_imputation import diagnostics
from bayesirt.studies.rb_imputation import tables as study_tables
from bayesirt.studies.reproduction import (
    DIAGNOSTICS,
    Claim,
    clean,
    describe,
    from_verdict,
    page_sentence,
    rests_on,
    seed_source,
)

TITLE = "rb_imputation (seed 000): Rao-Blackwellized imputation for the GRM, on the real RWA data"
INTRO = (
    "Seed 000 fits a factorized graded response model by mean-field ADVI to the RWA data (22 items, 9 "
    "categories) subsampled to 500 persons, with 15% of the responses hidden completely at random, imputes "
    "the hidden cells M = 3 times from a pairwise ordinal stacking model, and argues that averaging the "
    "copies' likelihoods (Rao-Blackwellized) beats averaging their log-likelihoods (naive); zero-fill "
    "(ignoring the hidden cells) is its baseline. It reports no numbers. The run fits the seed's design "
    "(500 persons, 15% MCAR) and, beside it, all 9,881 persons under the missingness designs of the table "
    "below: completely at random (the seed's) and, where the run has them, at random given the person's "
    "other items (MAR) and depending on the hidden response itself (MNAR); every objective for each number "
    "of copies M of its sweep "
    "(the figure's axis), on independent masks (the table below gives their number). The seed's "
    "objective as written is `rao_blackwell_seed` (one log-mean-exp over the whole batch's copies, M = 3); "
    "`rao_blackwell` (one per person) is this project's. Each error is the RMSE of a fit's item "
    "discriminations against the complete-data fit of the same persons, paired by mask."
)
SUMMARY_COLUMNS = [
    "condition",
    "objective",
    "n_copies",
    "rep",
    "converged",
    "status",
    "steps",
    "discrimination_rmse_vs_complete_data",
    "base_difficulty_rmse_vs_complete_data",
    "ability_rmse_vs_complete_data",
]
TABLES = {
    "*/*/summary.csv": SUMMARY_COLUMNS,
    "*/*/imputation.csv": ["rep", "n_cells", "log_score", "accuracy", "marginal_log_score", "marginal_accuracy"],
    "*/*/timings.csv": ["condition", "rep", "steps", "wall_seconds"],
}
WILDCARDS = {name: ("dataset", "missing") for name in TABLES}
SEED_COPIES = 3  # the seed's M
ERROR = "discrimination_rmse_vs_complete_data"
KINDS = {"mcar": "completely at random", "mar": "at random given the other items", "mnar": "not at random"}


def kind(missing: str) -> str:
    return next(k for k in ("mnar", "mar", "mcar") if missing.startswith(k))


def designs(summary: pd.DataFrame) -> list[tuple[str, str]]:
    return list(summary[["dataset", "missing"]].drop_duplicates().itertuples(index=False, name=None))


def copies_near_seed(s: pd.DataFrame) -> int:
    """The seed's M where the run has it, else the run's M closest to it."""
    copies = sorted({int(m) for m in s.n_copies.dropna()})
    return min(copies, key=lambda m: (abs(m - SEED_COPIES), m)) if copies else SEED_COPIES


def behind(s: pd.DataFrame, *conditions: str) -> pd.DataFrame:
    """The fits a comparison of ``conditions`` rests on."""
    return s[s.condition.isin(conditions)]


def judged(claim: Claim, s: pd.DataFrame, doubled: pd.DataFrame | None, *conditions: str) -> Claim:
    """``claim`` resting on the fits of ``conditions`` (the one judged, then its baseline) in ``s``
    (one data set and missingness), with the diagnostics' doubling check where they refitted them
    (``doubled``: their ``seed_design_fits`` and ``full_data_fits``)."""
    check = None
    if doubled is not None and not doubled.empty and s.missing.iloc[0] == "mcar15":
        fits = doubled[doubled.dataset == s.dataset.iloc[0]]
        if set(conditions) <= set(fits.condition):
            check = diagnostics.paired_doubling(fits, *conditions)
    return rests_on(claim, behind(s, *conditions), doubling=check)


def objectives(s: pd.DataFrame, *conditions: str) -> str:
    return ", ".join(dict.fromkeys(s[s.condition.isin(conditions)].objective))


def jensen_claims(summary: pd.DataFrame, doubled: pd.DataFrame | None = None) -> list[Claim]:
    """The seed's argument (section 5): its own objective as written (``rao_blackwell_seed``,
    where the run has it), then this project's per-person form, against naive averaging at the
    seed's M."""
    rows = []
    for dataset, missing in designs(summary):
        s = summary[(summary.dataset == dataset) & (summary.missing == missing)]
        m = copies_near_seed(s)
        naive = f"naive_average_M{m}"
        for rb in (f"rao_blackwell_seed_M{SEED_COPIES}", f"rao_blackwell_M{m}"):
            if rb not in set(s.condition) or naive not in set(s.condition):
                continue
            whose = (
                "as the seed writes it, one log-mean-exp per batch"
                if "seed" in rb
                else "per person, this project's form"
            )
            v = study_tables.jensen_verdict(s, rb, naive)
            claim = Claim(
                f"Averaging the {m} copies' likelihoods (Rao-Blackwellized, {whose}) brings the fit closer to the "
                f"complete-data fit than averaging their log-likelihoods ({dataset}, {missing})",
                f"Jensen's inequality (section 5), M = {SEED_COPIES}; no number",
                f"{rb} {describe(s[s.condition == rb][ERROR])}; {naive} {describe(s[s.condition == naive][ERROR])}",
                from_verdict(v),
                clean(page_sentence(v)),
                objectives(s, rb, naive),
                **seed_source("5.1 The naive approach", "By Jensen's inequality"),
            )
            rows.append(judged(claim, s, doubled, rb, naive))
    return rows


def zero_fill_claims(summary: pd.DataFrame, doubled: pd.DataFrame | None = None) -> list[Claim]:
    """Each imputation objective at the seed's M (and the exact marginal) against zero-fill."""
    rows = []
    for dataset, missing in designs(summary):
        s = summary[(summary.dataset == dataset) & (summary.missing == missing)]
        if "zero_fill" not in set(s.condition):
            continue
        ignorable, m = kind(missing) != "mnar", copies_near_seed(s)
        for condition in dict.fromkeys(s.condition):
            copies = s[s.condition == condition].n_copies.iloc[0]
            if condition == "zero_fill" or (np.isfinite(copies) and copies != m):
                continue
            v = study_tables.paired_rmse_verdict(s, condition, "zero_fill")
            in_seed = kind(missing) == "mcar"
            seed = (
                "zero-fill is the seed's baseline (section 7, item 4); the seed reports no comparison with it"
                if in_seed
                else "not in the seed (15% MCAR only)"
            )
            why = clean(page_sentence(v)) + (
                " The hidden cells depend at most on observed responses (ignorable), so zero-fill's "
                "observed-cell likelihood is already the right one."
                if ignorable
                else " The hidden cells depend on their own values (not ignorable): zero-fill is biased, and "
                "so is an imputation model fitted to the observed cells."
            )
            claim = Claim(
                f"Imputation by {condition} brings the fit closer to the complete-data fit than zero-fill "
                f"({dataset}, {missing}: {KINDS[kind(missing)]})",
                seed,
                f"{condition} {describe(s[s.condition == condition][ERROR])}; zero-fill "
                f"{describe(s[s.condition == 'zero_fill'][ERROR])}",
                from_verdict(v),
                why,
                objectives(s, condition, "zero_fill"),
                **(seed_source("7. Notebook Workflow Summary", "Baseline") if in_seed else {}),
            )
            rows.append(judged(claim, s, doubled, condition, "zero_fill"))
    return rows


def copies_claims(summary: pd.DataFrame, doubled: pd.DataFrame | None = None) -> list[Claim]:
    """More copies: the Rao-Blackwellized objective with the most copies against one copy."""
    rows = []
    for dataset, missing in designs(summary):
        s = summary[
            (summary.dataset == dataset) & (summary.missing == missing) & (summary.objective == "rao_blackwell")
        ]
        copies = sorted(s.n_copies.dropna().unique())
        if len(copies) < 2:
            continue
        few, many = f"rao_blackwell_M{int(copies[0])}", f"rao_blackwell_M{int(copies[-1])}"
        v = study_tables.paired_rmse_verdict(s, many, few)
        claim = Claim(
            f"More imputed copies help the Rao-Blackwellized objective ({dataset}, {missing}: M = "
            f"{int(copies[-1])} against M = {int(copies[0])})",
            f"not in the seed: it fits M = {SEED_COPIES} only",
            f"{many} {describe(s[s.condition == many][ERROR])}; {few} {describe(s[s.condition == few][ERROR])}",
            from_verdict(v),
            clean(page_sentence(v)),
            "rao_blackwell",
        )
        rows.append(judged(claim, s, doubled, many, few))
    return rows


def claims(tables: dict) -> list[Claim]:
    # the refits of both designs (the seed's and the full data set): ``judged`` takes each row's
    refits = [tables.get(f"{DIAGNOSTICS}/{name}") for name in ("seed_design_fits", "full_data_fits")]
    refits = [t for t in refits if t is not None and not t.empty]
    summary, doubled = tables["summary"], pd.concat(refits, ignore_index=True) if refits else None
    return jensen_claims(summary, doubled) + copies_claims(summary, doubled) + zero_fill_claims(summary, doubled)


diagnostic_inputs = diagnostics.inputs


def diagnostics_section(tables: dict, facts: dict) -> str:
    from bayesirt.studies.rb_imputation.diagnostics_section import section

    return section(tables, facts)


def design_table(tables: dict) -> pd.DataFrame:
    summary, imputation = tables["summary"], tables["imputation"]
    rows = []
    for dataset, missing in designs(summary):
        s = summary[(summary.dataset == dataset) & (summary.missing == missing)]
        imp = imputation[(imputation.dataset == dataset) & (imputation.missing == missing)]
        rows.append(
            {
                "data": dataset,
                "missingness": f"{missing} ({KINDS[kind(missing)]})",
                "replications (masks)": int(s.rep.nunique()),
                "conditions": int(s.condition.nunique()),
                "fits": len(s),
                "converged": f"{int(s.converged.sum())} of {len(s)}",
                "hidden cells per mask": f"{imp.n_cells.mean():.0f}",
                "imputation accuracy": f"{imp.accuracy.mean():.3f} (marginal {imp.marginal_accuracy.mean():.3f})",
            }
        )
    return pd.DataFrame(rows)


def sweep_figure(summary: pd.DataFrame):
    """Discrimination RMSE against the complete-data fit by M, per objective and missingness."""
    groups = designs(summary)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.8), squeeze=False, sharey=True)
    for ax, (dataset, missing) in zip(axes[0], groups, strict=True):
        s = summary[(summary.dataset == dataset) & (summary.missing == missing)]
        for k, objective in enumerate(dict.fromkeys(s.objective)):
            o = s[s.objective == objective]
            if o.n_copies.notna().any():
                g = o.groupby("n_copies")[ERROR]
                mean, sem = g.mean(), g.std(ddof=1) / np.sqrt(g.size())
                ax.errorbar(mean.index, mean, yerr=1.96 * sem.fillna(0), marker="o", ms=4, capsize=2, label=objective)
            else:
                mean = o[ERROR].mean()
                half = 1.96 * o[ERROR].std(ddof=1) / np.sqrt(len(o)) if len(o) > 1 else 0.0
                ax.axhline(mean, color=f"C{k}", ls="--", lw=1, label=objective)
                ax.axhspan(mean - half, mean + half, color=f"C{k}", alpha=0.12)
        ax.set_xscale("log")
        ax.set_xlabel("imputed copies M")
        ax.set_title(f"{dataset}, {missing}", fontsize=9)
    axes[0][0].set_ylabel("discrimination RMSE vs complete data")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    plotting.save(sweep_figure(tables["summary"]), folder / "sweep.png")
    return [
        (
            "sweep.png",
            "Discrimination RMSE against the complete-data fit (mean over masks, 95% interval) for each objective "
            "by the number of imputed copies M; objectives without copies are the dashed lines and bands.",
        )
    ]
