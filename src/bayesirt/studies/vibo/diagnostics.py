"""Diagnostics behind vibo's reproduction page: whether the ability intervals that miss their 90%
come from the encoder (the method) or from the fitted items and this implementation.

On the study's own simulated data sets of one design (``DESIGN``: the run's data, missingness
masks and fit seeds, rebuilt from the config's seed as the workflow builds them), each VIBO
variant of ``METHODS`` is fitted as the study fits it, and its persons are scored twice:

1. **By the encoder**, as the page reports them (the amortized q(theta | y)'s mean +- 1.645 sd).
2. **By the exact posterior at the fit's own items**: each person's posterior under the N(0, 1)
   prior and the 2PL likelihood of the cells the fit saw, with the fitted items' variational
   means plugged in, by quadrature (``inference.marginal.mml_posterior``; EAP +- 1.645 posterior
   sd). If these intervals cover about 90% where the encoder's do not, the items are right and the
   gap is the encoder's (amortization and the mean-field q), not the implementation's items.

The averaging encoder (``CONTROL``) is fitted and scored the same way: it shares every piece of
code with the seed's product but the encoder, so where it is calibrated and the product is not,
the product's design, not the shared implementation, moves the product's intervals.

And once more for the seed's variant with **no cells set apart for scoring** (in a condition
with missing responses the study hides ``score_fraction`` of the observed cells to score
predictions; at 0% it hides none): the same data set with ``score_fraction`` 0, so that the fit
sees every observed cell, as the seed's experiment does.

**The doubling check** (``doubled_fits``): the VIBO variants whose calibration and comparison
rows the page judges, refitted on the first data sets of the simulated designs of
``DOUBLED_DESIGNS`` under each of their missingness conditions, at the run's training and again
for twice the steps the longest fit of each block took, with no early stop; and NUTS, in the
designs that fit it, at the run's warm-up and draws and again with both doubled (the rows that
judge VIBO against NUTS rest on NUTS's fits too). Where the fits behind a row did not all meet
their stopping rule, the row keeps its verdict only if doubling moves its figure by less than its
interval (``reproduction_claims.doubling``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from bayesirt.studies.reproduction_diagnostics import doubled_rows, fit_twice
from bayesirt.studies.vibo import gradient_samples
from bayesirt.studies.vibo.conditions import STUDY, Condition
from bayesirt.studies.vibo.data import data_set

DESIGN = "n1k"
# the seed's variant, ours of the same product, and the control: the averaging encoder, fitted by
# the same code with all else as vibo_seed, so that where it is calibrated and the product is
# not, the shared implementation (decoder, training, scoring) is not what moves the product
METHODS = ("vibo_seed", "vibo_prior_per_missing", "vibo_average_seed")
SEED_METHOD = "vibo_seed"
CONTROL = "vibo_average_seed"
NO_SCORED = SEED_METHOD  # refitted with no cells set apart
MISSING = ("mcar0", "mcar20")
N_NODES = 101  # Gauss-Hermite nodes of the exact posterior (posterior sds of about 0.2 at 100 items)
Z90 = 1.6448536269514722
COLUMNS = [
    "design",
    "missing",
    "method",
    "scored_cells",
    "rep",
    "converged",
    "ability_rmse",
    "coverage_90",
    "exact_ability_rmse",
    "exact_coverage_90",
    "mean_sd_ratio",
    "seconds",
]


def own_means(est: pd.DataFrame, parameter: str) -> np.ndarray:
    """A parameter's means as the method fitted them (``vi_mean`` where the table reports
    corrected items), in item (or person) order."""
    d = est[est.parameter == parameter].sort_values(["item", "person"])
    col = d["vi_mean"].fillna(d["mean"]) if "vi_mean" in d else d["mean"]
    return col.to_numpy(float)


def exact_scores(y: np.ndarray, est: pd.DataFrame, n_nodes: int = N_NODES) -> tuple[np.ndarray, np.ndarray]:
    """EAP abilities and posterior sds of the persons of ``y`` (missing -1) at the fit's own 2PL
    items (P(Y = 1) = sigmoid(a theta - d): a GRM of two categories with cut d), prior N(0, 1)."""
    from bayesirt.inference.marginal import mml_posterior

    a, d = own_means(est, "discrimination"), own_means(est, "difficulty")
    _, eap, psd = mml_posterior.posterior(np.asarray(y), a, d[:, None], n_categories=2, n_nodes=n_nodes)
    return eap[:, 0], psd[:, 0]


def abilities(est: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The true abilities and a fit's means and sds of them, in person order."""
    ab = est[est.parameter == "ability"].sort_values("person")
    return tuple(ab[c].to_numpy(float) for c in ("true", "mean", "sd"))


