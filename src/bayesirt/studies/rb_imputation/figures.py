"""Figures of study ``rb_imputation`` (PNG, through ``plotting.save``): the reference fit's loss
and estimates, and every objective against it (loss curves, discriminations and abilities by
condition, errors by condition)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.plotting import LABELS
from bayesirt.studies.rb_imputation.conditions import REFERENCE


def figures(errors: pd.DataFrame, estimates: dict, losses: dict, outputs: dict) -> None:
    """Loss curves, discriminations and abilities by condition, errors by condition.
    ``estimates``/``losses``: condition -> table, the reference and replication 0 of each."""
    plotting.save(plotting.loss_curves(losses), outputs["loss_figure"])
    plotting.save(estimates_by_condition(estimates, "discrimination"), outputs["discrimination_figure"])
    plotting.save(abilities_against_reference(estimates), outputs["ability_figure"])
    fits = errors[errors.condition != REFERENCE]
    fig = errors_by_condition(fits)
    n = int(fits["rep"].nunique()) if "rep" in fits and len(fits) else 0
    fig.suptitle(f"{n} replication{'s' if n != 1 else ''}: one dot each, bars their mean", fontsize=10)
    fig.tight_layout()
    plotting.save(fig, outputs["error_figure"])


def reference_figures(estimates: pd.DataFrame, losses: dict, outputs: dict) -> None:
    """The reference fit's loss curve, and its estimates against the truth (simulated data) or
    item by item (real data)."""
    plotting.save(plotting.loss_curves(losses), outputs["loss_figure"])
    figure = plotting.true_vs_estimated(estimates) if "true" in estimates else item_estimates(estimates)
    plotting.save(figure, outputs["scatter_figure"])


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
    fig, axes = plt.subplots(
        1,
        len(scales),
        figsize=(sum(max(3.0, 0.45 * n) for n in n_items.values()) + 1, 3.8),
        squeeze=False,
        gridspec_kw={"width_ratios": [max(n_items[s], 1) for s in scales]},
    )
    width = 0.8 / max(len(estimates), 1)
    for ax, scale in zip(axes[0], scales):
        for c, (label, est) in enumerate(estimates.items()):
            d = est[(est["parameter"] == parameter) & (est["scale"] == scale)].sort_values("item")
            x = np.arange(len(d)) - 0.4 + width * (c + 0.5)
            ax.errorbar(x, d["mean"], yerr=2 * d["sd"], fmt="o", ms=3, lw=0.9, label=label)
        ax.set_title(f"scale {scale}", fontsize=10)
        ax.set_xticks(np.arange(n_items[scale]))
        ax.set_xticklabels(
            sorted(first.loc[(first["parameter"] == parameter) & (first["scale"] == scale), "item"]), fontsize=7
        )
        ax.set_xlabel("item")
    axes[0][0].set_ylabel(f"{LABELS.get(parameter, parameter)}\n(posterior mean ± 2 sd)")
    axes[0][-1].legend(frameon=False, fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


def abilities_against_reference(estimates: dict[str, pd.DataFrame], max_points: int = 1500):
    """Posterior mean abilities of each condition against the reference fit's (first entry); the
    RMSE in each title is over every person, as in the study's tables (at most ``max_points``
    of them are drawn)."""
    (ref_label, ref), *others = estimates.items()
    keys = ["person", "scale"]
    ref_ab = ref[ref["parameter"] == "ability"][keys + ["mean"]].rename(columns={"mean": "reference"})
    fig, axes = plt.subplots(1, max(len(others), 1), figsize=(2.9 * max(len(others), 1), 3.1), squeeze=False)
    for ax, (label, est) in zip(axes[0], others):
        d = est[est["parameter"] == "ability"].merge(ref_ab, on=keys)
        rmse = float(np.sqrt(((d["mean"] - d["reference"]) ** 2).mean()))
        if len(d) > max_points:
            d = d.iloc[np.linspace(0, len(d) - 1, max_points).astype(int)]
        ax.scatter(d["reference"], d["mean"], s=3, alpha=0.3)
        lims = [d[["reference", "mean"]].min().min(), d[["reference", "mean"]].max().max()]
        ax.plot(lims, lims, color="0.5", lw=0.8, ls="--")
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
    fig, axes = plt.subplots(
        len(against), len(parameters), figsize=(3.6 * len(parameters), 2.9 * len(against)), squeeze=False
    )
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
