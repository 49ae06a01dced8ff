"""What seed 003 (Luo & Ji) reports, held against the study's run (the reproduction page,
``bayesirt.studies.reproduction``).

The paper compares importance-weighted adversarial VB (IWAVB) with the importance-weighted
autoencoder (IWAE) for GRM item factor analysis. Its figures are box plots over 100
replications with no numbers in the text but a few (intercept MSE "below 0.03", fits of "110 to
140 seconds"), and one table (Table 1: stability of 100 refits of the IPIP-FFM data at five
factors, and their times). Each claim becomes a paired comparison over the run's replications,
so a figure is never read by eye; the study's report states its claims with these same rows.
"""

from __future__ import annotations

import pandas as pd

from bayesirt.evaluation import verdicts
from bayesirt.studies.amortized_ifa import doubling
from bayesirt.studies.amortized_ifa.reproduction_figures import figures  # noqa: F401 (the page's figures)
from bayesirt.studies.amortized_ifa.reproduction_pairs import (
    BOTH,
    LATENT,
    PAIRS,
    PARAMETERS,
    as_pair,
    gain_claim,
    gains_of,
    named,
    pair_doubling,
    paired_claim,
    per_replication,
)
from bayesirt.studies.reproduction import Claim, clean, describe, from_verdict, page_sentence, rests_on, seed_source
from bayesirt.studies.reproduction_claims import block_time

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
    "loglik_own_proposal",
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
# Table 1 of the paper (IPIP-FFM, 100 refits at P = 5): mean RMSE against the best fit, and time
TABLE_1 = {
    "iwavb": {"loading": 0.017, "intercept": 0.092, "covariance": 0.085, "seconds": 243.89},
    "iwae": {"loading": 0.019, "intercept": 0.052, "covariance": 0.078, "seconds": 85.96},
}
FIGURES = {"normal": "Figure 8", "mixture": "Figure 11"}
LOGLIK_FIGURES = {"normal": "Figure 9", "mixture": "Figure 12"}
SECTIONS = {
    "ipip": "4.1 Empirical Study: Big-Five Personality Questionnaire",
    "normal": "4.2 Simulation Study: Latent Variables Following Normal Distribution",
    "mixture": "4.3 Simulation Study: Latent Variables Following Multimodal Distribution",
}
LOGLIK_SOURCES = {
    "normal": seed_source(SECTIONS["normal"], "was significantly higher for the IWAVB method"),
    "mixture": seed_source(SECTIONS["mixture"], "consistently achieved a higher approximate log-likelihood"),
}
# the held-out log-likelihood two ways: each method's own proposal, the seed's eq. 27, and this
# project's method-independent estimate (quadrature or Laplace importance sampling at the fitted
# items), which compares the methods on their item parameters alone
LOGLIK_METRICS = {
    "loglik_own_proposal": "by each method's own proposal, the seed's eq. 27",
    "loglik_independent": "method-independent, this project's estimate at the fitted items",
}
TIME_SOURCES = (
    seed_source(SECTIONS["normal"], "Both methods exhibited similar computation times"),
    seed_source(SECTIONS["mixture"], "the IWAVB method required more computational time"),
)


def mse_source(latent: str, par: str) -> dict:
    """Where the paper states each MSE claim (sections 4.2 and 4.3, and its discussion)."""
    if latent == "mixture":
        if par == "factor_corr":
            return seed_source("5 Discussion", "outperformed IWAE in the estimation of all parameters")
        return seed_source(SECTIONS["mixture"], "The IWAVB method consistently achieved lower MSEs")
    if par == "loading":
        return seed_source(SECTIONS["normal"], "IWAVB achieved a smaller MSE for item loadings")
    return seed_source(SECTIONS["normal"], "the differences were minimal")


