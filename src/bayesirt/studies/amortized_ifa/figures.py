"""The figures of the amortized_ifa study (seed 003): per-parameter MSE (Figures 8 and 11),
held-out log-likelihood and time per fit (Figures 9 and 12), the learned latent distribution,
the scree (Figure 6) and the reference loadings of the exploratory design."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.amortized_ifa.tables import mse_note, n_replications, replications_label

METHOD_COLORS = {"iwae": "C0", "iwavb": "C3", "iwae_seed": "C9", "iwavb_seed": "C1"}
PARAMETER_LABELS = {"loading": "loadings", "intercept": "intercepts", "factor_corr": "factor correlations"}


def _grouped_boxes(ax, df, value, group, methods, width=0.35):
    """Box plots of ``value`` per ``group`` level (x axis), one box per method side by side."""
    levels = sorted(df[group].unique())
    for m, method in enumerate(methods):
        data = [df[(df[group] == g) & (df["method"] == method)][value].dropna().to_numpy() for g in levels]
        pos = np.arange(len(levels)) + (m - (len(methods) - 1) / 2) * width
        keep = [k for k, d in enumerate(data) if len(d)]
        if not keep:
            continue
        bp = ax.boxplot(
            [data[k] for k in keep],
            positions=pos[keep],
            widths=width * 0.85,
            patch_artist=True,
            showfliers=True,
            flierprops={"markersize": 3},
        )
        for box in bp["boxes"]:
            box.set(facecolor=METHOD_COLORS.get(method, f"C{m}"), alpha=0.45)
        for med in bp["medians"]:
            med.set(color="k")
        ax.plot([], [], "s", color=METHOD_COLORS.get(method, f"C{m}"), alpha=0.6, label=method.upper())
    ax.set_xticks(np.arange(len(levels)))
    ax.set_xticklabels([str(g) for g in levels])


def mse_boxes(parameter_mse: pd.DataFrame, group: str = "importance_samples"):
    """Seed 003 Figures 8 and 11: per-parameter MSE over replications (eq. 29), one panel per
    parameter type, boxes by method within each number of importance samples R."""
    pars = [p for p in PARAMETER_LABELS if p in set(parameter_mse.get("parameter", []))]
    fig, axes = plt.subplots(1, max(len(pars), 1), figsize=(3.6 * max(len(pars), 1), 3.4), squeeze=False)
    methods = sorted(set(parameter_mse.get("method", [])))
    for ax, par in zip(axes[0], pars):
        _grouped_boxes(ax, parameter_mse[parameter_mse["parameter"] == par], "mse", group, methods)
        ax.set_title(f"MSE of {PARAMETER_LABELS[par]}", fontsize=10)
        if (parameter_mse.loc[parameter_mse["parameter"] == par, "mse"] > 0).all():
            ax.set_yscale("log")  # per-parameter MSEs span orders of magnitude
        ax.set_xlabel("importance samples R" if group == "importance_samples" else group)
    if not pars:
        axes[0][0].text(0.5, 0.5, "no true values to compare with", ha="center", va="center")
    axes[0][0].set_ylabel("MSE over replications")
    axes[0][0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def method_boxes(df: pd.DataFrame, columns, titles, group: str = "importance_samples"):
    """Seed 003 Figures 9 and 12: one value per fit (held-out log-likelihood, time), boxes by
    method within each number of importance samples R."""
    fig, axes = plt.subplots(1, len(columns), figsize=(3.8 * len(columns), 3.4), squeeze=False)
    methods = sorted(set(df["method"]))
    for ax, col, title in zip(axes[0], columns, titles):
        _grouped_boxes(ax, df, col, group, methods)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("importance samples R")
    axes[0][0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def scree(scree_df: pd.DataFrame):
    """Seed 003 Figure 6: held-out log-likelihood per person against the number of factors."""
    cols = [c for c in ("loglik_independent", "loglik_own_proposal") if c in scree_df]
    styles = {
        "loglik_independent": ("-", "o", "method-independent"),
        "loglik_own_proposal": (":", "x", "own proposal (eq. 27)"),
    }
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for method, d in scree_df.groupby("method", sort=True):
        d = d.sort_values("n_factors")
        for c in cols:
            ls, mk, lab = styles[c]
            ax.plot(
                d["n_factors"],
                d[c],
                ls=ls,
                marker=mk,
                color=METHOD_COLORS.get(method, None),
                label=f"{method.upper()}, {lab}",
            )
    ax.set_xlabel("number of factors P")
    ax.set_ylabel("held-out log-likelihood per person")
    ax.set_xticks(sorted(scree_df["n_factors"].unique()))
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig


def latent_density(latent: pd.DataFrame, density: pd.DataFrame, factor: int = 0, bins: int = 40):
    """The learned latent distribution: histograms of the persons' posterior means under each
    method's q (first replication), the true latent values, and the true marginal density."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    d = latent[latent["factor"] == factor] if len(latent) else latent
    edges = np.linspace(density["x"].min(), density["x"].max(), bins + 1)
    if len(d) and "true" in d and d["true"].notna().any():
        first = d[(d["method"] == d["method"].iloc[0]) & (d["importance_samples"] == d["importance_samples"].iloc[0])]
        ax.hist(first["true"], bins=edges, density=True, histtype="stepfilled", color="0.85", label="true values")
    for (method, r), dm in d.groupby(["method", "importance_samples"], sort=True):
        ax.hist(
            dm["mean"],
            bins=edges,
            density=True,
            histtype="step",
            lw=1.5,
            color=METHOD_COLORS.get(method, None),
            label=f"{method.upper()} posterior means (R={r})",
        )
    ax.plot(density["x"], density["density"], color="k", lw=1.2, label=f"true density ({density['latent'].iloc[0]})")
    ax.set_xlabel(f"latent factor {factor + 1}")
    ax.set_ylabel("density")
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig


