"""What seed 003 (Luo & Ji) reports, held against the study's run (the reproduction page,
``bayesirt.studies.reproduction``).

The paper compares importance-weighted adversarial VB (IWAVB) with the importance-weighted
autoencoder (IWAE) for GRM item factor analysis. Its figures are box plots over 100
replications with no numbers in the text but a few (intercept MSE "below 0.03", fits of "110 to
140 seconds"), and one table (Table 1: stability of 100 refits of the IPIP-FFM data at five
factors, and their times). Each claim becomes a paired comparison over the run's replications
(``amortized_ifa.tables.claim_verdicts`` for the report's own), so a figure is never read by eye.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.evaluation import verdicts
from bayesirt.studies.amortized_ifa import figures as ifa_figures
from bayesirt.studies.reproduction import Claim, clean, describe, from_verdict, page_sentence

TITLE = "amortized_ifa (seed 003): IWAVB against IWAE for item factor analysis"
INTRO = (
    "Luo & Ji (seed 003) fit multidimensional graded response models by importance-weighted adversarial "
    "VB (IWAVB) and by the importance-weighted autoencoder (IWAE): a confirmatory simulation with normal "
    "latents (500 persons, 50 items, 5 factors, R = 15, 25, 35 importance samples; Figures 8 and 9), "
    "simulations with multimodal latents (1 and 3 factors; Figures 11 and 12), and the IPIP-FFM Big Five "
    "data, exploratory over 1 to 7 factors (Figure 6) with 100 refits at 5 factors (Table 1), on two T4 "
    "GPUs. Every claim below is a comparison paired by replication (both methods fitted to the same "
    "data); the paper's box plots carry no numbers, so where it gives none the seed column says so."
)
FIT_COLUMNS = [
    "method",
    "n_factors",
    "importance_samples",
    "rep",
    "converged",
    "status",
    "steps",
    "loglik_independent",
    "loading_mse",
    "intercept_mse",
    "factor_corr_mse",
]
TABLES = {
    "*/fits.csv": FIT_COLUMNS,
    "*/timings.csv": ["method", "n_factors", "importance_samples", "rep", "wall_seconds"],
    "ipip/scree.csv": ["method", "importance_samples", "n_factors", "loglik_independent"],
    "ipip/stability.csv": None,
}
OPTIONAL = {"ipip/scree.csv", "ipip/stability.csv"}
LATENT = {"normal_p5": "normal", "mixture_p1": "mixture", "mixture_p3": "mixture"}
PARAMETERS = {"loading": "loading", "intercept": "intercept", "factor_corr": "factor correlation"}
# Table 1 of the paper (IPIP-FFM, 100 refits at P = 5): mean RMSE against the best fit, and time
TABLE_1 = {
    "iwavb": {"loading": 0.017, "intercept": 0.092, "covariance": 0.085, "seconds": 243.89},
    "iwae": {"loading": 0.019, "intercept": 0.052, "covariance": 0.078, "seconds": 85.96},
}
FIGURES = {"normal": "Figure 8", "mixture": "Figure 11"}
LOGLIK_FIGURES = {"normal": "Figure 9", "mixture": "Figure 12"}


def per_replication(fits: pd.DataFrame, column: str) -> pd.DataFrame:
    """IWAE and IWAVB side by side, one row per design and replication (the fits at several R of
    one replication share its data, so they are averaged into it); a replication missing only
    another method's fit (a seed-as-written one) keeps its row."""
    wide = fits.pivot_table(index=["design", "rep"], columns="method", values=column, aggfunc="mean")
    return wide.dropna(subset=[m for m in ("iwae", "iwavb") if m in wide.columns] or None)


def paired_claim(claim, seed, pairs: pd.DataFrame, column: str, direction: str, margin: float = 0.0) -> Claim:
    if pairs.empty or not {"iwavb", "iwae"} <= set(pairs.columns):
        return Claim(claim, seed, "not run", "not comparable", "the run has no paired IWAE and IWAVB fits here")
    v = verdicts.paired_verdict(
        pairs.iwavb - pairs.iwae, direction=direction, margin=margin, subject=f"IWAVB's {column} minus IWAE's"
    )
    return Claim(
        claim,
        seed,
        f"IWAVB {describe(pairs.iwavb, 4)}; IWAE {describe(pairs.iwae, 4)}",
        from_verdict(v),
        clean(page_sentence(v)),
    )