def simulation_claims(fits: pd.DataFrame, doubled: pd.DataFrame | None = None) -> list[Claim]:
    """The simulations' claims on the pair's fits; ``doubled``: the diagnostics' doubling check of
    the same pair (``doubling``), which a claim on fits that did not all meet their stopping rule
    needs to keep its verdict."""
    # gains: IWAVB's held-out log-likelihood over IWAE's per replication, by latent; twice: doubled
    rows, gains, twice = [], {}, {}
    for latent in ("normal", "mixture"):
        f = fits[fits.design.map(LATENT) == latent]
        if f.empty:
            continue
        d = None if doubled is None else doubled[doubled.design.map(LATENT) == latent]

        where = f"{latent} latents, {', '.join(dict.fromkeys(f.design))}"
        for par, label in PARAMETERS.items():
            column = f"{par}_mse"
            if not f[column].notna().any():
                continue
            pairs = per_replication(f, column)
            if latent == "normal" and par != "loading":
                margin = 0.10 * float(pairs.iwae.mean()) if len(pairs) else 0.0
                claim = paired_claim(
                    f"IWAE slightly better on {label}s, the difference minimal (IWAVB within 10% of IWAE's "
                    f"MSE, this project's reading of minimal; {where})",
                    f"{FIGURES[latent]}: no number",
                    pairs,
                    f"{label} MSE",
                    "lower",
                    margin,
                    mse_source(latent, par),
                )
            else:
                claim = paired_claim(
                    f"IWAVB has the lower {label} MSE ({where})",
                    f"{FIGURES[latent]}: no number",
                    pairs,
                    f"{label} MSE",
                    "lower",
                    source=mse_source(latent, par),
                )
            rows.append(rests_on(claim, f, doubling=pair_doubling(d, column)))
        pair_gains = gains_of(f, d)
        if pair_gains is not None:
            gains[latent], twice[latent] = pair_gains
        for column, metric in LOGLIK_METRICS.items():
            if column not in f or not f[column].notna().any():
                continue  # a run collected before the page kept the seed's metric
            claim = paired_claim(
                f"IWAVB reaches a higher held-out log-likelihood ({metric}; {where})",
                f'{LOGLIK_FIGURES[latent]}: "significantly higher", no number or test',
                per_replication(f, column),
                "held-out log-likelihood per person",
                "higher",
                source=LOGLIK_SOURCES[latent],
            )
            rows.append(rests_on(claim, f, doubling=pair_doubling(d, column)))
    if len(gains) == 2:
        rows.append(gain_claim(gains, twice, fits))
    normal = fits[fits.design.map(LATENT) == "normal"]
    if len(normal) and normal.intercept_mse.notna().any():
        rows.append(rests_on(intercept_claim(normal), normal))
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
            claim = Claim(
                f"More importance samples improve {method.upper()}'s loadings marginally (R = {rs[-1]} against "
                f"{rs[0]}, normal latents)",
                'Figure 8: "marginal improvements", no number',
                f"R = {rs[-1]} {describe(p[rs[-1]], 4)}; R = {rs[0]} {describe(p[rs[0]], 4)}",
                from_verdict(v),
                clean(page_sentence(v)),
                method,
                **seed_source(SECTIONS["normal"], "Both methods showed marginal improvements"),
            )
            rows.append(rests_on(claim, m))
    return rows


def intercept_claim(normal: pd.DataFrame) -> Claim:
    """The intercept MSE "averaged below 0.03": each replication's mean over its fits (every R and
    method share its data), its interval against 0.03."""
    per_rep = normal.groupby(["design", "rep"]).intercept_mse.mean().dropna()
    v = verdicts.paired_verdict(
        per_rep - 0.03, direction="lower", subject="the intercept MSE minus 0.03", unit="replications"
    )
    return Claim(
        "The intercept MSE averages below 0.03 (normal latents)",
        'Figure 8: "below 0.03"',
        f"{describe(per_rep, 4)} (each replication's mean over its fits, every R and method)",
        from_verdict(v),
        clean(page_sentence(v)),
        BOTH,
        **seed_source(SECTIONS["normal"], "it still averaged below 0.03"),
    )


def block_times(t: pd.DataFrame) -> str:
    """Each method's fit times as what they are: one block's time per condition (R), shared by its fits."""
    parts = []
    for method, m in t.groupby("method", sort=True):
        blocks = m.groupby(["design", "importance_samples"]).wall_seconds.agg(["first", "size"])
        parts.append(
            f"{method.upper()}: "
            + "; ".join(
                block_time(r["first"], int(r["size"])) + f" at R = {int(r_)}" for (_, r_), r in blocks.iterrows()
            )
        )
    return " | ".join(parts)


def time_claims(timings: pd.DataFrame) -> list[Claim]:
    rows = []
    for latent, seed, text, source in (
        ("normal", "Figure 9: both 110 to 140 s (two T4 GPUs)", "IWAE and IWAVB take similar time", TIME_SOURCES[0]),
        ("mixture", "Figure 12: IWAVB slower", "IWAVB takes more time than IWAE", TIME_SOURCES[1]),
    ):
        t = timings[timings.design.map(LATENT) == latent]
        if t.empty:
            continue
        shared = t.groupby(["design", "method", "importance_samples"]).wall_seconds.nunique().eq(1).all()
        rows.append(
            Claim(
                f"{text} ({latent} latents; ours on CPU cores, the paper's on GPUs)",
                seed,
                block_times(t),
                "not comparable",
                (
                    "each figure is one block's time (a condition's replications trained as one program), shared "
                    "equally by its fits: one measurement, with no spread between replications to judge by; "
                    if shared
                    else ""
                )
                + "and the paper's times are of GPUs, ours of CPU cores.",
                BOTH,
                **source,
            )
        )
    return rows


