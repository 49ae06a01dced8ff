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
# # Factorized graded response model with missing responses: naive versus Rao-Blackwellized imputation
#
# The `rb_imputation` study (seed 000) fits a factorized graded response model (GRM) by
# mean-field ADVI when responses are missing, and compares how missing cells enter the
# objective:
#
# * `zero_fill`: missing cells contribute nothing (the likelihood of the observed cells);
# * `naive_average_M<M>`: the mean over M imputed copies of the log-likelihood (Jensen: biased low);
# * `rao_blackwell_M<M>`: log of the mean over M copies of the likelihood (log-sum-exp), per
#   person (the likelihood factorizes over persons, so each person's copies are averaged alone);
# * `rao_blackwell_batch_M<M>`: the seed's code taken literally: one log-mean-exp over copies of
#   the whole minibatch's likelihood;
# * `rao_blackwell_seed_M3`: the same estimator under the seed's name, at the seed's M = 3;
# * `exact_marginal`: the M → ∞ limit, each missing cell contributing log Σ_k q(k) P(Y = k | θ).
#
# Imputations come from a pairwise ordinal stacking model fitted to the observed responses.
# Every comparison is made against the **complete-data reference**: the same model fitted to
# the data before any response was hidden (and, on simulated data, against the truth).
#
# Everything here is read from the workflow's result files; rerun the workflow to rebuild it.

# %% tags=["parameters"]
datasets = "rwa_sim"
missing = "mcar15"
results_dir = "results/rb_imputation"

# %% [markdown]
# ## Convergence flags
# Fits that did not converge, stopped at `max_steps` while their loss was still falling, or were
# stopped by the relative-tolerance rule while their loss was still falling beyond its noise
# (each record's `stop_reason`, `loss_still_improving`, `loss_slope` and `loss_slope_se`).

# %%
from IPython.display import Markdown, display

from bayesirt.records import convergence_flags, convergence_status
from bayesirt.studies import report_display

display(report_display.setup())  # tables in full, within the page
verdict, flags = convergence_flags(results_dir)
display(Markdown(verdict))
flags

# %%
import json
from pathlib import Path

import pandas as pd
from IPython.display import Image, Markdown, display

from bayesirt import plotting
from bayesirt.studies.rb_imputation import tables

results = Path(results_dir)
names = [d for d in datasets.split(",") if d]

# %% [markdown]
# ## The complete-data reference fits

# %%
records = {d: json.loads((results / d / "reference" / "fit.json").read_text()) for d in names}
summary = pd.DataFrame(
    [
        {
            "data set": d,
            "persons": r["n_persons"],
            "items": r["n_items"],
            "scales": r["n_scales"],
            "steps": r["steps"],
            "status": convergence_status(r),
            "ELBO": round(r["elbo"], 1),
            "fit seconds": round(r["timing"]["wall_seconds"], 1),
            "compile seconds": round(r["timing"]["compile_seconds"], 1),
        }
        for d, r in records.items()
    ]
)
summary

# %% [markdown]
# ## Training loss
# Negative ELBO per person at every step (faint) and its running mean. The fit stops when the
# windowed mean stops improving.

# %%
for d in names:
    loss = pd.read_csv(results / d / "reference" / "loss.csv")
    plotting.show(plotting.loss_curves({f"reference ({d})": loss}))

# %% [markdown]
# ## Recovery of the true parameters
# Posterior means against the values the data were simulated from (simulated data sets only).
# Item parameters carry ±1 posterior sd; the dashed line is equality.

# %%
for d in names:
    est = pd.read_csv(results / d / "reference" / "estimates.csv")
    if "true" not in est:
        display(Markdown(f"`{d}` is real data: no true values to compare with."))
        continue
    plotting.show(plotting.true_vs_estimated(est))
    table = pd.read_csv(results / d / "recovery.csv")
    display(table[table.scale == "all"].drop(columns=["fit", "scale"]).round(3))

# %%
lines = []
for d in names:
    table = pd.read_csv(results / d / "recovery.csv")
    overall = table[table.scale == "all"].set_index("parameter")
    if overall.empty:
        continue
    r = records[d]
    lines.append(
        f"On `{d}` ({r['n_persons']} persons) the reference fit "
        f"stopped after {r['steps']} steps ({convergence_status(r)}) in "
        f"{r['timing']['wall_seconds']:.1f} s. Discriminations are recovered with RMSE "
        f"{overall.loc['discrimination', 'rmse']:.3f} (correlation "
        f"{overall.loc['discrimination', 'corr']:.3f}), abilities with RMSE "
        f"{overall.loc['ability', 'rmse']:.3f} (correlation {overall.loc['ability', 'corr']:.3f})."
    )
