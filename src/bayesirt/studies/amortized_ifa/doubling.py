"""The doubling check behind amortized_ifa's reproduction page (diagnostics part ``doubled_fits``):
the mixture designs' fits, which may stop at their step cap before their stopping rule, fitted
again with twice the cap.

On the first data sets of each mixture design, every method the run fits there (ours, and the
seed's as written) is fitted again as one block per R with twice its ``max_steps`` (the design's
``training`` for ours, its ``seed_training`` for the seed's; all else as the run fits it, the
same data and seeds), and scored as the study scores it, with the latent's scale
(``tables.scale_rows``: does the fitted latent's spread still move between the cap and twice
it?); the run's own figures of the same fits are read from its folders.

Our learning rate's decay does not depend on the cap, so a doubled fit is the run's fit
continued: where the run kept its blocks' final states (the reproduction tool's runs do,
``inference.execution.checkpoints``), the doubled block starts from the run's last step instead
of step 0, with the same results. A block whose fits all met their stopping rule is not fitted
again: a larger cap stops them at the same step, so its doubled figures are its own
(``refitted`` false). Where the fits behind a claim did not all meet their stopping rule, the
claim keeps its verdict only if doubling moves its figure by less than its interval
(``reproduction_claims.doubling``, through the page's ``simulation_claims``).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.studies.amortized_ifa import data
from bayesirt.studies.amortized_ifa.conditions import STUDY, design_fits, run_folder, simulated_designs
from bayesirt.studies.amortized_ifa.tables import scale_rows
from bayesirt.studies.reproduction import DATA

TABLE = "doubled_fits"  # the diagnostics' table of ``doubled_fits``
# the run's fits.csv names
FIGURES = ("loading_mse", "intercept_mse", "factor_corr_mse", "loglik_independent", "loglik_own_proposal")
# and the latent's scale (``tables.scale_rows``, mean over factors): at the cap and at twice it,
# whether the latent's spread still moves
SCALE = ("latent_variance", "loading_mse_common_scale")
STATE = ("converged", "steps", *FIGURES, *SCALE)
# ``run_figures``: where the run's figures were read (its fit folder, or the collected tables);
# ``resumed_at_step``: the step a refitted block started from (the run's kept state, or 0)
COLUMNS = [
    "design",
    "method",
    "n_importance",
    "rep",
    *STATE,
    *(f"{c}_doubled" for c in STATE),
    "seconds",
    "refitted",
    "run_figures",
    "resumed_at_step",
]
# the run's collected tables (``tools/reproduction.py collect``), relative to the repository,
# where the diagnostics run: the run's figures when its fit folders are not on this machine
COLLECTED = DATA / STUDY


def figures_of(record: dict, estimates: pd.DataFrame | None = None) -> dict:
    """The figures of one fit's record: whether it met its stopping rule, its steps, its MSEs and
    its held-out log-likelihoods per person (the claims' figures), and from its ``estimates``
    (when given) its latent variance and loading MSE on a common scale, means over factors."""
    recovery = record.get("recovery") or {}
    rows = pd.DataFrame(scale_rows(estimates)) if estimates is not None else pd.DataFrame()
    return {
        "converged": bool(record["converged"]),
        "steps": int(record["steps"]),
        **{f: float(recovery.get(f, np.nan)) for f in FIGURES if f.endswith("_mse")},
        "loglik_independent": float(record["heldout_loglik"]["independent"]),
        "loglik_own_proposal": float(record["heldout_loglik"].get("own_proposal", np.nan)),
        **{f: float(rows[f].mean()) if len(rows) else np.nan for f in SCALE},
    }


def collected_figures(collected: Path, design: str, method: str, r: int, rep: int) -> dict | None:
    """The run's figures of one fit as ``figures_of`` gives them, read from the run's collected
    tables (``collected``: its ``<design>/fits.csv`` and the latent-scale diagnostic's
    ``diagnostics/latent_scale.csv``, whose factors are averaged); None where they lack the fit."""
    fits, scale = collected / design / "fits.csv", collected / "diagnostics" / "latent_scale.csv"
    if not fits.is_file():
        return None
    f = pd.read_csv(fits)
    row = f[(f.method == method) & (f.importance_samples == r) & (f.rep == rep)]
    if len(row) != 1:
        return None
    row = row.iloc[0]
    figures = {"converged": bool(row.converged), "steps": int(row.steps)}
    figures |= {name: float(row[name]) if name in row else np.nan for name in FIGURES}
    s = pd.read_csv(scale) if scale.is_file() else pd.DataFrame(columns=["design", "method", "n_importance", "rep"])
    s = s[(s.design == design) & (s.method == method) & (s.n_importance == r) & (s.rep == rep)]
    return figures | {name: float(s[name].mean()) if len(s) else np.nan for name in SCALE}


def run_figures(config: dict, fit, collected: Path) -> tuple[dict | None, str]:
    """The run's figures of ``fit`` and where they were read: its fit folder (``figures_of`` of its
    record and estimates) where this machine has it, else the run's collected tables."""
    record = Path(run_folder(config, fit)) / "fit.json"
    if record.is_file():
        estimates = record.parent / "estimates.csv"
        estimates = pd.read_csv(estimates) if estimates.is_file() else None
        return figures_of(json.loads(record.read_text()), estimates), "fit folder"
    return collected_figures(collected, fit.design, fit.method, fit.n_importance, fit.rep), "collected tables"


