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
# # A vectorized, multi-chain data-augmentation Gibbs sampler for the normal-ogive model
#
# The `gibbs_2pno` study (seed 001, Albert 1992) fits the two-parameter normal ogive model,
# P(y_ij = 1) = Phi(a_j theta_i - d_j), by data augmentation: latent normals Z_ij drawn from
# truncated normals, abilities and (a_j, d_j) from their exact conditionals (a_j > 0), every
# person and item at once, chains in parallel. Missing responses are treated two ways that
# must give the same posterior: their Z drawn untruncated (`gibbs`, augmented) or left out
# (`gibbs_omit`). On small designs NUTS on the marginal posterior (Phi likelihood, no
# augmentation) is the reference. The seed's two-component Gaussian mixture closes the report.
#
# Everything below is read from the workflow's result tables and figures; rerun the workflow
# to rebuild it.

# %% tags=["parameters"]
designs = "n500"
results_dir = "results/gibbs_2pno"
mixture = True

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

import pandas as pd
from IPython.display import Image, Markdown, display

from bayesirt.studies.gibbs_2pno.tables import agreement

base = Path(results_dir)
names = [d for d in designs.split(",") if d]


def read(name):
    return pd.concat([pd.read_csv(base / d / f"{name}.csv").assign(design=d) for d in names], ignore_index=True)


fits, recovery, diagnostics = read("fits"), read("recovery"), read("diagnostics")
nuts, missing, timings = read("gibbs_vs_nuts"), read("augment_vs_omit"), read("timings")
# the pairs with NUTS of our sampler (gibbs) and of the seed's plain one (gibbs_seed)
nuts_ours, nuts_seed = (nuts[nuts["method"] == m] if len(nuts) else nuts for m in ("gibbs", "gibbs_seed"))
reps = int(recovery["replications"].min())
most = int(recovery["replications"].max())
rep_range = f"{reps}" if reps == most else f"{reps} to {most}"
chains = sorted(set(fits["n_chains"]))
print(f"{len(fits)} fits; {rep_range} replication(s) per condition; chains per fit: {chains}")


def figure(design, name):
    display(Image(filename=str(base / design / "figures" / f"{name}.png")))


# %% [markdown]
# ## Convergence: trace and rank plots, autocorrelation, R-hat and ESS
#
# Figures of the first condition (the one with NUTS where it ran), replication 0. A fit is
# called converged only if every R-hat (abilities included) is below 1.01 and every bulk and
# tail ESS is at least 100.

# %%
for d in names:
    display(Markdown(f"**{d}**"))
    for name in ("trace", "rank", "autocorrelation"):
        figure(d, name)
diagnostics.round(4)

# %% [markdown]
# ## Recovery of the true parameters
#
# RMSE, correlation and the share of true values inside the 90% intervals, mean (and sd) over
# replications.

# %%
for d in names:
    figure(d, "recovery")
cols = ["design", "missing", "method", "replications", "n_chains", "converged"] + [
    c for c in recovery.columns if c.endswith("_mean")
]
recovery[cols].round(4)

# %% [markdown]
# ## Posteriors side by side: Gibbs against NUTS, augmented against omitted missing cells
#
# For every item parameter: the difference of posterior means in units of its Monte Carlo
# error, z = (m_1 - m_2) / sqrt(mcse_1^2 + mcse_2^2), and the ratio of posterior sds.

# %%
for d in names:
    figure(d, "intervals")
rows = []
comparisons = (("Gibbs vs NUTS", nuts_ours), ("the seed's plain Gibbs vs NUTS", nuts_seed))
for label, table in (*comparisons, ("augmented vs omitted", missing)):
    for (d, m), g in table.groupby(["design", "missing"]) if len(table) else []:
        rows.append({"comparison": label, "design": d, "missing": m, **agreement(g)})
agree = pd.DataFrame(rows)
agree.round(3) if len(agree) else print("no pairs of fits to compare in this config")

# %% [markdown]
# ## ESS per second of the item parameters
#
# Bulk ESS (minimum and median over item parameters) per second of sampling after
# compilation, burn-in or warm-up included. Timings depend on the machine and its load.

# %%
timings.round(3)

