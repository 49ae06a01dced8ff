# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # VIBO: amortized variational IRT robust to missing responses
#
# The `vibo` study (seed 004, Wu et al. 2020) fits IRT models to simulated data by amortized
# variational inference: q(d) a mean-field Gaussian over item parameters and q(a | d, r) a
# product of Gaussian experts, one per observed response. A design is a binary 2PL
# (`model: 2pl`) or a graded response model (`model: grm`) on data shaped like the RWA scale
# (22 items with 9 categories, drawn by the simulator of the GRM studies, as one scale). Two
# treatments of missing responses are compared: one prior expert whatever is missing
# (`vibo_one_prior`), and the seed's prior expert per missing response
# (`vibo_prior_per_missing`). Baselines on the same data: non-amortized mean-field VI (`mfvi`),
# marginal ML by quadrature with EAP abilities (`mml`, for the unidimensional 2PL and GRM
# alike) and, on small designs, NUTS (`nuts`, the reference posterior).
#
# Each condition hides cells by the design's missingness (MCAR or MNAR, percent of all
# cells) and, on top, a share of the still-observed cells that are scored as missing-response
# predictions. New persons from the same population give the held-out log-likelihood (one
# Laplace importance-sampling evaluator for every method's item estimates).
#
# A design may fit a prepared real data set instead (`dataset:`, e.g. the RWA data by the GRM).
# Real responses have no true parameters, so such a design gets its own section at the end: the
# methods set against each other and scored on the cells its missingness hid. It is left out
# of every table and figure that needs a truth (recovery, calibration, the variants) and of the
# claims.
#
# Everything below is read from the workflow's result tables; rerun the workflow to rebuild it.

# %% tags=["parameters"]
designs = "n1k"
real_designs = ""
results_dir = "results/vibo"

# %% [markdown]
# ## Convergence flags
# Fits that did not converge, stopped at `max_steps` while their loss was still falling, or were
# stopped by the relative-tolerance rule while their loss was still falling beyond its noise
# (each record's `stop_reason`, `loss_still_improving`, `loss_slope` and `loss_slope_se`).

# %%
from IPython.display import Markdown, display

from bayesirt.records import convergence_flags
from bayesirt.studies import report_display

display(report_display.setup())  # tables in full, within the page
verdict, flags = convergence_flags(results_dir)
display(Markdown(verdict))
flags

# %%
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from bayesirt import plotting
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.vibo import figures, tables

names = [d for d in designs.split(",") if d]  # simulated designs: a truth to recover
real_names = [d for d in real_designs.split(",") if d]  # real data: no truth


def read(designs, table):
    return pd.concat([pd.read_csv(Path(results_dir) / d / f"{table}.csv") for d in designs], ignore_index=True)


if names:
    summary, fits, variants, timings = (read(names, t) for t in ("summary", "fits", "variants", "timings"))
    summary = tables.with_times(summary, timings)  # mean fit times come from timings.csv
    print(
        f"{len(fits)} fits of simulated data; {int(summary['replications'].min())} to "
        f"{int(summary['replications'].max())} replications per condition"
    )
else:
    print("No simulated design in this run: the sections up to the real data are empty.")

# %% [markdown]
# ## Recovery against the truth
#
# Per design (its model in brackets), missingness and method, mean over replications: ability
# RMSE and correlation, discrimination RMSE, the RMSE of the difficulties (2PL) or of the
# category cuts (GRM: P(Y >= k) = sigmoid(a theta - cut_k)), the coverage of the true
# abilities by the 50% and 90% intervals (MML-EAP's intervals are its EAP posterior sds), and
# that of the true discriminations by each method's 90% intervals (MML: its standard errors;
# VIBO and mean-field VI: a Laplace approximation of the items' marginal posterior at its mode,
# where the record's `item_uncertainty` says so; the RMSEs are of each method's own estimates).

# %%
models = fits.drop_duplicates("design").set_index("design")["model"] if names else pd.Series(dtype=str)
recovery_cols = [
    c
    for c in [
        "ability_rmse_mean",
        "ability_corr_mean",
        "discrimination_rmse_mean",
        "difficulty_rmse_mean",
        "cut_rmse_mean",
        "coverage_50_mean",
        "coverage_90_mean",
        "discrimination_coverage_90_mean",
    ]
    if names and c in summary
]
for d in names:
    display(Markdown(f"**{d}** ({models.get(d, '2pl')})"))
    rec = summary[summary.design == d][["missing", "method", "replications"] + recovery_cols]
    display(rec.dropna(axis=1, how="all").round(4).reset_index(drop=True))

# %% [markdown]
# ## Accuracy against time
#
# Ability RMSE against the truth versus fit time (compilation excluded), mean over replications.

