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

TABLE = "doubled_fits"  # the diagnostics' table of ``doubled_fits``
# the run's fits.csv names
FIGURES = ("loading_mse", "intercept_mse", "factor_corr_mse", "loglik_independent", "loglik_own_proposal")
# and the latent's scale (``tables.scale_rows``, mean over factors): at the cap and at twice it,
# whether the latent's spread still moves
SCALE = ("latent_variance", "loading_mse_common_scale")
STATE = ("converged", "steps", *FIGURES, *SCALE)
COLUMNS = ["design", "method", "n_importance", "rep", *STATE, *(f"{c}_doubled" for c in STATE), "seconds", "refitted"]


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


def with_doubled_cap(settings, design: str):
    """The study's settings with ``design``'s step caps (ours and the seed's) doubled."""
    d = settings.design(design)
    doubled = replace(
        d,
        training=replace(d.training, max_steps=2 * d.training.max_steps),
        seed_training=replace(d.seed_training, max_steps=2 * d.seed_training.max_steps),
    )
    return replace(settings, designs=tuple(doubled if x.name == design else x for x in settings.designs))


def doubled_fits(config: dict, n_data_sets: int, progress=print) -> pd.DataFrame:
    """Every method of every mixture design on its first ``n_data_sets`` data sets, as the run
    fitted it (read) and with twice the step cap (fitted): a row per fit. A fit the run has not
    made is left out, and said."""
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
                run = {}
                for fit in fits:
                    record = Path(run_folder(config, fit)) / "fit.json"
                    if record.is_file():
                        estimates = record.parent / "estimates.csv"
                        estimates = pd.read_csv(estimates) if estimates.is_file() else None
                        run[fit.rep] = figures_of(json.loads(record.read_text()), estimates)
                    else:
                        progress(f"doubled_fits: {record.parent} is missing (the run has not fitted it): left out")
                fits = [f for f in fits if f.rep in run]
                if not fits:
                    continue
                refit = not all(run[f.rep]["converged"] for f in fits)  # else a larger cap stops them alike
                t0 = time.perf_counter()
                if refit:
                    outs = methods.fit_block(data.run_replications(config, fits), with_doubled_cap(settings, design))
                    doubled = [figures_of(out.record, out.estimates) for out in outs]
                else:
                    doubled = [run[f.rep] for f in fits]
                seconds = round((time.perf_counter() - t0) / len(fits), 1) if refit else 0.0
                for fit, figures in zip(fits, doubled, strict=True):
                    keys = {"design": design, "method": method, "n_importance": r, "rep": fit.rep}
                    twice = {f"{k}_doubled": v for k, v in figures.items()}
                    rows.append({**keys, **run[fit.rep], **twice, "seconds": seconds, "refitted": refit})
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
        f"The mixture designs' fits on their first {doubled.rep.nunique()} data sets, as the run fitted them and "
        f"again with twice the step cap, all else the same ({made}; `bayesirt.studies.amortized_ifa.doubling`; "
        "a block whose fits all met their stopping rule is not refitted, as a larger cap stops them at the same "
        "step): where the fits behind a claim did not all meet their stopping rule, the claim keeps its verdict "
        "only if doubling moves its figure by less than its interval (the row says so).",
        "",
        *markdown_table(summary(doubled)),
        "",
    ]