def scored(true, mean, sd) -> dict:
    """Ability RMSE and the coverage of the true values by mean +- 1.645 sd."""
    return {
        "ability_rmse": float(np.sqrt(np.mean((mean - true) ** 2))),
        "coverage_90": float(np.mean(np.abs(mean - true) < Z90 * sd)),
    }


def one_fit(
    config: dict, method: str, missing: str, rep: int, score_fraction: float | None = None, design: str = DESIGN
) -> dict:
    """One row: ``method`` fitted to one data set, scored by its encoder and exactly."""
    from bayesirt.studies.vibo import methods
    from bayesirt.studies.vibo.settings import Settings

    train, hidden, holdout, truth, seed = data_set(config, design, missing, rep, score_fraction)
    t0 = time.perf_counter()
    out = methods.fit(
        train,
        hidden,
        holdout,
        truth,
        Condition(design, missing, method, rep),
        settings=Settings.from_config(config),
        seed=seed,
    )
    true, mean, sd = abilities(out.estimates)
    eap, psd = exact_scores(train.responses, out.estimates)
    exact = scored(true, eap, psd)
    return {
        "design": design,
        "missing": missing,
        "method": method,
        "scored_cells": score_fraction is None or score_fraction > 0,
        "rep": rep,
        "converged": bool(out.record["converged"]),
        **scored(true, mean, sd),
        "exact_ability_rmse": exact["ability_rmse"],
        "exact_coverage_90": exact["coverage_90"],
        "mean_sd_ratio": float(np.mean(sd / psd)),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def encoder_fits(config: dict, n_data_sets: int, progress=print, design: str = DESIGN) -> pd.DataFrame:
    """Every method of ``METHODS`` on the first ``n_data_sets`` data sets of ``design`` under each
    missingness of ``MISSING`` the design has, and ``NO_SCORED`` again with no scored cells."""
    spec = config["studies"][STUDY]["designs"][design]
    rows = []
    for missing in [m for m in MISSING if m in spec["missing"]]:
        for rep in range(min(n_data_sets, spec["replications"])):
            runs = [(m, None) for m in METHODS] + [(NO_SCORED, 0.0)]
            for method, fraction in runs:
                rows.append(one_fit(config, method, missing, rep, fraction, design))
                r = rows[-1]
                progress(
                    f"{missing} rep {rep} {method}{'' if r['scored_cells'] else ' (no scored cells)'}: coverage "
                    f"{r['coverage_90']:.3f} (exact at its items {r['exact_coverage_90']:.3f}), {r['seconds']:.0f} s"
                )
    return pd.DataFrame(rows, columns=COLUMNS)


DOUBLED = ("vibo_one_prior", "vibo_prior_per_missing", "vibo_seed", "vibo_average_seed")
DOUBLED_DESIGNS = ("n1k", "n10k", "rwa_grm")  # the simulated designs (a truth) the rows judge
FIGURES = ("steps", "ability_rmse", "coverage_90")  # each at the run's training and doubled
DOUBLED_COLUMNS = ["design", "missing", "method", "rep", "converged", *FIGURES]
DOUBLED_COLUMNS += [*(f"{c}_doubled" for c in FIGURES), "seconds"]


SAMPLED = "nuts"  # refitted with its warm-up and draws doubled, where a design fits it


def with_steps(settings, steps: int):
    """The study's settings with every trained fit run for exactly ``steps`` steps."""
    return replace(settings, training={**settings.training, "min_steps": steps, "max_steps": steps})


def with_sweeps(settings, sweeps: int):
    """The study's settings with NUTS's warm-up and draws scaled together so that each chain runs
    ``sweeps`` iterations (a NUTS record's steps: warm-up and draws of a chain)."""
    nuts = settings.nuts
    factor = sweeps / (nuts["n_warmup"] + nuts["n_samples"])
    scaled = {key: round(nuts[key] * factor) for key in ("n_warmup", "n_samples")}
    return replace(settings, nuts={**nuts, **scaled})


def figures_of(out) -> dict:
    return {
        "steps": int(out.record["steps"]),
        "converged": bool(out.record["converged"]),
        **scored(*abilities(out.estimates)),
    }


def doubled_fits(config: dict, n_data_sets: int, progress=print) -> pd.DataFrame:
    """``DOUBLED`` (those the config fits) on the first ``n_data_sets`` data sets of each design of
    ``DOUBLED_DESIGNS`` the config has, under each of its missingness conditions, fitted as a block
    at the run's settings and again for twice the steps the longest of them took; NUTS too where the
    design fits it, at the run's warm-up and draws and again with both doubled."""
    from bayesirt.studies.vibo import methods
    from bayesirt.studies.vibo.settings import Settings

    study, base = config["studies"][STUDY], Settings.from_config(config)
    rows = []
    for design in [d for d in DOUBLED_DESIGNS if d in study["designs"]]:
        spec = study["designs"][design]
        if not spec.get("enabled", True):
            continue
        n = min(n_data_sets, spec["replications"], spec["block_size"])
        for missing in spec["missing"]:
            sets = [data_set(config, design, missing, rep) for rep in range(n)]
            sampled = [SAMPLED] if spec.get("nuts") and SAMPLED in study["methods"] else []
            for method in [m for m in DOUBLED if m in study["methods"]] + sampled:
                reps = [
                    methods.Replication(train, hidden, holdout, truth, Condition(design, missing, method, rep), seed)
                    for rep, (train, hidden, holdout, truth, seed) in enumerate(sets)
                ]
                longer = with_sweeps if method == SAMPLED else with_steps
                first, second, steps, seconds = fit_twice(methods.fit_block, reps, base, longer, figures_of)
                labels = {"design": design, "missing": missing, "method": method}
                rows += doubled_rows(labels, first, second, FIGURES, seconds)
                progress(
                    f"{design} {missing} {method}: coverage {np.mean([f['coverage_90'] for f in first]):.3f} -> "
                    f"{np.mean([f['coverage_90'] for f in second]):.3f} with {steps} steps"
                )
    return pd.DataFrame(rows, columns=DOUBLED_COLUMNS)


def doubled_summary(doubled: pd.DataFrame) -> pd.DataFrame:
    """A row per design, missingness and method: steps, ability RMSE and coverage, at the run's
    training and doubled."""
    rows = []
    for (design, missing, method), d in doubled.groupby(["design", "missing", "method"], sort=False):
        rows.append(
            {
                "condition": f"design `{design}`, {missing}",
                "method": f"`{method}`",
                "data sets": len(d),
                "stopped by their rule": f"{int(d.converged.sum())} of {len(d)}",
                "steps (median) -> doubled": f"{d.steps.median():.0f} -> {d.steps_doubled.iloc[0]}",
                "90% coverage -> doubled": f"{d.coverage_90.mean():.3f} -> {d.coverage_90_doubled.mean():.3f}",
                "ability RMSE -> doubled": f"{d.ability_rmse.mean():.4f} -> {d.ability_rmse_doubled.mean():.4f}",
            }
        )
    return pd.DataFrame(rows)


# ---- the page's section ---------------------------------------------------------------------------


def summary(fits: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (missing, method, scored), f in fits.groupby(["missing", "method", "scored_cells"], sort=False):
        rows.append(
            {
                "condition": f"design `{f.design.iloc[0]}`, {missing}",
                "method": f"`{method}`" + ("" if scored else ", no cells set apart"),
                "data sets": len(f),
                "90% coverage: encoder": f"{f.coverage_90.mean():.3f}",
                "exact posterior at its items": f"{f.exact_coverage_90.mean():.3f}",
                "ability RMSE: encoder; exact": f"{f.ability_rmse.mean():.3f}; {f.exact_ability_rmse.mean():.3f}",
                "encoder sd / posterior sd": f"{f.mean_sd_ratio.mean():.2f}",
            }
        )
    return pd.DataFrame(rows)


NEAR = 0.03  # the page's tolerance for a calibrated 90% interval


def control_finding(scored: pd.DataFrame) -> list[str]:
    """The sentence on the control (``CONTROL``) against the seed's product, per missingness:
    whether the same code with another encoder is calibrated where the product is not."""
    lines = []
    for missing, f in scored.groupby("missing", sort=False):
        control, seed = f[f.method == CONTROL], f[f.method == SEED_METHOD]
        if control.empty or seed.empty:
            continue
        c_enc, c_exact = control.coverage_90.mean(), control.exact_coverage_90.mean()
        s_enc = seed.coverage_90.mean()
        if abs(c_enc - 0.9) <= NEAR and abs(c_exact - 0.9) <= NEAR and abs(s_enc - 0.9) > NEAR:
            lines.append(
                f"At {missing} the averaging encoder (`{CONTROL}`), fitted by the same code with all else as "
                f"`{SEED_METHOD}`, covers {c_enc:.3f} (exact posterior at its items {c_exact:.3f}) where the product "
                f"covers {s_enc:.3f}: what moves the product's intervals is its design (a prior expert per missing "
                "response, as the seed writes it), not the implementation the two share."
            )
        else:
            lines.append(
                f"At {missing} the averaging encoder (`{CONTROL}`) covers {c_enc:.3f} (exact posterior at its items "
                f"{c_exact:.3f}) and the product {s_enc:.3f}: the control does not single out the product's design."
            )
    return lines


def findings(fits: pd.DataFrame) -> list[str]:
    """What the table says, in sentences written from its numbers."""
    lines = []
    scored = fits[fits.scored_cells]
    for method, f in scored.groupby("method", sort=False):
        enc, exact, ratio = f.coverage_90.mean(), f.exact_coverage_90.mean(), f.mean_sd_ratio.mean()
        verdict = (
            "the items are right and the gap is the encoder's: its intervals are "
            + ("narrower" if ratio < 1 else "wider")
            + f" than the exact posterior's (sd ratio {ratio:.2f})"
            if abs(exact - 0.9) <= NEAR < abs(enc - 0.9)
            else (
                "the exact posterior at the fitted items misses 90% too: the fitted items, not the encoder alone, "
                "move the intervals"
                if abs(exact - 0.9) > NEAR
                else "both are calibrated"
            )
        )
        lines.append(
            f"`{method}`: the encoder's 90% intervals cover {enc:.3f} of the true abilities, the exact posterior's "
            f"at the same fitted items {exact:.3f} (means over {len(f)} fits): {verdict}."
        )
    lines += control_finding(scored)
    none = fits[~fits.scored_cells]
    for missing, f in none.groupby("missing", sort=False):
        with_cells = scored[(scored.missing == missing) & (scored.method == f.method.iloc[0])]
        if len(with_cells):
            lines.append(
                f"`{f.method.iloc[0]}` at {missing} with no cells set apart for scoring: encoder coverage "
                f"{f.coverage_90.mean():.3f} against {with_cells.coverage_90.mean():.3f} with them; the cells set "
                "apart are "
                + (
                    "not what moves it."
                    if abs(f.coverage_90.mean() - with_cells.coverage_90.mean()) <= NEAR
                    else "part of it."
                )
            )
    return lines


def section(tables: dict, facts: dict) -> str:
    """The reproduction page's section: the table of ``summary`` and the ``findings``, then the
    doubling check's table."""
    from bayesirt.studies.reproduction import markdown_table
    from bayesirt.studies.reproduction_diagnostics import made_by, part_facts

    fits, doubled = tables.get("encoder_fits"), tables.get("doubled_fits")
    lines = []
    if fits is not None and not fits.empty:
        lines += [
            "## Diagnostics: the encoder or the items?",
            "",
            f"VIBO's variants refitted on the first {fits.rep.nunique()} data sets of design "
            f"`{fits.design.iloc[0]}` (the run's "
            "data, masks and fit seeds), each person scored by the encoder and by the exact posterior (quadrature, "
            f"prior N(0, 1)) at the fit's own items ({made_by(part_facts(facts, 'encoder_fits'))}; "
            "`bayesirt.studies.vibo.diagnostics`).",
            "",
            *markdown_table(summary(fits)),
            "",
            *[f"- {line}" for line in findings(fits)],
            "",
        ]
    if doubled is not None and not doubled.empty:
        lines += [
            "## Diagnostics: twice the steps",
            "",
            "The VIBO variants on the same data sets of the simulated designs, as a block at the run's training and "
            "again for twice the steps the longest fit of the block took, with no early stop, and NUTS where a design "
            "fits it, at the run's warm-up and draws and again with both doubled (its steps are a chain's iterations, "
            "warm-up included; 'stopped by their rule' is then R-hat and ESS met): where the fits behind "
            "a row did not all meet their stopping rule, the row keeps its verdict only "
            "if doubling moves its figure by less than its interval (the row says so). "
            "The column 'stopped by their rule' is the training's own flag for the refits; the run's tables "
            "also count a fit whose loss was still falling beyond its noise when it stopped as unconverged "
            "(status 'still improving'), so they show fewer; the rows above judge the run's fits by the run's tables.",
            "",
            *markdown_table(doubled_summary(doubled)),
            "",
        ]
    samples = tables.get(gradient_samples.TABLE)
    lines += gradient_samples.section(samples, made_by(part_facts(facts, gradient_samples.TABLE)))
    return "\n".join(lines)


# The page's diagnostic tables (``tools/reproduction.py diagnose vibo --parts``): VIBO's abilities
# by its encoder and by the exact posterior at its fitted items, on the study's own data sets;
# the doubling check of the VIBO variants (the longest part); the seed's variant at several
# samples per gradient.
PARTS = {"encoder_fits": encoder_fits, "doubled_fits": doubled_fits, "gradient_samples": gradient_samples.sample_fits}