# %%
for d in names:
    display(Markdown(f"**{d}**"))
    plotting.show(figures.accuracy_time(summary[summary.design == d]))

# %% [markdown]
# ## Calibration of the ability posteriors
#
# Coverage of the true abilities by the 50% and 90% intervals (nominal levels dashed).

# %%
for d in names:
    display(Markdown(f"**{d}**"))
    plotting.show(figures.calibration(summary[summary.design == d]))

# %% [markdown]
# ## Missing-response prediction
#
# Accuracy and mean log score of the posterior predictive of the hidden (scored) cells, and
# the held-out log-likelihood per new person, mean over replications.

# %%
cols = [
    "design",
    "missing",
    "method",
    "replications",
    "hidden_accuracy_mean",
    "hidden_log_score_mean",
    "heldout_loglik_mean",
    "ability_rmse_mean",
    "coverage_90_mean",
    "wall_seconds_mean",
]
if names:
    display(summary[cols].round(4))

# %% [markdown]
# ## The two missing-data variants side by side
#
# One prior expert (`vibo_one_prior`) against a prior expert per missing response
# (`vibo_prior_per_missing`) over the missingness conditions of each design, MCAR and the
# non-ignorable MNAR stress case (the response itself makes a cell more likely to be hidden)
# alike; MML-EAP dashed as the reference.

# %%
for d in names:
    display(Markdown(f"**{d}**"))
    plotting.show(figures.variants(summary[summary.design == d]))
if names:
    display(variants.round(4))

# %% [markdown]
# ## MCAR against MNAR at the same rate
#
# Where a design hides the same share of cells completely at random and not at random, each
# method's ability RMSE, 90% coverage and hidden-cell log score under both, and the change
# (MNAR − MCAR). Under MNAR the hidden cells are not a random sample of the responses, so the
# observed ones mislead the item estimates; what matters is how much more each method loses.

# %%
mechanisms = tables.mechanism_table(summary) if names else pd.DataFrame()
if mechanisms.empty:
    display(Markdown("No simulated design here has MCAR and MNAR at the same rate."))
else:
    display(mechanisms.round(4))

# %% [markdown]
# ## Model checks of every fit
# Beside each fit, `item_fit.csv`, `person_fit.csv` and `global_fit.json`, at the fit's item
# values on its training persons: the checks compare observed cells only, and their
# replications keep each person's missing cells (a parametric bootstrap at the item values).
# On data simulated from the model, about 5% of items flagged is the false-alarm rate; under
# MNAR missingness the observed cells are no longer a sample the model describes, and more
# flags are what the checks should say.

# %%
from bayesirt.studies import model_checks

checked, checked_items, checked_persons = model_checks.collected(results_dir)
if len(checked):
    display(checked.groupby(["design", "missing", "method"]).mean().drop(columns="rep").round(3))
    plotting.show(plotting.model_checks(checked_items, checked_persons))
else:
    display(Markdown("No model checks in this run."))

# %% [markdown]
# ## Which of the seed's claims do these numbers support?
# Each claim is judged on paired differences, one per design, missingness condition and
# replication (every method fitted to the same data), by a 95% t interval for their mean:
# **supported** when the whole interval is on the claimed side, **contradicted** when it is on
# the other side, **inconclusive** when it reaches both (with the replications that would
# decide), **not comparable** with fewer than two pairs or no spread between them (the words of
# the claims table at the end). Only the
# simulated designs count: the claims are about accuracy against the truth, which real data
# lack (their designs are described in the next section instead).


# %%
from bayesirt.studies.reproduction import page_sentence


def mean_of(method, column, missing=None):
    s = summary[summary.method == method]
    if missing is not None:
        s = s[s.missing == missing]
    return float(s[f"{column}_mean"].mean()) if len(s) else float("nan")