def with_doubled_cap(settings, design: str):
    """The study's settings with ``design``'s step caps (ours and the seed's) doubled."""
    d = settings.design(design)
    doubled = replace(
        d,
        training=replace(d.training, max_steps=2 * d.training.max_steps),
        seed_training=replace(d.seed_training, max_steps=2 * d.seed_training.max_steps),
    )
    return replace(settings, designs=tuple(doubled if x.name == design else x for x in settings.designs))


def doubled_fits(config: dict, n_data_sets: int, progress=print, collected: Path = COLLECTED) -> pd.DataFrame:
    """Every method of every mixture design on its first ``n_data_sets`` data sets, as the run
    fitted it (read: ``run_figures``) and with twice the step cap (fitted): a row per fit. A fit
    whose run figures are in neither place is left out, and said."""
    from bayesirt.studies.amortized_ifa import methods
    from bayesirt.studies.amortized_ifa.settings import Settings

    settings, study, rows = Settings.from_config(config), config["studies"][STUDY], []
    for design in simulated_designs(config, "mixture"):
        spec = study["designs"][design]
        for method in spec.get("methods", study["methods"]):
            blocks: dict[int, list] = {}
            for fit in design_fits(design, spec, (method,)):
                if fit.rep < n_data_sets:
                    blocks.setdefault(fit.n_importance, []).append(fit)
            for r, fits in blocks.items():
                run, source = {}, {}
                for fit in fits:
                    figures, source[fit.rep] = run_figures(config, fit, collected)
                    if figures is None:
                        progress(f"doubled_fits: {design} {fit.condition} rep{fit.rep}: no run figures; left out")
                    else:
                        run[fit.rep] = figures
                fits = [f for f in fits if f.rep in run]
                if not fits:
                    continue
                refit = not all(run[f.rep]["converged"] for f in fits)  # else a larger cap stops them alike
                t0, resumed = time.perf_counter(), None
                if refit:
                    outs = methods.fit_block(data.run_replications(config, fits), with_doubled_cap(settings, design))
                    doubled = [figures_of(out.record, out.estimates) for out in outs]
                    resumed = outs[0].record.get("timing", {}).get("block_resumed_at_step")
                else:
                    doubled = [run[f.rep] for f in fits]
                seconds = round((time.perf_counter() - t0) / len(fits), 1) if refit else 0.0
                for fit, figures in zip(fits, doubled, strict=True):
                    keys = {"design": design, "method": method, "n_importance": r, "rep": fit.rep}
                    twice = {f"{k}_doubled": v for k, v in figures.items()}
                    facts = {"seconds": seconds, "refitted": refit, "run_figures": source[fit.rep]}
                    rows.append({**keys, **run[fit.rep], **twice, **facts, "resumed_at_step": resumed})
                said = (
                    f"{len(fits)} fits with twice the step cap"
                    if refit
                    else "every fit met its stopping rule, not refitted"
                )
                progress(f"doubled_fits: {design} {method} R = {r}: {said}")
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(doubled: pd.DataFrame) -> pd.DataFrame:
    """A row per design, method and R: steps, loading MSE and held-out log-likelihood, as the run
    fitted them and doubled."""
    rows = []
    for (design, method, r), d in doubled.groupby(["design", "method", "n_importance"], sort=False):
        rows.append(
            {
                "design": f"`{design}`",
                "method": f"`{method}`",
                "R": int(r),
                "fits": len(d),
                "met stopping rule -> doubled": f"{int(d.converged.sum())} -> {int(d.converged_doubled.sum())}",
                "steps (median) -> doubled": f"{d.steps.median():.0f} -> {d.steps_doubled.median():.0f}",
                "loading MSE -> doubled": f"{d.loading_mse.mean():.4f} -> {d.loading_mse_doubled.mean():.4f}",
                "latent variance -> doubled": (
                    f"{d.latent_variance.mean():.2f} -> {d.latent_variance_doubled.mean():.2f}"
                ),
                "held-out log-likelihood -> doubled": (
                    f"{d.loglik_independent.mean():.3f} -> {d.loglik_independent_doubled.mean():.3f}"
                ),
            }
        )
    return pd.DataFrame(rows)


