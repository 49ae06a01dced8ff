"""Diagnostics behind amortized_ifa's reproduction page: is a method's loading error on the
simulated designs a drift of the latent's scale, or an error in the loadings themselves?

The model fixes the latent's scale by its prior, N(0, I). The logit of a response moves with
loading times latent, so a fit that spreads the persons wider or narrower than the prior (a
latent variance away from one) has loadings shrunk or grown by the ratio of the spreads (sds),
and the loading MSE against the truth counts that as error. On the seed's mixture scale the
true latent's variance is itself not one, so every method's loadings differ from the generating
ones by that ratio. Two parts here, and the doubling check in ``doubling`` (part
``doubled_fits``):

``latent_scale`` (reads the run's fits, no new fit): per fit and factor, the latent variance
of the fitted encoder over the training persons (the variance of their posterior means plus
their mean posterior variance: the spread of the fitted q, aggregated), the true latent's
variance in the same data, the loadings' slope on the true ones (through the origin), and the
loading MSE twice: as the run scores it, and on a common scale, each loading times its factor's
latent sd (the fit's own, and the truth's), where a pure drift of scale leaves no error.

``implicit_off`` (new fits): ``iwavb`` refitted on the mixture designs' first data sets with its
implicit part switched off (``IWAVBSettings.implicit``: u = eps, a Gaussian q that the
discriminator should find nothing to correct), all else as the run fits it, as one block per
design, scored as ``latent_scale`` scores the run's fits: does the scale drift persist without
the implicit encoder?
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.studies.amortized_ifa import data, doubling
from bayesirt.studies.amortized_ifa.conditions import STUDY, Condition, design_fits, run_folder, simulated_designs
from bayesirt.studies.amortized_ifa.reproduction_pairs import (
    LATENT,
    PAIRS,
    as_pair,
    named,
    pair_doubling,
    paired_claim,
    per_replication,
)
from bayesirt.studies.amortized_ifa.tables import scale_rows
from bayesirt.studies.reproduction_claims import Claim, rests_on

COLUMNS = [
    "design",
    "method",
    "n_factors",
    "n_importance",
    "rep",
    "factor",
    "latent_variance",
    "true_variance",
    "loading_slope",
    "loading_mse",
    "loading_mse_common_scale",
    "converged",
    "steps",
]
OFF = "iwavb_implicit_off"  # the name of ``implicit_off``'s fits in its table


def run_fits(config: dict, n_data_sets: int) -> list[Condition]:
    """The run's fits ``latent_scale`` reads: every method and R of every simulated design, on its
    first ``n_data_sets`` replications."""
    study = config["studies"][STUDY]
    return [
        spec
        for name, design in ((n, study["designs"][n]) for n in simulated_designs(config))
        for spec in design_fits(name, design, design.get("methods", study["methods"]))
        if spec.rep < n_data_sets
    ]


def fit_rows(spec: Condition, estimates: pd.DataFrame, record: dict, method: str | None = None) -> list[dict]:
    keys = {
        "design": spec.design,
        "method": method or spec.method,
        "n_factors": spec.n_factors,
        "n_importance": spec.n_importance,
        "rep": spec.rep,
    }
    fit = {"converged": bool(record["converged"]), "steps": int(record["steps"])}
    return [{**keys, **row, **fit} for row in scale_rows(estimates)]


def latent_scale(config: dict, n_data_sets: int, progress=print) -> pd.DataFrame:
    """``scale_rows`` of the run's fits (``run_fits``), read from their folders."""
    rows = []
    for spec in run_fits(config, n_data_sets):
        folder = Path(run_folder(config, spec))
        if not (folder / "estimates.csv").is_file():
            progress(f"latent_scale: {folder} is missing (the run has not fitted it): left out")
            continue
        record = json.loads((folder / "fit.json").read_text())
        rows += fit_rows(spec, pd.read_csv(folder / "estimates.csv"), record)
    return pd.DataFrame(rows, columns=COLUMNS)


def mixture_designs(config: dict, method: str = "iwavb") -> list[str]:
    """The simulated designs whose latent is a mixture and that the run fits by ``method``."""
    study = config["studies"][STUDY]
    return [
        n
        for n in simulated_designs(config, "mixture")
        if method in study["designs"][n].get("methods", study["methods"])
    ]


def implicit_off_fits(config: dict, n_data_sets: int) -> list[Condition]:
    """The run's ``iwavb`` fits of the mixture designs on their first ``n_data_sets`` data sets."""
    designs = config["studies"][STUDY]["designs"]
    return [
        spec
        for name in mixture_designs(config)
        for spec in design_fits(name, designs[name], ("iwavb",))
        if spec.rep < n_data_sets
    ]