def claims(vib="vibo_one_prior"):
    """The claims' verdicts and descriptions, from the simulated designs' fits only."""
    lines = []
    t_vibo, t_nuts, t_mfvi = (
        mean_of(vib, "wall_seconds"),
        mean_of("nuts", "wall_seconds"),
        mean_of("mfvi", "wall_seconds"),
    )
    lines.append(
        f"* Mean fit times: VIBO {t_vibo:.2f} s, mean-field VI {t_mfvi:.2f} s"
        + (f", NUTS {t_nuts:.1f} s ({t_nuts / t_vibo:.0f}x VIBO's)." if np.isfinite(t_nuts) else " (no NUTS here).")
    )
    for c in tables.claim_verdicts(fits, timings, vib):
        lines.append(f"* *{c['claim']}*: {page_sentence(c['verdict'])}")
    c90 = mean_of(vib, "coverage_90")
    missing = sorted(summary.missing.unique(), key=lambda m: parse_missing(m)[1])
    hi = missing[-1]
    lines.append(
        f"* Calibration (a description): VIBO's 90% intervals cover {c90:.3f} of the true abilities on average "
        f"(nominal 0.90). The seed's prior-per-missing variant covers "
        f"{mean_of('vibo_prior_per_missing', 'coverage_90', hi):.3f} "
        f"at {hi} against {mean_of(vib, 'coverage_90', hi):.3f} with one prior expert."
    )
    for d in names:
        if models.get(d) == "grm":
            g = summary[summary.design == d]
            at = lambda m, c: float(g[g.method == m][f"{c}_mean"].mean())  # noqa: B023  (called within this iteration, while g is this design's rows)
            lines.append(
                f"* The GRM design {d} (a description): VIBO's ability correlation with the truth "
                f"{at(vib, 'ability_corr'):.3f} against MML-EAP's {at('mml', 'ability_corr'):.3f} and mean-field "
                f"VI's {at('mfvi', 'ability_corr'):.3f}; cut RMSE {at(vib, 'cut_rmse'):.3f} against "
                f"{at('mml', 'cut_rmse'):.3f} and {at('mfvi', 'cut_rmse'):.3f}."
            )
    left_out = (
        f" Real-data designs ({', '.join(real_names)}) are not counted: they have no truth." if real_names else ""
    )
    reps = summary.groupby("design")["replications"].min()
    per_design = ", ".join(f"{d} {int(reps[d])}" for d in names)
    return (
        f"From {len(fits)} fits of simulated data; replications per condition: {per_design}.{left_out}\n\n"
        + "\n".join(lines)
        + "\n\nEach verdict's interval is over its pairs: with few pairs it is wide and the verdict "
        "inconclusive (or not comparable, below two pairs), whatever the means say."
    )


display(
    Markdown(
        claims()
        if names
        else "No simulated design in this run, so no claim can be judged: the claims "
        "are about accuracy against the truth, which real data lack."
    )
)

# %% [markdown]
# ## Real data: the methods against each other
#
# A design that names a prepared data set (e.g. the RWA data by the GRM) has no true
# parameters. Each replication sets a random share of its persons apart as new persons and hides
# cells by the design's missingness (on top of the natural missing answers) and a further share
# that is scored. So instead of recovery: how closely each method agrees with MML-EAP fitted to
# the same data (correlation and root mean squared difference of the ability estimates and of
# the item parameters), the accuracy and mean log score of its predictions of the hidden cells,
# and the held-out log-likelihood of the new persons (the common evaluator). Coverage, RMSE and
# the claims above are not computed for these designs: there is no truth to compute them from.
# Means over replications (random splits and masks).

# %%
if not real_names:
    display(Markdown("No real-data design in this run."))
for d in real_names:
    real_summary = pd.read_csv(Path(results_dir) / d / "summary.csv")
    real_times = pd.read_csv(Path(results_dir) / d / "timings.csv")
    real_summary = tables.with_times(real_summary, real_times)
    n_real = real_summary["replications"]
    display(Markdown(f"**{d}** ({int(n_real.min())} to {int(n_real.max())} replications per condition)"))
    agree_cols = [c for c in real_summary if c.endswith(f"_to_{tables.REFERENCE}_mean")]
    display(
        real_summary[["missing", "method", "replications"] + agree_cols]
        .dropna(axis=1, how="all")
        .round(4)
        .reset_index(drop=True)
    )
    display(
        real_summary[
            [
                "missing",
                "method",
                "hidden_accuracy_mean",
                "hidden_log_score_mean",
                "heldout_loglik_mean",
                "wall_seconds_mean",
            ]
        ]
        .round(4)
        .reset_index(drop=True)
    )
    plotting.show(figures.agreement(real_summary, reference=tables.REFERENCE))

# %% [markdown]
# Every pair of methods, not only against MML-EAP: the correlation of their ability and item
# estimates on the same data, mean over replications.

# %%
for d in real_names:
    agreement = pd.read_csv(Path(results_dir) / d / "agreement.csv")
    pairs = agreement.groupby(["missing", "parameter", "method", "other"], sort=True)[["corr", "rmsd"]].mean()
    display(Markdown(f"**{d}**"))
    display(pairs.round(4).reset_index())


# %% [markdown]
# ## Against the seed
#
# The seed's claims, each judged on this run's tables by the rule it states
# (`bayesirt.studies.vibo.reproduction`); the reproduction page of a paper-scale run shows the
# same rows.

# %%
from bayesirt.studies.reproduction import claims_of

claims_of("vibo", results_dir)