def simulation_claims(fits: pd.DataFrame) -> list[Claim]:
    rows, gains = [], {}  # gains: IWAVB's held-out log-likelihood over IWAE's per replication, by latent
    for latent in ("normal", "mixture"):
        f = fits[fits.design.map(LATENT) == latent]
        if f.empty:
            continue
        where = f"{latent} latents, {', '.join(dict.fromkeys(f.design))}"
        for par, label in PARAMETERS.items():
            column = f"{par}_mse"
            if not f[column].notna().any():
                continue
            pairs = per_replication(f, column)
            if latent == "normal" and par != "loading":
                margin = 0.10 * float(pairs.iwae.mean()) if len(pairs) else 0.0
                rows.append(
                    paired_claim(
                        f"IWAE slightly better on {label}s, the difference minimal (IWAVB within 10% of IWAE's "
                        f"MSE; {where})",
                        f"{FIGURES[latent]}: no number",
                        pairs,
                        f"{label} MSE",
                        "lower",
                        margin,
                    )
                )
            else:
                rows.append(
                    paired_claim(
                        f"IWAVB has the lower {label} MSE ({where})",
                        f"{FIGURES[latent]}: no number",
                        pairs,
                        f"{label} MSE",
                        "lower",
                    )
                )
        loglik = per_replication(f, "loglik_independent")
        if {"iwavb", "iwae"} <= set(loglik.columns):
            gains[latent] = loglik.iwavb - loglik.iwae
        rows.append(
            paired_claim(
                f"IWAVB reaches a higher held-out log-likelihood ({where})",
                f'{LOGLIK_FIGURES[latent]}: "significantly higher", no number or test',
                loglik,
                "held-out log-likelihood per person",
                "higher",
            )
        )
    if len(gains) == 2:
        v = verdicts.two_group_verdict(
            gains["mixture"],
            gains["normal"],
            direction="higher",
            labels=("mixture", "normal latents"),
            subject="IWAVB's held-out log-likelihood gain over IWAE per replication",
        )
        rows.append(
            Claim(
                "IWAVB's gain over IWAE is larger with multimodal latents",
                "Figures 9 and 12: no number",
                f"gain per person: mixture {describe(gains['mixture'], 4)}; normal {describe(gains['normal'], 4)}",
                from_verdict(v),
                clean(page_sentence(v)),
            )
        )
    normal = fits[fits.design.map(LATENT) == "normal"]
    if len(normal) and normal.intercept_mse.notna().any():
        x = normal.intercept_mse.dropna()
        mean, n = x.mean(), len(x)
        low, high = np.quantile(x, [0.025, 0.975])
        rows.append(
            Claim(
                "The intercept MSE averages below 0.03 (normal latents)",
                'Figure 8: "below 0.03"',
                f"{describe(normal.intercept_mse, 4, 'fits')}",
                "supported" if mean < 0.03 else "not supported",
                f"mean over {n} fits (every R and method) {mean:.4f}; 2.5-97.5% of fits {low:.4f} to {high:.4f}.",
            )
        )
        for method in ("iwae", "iwavb"):
            m = normal[normal.method == method]
            rs = sorted(m.importance_samples.unique())
            if len(rs) < 2:
                continue
            p = m.pivot_table(index=["design", "rep"], columns="importance_samples", values="loading_mse").dropna()
            v = verdicts.paired_verdict(
                p[rs[-1]] - p[rs[0]],
                direction="lower",
                subject=f"{method}'s loading MSE at R = {rs[-1]} minus R = {rs[0]}",
            )
            rows.append(
                Claim(
                    f"More importance samples improve {method.upper()}'s loadings marginally (R = {rs[-1]} against "
                    f"{rs[0]}, normal latents)",
                    'Figure 8: "marginal improvements", no number',
                    f"R = {rs[-1]} {describe(p[rs[-1]], 4)}; R = {rs[0]} {describe(p[rs[0]], 4)}",
                    from_verdict(v),
                    clean(page_sentence(v)),
                )
            )
    return rows