def diagnostic_inputs(config: dict, n_data_sets: int) -> list[str]:
    """The workflow's files the diagnostics read: the data of the mixture designs' first data sets,
    which ``implicit_off`` and ``doubling`` fit (the run's fits they read are read where the run
    left them, not built)."""
    reps = range(n_data_sets)
    return sorted(
        f"{data.data_folder(d, r)}/responses.parquet"
        for d in simulated_designs(config, "mixture")
        for r in reps
        if r < config["studies"][STUDY]["designs"][d]["replications"]
    )


def without_implicit(cfg):
    """IWAVB's settings with its implicit part switched off (u = eps: a Gaussian q)."""
    return replace(cfg, implicit=False)


def implicit_off(config: dict, n_data_sets: int, progress=print) -> pd.DataFrame:
    """``iwavb`` with ``implicit=False`` on ``implicit_off_fits``, one block per design and R, each
    fit scored by ``scale_rows`` (method ``OFF``)."""
    from bayesirt.studies.amortized_ifa import methods
    from bayesirt.studies.amortized_ifa.settings import Settings

    settings, rows, blocks = Settings.from_config(config), [], {}
    for spec in implicit_off_fits(config, n_data_sets):
        blocks.setdefault((spec.design, spec.n_importance), []).append(spec)
    for (design, r), specs in blocks.items():
        block = data.run_replications(config, specs)
        progress(f"implicit_off: {design} R = {r}, {len(block)} fits of iwavb with implicit=False")
        outs = methods.fit_block(block, settings, adjust=without_implicit)
        for rep, out in zip(block, outs, strict=True):
            rows += fit_rows(rep.cond, out.estimates, out.record, method=OFF)
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Means over fits and factors, by design, method and R."""
    rows = []
    for (design, method, r), f in table.groupby(["design", "method", "n_importance"], sort=False):
        fits = f.drop_duplicates("rep")
        rows.append(
            {
                "design": f"`{design}`",
                "method": f"`{method}`",
                "R": int(r),
                "fits": len(fits),
                "met stopping rule": f"{int(fits.converged.sum())} of {len(fits)}",
                "latent variance: fitted; true": f"{f.latent_variance.mean():.2f}; {f.true_variance.mean():.2f}",
                "loading slope on truth": f"{f.loading_slope.mean():.2f}",
                "loading MSE: as scored; common scale": (
                    f"{f.loading_mse.mean():.4f}; {f.loading_mse_common_scale.mean():.4f}"
                ),
            }
        )
    return pd.DataFrame(rows)


def findings(table: pd.DataFrame) -> list[str]:
    """One sentence per design and method, written from the numbers: how much of the loading
    MSE a common scale removes, and which way the latent's scale drifted."""
    lines = []
    for (design, method), f in table.groupby(["design", "method"], sort=False):
        raw, common = f.loading_mse.mean(), f.loading_mse_common_scale.mean()
        fitted, true = f.latent_variance.mean(), f.true_variance.mean()
        share = 1 - common / raw if raw > 0 else np.nan
        drift = "wider than" if fitted > 1.1 else ("narrower than" if fitted < 0.9 else "close to")
        lines.append(
            f"`{method}` on `{design}`: the fitted latent variance is {fitted:.2f} ({drift} the prior's 1; the true "
            f"latent's {true:.2f}); its loading MSE is {raw:.4f} as scored and {common:.4f} on a common scale, "
            + (
                f"so the latent's scale accounts for {share:.0%} of it."
                if np.isfinite(share) and share > 0
                else "so the latent's scale does not account for it."
            )
        )
    return lines


def implicit_part(table: pd.DataFrame) -> list[str]:
    """One sentence per design with ``iwavb`` fits and their refits without the implicit part
    (``OFF``): does the drift of the latent's variance from the truth go with the implicit part?
    This project's reading: it persists where at least half of it stays without the implicit part
    (beside IWAE's drift, a Gaussian q with no discriminator, where the table has it)."""
    lines = []
    for design, f in table.groupby("design", sort=False):
        means = f.groupby("method").agg(fitted=("latent_variance", "mean"), true=("true_variance", "mean"))
        means["common"] = f.groupby("method").loading_mse_common_scale.mean()
        if not {"iwavb", OFF} <= set(means.index):
            continue
        on, off = means.loc["iwavb"], means.loc[OFF]
        drift_on, drift_off = on.fitted - on.true, off.fitted - off.true
        persists = abs(drift_off) >= 0.5 * abs(drift_on)
        iwae = (
            f" (`iwae`, a Gaussian q with no discriminator: {means.loc['iwae'].fitted - means.loc['iwae'].true:+.2f})"
            if "iwae" in means.index
            else ""
        )
        lines.append(
            f"On `{design}`, switching IWAVB's implicit part off moves the fitted latent variance from {on.fitted:.2f} "
            f"to {off.fitted:.2f} (true {on.true:.2f}: a drift of {drift_on:+.2f} with it, {drift_off:+.2f} without"
            f"{iwae}) and the loading MSE on a common scale from {on.common:.4f} to {off.common:.4f}: "
            + (
                "the drift persists without the implicit part, so it comes from what both share (the "
                "discriminator's T in the importance weight, the training), not from the implicit q."
                if persists
                else "most of the drift goes with the implicit part, so the implicit q carries it."
            )
            + " (This project's reading: persists where at least half the drift stays.)"
        )
    return lines


