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
# # Factorized graded response model: complete-data reference fit
#
# The `rb_imputation` study (seed 000) compares ways of fitting a factorized graded response
# model (GRM) by mean-field ADVI when responses are missing. Every comparison is made against
# the **complete-data reference**: the same model fitted to the data before any response is
# hidden. This report shows that reference fit: how the optimisation went and, on simulated
# data, how well it recovers the parameters the data were generated from.
#
# Everything here is read from the workflow's result files; rerun the workflow to rebuild it.

# %% tags=["parameters"]
datasets = "rwa_sim"
results_dir = "results/rb_imputation"

# %%
import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from bayesirt import plotting

results = Path(results_dir)
names = [d for d in datasets.split(",") if d]

# %% [markdown]
# ## The fits

# %%
records = {d: json.loads((results / d / "reference" / "fit.json").read_text()) for d in names}
summary = pd.DataFrame([{
    "data set": d, "persons": r["n_persons"], "items": r["n_items"], "scales": r["n_scales"],
    "steps": r["steps"], "converged": r["converged"], "ELBO": round(r["elbo"], 1),
    "fit seconds": round(r["timing"]["wall_seconds"], 1),
    "compile seconds": round(r["timing"]["compile_seconds"], 1),
} for d, r in records.items()])
summary

# %% [markdown]
# ## Training loss
# Negative ELBO per person at every step (faint) and its running mean. The fit stops when the
# windowed mean stops improving.

# %%
for d in names:
    loss = pd.read_csv(results / d / "reference" / "loss.csv")
    display(plotting.loss_curves({f"reference ({d})": loss}))

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
    display(plotting.true_vs_estimated(est))
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
        f"{'converged' if r['converged'] else 'did NOT converge'} after {r['steps']} steps in "
        f"{r['timing']['wall_seconds']:.1f} s. Discriminations are recovered with RMSE "
        f"{overall.loc['discrimination', 'rmse']:.3f} (correlation "
        f"{overall.loc['discrimination', 'corr']:.3f}), abilities with RMSE "
        f"{overall.loc['ability', 'rmse']:.3f} (correlation {overall.loc['ability', 'corr']:.3f}).")
display(Markdown("\n\n".join(lines) or "No simulated data set in this run."))