def time_claims(timings: pd.DataFrame) -> list[Claim]:
    rows = []
    for latent, seed in (
        ("normal", "Figure 9: both 110 to 140 s (two T4 GPUs)"),
        ("mixture", "Figure 12: IWAVB slower"),
    ):
        t = timings[timings.design.map(LATENT) == latent]
        if t.empty:
            continue
        pairs = per_replication(t, "wall_seconds")
        claim = paired_claim(
            "IWAVB takes more time than IWAE" if latent == "mixture" else "IWAE and IWAVB take similar time",
            seed,
            pairs,
            "training seconds",
            "higher" if latent == "mixture" else "lower",
            0.0 if latent == "mixture" else 0.25 * float(pairs.iwae.mean()) if len(pairs) else 0.0,
        )
        rows.append(
            Claim(
                claim.claim + f" ({latent} latents; ours on CPU cores, the paper's on GPUs)",
                claim.seed,
                claim.ours,
                claim.verdict,
                claim.why
                + ("" if latent == "mixture" else " Similar: IWAVB within 25% of IWAE's mean time.")
                + " The fits of one block (a condition's replications, trained as one program) share its time "
                "equally.",
            )
        )
    return rows


def ipip_claims(tables: dict) -> list[Claim]:
    scree, stability = tables["scree"], tables["stability"]
    rows = []
    if len(scree):
        wide = scree.pivot_table(index="n_factors", columns="method", values="loglik_independent")
        claim = "IWAVB's held-out log-likelihood is higher than IWAE's at every number of factors (IPIP-FFM)"
        if {"iwae", "iwavb"} <= set(wide.columns):
            higher = int((wide.iwavb > wide.iwae).sum())
            rows.append(
                Claim(
                    claim,
                    "Figure 6: no number",
                    "; ".join(f"P = {p}: IWAVB {r.iwavb:.3f}, IWAE {r.iwae:.3f}" for p, r in wide.iterrows()),
                    "supported" if higher == len(wide) else "not supported",
                    f"IWAVB is higher at {higher} of {len(wide)} numbers of factors (one fit each).",
                )
            )
        else:
            ran = " and ".join(m.upper() for m in wide.columns)
            rows.append(
                Claim(
                    claim,
                    "Figure 6: no number",
                    f"{ran} only",
                    "not comparable",
                    f"the run fitted only {ran} to the IPIP design (see what was left out), so there is no pair.",
                )
            )
        best = wide.mean(axis=1)
        curve = " and ".join(m.upper() for m in wide.columns)
        if len(best) >= 3:
            gains = best.diff().dropna()  # at P: what the P-th factor added
            elbow = int((gains - gains.shift(-1)).idxmax())  # the P after which the gain falls the most
            rows.append(
                Claim(
                    "The scree plot has its elbow at five factors (IPIP-FFM)",
                    "Figure 6: elbow at P = 5",
                    f"{curve}'s gain in held-out log-likelihood per added factor: "
                    + ", ".join(f"{int(p - 1)}→{int(p)}: {g:.3f}" for p, g in gains.items()),
                    "supported" if elbow == 5 else "not supported",
                    f"the largest drop in the gain per added factor comes after P = {elbow}.",
                )
            )
    if len(stability):
        for method, numbers in TABLE_1.items():
            s = stability[stability.method == method]
            if s.empty:
                rows.append(
                    Claim(
                        f"Refits of {method.upper()} at five factors agree with the best one (Table 1)",
                        f"loadings {numbers['loading']}, intercepts {numbers['intercept']}, covariance "
                        f"{numbers['covariance']}",
                        "not run",
                        "not comparable",
                        f"the run has no repeated {method.upper()} fits of the IPIP design at five factors.",
                    )
                )
                continue
            rows.append(
                Claim(
                    f"Refits of {method.upper()} at five factors agree with the best one (Table 1, loadings and "
                    "intercepts RMSE)",
                    f"loadings {numbers['loading']}, intercepts {numbers['intercept']}, covariance "
                    f"{numbers['covariance']}",
                    "; ".join(
                        f"{label} {describe(s[f'{column}_rmse'], 3, 'refits')}"
                        for label, column in (
                            ("loadings", "loading"),
                            ("intercepts", "intercept"),
                            ("covariance", "covariance"),
                        )
                    ),
                    "not comparable",
                    "the paper's refits are of the real IPIP-FFM data; these are of the full-size synthetic IPIP file "
                    "(the real one cannot be downloaded here), so the numbers describe a different data set.",
                )
            )
    return rows


def claims(tables: dict) -> list[Claim]:
    fits = tables["fits"]
    confirmatory = fits[fits.design.isin(list(LATENT))]
    return simulation_claims(confirmatory) + time_claims(tables["timings"]) + ipip_claims(tables)


