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
# # Amortized item factor analysis: IWAE versus IWAVB
#
# The `amortized_ifa` study (seed 003, Luo & Ji) fits the multidimensional graded response
# model (GRM) by two amortized importance-weighted variational methods:
#
# * **IWAE** (Urban & Bauer 2021): a Gaussian encoder q(z | x), importance-weighted ELBO with R
#   samples per person, doubly reparameterized (DReG) encoder gradients;
# * **IWAVB** (the seed's proposal): an implicit encoder that takes noise as input, whose log
#   density is estimated by a discriminator (adversarial variational Bayes with adaptive
#   contrast), in the same importance-weighted objective.
#
# Designs (config `studies.amortized_ifa.designs`): confirmatory simulations with a normal latent
# (paper 4.2, Figures 8-9) and with a three-component mixture latent (paper 4.3, Figures 11-12),
# and an exploratory analysis of IPIP-FFM-shaped data (paper 4.1: scree plot, Figure 6, and the
# stability of repeated fits, Table 1). Held-out log-likelihoods are given two ways: with each
# method's own proposal (the paper's eq. 27) and method-independently (Laplace importance
# sampling, or Gauss-Hermite quadrature when P ≤ 2), because an estimate through a method's own
# q inherits that q's errors (for IWAVB, the discriminator's).
#
# Everything below is read from the workflow's result tables; rerun the workflow to rebuild it.

# %% tags=["parameters"]
confirmatory = "normal_p5,mixture_p1,mixture_p3"
exploratory = "ipip"
results_dir = "results/amortized_ifa"

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
from bayesirt.studies.amortized_ifa import figures, tables

results = Path(results_dir)
conf = [d for d in confirmatory.split(",") if d]
expl = [d for d in exploratory.split(",") if d]


def table(design, name):
    return pd.read_csv(results / design / f"{name}.csv")


# %% [markdown]
# ## Fits
# One row per design, method and number of importance samples R: fits, how many met the
# stopping rule, and the mean number of steps and epochs. Wall times (training only, not
# compilation or evaluation) are from `timings.csv`, the only table that differs run to run.

# %%
rows = []
for d in conf + expl:
    s = table(d, "summary")
    t = (
        table(d, "timings")
        .groupby(["method", "n_factors", "importance_samples"])[["wall_seconds", "compile_seconds"]]
        .mean()
    )
    for _, r in s.iterrows():
        k = (r["method"], r["n_factors"], r["importance_samples"])
        rows.append(
            {
                "design": d,
                "method": r["method"],
                "P": r["n_factors"],
                "R": r["importance_samples"],
                "fits": r["n_fits"],
                "converged": r["n_converged"],
                "steps": round(r["steps_mean"]),
                "epochs": round(r["epochs_mean"], 1),
                "fit seconds": round(t.loc[k, "wall_seconds"], 1),
                "compile seconds": round(t.loc[k, "compile_seconds"], 1),
            }
        )
display(pd.DataFrame(rows))

# %% [markdown]
# ## Confirmatory designs: parameter recovery (Figures 8 and 11)
# Per parameter, the mean squared error over replications against the true value (eq. 29);
# each box collects the items' loadings (free ones), the items' intercepts, or the factor
# correlations. Boxes by method within each R. The note under each figure names the outlying
# parameters with their true values. The true loadings are log-normal (log-variance 0.5), so a
# design can draw an item whose loading is several times the others (in the default
# `normal_p5`, item 28 with 7.5): nearly a step function of its factor, whose steepness a few
# hundred persons hardly pin down, so its loading is estimated far too low (4.7 by IWAE at
# R = 15) and its MSE stands apart in every replication, which share the item parameters.

# %%
for d in conf:
    mse = table(d, "parameter_mse")
    display(
        Markdown(f"### `{d}`: {tables.replications_label(tables.n_replications(table(d, 'fits')))} per method and R")
    )
    plotting.show(figures.mse_boxes(mse))
    display(Markdown(tables.mse_note(mse)))

# %% [markdown]
# ## Confirmatory designs: held-out log-likelihood and time (Figures 9 and 12)
# One value per fit: mean held-out log-likelihood per person (method-independent, and with
# the method's own proposal), and the fit's training time. The method-independent estimate is
# Gauss-Hermite quadrature for P ≤ 2 and Laplace importance sampling otherwise.