# %% [markdown]
# ## Model checks of every fit
# Beside each fit, `item_fit.csv`, `person_fit.csv` and `global_fit.json` (the checks compare
# observed cells only, and their replications keep each person's missing cells; the p-values
# are a parametric bootstrap at the fit's posterior means). The data were simulated from the
# 2PNO itself, so the flagged shares estimate the checks' false-alarm rate (about 5% expected)
# and the p-values should look uniform.

# %%
from bayesirt import plotting
from bayesirt.studies import model_checks

checked, checked_items, checked_persons = model_checks.collected(base)
if len(checked):
    checked = checked[checked.design.isin(names)]
    display(checked.groupby(["design", "missing", "method"]).mean().drop(columns="rep").round(3))
    plotting.show(plotting.model_checks(checked_items, checked_persons))
else:
    display(Markdown("No model checks in this run."))

# %% [markdown]
# ## The mixture example

# %%
if mixture:
    figure("mixture", "mixture")
    display(pd.read_csv(base / "mixture" / "posterior.csv").drop(columns=["item", "person", "scale"]).round(3))
else:
    display(Markdown("No mixture example in this run (`studies.gibbs_2pno.mixture.enabled` is false)."))

# %% [markdown]
# ## What the numbers support

# %%
lines = []
conv = fits[fits.method.isin(["gibbs", "gibbs_omit", "gibbs_seed"])]
lines.append(
    f"* **Convergence**: {int(conv['converged'].sum())} of {len(conv)} Gibbs fits pass the record's rule "
    f"(max R-hat {conv['max_r_hat'].max():.3f}, min bulk ESS {conv['min_ess_bulk'].min():.0f})."
)
g = recovery[recovery.method == "gibbs"]
if "discrimination_rmse_mean" in g and g["discrimination_rmse_mean"].notna().any():
    lines.append(
        f"* **Recovery**: discrimination RMSE {g['discrimination_rmse_mean'].mean():.3f}, difficulty RMSE "
        f"{g['difficulty_rmse_mean'].mean():.3f}, ability correlation {g['ability_corr_mean'].mean():.3f}; "
        f"90% intervals cover {g['discrimination_coverage_90_mean'].mean():.2f} (discrimination) and "
        f"{g['difficulty_coverage_90_mean'].mean():.2f} (difficulty) of the true values."
    )
else:
    lines.append("* **Recovery**: no simulated design in this config (real data have no true values).")
comparisons = (("Gibbs and NUTS", nuts_ours), ("The seed's plain Gibbs sampler and NUTS", nuts_seed))
for label, table in (*comparisons, ("augmented and omitted missing cells", missing)):
    if len(table):
        a = agreement(table)
        lines.append(
            f"* **{label}**: {round(a['share_abs_z_below_3'] * a['n'])} of {a['n']} item-parameter means agree within "
            f"3 Monte Carlo errors (max |z| {a['max_abs_z']:.2f}); sd ratios {a['sd_ratio_min']:.2f} to "
            f"{a['sd_ratio_max']:.2f}."
        )
    else:
        lines.append(f"* **{label}**: not compared in this config.")
t = timings.groupby("method")["item_min_ess_per_second"].median()
if "nuts" in t and "gibbs" in t:
    lines.append(
        f"* **ESS per second** (minimum over item parameters, median over fits): Gibbs {t['gibbs']:.0f}, "
        f"NUTS {t['nuts']:.0f} (ratio {t['gibbs'] / t['nuts']:.1f}; the issue's target is 10)."
    )
else:
    lines.append("* **ESS per second**: " + ", ".join(f"{m} {v:.0f}" for m, v in t.items()) + " (no NUTS here).")
display(
    Markdown(
        f"From {len(fits)} fits, {rep_range} replication(s) per condition, {chains} chain(s) per fit:\n\n"
        + "\n".join(lines)
        + "\n\nThese are summaries over every fit; the seed's claims are judged below, each by its rule and "
        "with an interval over replications."
    )
)


# %% [markdown]
# ## Against the seed
#
# The seed's claims, each judged on this run's tables by the rule it states
# (`bayesirt.studies.gibbs_2pno.reproduction`); the reproduction page of a paper-scale run shows the
# same rows.

# %%
from bayesirt.studies.reproduction import claims_of

claims_of("gibbs_2pno", results_dir)