def section(doubled: pd.DataFrame | None, made: str) -> list[str]:
    """The page's lines for the doubling check (none without its table)."""
    from bayesirt.studies.reproduction import markdown_table

    if doubled is None or doubled.empty:
        return []
    return [
        "## Diagnostics: twice the step cap",
        "",
        f"The mixture designs' fits on their first {data_sets(doubled)}, as the run fitted them and "
        f"again with twice the step cap, all else the same ({made}; `bayesirt.studies.amortized_ifa.doubling`; "
        "a block whose fits all met their stopping rule is not refitted, as a larger cap stops them at the same "
        "step): where the fits behind a claim did not all meet their stopping rule, the claim keeps its verdict "
        "only if doubling moves its figure by less than its interval (the row says so).",
        "",
        *markdown_table(summary(doubled)),
        "",
        *provenance(doubled),
    ]


def data_sets(doubled: pd.DataFrame) -> str:
    """How many data sets of each design the check covers, in words: "2 data sets", or where the
    designs differ (a design run with fewer replications), "2 data sets (`mixture_p3`: 1)"."""
    per_design = doubled.groupby("design", sort=False).rep.nunique()
    most = int(per_design.max())
    fewer = [f"`{d}`: {n}" for d, n in per_design.items() if n < most]
    return f"{most} data set{'s' if most != 1 else ''}" + (f" ({'; '.join(fewer)})" if fewer else "")


def provenance(doubled: pd.DataFrame) -> list[str]:
    """A sentence on what the table rests on: its designs, where the run's figures were read and
    where the refitted blocks started (tables written before these columns: none)."""
    if "run_figures" not in doubled or "resumed_at_step" not in doubled:
        return []
    refitted = doubled[doubled.refitted.astype(bool)]
    resumed = sorted({int(s) for s in refitted.resumed_at_step.dropna() if s > 0})
    where = " and ".join(sorted(set(doubled.run_figures.dropna())))
    if set(doubled.run_figures) == {"collected tables"}:
        # no fit folder, so no kept final state of the run's either: the refits began at step 0
        said = "the run's final states were not on the machine the check ran on, so every refitted block fitted "
        said += "from step 0, with the run's data and seeds"
        if resumed:
            said += f" (a block cut off resumed from its own checkpoint, at step {', '.join(map(str, resumed))})"
    elif resumed:
        said = f"the refitted blocks resumed at step(s) {', '.join(map(str, resumed))} (the run's kept states)"
    else:
        said = "every refitted block started at step 0"
    return [
        f"Designs checked: {', '.join(f'`{d}`' for d in dict.fromkeys(doubled.design))}; the run's figures read "
        f"from its {where}; {said}.",
        "",
    ]