def ipip_claims(tables: dict) -> list[Claim]:
    scree, stability = tables["scree"], tables["stability"]
    rows = []
    if len(scree):
        wide = scree.pivot_table(index="n_factors", columns="method", values="loglik_independent")
        claim = "IWAVB's held-out log-likelihood is higher than IWAE's at every number of factors (IPIP-FFM)"
        ran = " and ".join(m.upper() for m in wide.columns)
        if {"iwae", "iwavb"} <= set(wide.columns):
            higher = int((wide.iwavb > wide.iwae).sum())
            ours = "; ".join(f"P = {p}: IWAVB {r.iwavb:.3f}, IWAE {r.iwae:.3f}" for p, r in wide.iterrows())
            why = f"IWAVB is higher at {higher} of {len(wide)} numbers of factors, one fit each: no replications."
        else:
            ours = f"{ran} only"
            why = f"the run fitted only {ran} to the IPIP design (see what was left out), so there is no pair."
        rows.append(Claim(claim, "Figure 6: no number", ours, "not comparable", why, BOTH))
        # one curve per method, the seed's as written first: a verdict never mixes two methods' fits
        for method in sorted(wide.columns, key=lambda m: not m.endswith("_seed")):
            curve = wide[method].dropna()
            if len(curve) < 3:
                continue
            gains = curve.diff().dropna()  # at P: what the P-th factor added
            elbow = int((gains - gains.shift(-1)).idxmax())  # the P after which the gain falls the most
            rows.append(
                Claim(
                    "The scree plot has its elbow at five factors (IPIP-FFM)",
                    "Figure 6: elbow at P = 5",
                    f"{method.upper()}'s gain in held-out log-likelihood per added factor: "
                    + ", ".join(f"{int(p - 1)}→{int(p)}: {g:.3f}" for p, g in gains.items()),
                    "inconclusive",
                    f"the largest drop in the gain per added factor comes after P = {elbow}, on one fit per P (one "
                    "curve): no replications, so no spread to judge by or to size a decisive run from; refits at each "
                    "P would decide.",
                    method,
                    **seed_source(SECTIONS["ipip"], "indicating that five latent factors were sufficient"),
                )
            )
    if len(stability):
        for method, numbers in TABLE_1.items():
            s = stability[stability.method == method]
            if s.empty:
                ours = "not run"
                why = f"the run has no repeated {method.upper()} fits of the IPIP design at five factors."
            else:
                ours = "; ".join(
                    f"{label} {describe(s[f'{column}_rmse'], 3, 'refits')}"
                    for label, column in (
                        ("loadings", "loading"),
                        ("intercepts", "intercept"),
                        ("covariance", "covariance"),
                    )
                )
                why = (
                    "the paper's refits are of the real IPIP-FFM data; these are of the full-size synthetic IPIP file "
                    "(the real one cannot be downloaded here), so the numbers describe a different data set."
                )
            rows.append(
                Claim(
                    f"Refits of {method.upper()} at five factors agree with the best one (Table 1"
                    + (")" if s.empty else ", loadings and intercepts RMSE)"),
                    f"loadings {numbers['loading']}, intercepts {numbers['intercept']}, covariance "
                    f"{numbers['covariance']}",
                    ours,
                    "not comparable",
                    why,
                    method,
                    **seed_source(SECTIONS["ipip"], "parameter estimation was quite stable for both methods"),
                )
            )
    return rows


def claims(tables: dict) -> list[Claim]:
    """The simulations' claims and their times, judged on the seed's methods as written
    (``iwae_seed``, ``iwavb_seed``) where the run has them, then on ours; then the IPIP claims."""
    fits, timings, doubled = tables["fits"], tables["timings"], tables.get(f"diagnostics/{doubling.TABLE}")
    confirmatory = fits[fits.design.isin(list(LATENT))]
    rows = []
    for pair in PAIRS:
        if confirmatory.method.isin(pair).any():
            checked = None if doubled is None else as_pair(doubled, pair)
            rows += [named(c, pair) for c in simulation_claims(as_pair(confirmatory, pair), checked)]
    for pair in PAIRS:
        if timings.method.isin(pair).any():
            rows += [named(c, pair) for c in time_claims(as_pair(timings, pair))]
    from bayesirt.studies.amortized_ifa import diagnostics  # the diagnostics' row (a common scale)

    return rows + ipip_claims(tables) + diagnostics.claims(tables.get("diagnostics/latent_scale"), doubled)


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


def diagnostic_inputs(config: dict, n_data_sets: int, parts=None) -> list[str]:
    from bayesirt.studies.amortized_ifa import diagnostics

    return diagnostics.diagnostic_inputs(config, n_data_sets)  # every part reads the same data


def diagnostics_section(tables: dict, facts: dict) -> str:
    from bayesirt.studies.amortized_ifa import diagnostics

    return diagnostics.section(tables, facts)
