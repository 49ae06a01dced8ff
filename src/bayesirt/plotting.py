"""Figures shared by several studies, and ``save``, which writes every figure of the project
(matplotlib, no state). Each study's own figures are in ``bayesirt.studies.<study>.figures``.

Importing this module leaves matplotlib's backend alone, so a notebook keeps its own: ``save``
renders with Agg whatever the backend is.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import io

LABELS = {"discrimination": "discrimination α", "base_difficulty": "first threshold τ₁",
          "increments": "threshold increments Δ", "ability": "ability θ"}


def save(fig, path, dpi: int = 120) -> None:
    """Write a PNG atomically and close the figure. PNG metadata carries no timestamp, so
    identical figures give identical files."""
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", bbox_inches="tight", metadata={"Software": None}, backend="agg")
    plt.close(fig)


def loss_curves(losses: dict[str, pd.DataFrame], smooth: int = 25):
    """Training loss against step for each fit, with a running mean to show the trend."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for label, df in losses.items():
        y = df["loss"].to_numpy()
        ax.plot(df["step"], y, alpha=0.25, lw=0.8)
        if len(y) >= smooth:
            kernel = np.ones(smooth) / smooth
            ax.plot(df["step"].to_numpy()[smooth - 1:], np.convolve(y, kernel, "valid"),
                    color=ax.lines[-1].get_color(), lw=1.6, label=label)
        else:
            ax.lines[-1].set_label(label)
    # zoom on the part of the curve that matters: from the lowest value to the 95th percentile
    lo, hi = np.percentile(np.concatenate([d["loss"].to_numpy() for d in losses.values()]), [0, 95])
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel("step")
    ax.set_ylabel("negative ELBO per person")
    ax.set_title("Training loss")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def true_vs_estimated(estimates: pd.DataFrame,
                      parameters=("discrimination", "base_difficulty", "increments", "ability"),
                      max_points: int = 2000):
    """Posterior means (±1 sd for item parameters) against the true values, one panel each."""
    parameters = [p for p in parameters if p in set(estimates["parameter"])]
    fig, axes = plt.subplots(1, len(parameters), figsize=(3.3 * len(parameters), 3.4))
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, parameters):
        d = estimates[estimates["parameter"] == name]
        if len(d) > max_points:  # abilities: a fixed, evenly spaced subset keeps the figure light
            d = d.iloc[np.linspace(0, len(d) - 1, max_points).astype(int)]
        for scale, ds in d.groupby("scale", sort=True):
            if name == "ability":
                ax.scatter(ds["true"], ds["mean"], s=3, alpha=0.3, label=f"scale {scale}")
            else:
                ax.errorbar(ds["true"], ds["mean"], yerr=ds["sd"], fmt="o", ms=3, lw=0.8,
                            label=f"scale {scale}")
        lims = [min(d["true"].min(), d["mean"].min()), max(d["true"].max(), d["mean"].max())]
        ax.plot(lims, lims, color="0.5", lw=0.8, ls="--")
        rmse = float(np.sqrt(((d["mean"] - d["true"]) ** 2).mean()))
        ax.set_title(f"{LABELS.get(name, name)}\nRMSE {rmse:.3f}", fontsize=10)
        ax.set_xlabel("true")
    axes[0].set_ylabel("posterior mean")
    axes[0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def item_estimates(estimates: pd.DataFrame, parameter: str = "discrimination"):
    """Posterior mean ± 2 sd of one item parameter, item by item, coloured by scale (real data)."""
    d = estimates[estimates["parameter"] == parameter].sort_values("item")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.3 * len(d)), 3.4))
    for scale, ds in d.groupby("scale", sort=True):
        ax.errorbar(ds["item"], ds["mean"], yerr=2 * ds["sd"], fmt="o", ms=4, lw=1, label=f"scale {scale}")
    ax.set_xlabel("item")
    ax.set_ylabel(f"{LABELS.get(parameter, parameter)}\n(posterior mean ± 2 sd)")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def estimates_by_condition(estimates: dict[str, pd.DataFrame], parameter: str = "discrimination"):
    """Posterior mean ± 2 sd of an item parameter under each fit condition, one panel per scale;
    conditions side by side within each item."""
    first = next(iter(estimates.values()))
    scales = sorted(set(first.loc[first["parameter"] == parameter, "scale"]))
    n_items = {s: int((first[(first["parameter"] == parameter) & (first["scale"] == s)]).shape[0]) for s in scales}
    fig, axes = plt.subplots(1, len(scales), figsize=(sum(max(3.0, 0.45 * n) for n in n_items.values()) + 1, 3.8),
                             squeeze=False, gridspec_kw={"width_ratios": [max(n_items[s], 1) for s in scales]})
    width = 0.8 / max(len(estimates), 1)
    for ax, scale in zip(axes[0], scales):
        for c, (label, est) in enumerate(estimates.items()):
            d = est[(est["parameter"] == parameter) & (est["scale"] == scale)].sort_values("item")
            x = np.arange(len(d)) - 0.4 + width * (c + 0.5)
            ax.errorbar(x, d["mean"], yerr=2 * d["sd"], fmt="o", ms=3, lw=0.9, label=label)
        ax.set_title(f"scale {scale}", fontsize=10)
        ax.set_xticks(np.arange(n_items[scale]))
        ax.set_xticklabels(sorted(first.loc[(first["parameter"] == parameter) & (first["scale"] == scale), "item"]),
                           fontsize=7)
        ax.set_xlabel("item")
    axes[0][0].set_ylabel(f"{LABELS.get(parameter, parameter)}\n(posterior mean ± 2 sd)")
    axes[0][-1].legend(frameon=False, fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


def abilities_against_reference(estimates: dict[str, pd.DataFrame], max_points: int = 1500):
    """Posterior mean abilities of each condition against the reference fit's (first entry)."""
    (ref_label, ref), *others = estimates.items()
    keys = ["person", "scale"]
    ref_ab = ref[ref["parameter"] == "ability"][keys + ["mean"]].rename(columns={"mean": "reference"})
    fig, axes = plt.subplots(1, max(len(others), 1), figsize=(2.9 * max(len(others), 1), 3.1), squeeze=False)
    for ax, (label, est) in zip(axes[0], others):
        d = est[est["parameter"] == "ability"].merge(ref_ab, on=keys)
        if len(d) > max_points:
            d = d.iloc[np.linspace(0, len(d) - 1, max_points).astype(int)]
        ax.scatter(d["reference"], d["mean"], s=3, alpha=0.3)
        lims = [d[["reference", "mean"]].min().min(), d[["reference", "mean"]].max().max()]
        ax.plot(lims, lims, color="0.5", lw=0.8, ls="--")
        rmse = float(np.sqrt(((d["mean"] - d["reference"]) ** 2).mean()))
        ax.set_title(f"{label}\nRMSE vs {ref_label} {rmse:.3f}", fontsize=9)
        ax.set_xlabel(f"ability, {ref_label}")
    axes[0][0].set_ylabel("ability, posterior mean")
    fig.tight_layout()
    return fig


def errors_by_condition(errors: pd.DataFrame, parameters=("discrimination", "ability")):
    """RMSE per replication (dots) and its mean (bar) for each condition, against the
    complete-data fit and, where known, the truth."""
    d = errors[(errors["scale"] == "all") & errors["parameter"].isin(parameters)]
    against = [a for a in ("complete_data", "truth") if a in set(d["against"])]
    conditions = list(dict.fromkeys(d["condition"]))
    fig, axes = plt.subplots(len(against), len(parameters), figsize=(3.6 * len(parameters), 2.9 * len(against)),
                             squeeze=False)
    for r, ref in enumerate(against):
        for c, par in enumerate(parameters):
            ax = axes[r][c]
            for k, cond in enumerate(conditions):
                v = d[(d["against"] == ref) & (d["parameter"] == par) & (d["condition"] == cond)]["rmse"]
                ax.bar(k, v.mean(), color=f"C{k + 1}", alpha=0.35)  # C0 is the reference elsewhere
                ax.scatter(np.full(len(v), k), v, color=f"C{k + 1}", s=12, zorder=3)
            ax.set_xticks(range(len(conditions)))
            ax.set_xticklabels(conditions, rotation=35, ha="right", fontsize=8)
            ax.set_title(f"{LABELS.get(par, par)}: RMSE vs {ref.replace('_', '-')}", fontsize=9)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# dcm_bbvi (seed 002)


def dcm_beta_intervals(estimates: pd.DataFrame, design: str | None = None, missing: str | None = None):
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


def dcm_elbo_traces(elbo: pd.DataFrame, smooth: int = 20):
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


def dcm_gradient_variance(variance: pd.DataFrame):
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


def dcm_accuracy(summary: pd.DataFrame, seed_accuracy: float | None = None):
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


    fig.tight_layout()
    return fig


    fig.tight_layout()
    return fig


    fig.tight_layout()
    return fig
