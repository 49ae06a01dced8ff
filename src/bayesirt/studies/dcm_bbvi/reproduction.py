"""What seed 002 reported, held against the study's run at the seed's scale (the reproduction
page, ``bayesirt.studies.reproduction``).

The seed fits its LCDM by black-box VI to one simulated data set (1,000 persons, 30 items, 2
attributes, complete responses) and reports an overall classification accuracy of 0.967, with a
figure of the estimated against the true coefficients. One data set's accuracy depends on the
data set drawn, so the page sets 0.967 against the distribution over replications of each
method's accuracy and of the oracle's (modal profiles at the true parameters: what the data set
allowed).
"""

from __future__ import annotations

from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.evaluation import verdicts
from bayesirt.studies.dcm_bbvi import diagnostics, seed_methods
from bayesirt.studies.dcm_bbvi import figures as study_figures
from bayesirt.studies.dcm_bbvi.conditions import SEED_ACCURACY, SEED_METHODS
from bayesirt.studies.reproduction import (
    DIAGNOSTICS,
    Claim,
    clean,
    describe,
    from_verdict,
    page_sentence,
    rests_on,
    seed_source,
    spread,
)
from bayesirt.studies.reproduction_claims import doubling_check

TITLE = "dcm_bbvi (seed 002): black-box VI for the LCDM, at the seed's scale"
INTRO = (
    "Seed 002 fits a log-linear cognitive diagnosis model by black-box VI (Rao-Blackwellized "
    "score-function gradients) to one simulated data set of 1,000 persons, 30 items and 2 "
    f"attributes, and reports an overall classification accuracy of {SEED_ACCURACY}. The run fits "
    "the seed's design and a larger one (2,000 persons, 20 items, 4 attributes), complete and with "
    "20% of responses missing completely at random, with every method of the study. A data set's "
    "accuracy depends on the data set drawn, so each method's accuracy is set against the oracle's "
    "(modal profiles at the true parameters) on the same data sets."
)
FIT_COLUMNS = [
    "design",
    "missing",
    "method",
    "rep",
    "converged",
    "status",
    "steps",
    "pattern_accuracy",
    "attribute_accuracy",
    "beta_rmse",
    "beta_coverage_95",
]
ESTIMATE_COLUMNS = ["design", "missing", "method", "rep", "parameter", "item", "category", "mean", "sd", "true"]
TABLES = {
    "fits.csv": FIT_COLUMNS,
    "oracle.csv": None,
    "timings.csv": ["design", "missing", "method", "rep", "wall_seconds"],
    "estimates.csv": ESTIMATE_COLUMNS,
}
MARGIN = 0.01  # a method "reaches what the data allow" within one point of the oracle's accuracy
RMSE_MARGIN = 0.05  # coefficients recovered "as well as EM" within this RMSE
SEED_DESIGN = {"design": "seed", "missing": "mcar0"}  # the seed's design, complete responses
ACCURACY = seed_source("Learn full model (the notebook's run)", "Overall classification accuracy")