def per_fit(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows averaged over factors: one per fit (design, method, R, replication)."""
    keys = ["design", "method", "n_importance", "rep"]
    figures = table.groupby(keys, sort=False)[["loading_mse", "loading_mse_common_scale"]].mean()
    return figures.join(table.groupby(keys, sort=False)["converged"].all()).reset_index()


def claims(table: pd.DataFrame | None, doubled: pd.DataFrame | None = None) -> list[Claim]:
    """The page's row on the mixture designs' loading claim, read on a common scale: IWAVB
    against IWAE paired by replication (each pair of ``PAIRS`` the table has), the loading MSE of
    each loading times its factor's latent sd. This project's reading (none without the table).
    ``doubled``: the doubling check's table, which a row on fits that missed their stopping rule
    needs to keep its verdict."""
    if table is None or table.empty:
        return []
    fits = per_fit(table[table.design.map(LATENT) == "mixture"])
    rows = []
    for pair in PAIRS:
        if not fits.method.isin(pair).any():
            continue
        paired = as_pair(fits, pair).rename(columns={"n_importance": "importance_samples"})
        designs = ", ".join(dict.fromkeys(paired.design))
        claim = paired_claim(
            f"IWAVB has the lower loading MSE on a common scale, each loading times its factor's latent sd "
            f"(mixture latents, {designs}; diagnostics)",
            "no number (this project's reading of Figure 11)",
            per_replication(paired, "loading_mse_common_scale"),
            "loading MSE on a common scale",
            "lower",
        )
        check = None if doubled is None else pair_doubling(as_pair(doubled, pair), "loading_mse_common_scale")
        rows.append(rests_on(named(claim, pair), paired, doubling=check))
    return rows


SCALE_PARTS = ("latent_scale", "implicit_off")  # the tables of the section on the latent's scale


def section(tables: dict, facts: dict) -> str:
    """The reproduction page's sections: ``summary`` and ``findings`` of the latent's scale (both
    of its parts), then the doubling check's table."""
    from bayesirt.studies.reproduction import markdown_table
    from bayesirt.studies.reproduction_diagnostics import made_by, part_facts

    scale = [tables[name] for name in SCALE_PARTS if tables.get(name) is not None and not tables[name].empty]
    lines = []
    if scale:
        table = pd.concat(scale, ignore_index=True)
        made = "; ".join(f"{n}: {made_by(part_facts(facts, n))}" for n in SCALE_PARTS if tables.get(n) is not None)
        lines += [
            "## Diagnostics: the latent's scale or the loadings?",
            "",
            "Each fit's latent variance (the spread of its encoder over the training persons: variance of the "
            "posterior means plus mean posterior variance) beside the true latent's, the loadings' slope on the "
            "true ones, and the loading MSE as the run scores it and on a common scale (each loading times its "
            "factor's latent sd, the fit's and the truth's): a pure drift of the latent's scale leaves no error on "
            f"the common scale. `{OFF}`: `iwavb` refitted with its implicit part switched off, all else as the run "
            f"fits it ({made}; `bayesirt.studies.amortized_ifa.diagnostics`).",
            "",
            *markdown_table(summary(table)),
            "",
            *[f"- {line}" for line in findings(table) + implicit_part(table)],
            "",
        ]
    lines += doubling.section(tables.get(doubling.TABLE), made_by(part_facts(facts, doubling.TABLE)))
    return "\n".join(lines)


# The page's diagnostic tables (``tools/reproduction.py diagnose amortized_ifa --parts``): the
# latent's scale of the run's fits (reads them), IWAVB fitted again without its implicit part on
# the mixture designs, and the doubling check (the long parts).
PARTS = {"latent_scale": latent_scale, "implicit_off": implicit_off, doubling.TABLE: doubling.doubled_fits}