def design_table(tables: dict) -> pd.DataFrame:
    fits, timings = tables["fits"], tables["timings"]
    rows = []
    for design, g in fits.groupby("design", sort=False):
        t = timings[timings.design == design]

        def per_method(values: pd.Series, by: pd.Series, digits: int) -> str:
            return "; ".join(f"{m.upper()} {v:.{digits}f}" for m, v in values.groupby(by).median().items())

        rows.append(
            {
                "design": design,
                "methods": ", ".join(m.upper() for m in sorted(g.method.unique())),
                "factors": ", ".join(str(int(p)) for p in sorted(g.n_factors.unique())),
                "R": ", ".join(str(int(r)) for r in sorted(g.importance_samples.unique())),
                "replications": int(g.rep.nunique()),
                "fits": len(g),
                "converged": f"{int(g.converged.sum())} of {len(g)}",
                "steps (median)": per_method(g.steps, g.method, 0),
                "fit seconds (median)": per_method(t.wall_seconds, t.method, 1),
            }
        )
    return pd.DataFrame(rows)


def mse_figure(fits: pd.DataFrame):
    """The paper's Figures 8 and 11 as box plots: MSE per method and R, by design and parameter."""
    conf = fits[fits.design.isin(list(LATENT))]
    designs = list(dict.fromkeys(conf.design))
    fig, axes = plt.subplots(
        len(PARAMETERS), max(len(designs), 1), figsize=(3.8 * max(len(designs), 1), 8), squeeze=False
    )
    for col, design in enumerate(designs):
        d = conf[conf.design == design]
        for row, par in enumerate(PARAMETERS):
            ax = axes[row][col]
            groups = [
                (f"{m}\nR={int(r)}", g[f"{par}_mse"].dropna().to_numpy())
                for (m, r), g in d.groupby(["method", "importance_samples"])
            ]
            groups = [(label, v) for label, v in groups if len(v)]
            if groups:
                ax.boxplot([v for _, v in groups], showfliers=False)
                ax.set_xticks(range(1, len(groups) + 1), [label for label, _ in groups], fontsize=7)
            ax.set_title(f"{design}: {PARAMETERS[par]} MSE", fontsize=9)
    fig.tight_layout()
    return fig


def loglik_figure(fits: pd.DataFrame):
    """The paper's Figures 9 and 12 as pairs: each replication's held-out log-likelihood per
    person (method-independent, averaged over R) under IWAE and IWAVB, joined by a line."""
    conf = fits[fits.design.isin(list(LATENT))]
    designs = list(dict.fromkeys(conf.design))
    fig, axes = plt.subplots(1, max(len(designs), 1), figsize=(3.2 * max(len(designs), 1), 3.4), squeeze=False)
    for ax, design in zip(axes[0], designs):
        pairs = per_replication(conf[conf.design == design], "loglik_independent")
        for _, row in pairs.iterrows():
            ax.plot([0, 1], [row.get("iwae", np.nan), row.get("iwavb", np.nan)], "o-", color="0.4", alpha=0.7)
        ax.set_xticks([0, 1], ["IWAE", "IWAVB"])
        ax.set_xlim(-0.4, 1.4)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_title(f"{design} ({len(pairs)} replication{'' if len(pairs) == 1 else 's'})", fontsize=9)
    axes[0][0].set_ylabel("held-out log-likelihood per person")
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    plotting.save(mse_figure(tables["fits"]), folder / "mse.png")
    plotting.save(loglik_figure(tables["fits"]), folder / "loglik.png")
    out = [
        (
            "mse.png",
            "The paper's Figures 8 and 11 from this run: MSE of loadings, intercepts and factor correlations per "
            "replication, by method and number of importance samples R.",
        ),
        (
            "loglik.png",
            "The paper's Figures 9 and 12 from this run: each replication's held-out log-likelihood per person "
            "(method-independent estimate, averaged over R), IWAE and IWAVB joined.",
        ),
    ]
    if len(tables["scree"]):
        plotting.save(ifa_figures.scree(tables["scree"]), folder / "scree.png")
        out.append(
            (
                "scree.png",
                "The paper's Figure 6 from this run: held-out log-likelihood per person against the number of "
                "factors on the IPIP-shaped data (replication 0 of each P).",
            )
        )
    return out