def within_middle(values, target: float) -> tuple[str, str]:
    """Whether one data set's figure ``target`` is one a data set of the same generator gives: it
    lies within the middle 95% of the per-data-set ``values`` (supported) or outside it
    (contradicted); fewer than two data sets give no spread (not comparable)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2 or np.ptp(x) == 0:
        return "not comparable", "too few data sets, or no spread between them."
    lo, hi = np.quantile(x, [0.025, 0.975])
    inside = lo <= target <= hi
    return (
        "supported" if inside else "contradicted",
        f"{target} {'lies' if inside else 'does not lie'} within the middle 95% ({lo:.3f} to {hi:.3f}) of the "
        f"accuracies over {x.size} data sets of the same generator",
    )


def paired(fits: pd.DataFrame, oracle: pd.DataFrame, method: str, design: str, missing: str) -> pd.DataFrame:
    """A method's accuracy beside the oracle's, one row per replication of a condition; for the
    seed's runs, ``converged`` says whether the run met the seed's rule (``rule_of``)."""
    f = fits[(fits.method == method) & (fits.design == design) & (fits.missing == missing)]
    o = oracle[(oracle.design == design) & (oracle.missing == missing)]
    p = f.merge(o, on=["design", "missing", "rep"], suffixes=("", "_oracle"))
    if method in SEED_METHODS and len(p):
        planned = seed_methods.SCHEDULES[method].n_steps
        p = p.assign(converged=(p.status != "diverged") & (p.steps >= planned))
    return p


def rule_of(method: str) -> str:
    """What a fit of ``method`` must meet for a verdict to rest on it: the seed's runs have no
    stopping rule, they run a fixed number of sweeps, so every planned step."""
    return (
        "planned steps (the seed's runs stop after a fixed number of sweeps)"
        if method in SEED_METHODS
        else ("stopping rule")
    )


ACCURACY_CLAIM = (
    "BBVI classifies persons' profiles with overall accuracy 0.967 on a data set of the seed's design "
    "(complete responses)"
)


def seed_run_claim(s: pd.DataFrame) -> Claim:
    """The seed's 0.967 judged on the seed's own run (``bbvi_seed``); runs that became non-finite
    before their last step cannot say what the finished run reaches (not comparable)."""
    return unless_non_finite(accuracy_claim(s, "bbvi_seed", "bbvi_seed", "the seed's run's", rule_of("bbvi_seed")), s)


def accuracy_claim(
    f: pd.DataFrame, method: str, name: str, whose: str, rule: str = "stopping rule", check=None
) -> Claim:
    """The seed's 0.967 against the middle 95% of ``method``'s accuracies over data sets."""
    word, text = within_middle(f.pattern_accuracy, SEED_ACCURACY)
    claim = Claim(
        ACCURACY_CLAIM,
        f"{SEED_ACCURACY} (one data set)",
        f"{name} {describe(f.pattern_accuracy)}; {spread(f.pattern_accuracy)}",
        word,
        f"{text} ({whose}).",
        method,
        **ACCURACY,
    )
    return rests_on(claim, f, rule, doubling=check)


def seed_claims(fits: pd.DataFrame, oracle: pd.DataFrame, doubled=None) -> list[Claim]:
    o = oracle[(oracle.design == "seed") & (oracle.missing == "mcar0")].pattern_accuracy
    b = paired(fits, oracle, "bbvi", "seed", "mcar0")
    s = paired(fits, oracle, "bbvi_seed", "seed", "mcar0")
    rows = [seed_run_claim(s)] if len(s) else []
    if b.empty and not rows:
        return [
            Claim(
                ACCURACY_CLAIM,
                f"{SEED_ACCURACY} (one data set)",
                "not run",
                "not comparable",
                "the run has no BBVI fit of the seed's design with complete responses",
                "bbvi",
                **ACCURACY,
            )
        ]
    if len(b):
        check = doubling_check(doubled, "bbvi", "pattern_accuracy", "the mean accuracy", SEED_DESIGN)
        rows.append(accuracy_claim(b, "bbvi", "BBVI", "BBVI's: this project's method, not the seed's run", check=check))
    word, text = within_middle(o, SEED_ACCURACY)
    rows.append(
        Claim(
            "0.967 is what a data set of the seed's design allows (the oracle: modal profiles at the true parameters)",
            f"{SEED_ACCURACY}",
            f"oracle {describe(o)}; {spread(o)}",
            word,
            f"{text} (the oracle's): no estimator can be expected to beat the oracle on average.",
            "oracle",
        )
    )
    return rows


def method_claims(fits: pd.DataFrame, oracle: pd.DataFrame, doubled=None) -> list[Claim]:
    """Each method against the oracle, on every condition of the run."""
    rows = []
    conditions = fits[["design", "missing"]].drop_duplicates().itertuples(index=False)
    for design, missing in conditions:
        in_seed = design == "seed" and missing == "mcar0"
        for method in dict.fromkeys(fits[(fits.design == design) & (fits.missing == missing)].method):
            p = paired(fits, oracle, method, design, missing)
            v = verdicts.paired_verdict(
                p.pattern_accuracy - p.pattern_accuracy_oracle,
                subject=f"{method}'s accuracy minus the oracle's",
                direction="higher",
                margin=MARGIN,
                unit="data sets",
            )
            where = f"design `{design}`, {missing}"
            claim = Claim(
                f"{method} classifies as well as the data allow ({where}; within {MARGIN:g} of the oracle)",
                "BBVI's 0.967 on one data set" if in_seed else "not in the seed (complete data, seed design only)",
                f"{describe(p.pattern_accuracy)}; oracle {describe(p.pattern_accuracy_oracle)}",
                from_verdict(v),
                clean(page_sentence(v)),
                method,
            )
            oracle_by_rep = p.set_index("rep").pattern_accuracy_oracle
            where = {"design": design, "missing": missing}
            check = doubling_check(doubled, method, "pattern_accuracy", where=where, baseline=oracle_by_rep)
            rows.append(unless_non_finite(rests_on(claim, p, rule_of(method), doubling=check), p))
    return rows


def unless_non_finite(claim: Claim, fits: pd.DataFrame) -> Claim:
    """A claim on runs that became non-finite before their last step is not comparable: their
    figures are those of the last good state, not of a finished run."""
    diverged = int((fits.status == "diverged").sum()) if "status" in fits else 0
    if not diverged:
        return claim
    return replace(
        claim,
        verdict="not comparable",
        why=f"{diverged} of {len(fits)} runs became non-finite before their last step (the section on diagnostics "
        "says why); their figures are those of their last good state.",
        fits_met=None,
        numbers_say="",
    )


def recovery_claims(fits: pd.DataFrame, doubled=None) -> list[Claim]:
    """The seed's figure of estimated against true coefficients: BBVI against EM's recovery."""
    rows = []
    seed = fits[(fits.design == "seed") & (fits.missing == "mcar0")]
    em = seed[seed.method == "em"].set_index("rep")[["beta_rmse"]]
    for method in ("bbvi", "bbvi_cv"):
        both = seed[seed.method == method].merge(em.reset_index(), on="rep", suffixes=("", "_em"))
        if both.empty:
            continue
        v = verdicts.paired_verdict(
            both.beta_rmse - both.beta_rmse_em,
            subject=f"{method}'s coefficient RMSE minus EM's",
            direction="lower",
            margin=RMSE_MARGIN,
            unit="data sets",
        )
        claim = Claim(
            f"{method}'s coefficient estimates lie near the true coefficients (the seed's figure), as near as "
            f"the maximum-likelihood reference's (within {RMSE_MARGIN:g} RMSE)",
            "figure: estimates against the truth, one data set",
            f"RMSE {describe(both.beta_rmse)}, EM {describe(both.beta_rmse_em)}; 95% intervals cover "
            f"{describe(both.beta_coverage_95, 2)}",
            from_verdict(v),
            clean(page_sentence(v)),
            f"{method}, em",
        )
        em_by_rep = both.set_index("rep").beta_rmse_em
        check = doubling_check(doubled, method, "beta_rmse", where=SEED_DESIGN, baseline=em_by_rep)
        rows.append(rests_on(claim, both, doubling=check))
    return rows


def claims(tables: dict) -> list[Claim]:
    """The page's rows: the seed's 0.967, each method against the oracle, coefficient recovery."""
    fits, oracle, doubled = tables["fits"], tables["oracle"], tables.get(f"{DIAGNOSTICS}/doubled_fits")
    return seed_claims(fits, oracle, doubled) + recovery_claims(fits, doubled) + method_claims(fits, oracle, doubled)


def design_table(tables: dict) -> pd.DataFrame:
    fits = tables["fits"]
    rows = []
    for (design, missing), g in fits.groupby(["design", "missing"], sort=False):
        rows.append(
            {
                "design": design,
                "missing": missing,
                "methods": ", ".join(dict.fromkeys(g.method)),
                "replications": int(g.rep.nunique()),
                "fits": len(g),
                "converged": f"{int(g.converged.sum())} of {len(g)}",
            }
        )
    return pd.DataFrame(rows)


def accuracy_figure(fits: pd.DataFrame, oracle: pd.DataFrame):
    """Each method's pattern accuracy over replications beside the oracle's, per condition, with
    the seed's 0.967."""
    conditions = list(fits[["design", "missing"]].drop_duplicates().itertuples(index=False))
    fig, axes = plt.subplots(1, len(conditions), figsize=(3.6 * len(conditions), 3.8), squeeze=False)
    for ax, (design, missing) in zip(axes[0], conditions, strict=True):
        f = fits[(fits.design == design) & (fits.missing == missing)]
        o = oracle[(oracle.design == design) & (oracle.missing == missing)]
        groups = [("oracle", o.pattern_accuracy.to_numpy())] + [
            (m, f[f.method == m].pattern_accuracy.to_numpy()) for m in dict.fromkeys(f.method)
        ]
        ax.boxplot([g for _, g in groups], showfliers=False, widths=0.5)
        for k, (_, values) in enumerate(groups, start=1):
            jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(len(values))
            ax.plot(k + jitter, values, ".", ms=3, alpha=0.6, color="C0" if k > 1 else "black")
        ax.set_xticks(range(1, len(groups) + 1), [name for name, _ in groups], rotation=45, ha="right", fontsize=8)
        if design == "seed":
            ax.axhline(SEED_ACCURACY, color="C3", lw=1, ls="--", label=f"seed {SEED_ACCURACY}")
            ax.legend(fontsize=8, loc="lower left")
        ax.set_title(f"{design}, {missing}", fontsize=9)
    axes[0][0].set_ylabel("pattern accuracy per data set")
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    fits, oracle, estimates = tables["fits"], tables["oracle"], tables["estimates"]
    out = [
        (
            "accuracy.png",
            "Pattern accuracy per data set: the oracle (modal profiles at the true parameters) and each method, "
            f"one point per replication; the dashed line is the seed's {SEED_ACCURACY}.",
        )
    ]
    plotting.save(accuracy_figure(fits, oracle), folder / out[0][0])
    seed = estimates[(estimates.design == "seed") & (estimates.missing == "mcar0")] if len(estimates) else estimates
    if len(seed):
        plotting.save(study_figures.beta_intervals(seed, "seed", "mcar0"), folder / "beta.png")
        out.append(
            (
                "beta.png",
                "The seed's figure, from the first replication of its design (complete responses): every LCDM "
                "coefficient, the truth and each method's estimate with its 95% interval.",
            )
        )
    return out


diagnostics_section = diagnostics.section
