"""What seed 001 shows, held against the study's run at the paper designs (the reproduction
page, ``bayesirt.studies.reproduction``).

Seed 001 is a note that derives two data-augmentation Gibbs samplers (a two-component Gaussian
mixture of heights, and Albert's sampler for the two-parameter normal ogive model) and shows
them working; it reports no table. Its claims are therefore the samplers' own: they draw from
the posterior (checked against NUTS on the marginal posterior, in Monte Carlo standard errors,
and by the ratio of posterior sds), their chains mix, their intervals recover the truth, and the
mixture's sampler finds the two components.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from bayesirt import plotting
from bayesirt.studies.reproduction import DIAGNOSTICS, Claim, describe, rests_on, seed_source, tolerance_verdict
from bayesirt.studies.reproduction_claims import doubling_check

TITLE = "gibbs_2pno (seed 001): data-augmentation Gibbs for the normal ogive model, at the paper designs"
INTRO = (
    "Seed 001 derives Albert's data-augmentation Gibbs sampler for the two-parameter normal ogive "
    "model (and one for a two-component Gaussian mixture of heights) and shows them at work, without "
    "a table of results. The config's designs are 500 persons with 20 items (where NUTS on the "
    "marginal posterior is the reference), 1,000 with 20 and 30 items and 10,000 with 100 items, "
    "complete and with 20% of responses missing completely at random, 4 chains of 10,000 draws after "
    "2,000 warm-up sweeps; the seed's plain sampler (`gibbs_seed`) runs beside this project's, which "
    "adds moves along the model's symmetries (`gibbs`, and `gibbs_omit`, which leaves missing cells "
    'out). What a run fitted is under "What ran", what it left out under "Left out". The claims are '
    "the sampler's own: that it draws from the posterior, mixes, and recovers the truth."
)
FIT_COLUMNS = [
    "design",
    "missing",
    "method",
    "rep",
    "n_persons",
    "n_items",
    "n_chains",
    "sweeps",
    "converged",
    "max_r_hat",
    "min_ess_bulk",
    "discrimination_rmse",
    "discrimination_coverage_90",
    "difficulty_rmse",
    "difficulty_coverage_90",
    "ability_corr",
    "ability_coverage_90",
]
PAIR_COLUMNS = ["missing", "rep", "parameter", "item", "z", "sd_ratio"]
# the Gibbs sampler of each pair with NUTS (ours, gibbs, and the seed's plain one, gibbs_seed); a run
# collected before the seed's sampler ran has ours alone and no such column
SAMPLERS = ("gibbs_seed", "gibbs")
TABLES = {
    "*/fits.csv": FIT_COLUMNS,
    "*/gibbs_vs_nuts.csv": ["method", *PAIR_COLUMNS],
    "*/augment_vs_omit.csv": PAIR_COLUMNS,
    "*/timings.csv": ["design", "missing", "method", "rep", "wall_seconds", "item_min_ess_per_second"],
    "mixture/posterior.csv": ["parameter", "category", "mean", "sd", "q5", "q95", "r_hat", "true"],
}
# Two samplers of one posterior: |z| > 3 in about 0.27% of parameters by chance (more where the
# MCSEs are underestimated); sds within 5%.
Z_SHARE_TOLERATED = 0.01
SD_RATIO_TOLERANCE = 0.05
COVERAGE = 0.90
COVERAGE_TOLERANCE = 0.03  # the mean coverage's interval must reach within this of 90%
CONVERGED_SHARE = 0.95
SAMPLER = seed_source("Example 2: 2PNO-IRT, Latent Variables", "To implement the Gibbs sampler for the joint posterior")
MIXTURE = seed_source("Example 1: Two-Component Gaussian Mixture", "heights of U.S. 300 women and 400 U.S. men")
CHAINS_RULE = "convergence rule (R-hat and ESS)"


def share_verdict(hits: int, total: int, bound: float, claim_is_above: bool) -> tuple[str, float, float]:
    """A share of ``hits`` in ``total`` against ``bound``: its exact (Clopper-Pearson) 95% interval
    lies wholly on the claimed side (supported), wholly on the other (contradicted), or across."""
    if total == 0:
        return "not comparable", np.nan, np.nan
    ci = stats.binomtest(hits, total).proportion_ci(0.95)
    low, high = float(ci.low), float(ci.high)
    above, below = low >= bound, high <= bound
    if (above and claim_is_above) or (below and not claim_is_above):
        return "supported", low, high
    if above or below:
        return "contradicted", low, high
    return "inconclusive", low, high


def combine(*words: str) -> str:
    """Several tests of one claim: contradicted if any is; supported only if every one is."""
    for word in ("contradicted", "not comparable", "inconclusive"):
        if word in words:
            return word
    return "supported"


def agreement_claim(pairs: pd.DataFrame, claim: str, seed: str, method: str, source: dict | None = None) -> Claim:
    """Two samplers of one posterior: item-parameter means within Monte Carlo error (the share of
    |z| > 3 over every parameter and replication, with its exact interval, at most
    ``Z_SHARE_TOLERATED``), sds alike (each replication's median sd ratio, its mean's interval
    within ``SD_RATIO_TOLERANCE`` of 1)."""
    source = source or {}
    z = pairs.z.abs().dropna()
    if z.empty:
        return Claim(claim, seed, "not run", "not comparable", "the run made no such comparison", method, **source)
    hits = int((z > 3).sum())
    share_word, low, high = share_verdict(hits, len(z), Z_SHARE_TOLERATED, claim_is_above=False)
    medians = pairs.groupby([c for c in ("design", "missing", "rep") if c in pairs]).sd_ratio.median()
    ratio_word, ratio_text = tolerance_verdict(medians, 1.0, SD_RATIO_TOLERANCE)
    ratio = pairs.sd_ratio.dropna()
    return Claim(
        claim,
        seed,
        f"|z| > 3 for {hits / len(z):.2%} of {len(z)} item-parameter means (max {z.max():.2f}); sd ratio median "
        f"{ratio.median():.3f} (5-95%: {ratio.quantile(0.05):.3f} to {ratio.quantile(0.95):.3f})",
        combine(share_word, ratio_word),
        f"z is the difference of posterior means in Monte Carlo standard errors of both; by chance |z| > 3 "
        f"for 0.27% of them: the share's 95% interval [{low:.2%}, {high:.2%}] against at most "
        f"{Z_SHARE_TOLERATED:.0%} ({share_word}). Median sd ratio per replication ({len(medians)}), within "
        f"{SD_RATIO_TOLERANCE:.0%} of 1: {ratio_text.rstrip('.')} ({ratio_word}).",
        method,
        **source,
    )


def coverage_claims(fits: pd.DataFrame, doubled=None) -> list[Claim]:
    rows = []
    gibbs = fits[fits.method == "gibbs"]
    for (design, missing), g in gibbs.groupby(["design", "missing"], sort=False):
        # one value per fit (a replication): the mean of its discriminations' and difficulties' coverage
        values = (g.discrimination_coverage_90 + g.difficulty_coverage_90) / 2
        word, text = tolerance_verdict(values, COVERAGE, COVERAGE_TOLERANCE)
        claim = Claim(
            f"90% posterior intervals of the item parameters cover the truth (design `{design}`, {missing})",
            "implied: a correct posterior sampler",
            f"coverage {describe(values, 3, 'fits')}; discrimination RMSE "
            f"{describe(g.discrimination_rmse)}; ability correlation {describe(g.ability_corr)}",
            word,
            f"mean coverage of discriminations and difficulties per fit, within {COVERAGE_TOLERANCE} of "
            f"{COVERAGE}: {text}",
            "gibbs",
        )
        where = {"design": design, "missing": missing}
        check = doubling_check(doubled, "gibbs", "coverage_90", "the mean coverage", where)
        rows.append(rests_on(claim, g, CHAINS_RULE, doubling=check))
    return rows


def convergence_claim(fits: pd.DataFrame, samplers=("gibbs", "gibbs_omit")) -> Claim:
    gibbs = fits[fits.method.isin(list(samplers))]
    word, low, high = share_verdict(int(gibbs.converged.sum()), len(gibbs), CONVERGED_SHARE, claim_is_above=True)
    failing = gibbs[~gibbs.converged.astype(bool)].groupby(["design", "missing"], sort=False).size()
    passed = gibbs.groupby(["design", "missing"], sort=False).size()
    where = "; ".join(f"`{d}` {m}: {n} of {passed[(d, m)]} fail" for (d, m), n in failing.items())
    return Claim(
        "The Gibbs chains mix: four chains agree (R-hat) with enough effective draws",
        "trace plots of one run",
        f"{int(gibbs.converged.sum())} of {len(gibbs)} fits pass the record's rule"
        + (f" ({where})" if where else "")
        + "; max R-hat median "
        f"{gibbs.max_r_hat.median():.4f} (largest {gibbs.max_r_hat.max():.4f}); min bulk ESS median "
        f"{gibbs.min_ess_bulk.median():.0f}",
        word,
        f"the share of fits that pass (every R-hat below 1.01 and every bulk and tail ESS at least 100, persons' "
        f"parameters included), exact 95% interval [{low:.3f}, {high:.3f}], against at least {CONVERGED_SHARE:.0%}.",
        ", ".join(dict.fromkeys(gibbs.method)) or "gibbs",
    )


def mixture_claim(posterior: pd.DataFrame) -> Claim:
    covered = (posterior["true"] >= posterior.q5) & (posterior["true"] <= posterior.q95)
    names = [
        f"{r.parameter}[{r.category}] {r.mean:.3f} (90% {r.q5:.3f} to {r.q95:.3f}; true {r.true:.3f})"
        if r.parameter == "mu"
        else f"{r.parameter} {r.mean:.3f} (90% {r.q5:.3f} to {r.q95:.3f}; true {r.true:.3f})"
        for r in posterior.itertuples()
    ]
    return Claim(
        "The mixture's Gibbs sampler (latent allocations) recovers the two component means and the mixing "
        "proportion of 300 women's and 400 men's heights",
        "figure of the combined heights; the sampler's derivation",
        "; ".join(names),
        "inconclusive",
        f"the truth lies inside the 90% interval for {int(covered.sum())} of {len(posterior)} parameters of one "
        "simulated data set: one data set decides nothing about the sampler, and gives no spread from which to "
        "size a decisive run (replicated data sets would).",
        "gibbs_mixture",
        **MIXTURE,
    )


def paired_fits(fits: pd.DataFrame, pairs: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """The fits of ``methods`` behind a table of pairs (the same design, missingness and replication)."""
    keys = [c for c in ("design", "missing", "rep") if c in pairs and c in fits]
    behind = pairs[keys].drop_duplicates()
    return fits[fits.method.isin(methods)].merge(behind, on=keys) if keys else fits.iloc[:0]


def claims(tables: dict) -> list[Claim]:
    fits, nuts, doubled = tables["fits"], tables["gibbs_vs_nuts"], tables.get(f"{DIAGNOSTICS}/doubled_fits")
    if "method" not in nuts:
        nuts = nuts.assign(method="gibbs")
    agreement = []
    # the seed's claim, on the seed's plain sampler where the run has it, then on ours
    for sampler in [m for m in SAMPLERS if m in set(nuts.method)] or ["gibbs"]:
        pairs = nuts[nuts.method == sampler]
        row = agreement_claim(
            pairs,
            "The Gibbs sampler draws from the 2PNO posterior: item parameters agree with NUTS",
            "derivation of the full conditionals",
            f"{sampler}, nuts",
            SAMPLER,
        )
        check = doubling_check(doubled, sampler, "z_share", "the share of |z| > 3")
        agreement.append(rests_on(row, paired_fits(fits, pairs, [sampler, "nuts"]), CHAINS_RULE, doubling=check))
    missing = tables["augment_vs_omit"]
    row = agreement_claim(
        missing,
        "Missing responses can be augmented like the rest (drawn each sweep) or left out: the posterior is the same",
        "not in the seed (complete data)",
        "gibbs, gibbs_omit",
    )
    agreement.append(rests_on(row, paired_fits(fits, missing, ["gibbs", "gibbs_omit"]), CHAINS_RULE))
    # the chains' mixing: the seed's plain sampler where the run has it, then ours
    mixing = [convergence_claim(fits, ("gibbs_seed",))] if (fits.method == "gibbs_seed").any() else []
    mixing.append(convergence_claim(fits))
    return [*agreement, *mixing, *coverage_claims(fits, doubled), mixture_claim(tables["posterior"])]


def design_table(tables: dict) -> pd.DataFrame:
    fits, timings = tables["fits"], tables["timings"]
    rows = []
    for (design, missing), g in fits.groupby(["design", "missing"], sort=False):
        t = timings[(timings.design == design) & (timings.missing == missing)]
        rows.append(
            {
                "design": design,
                "missing": missing,
                "persons x items": f"{int(g.n_persons.iloc[0])} x {int(g.n_items.iloc[0])}",
                "methods": ", ".join(dict.fromkeys(g.method)),
                "replications": int(g.rep.nunique()),
                "chains x iterations (warm-up included)": "; ".join(
                    f"{method} {int(m.n_chains.iloc[0])} x {int(m.sweeps.iloc[0]):,}"
                    for method, m in g.groupby("method", sort=False)
                ),
                "converged": f"{int(g.converged.sum())} of {len(g)}",
                "fit seconds (median)": "; ".join(
                    f"{method} {m.wall_seconds.median():.1f}" for method, m in t.groupby("method", sort=False)
                ),
            }
        )
    return pd.DataFrame(rows)


def pairs_figure(tables: dict):
    """z and sd ratios of Gibbs against NUTS and of augmented against omitted missing cells."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    grid = np.linspace(-4, 4, 200)
    for name, label in (("gibbs_vs_nuts", "Gibbs against NUTS"), ("augment_vs_omit", "augmented against omitted")):
        pairs = tables[name]
        if pairs.empty:
            continue
        axes[0].hist(pairs.z.clip(-5, 5), bins=40, density=True, histtype="step", lw=1.5, label=label)
        axes[1].hist(pairs.sd_ratio, bins=40, histtype="step", lw=1.5, label=label)
    axes[0].plot(grid, np.exp(-(grid**2) / 2) / np.sqrt(2 * np.pi), "k--", lw=1, label="N(0, 1)")
    axes[0].set_xlabel("difference of posterior means in Monte Carlo errors (z)")
    axes[0].legend(fontsize=8)
    axes[1].axvline(1.0, color="black", lw=1, ls="--")
    axes[1].set_xlabel("ratio of posterior sds")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def coverage_figure(fits: pd.DataFrame):
    gibbs = fits[fits.method == "gibbs"]
    groups = list(gibbs.groupby(["design", "missing"], sort=False))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(groups)), 3.6))
    for k, (_, g) in enumerate(groups):
        for offset, column in ((-0.15, "discrimination_coverage_90"), (0.15, "difficulty_coverage_90")):
            values = g[column].to_numpy()
            ax.plot(
                np.full(len(values), k + offset) + np.linspace(-0.05, 0.05, len(values)),
                values,
                ".",
                ms=3,
                color="C0" if offset < 0 else "C1",
                alpha=0.5,
            )
            ax.plot([k + offset - 0.1, k + offset + 0.1], [values.mean()] * 2, color="black", lw=2)
    ax.axhline(COVERAGE, color="C3", ls="--", lw=1)
    ax.set_xticks(range(len(groups)), [f"{d}\n{m}" for (d, m), _ in groups], fontsize=8)
    ax.set_ylabel("share of items covered")
    ax.set_title("90% intervals per fit: discrimination (blue), difficulty (orange); bar: mean", fontsize=9)
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    plotting.save(pairs_figure(tables), folder / "agreement.png")
    plotting.save(coverage_figure(tables["fits"]), folder / "coverage.png")
    return [
        (
            "agreement.png",
            "Two samplers of one posterior, over every item parameter and replication: the difference of "
            "means in Monte Carlo standard errors (left, against a standard normal) and the ratio of sds (right).",
        ),
        ("coverage.png", "Coverage of the 90% intervals of the item parameters, one point per fit."),
    ]


def diagnostics_section(tables: dict, facts: dict) -> str:
    from bayesirt.studies.gibbs_2pno import diagnostics

    return diagnostics.section(tables, facts)