# %%
for d in conf:
    fits = table(d, "fits")
    display(Markdown(f"### `{d}`: {tables.replications_label(tables.n_replications(fits))} per method and R"))
    plotting.show(
        figures.method_boxes(
            fits,
            ["loglik_independent", "loglik_own_proposal"],
            [
                "held-out log-lik. per person\n(method-independent)",
                "held-out log-lik. per person\n(own proposal, eq. 27)",
            ],
        )
    )
    plotting.show(figures.method_boxes(table(d, "timings"), ["wall_seconds"], ["fit time (s)"]))

# %% [markdown]
# ## The learned latent distribution (multimodal designs)
# Histograms of the persons' posterior means under each method's q (first replication)
# against the true latent values and the true marginal density of the first factor. Posterior
# means are shrunk towards the prior mean, so even a perfect q gives a narrower histogram than
# the truth; what matters is whether the modes are kept apart.

# %%
for d in conf:
    display(Markdown(f"### `{d}`"))
    plotting.show(figures.latent_density(table(d, "latent"), table(d, "latent_density")))

# %% [markdown]
# ## Exploratory design: scree plot (Figure 6)
# Held-out log-likelihood per person against the number of factors P (replication 0 of each P).

# %%
for d in expl:
    display(Markdown(f"### `{d}`"))
    scree = table(d, "scree")
    plotting.show(figures.scree(scree))
    display(scree.round(4))

# %% [markdown]
# ## Exploratory design: stability of repeated fits (Table 1)
# For each method, the repeated fits (different seeds, same data) at the design's number of
# factors are compared with that method's fit of highest held-out log-likelihood
# (method-independent estimate) after Geomin oblique rotation, reflection and column
# alignment: RMSE of loadings, intercepts and factor covariance (off-diagonal), mean (SD) over
# repeats, and the mean training time of all repeats.

# %%
for d in expl:
    display(Markdown(f"### `{d}`"))
    st = table(d, "stability_summary")
    fits = table(d, "fits")
    p_rep = int(fits.groupby("n_factors").size().idxmax())
    t = table(d, "timings")
    t = t[t.n_factors == p_rep].groupby("method")["wall_seconds"].agg(["mean", "std"])
    if st.empty:
        display(Markdown("Only one fit per method at this P (`replications: 1`): nothing to compare."))
        continue

    def cell(r, c):
        return (
            f"{r[c + '_mean']:.3f} (SD = {r[c + '_std']:.3f})"
            if np.isfinite(r[c + "_std"])
            else f"{r[c + '_mean']:.3f}"
        )

    display(
        pd.DataFrame(
            [
                {
                    "method": r["method"].upper(),
                    "compared fits": int(r["n_compared"]),
                    "mean loadings RMSE": cell(r, "loading_rmse"),
                    "mean intercepts RMSE": cell(r, "intercept_rmse"),
                    "mean covariance RMSE": cell(r, "covariance_rmse"),
                    "mean Tucker congruence": cell(r, "mean_congruence"),
                    "mean time (s)": f"{t.loc[r['method'], 'mean']:.1f}"
                    + (f" (SD = {t.loc[r['method'], 'std']:.1f})" if np.isfinite(t.loc[r["method"], "std"]) else ""),
                }
                for _, r in st.iterrows()
            ]
        )
    )
    plotting.show(figures.loadings_heatmap(table(d, "reference_loadings")))

# %% [markdown]
# ## Which of the paper's claims do our results support?
# The seed claims that IWAVB gives lower or comparable parameter MSE than IWAE, a higher held-out
# log-likelihood, especially with a multimodal latent distribution, at a higher time cost. Each
# claim is judged by the rules of the reproduction page (`bayesirt.studies.amortized_ifa.reproduction`),
# the same rows a paper-scale run's page shows: paired differences IWAVB − IWAE, one per design and
# replication (fits at several R of one replication are averaged into its pair), by a 95% t interval
# for the mean difference. **supported** when the whole interval is on the claimed side,
# **contradicted** when it is on the other side, **inconclusive** when it reaches both (the row gives
# the replications that would decide) or when the fits behind it did not all meet their stopping
# rule, **not comparable** with fewer than two pairs or no spread between them (a block's time,
# shared by its fits, is one measurement). Each row says whether the claim is the seed's (with its
# section and words) or this project's, and which method it judges.

# %%
from bayesirt.studies.reproduction import claims_of

claims = claims_of("amortized_ifa", results_dir)
display(Markdown("\n".join(f"* *{c.claim}*: **{c.verdict}**. {c.why}" for c in claims.itertuples())))
claims[["claim", "source", "method", "seed", "ours", "verdict"]]