display(Markdown("\n\n".join(lines) or "No simulated data set in this run."))

# %% [markdown]
# ## Can the reference fit be trusted? Uncertainty and model checks
# Mean-field VI's own item sds are too narrow; the reference's item sds (in `estimates.csv`,
# `items.csv`) are those of a Laplace approximation of the items' marginal posterior at its
# mode (the record's `item_uncertainty`), and the PSIS k-hat says how far VI's joint
# approximation is from the posterior. The checks (`item_fit.csv`, `person_fit.csv`,
# `global_fit.json` beside the fit) compare observed cells only: persons are grouped by what
# their other answers predict, and the replications behind the p-values keep each person's
# missing cells. Their p-values are a parametric bootstrap at the fit's item values.

# %%
for d in names:
    r = records[d]
    folder = results / d / "reference"
    uncertainty, psis = r.get("item_uncertainty", {}), r.get("psis", {})
    lines = [
        f"**`{d}`**: item sds from `{uncertainty.get('method', 'unknown')}`"
        + (f" ({uncertainty['reason']})" if uncertainty.get("reason") else "")
        + (
            f"; PSIS k-hat of VI {psis['khat']:.2f} ({'reliable' if psis['reliable'] else 'above'} {psis['limit']})"
            if psis.get("khat") is not None
            else ""
        )
        + "."
    ]
    if not (folder / "global_fit.json").exists():
        lines.append("No model checks for this fit (the mixture GRM has none).")
        display(Markdown(" ".join(lines)))
        continue
    checks = json.loads((folder / "global_fit.json").read_text())
    items = pd.read_csv(folder / "item_fit.csv")
    persons = pd.read_csv(folder / "person_fit.csv")
    lines.append(
        f"{checks['items_flagged']} of {checks['items']} items flagged at {checks['alpha']:.0%} "
        f"({checks['items_misfit']} by item fit, {checks['items_local_dependence']} by local dependence; "
        f"{checks['items_pooled']} items had ability groups pooled); the largest residual correlation is "
        f"{checks['max_q3']:.2f} (p = {checks['max_q3_p_value']:.2f}); "
        f"{checks['persons_flagged_share']:.1%} of persons have lz below -1.645."
    )
    display(Markdown(" ".join(lines)))
    plotting.show(plotting.model_checks(items, persons, checks["alpha"]))
    flagged = items[items.flagged]
    if len(flagged):
        display(flagged[["item_name", "scale", "statistic", "df", "p_value", "ld_max_q3", "ld_partner", "ld_p_value"]])
    display(Markdown("Persons with the lowest lz:"))
    display(persons.nsmallest(5, "lz"))

# %% [markdown]
# ## Imputation objectives against the complete-data fit
# Responses hidden on purpose (`missing` says how many and how: e.g. `mcar15` = 15% of all
# cells, completely at random, on top of the natural missingness), one independent mask per
# replication. All fits of a replication share one seed.

# %%
# `missing` may name several missingness designs (comma-separated): each is compared on its own
comparisons = [(d, m) for d in names for m in missing.split(",") if (results / d / m / "summary.csv").exists()]
if not comparisons:
    display(Markdown("No replications were run (`replications: 0`): reference fits only."))
for d, m in comparisons:
    folder = results / d / m
    display(Markdown(f"### `{d}`, `{m}`"))
    imputation = pd.read_csv(folder / "imputation.csv")
    display(
        Markdown(
            "**Imputation model** on the hidden cells (mean over replications): log score "
            f"{imputation['log_score'].mean():.3f} per cell (marginal-only model "
            f"{imputation['marginal_log_score'].mean():.3f}); the PMF's mode is right for "
            f"{imputation['accuracy'].mean():.1%} of cells "
            f"(marginal mode {imputation['marginal_accuracy'].mean():.1%}), "
            f"within one category for {imputation['within_one'].mean():.1%}."
        )
    )
    summary_d = pd.read_csv(folder / "summary.csv").merge(
        pd.read_csv(folder / "timings.csv")[["condition", "rep", "wall_seconds"]], on=["condition", "rep"]
    )
    cols = ["condition", "rep", "status", "steps", "elbo", "wall_seconds"] + [
        c for c in summary_d.columns if c.endswith("_rmse_vs_complete_data") or c.endswith("_rmse_vs_truth")
    ]
    display(summary_d[cols].round(4))

