"""Figures of study ``dcm_bbvi`` (PNG, through ``plotting.save``): coefficients against the
truth, ELBO traces, gradient variance with and without control variates, pattern accuracy."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.dcm_bbvi.conditions import SEED_ACCURACY


def figures(tables: dict, outputs: dict) -> None:
    """The study's figures (PNG) from its tables; ``outputs`` maps figure names to paths."""
    plotting.save(beta_intervals(tables["estimates"]), outputs["figure_beta"])
    plotting.save(elbo_traces(tables["elbo"]), outputs["figure_elbo"])
    plotting.save(gradient_variance(tables["gradient_variance"]), outputs["figure_variance"])
    fig = accuracy(tables["summary"], SEED_ACCURACY)
    reps = tables["fits"].groupby(["design", "missing", "method"])["rep"].nunique() if len(tables["fits"]) else None
    if reps is not None:
        n = f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()} to {reps.max()}"
        fig.suptitle(
            f"Means over {n} replication{'s' if reps.max() != 1 else ''} per condition and method", fontsize=10
        )
        fig.tight_layout()
    plotting.save(fig, outputs["figure_accuracy"])


def beta_intervals(estimates: pd.DataFrame, design: str | None = None, missing: str | None = None):
    """The seed's estimated-versus-true coefficient figure: every LCDM coefficient in item order,
    the truth and each method's estimate with its 95% interval (mean +- 1.96 sd)."""
    b = estimates[estimates.parameter == "beta"] if len(estimates) else estimates
    if len(b) and design is None:
        design, missing = b.iloc[0]["design"], b.iloc[0]["missing"]
    if len(b):
        b = b[(b.design == design) & (b.missing == missing)]
    methods = list(dict.fromkeys(b["method"])) if len(b) else []
    fig, ax = plt.subplots(figsize=(11, 4))
    if not methods:
        ax.text(0.5, 0.5, "no estimates", ha="center", transform=ax.transAxes)
        return fig
    first = b[b.method == methods[0]].sort_values(["item", "category"])
    x = np.arange(len(first))
    ax.plot(x, first["true"], "o", color="black", ms=4, label="true", zorder=3)
    width = 0.6 / max(len(methods), 1)
    for k, m in enumerate(methods):
        d = b[b.method == m].sort_values(["item", "category"])
        off = (k - (len(methods) - 1) / 2) * width
        ax.errorbar(x + off, d["mean"], yerr=1.96 * d["sd"].fillna(0), fmt=".", ms=3, lw=0.8, label=m)
    ax.set_xlabel("coefficient (items in order; intercept, main effects, interaction)")
    ax.set_ylabel("beta")
    ax.set_title(f"LCDM coefficients, design {design}, {missing}: estimate and 95% interval against the truth")
    ax.legend(ncol=len(methods) + 1, fontsize=8)
    return fig


def elbo_traces(elbo: pd.DataFrame, smooth: int = 20):
    """-ELBO per step of the VI methods (first replication of each design and missingness)."""
    groups = list(elbo.groupby(["design", "missing"], sort=False)) if len(elbo) else []
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(5 * max(len(groups), 1), 3.5), squeeze=False)
    for ax, ((design, missing), df) in zip(axes[0], groups):
        for m, d in df.groupby("method", sort=False):
            loss = d["loss"].rolling(smooth, min_periods=1).mean()
            ax.plot(d["step"], loss, label=m, lw=1)
        late = df[df["step"] > df["step"].max() * 0.05]["loss"]
        if len(late):  # the first steps fall by orders of magnitude: show the rest
            lo, hi = late.min(), late.quantile(0.99)
            ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.set_title(f"{design}, {missing}")
        ax.set_xlabel("step")
        ax.set_ylabel("-ELBO (running mean)")
        ax.legend(fontsize=8)
    return fig


def gradient_variance(variance: pd.DataFrame):
    """Variance of each block's BBVI gradient estimate, without and with control variates
    (log scale), at the end of each BBVI fit."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if not len(variance):
        ax.text(0.5, 0.5, "no BBVI fits", ha="center", transform=ax.transAxes)
        return fig
    v = variance.groupby("block", sort=False)[["variance_plain", "variance_control_variates"]].median()
    x = np.arange(len(v))
    ax.bar(x - 0.2, v["variance_plain"], 0.4, label="score function (seed)")
    ax.bar(x + 0.2, v["variance_control_variates"], 0.4, label="with control variates")
    ax.set_xticks(x, v.index)
    ax.set_yscale("log")
    ax.set_ylabel("total variance of the estimate")
    ax.legend(fontsize=8)
    return fig


def accuracy(summary: pd.DataFrame, seed_accuracy: float | None = None):
    """Pattern accuracy per method, design and missingness (mean over replications)."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r.design}\n{r.missing}" for r in summary.drop_duplicates(["design", "missing"]).itertuples()]
    methods = list(dict.fromkeys(summary["method"]))
    width = 0.8 / max(len(methods), 1)
    for k, m in enumerate(methods):
        d = summary[summary.method == m]
        ax.bar(np.arange(len(d)) + (k - (len(methods) - 1) / 2) * width, d["pattern_accuracy"], width, label=m)
    if seed_accuracy is not None:
        ax.axhline(seed_accuracy, color="black", ls="--", lw=0.8, label=f"seed: {seed_accuracy}")
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set_ylim(max(0.0, summary["pattern_accuracy"].min() - 0.1) if len(summary) else 0, 1.0)
    ax.set_ylabel("pattern accuracy")
    ax.legend(fontsize=8, ncol=2)
    return fig