def loadings_heatmap(loadings: pd.DataFrame):
    """Geomin-rotated loadings of each method's reference (best-likelihood) fit, items x factors."""
    methods = sorted(set(loadings["method"])) or ["none"]
    fig, axes = plt.subplots(
        1, len(methods), figsize=(2.2 + 0.5 * max(loadings["factor"].max() + 1, 1) * len(methods), 6), squeeze=False
    )
    vmax = float(np.abs(loadings["mean"]).max()) if len(loadings) else 1.0
    for ax, method in zip(axes[0], methods):
        d = loadings[loadings["method"] == method]
        if d.empty:
            continue
        m = d.pivot(index="item", columns="factor", values="mean").sort_index()
        im = ax.imshow(m.to_numpy(), aspect="auto", cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        names = d.drop_duplicates("item").sort_values("item")["item_name"].to_numpy()
        ax.set_yticks(np.arange(len(names)))
        ax.set_yticklabels(names, fontsize=5)
        ax.set_xticks(np.arange(m.shape[1]))
        ax.set_xticklabels([f"F{k + 1}" for k in m.columns], fontsize=8)
        ax.set_title(method.upper(), fontsize=10)
    fig.colorbar(im if len(loadings) else None, ax=axes[0].tolist(), shrink=0.6) if len(loadings) else None
    return fig


def figures(tables: dict, outputs: dict) -> None:
    """The design's figures, each to ``outputs["figure_<name>"]`` where the rule asks for it;
    each says how many fits it rests on, and the MSE figure names its outlying parameters."""
    fits_df = tables["fits"]
    reps = replications_label(n_replications(fits_df))
    if "figure_mse" in outputs:
        fig = mse_boxes(tables["parameter_mse"])
        _title(fig, f"Per-parameter MSE over {reps} (boxes by method and R)", mse_note(tables["parameter_mse"]))
        plotting.save(fig, outputs["figure_mse"])
        fig = latent_density(tables["latent"], tables["latent_density"])
        _title(fig, "Posterior means of replication 0")
        plotting.save(fig, outputs["figure_latent"])
    if "figure_loglik" in outputs:
        fig = method_boxes(
            fits_df,
            ["loglik_independent", "loglik_own_proposal"],
            [
                "held-out log-lik. per person\n(method-independent)",
                "held-out log-lik. per person\n(own proposal, eq. 27)",
            ],
        )
        _title(fig, f"One point per fit: {reps} per method and R")
        plotting.save(fig, outputs["figure_loglik"])
    if "figure_timings" in outputs:
        fig = method_boxes(tables["timings"], ["wall_seconds"], ["fit time (s)"])
        _title(
            fig,
            f"One point per fit: {reps} per method and R"
            if "figure_scree" not in outputs
            else f"One point per fit: every P of the scree and the repeated fits ({reps} at the repeated P)",
        )
        plotting.save(fig, outputs["figure_timings"])
    if "figure_scree" in outputs:
        fig = scree(tables["scree"])
        _title(fig, "One fit per point (replication 0 at each P)")
        plotting.save(fig, outputs["figure_scree"])
        plotting.save(loadings_heatmap(tables["reference_loadings"]), outputs["figure_loadings"])


def _title(fig, title: str, note: str | None = None) -> None:
    """A title above the panels (what the figure rests on) and an optional note below them."""
    fig.suptitle(title, fontsize=10)
    if not note:
        fig.tight_layout()
        return
    width = max(int(fig.get_figwidth() * 17), 40)  # characters per line at 7 points
    lines = textwrap.wrap(note, width)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, va="bottom", ha="left")
    fig.tight_layout(rect=(0, min(0.045 * len(lines) + 0.02, 0.5), 1, 1))