# %% [markdown]
# Training loss (first replication), discrimination estimates per scale with ±2 posterior sd,
# abilities against the reference fit, and RMSE per replication:

# %%
for d, m in comparisons:
    display(Markdown(f"### `{d}`, `{m}`"))
    for fig in ("loss", "discrimination", "abilities", "errors"):
        display(Image(filename=str(results / d / m / "figures" / f"{fig}.png")))

# %% [markdown]
# ## What the numbers say

# %%
from bayesirt.studies.reproduction import page_sentence

for d, m in comparisons:
    agg = pd.read_csv(results / d / m / "aggregate.csv")
    disc = (
        agg[
            (agg.parameter == "discrimination")
            & (agg.scale == "all")
            & (agg.against == "complete_data")
            & (agg.condition != "reference")
        ]
        .set_index("condition")["rmse_mean"]
        .sort_values()
    )
    ab = agg[
        (agg.parameter == "ability")
        & (agg.scale == "all")
        & (agg.against == "complete_data")
        & (agg.condition != "reference")
    ].set_index("condition")["rmse_mean"]
    best, worst = disc.index[0], disc.index[-1]
    n_reps = pd.read_csv(results / d / m / "summary.csv")["rep"].nunique()
    text = [
        f"On `{d}` with `{m}`, the objective closest to the complete-data fit in "
        f"discrimination is **{best}** (RMSE {disc.iloc[0]:.3f}, mean over {n_reps} replication"
        f"{'s' if n_reps != 1 else ''}), "
        f"the farthest **{worst}** (RMSE {disc.iloc[-1]:.3f}, {disc.iloc[-1] / disc.iloc[0]:.1f}× larger)."
    ]
    order = ", ".join(f"{c} {v:.3f}" for c, v in disc.items())
    text.append(
        f"All objectives, discrimination RMSE against the complete-data fit: {order}. "
        f"Ability RMSE against it: " + ", ".join(f"{c} {ab[c]:.3f}" for c in disc.index) + "."
    )
    rb = [c for c in disc.index if c.startswith("rao_blackwell_M")]  # the per-person form
    nv = [c for c in disc.index if c.startswith("naive_average")]
    if rb and nv:
        v = tables.jensen_verdict(pd.read_csv(results / d / m / "summary.csv"), rb[0], nv[0])
        text.append(
            "Claim: averaging likelihoods instead of log-likelihoods over the imputed copies reduces "
            "the error (seed 000's Jensen argument). " + (t := page_sentence(v))[0].upper() + t[1:]
        )
    summary_m = pd.read_csv(results / d / m / "summary.csv")
    if "zero_fill" in disc:
        helps = [c for c in disc.index if c != "zero_fill"]
        text.append(
            "Against ignoring the missing cells (`zero_fill`), paired by mask: "
            + " ".join(
                (t := page_sentence(tables.paired_rmse_verdict(summary_m, c, "zero_fill")))[0].upper() + t[1:]
                for c in helps
            )
        )
    if "zero_fill" in disc and m.startswith(("mcar", "mar")) and not m.startswith("mnar"):
        text.append(
            f"Under `{m}` the missingness is ignorable: "
            + (
                "it does not depend on the responses at all"
                if m.startswith("mcar")
                else "it depends only on responses that were observed (the person's other items)"
            )
            + ", so the likelihood of the observed cells, "
            "which `zero_fill` fits, is already the right one when the GRM is, and an imputation model "
            "less accurate than the GRM itself can add error rather than information."
        )
    elif "zero_fill" in disc:
        text.append(
            f"Under `{m}` the chance that a response is hidden depends on the response itself, so the "
            "missingness is not ignorable: the observed cells alone give a biased fit, and so does an "
            "imputation model fitted to them (it, too, sees only what was observed). The paired "
            "comparisons above say which bias is smaller here."
        )
    display(Markdown(" ".join(text)))


# %% [markdown]
# ## Against the seed
#
# The seed's claims, each judged on this run's tables by the rule it states
# (`bayesirt.studies.rb_imputation.reproduction`); the reproduction page of a paper-scale run shows the
# same rows.

# %%
from bayesirt.studies.reproduction import claims_of

claims_of("rb_imputation", results_dir)
