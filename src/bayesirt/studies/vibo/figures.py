"""The vibo study's figures (PNG, through ``plotting.save``): per simulated design, accuracy
against time, calibration of the ability intervals and the two missing-data variants
(``figures``); per real-data design, agreement with MML-EAP and hidden-cell prediction
(``figures`` with ``observed=True``). The drawing functions return the figure, for the report
notebook to show."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.vibo.tables import REFERENCE, with_times

LABELS = {
    "vibo_one_prior": "VIBO, one prior expert",
    "vibo_prior_per_missing": "VIBO, prior per missing",
    "vibo_seed": "VIBO as seed 004 states it",
    "vibo_average_seed": "averaging encoder (seed 004's comparison)",
    "mfvi": "mean-field VI",
    "mml": "MML-EAP",
    "nuts": "NUTS",
}


def figures(tables: dict, outputs: dict, *, observed: bool = False) -> None:
    """The figures of one design from its tables (``tables.aggregate``), written to the paths in
    ``outputs``: ``simulated_figures`` or, for real data (``observed``), ``observed_figures``."""
    (observed_figures if observed else simulated_figures)(tables, outputs)


def simulated_figures(tables: dict, outputs: dict) -> None:
    """accuracy versus time, calibration and the two missing-data variants (PNG)."""
    timed = with_times(tables["summary"], tables["timings"])
    reps = tables["summary"]["replications"]
    n = f"{int(reps.min())}" if reps.min() == reps.max() else f"{int(reps.min())} to {int(reps.max())}"
    title = f"Means over {n} replication{'s' if reps.max() != 1 else ''} per condition and method"
    for fig, name in (
        (accuracy_time(timed), "figure_accuracy_time"),
        (calibration(tables["summary"]), "figure_calibration"),
        (variants(tables["summary"]), "figure_variants"),
    ):
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        plotting.save(fig, outputs[name])


def observed_figures(tables: dict, outputs: dict) -> None:
    """Agreement with MML-EAP and hidden-cell prediction of a real-data design (PNG)."""
    reps = tables["summary"]["replications"]
    fig = agreement(tables["summary"], reference=REFERENCE)
    fig.suptitle(
        f"Means over {int(reps.min())} to {int(reps.max())} missingness masks per condition and method"
        if reps.min() != reps.max()
        else f"Means over {int(reps.min())} missingness mask{'s' if reps.max() != 1 else ''} per condition and method",
        fontsize=10,
    )
    fig.tight_layout()
    plotting.save(fig, outputs["figure_agreement"])


def accuracy_time(summary: pd.DataFrame):
    """Ability RMSE against the truth versus fitting time (log scale), one marker per method
    and one panel per missingness condition, mean over replications."""
    missing = list(dict.fromkeys(summary["missing"]))
    fig, axes = plt.subplots(1, len(missing), figsize=(3.6 * len(missing), 3.4), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], missing):
        d = summary[summary["missing"] == m]
        for method, label in LABELS.items():
            r = d[d["method"] == method]
            if not r.empty:
                ax.scatter(r["wall_seconds_mean"], r["ability_rmse_mean"], label=label, s=40)
        ax.set_xscale("log")
        ax.set_title(m)
        ax.set_xlabel("fit time, s (log)")
    axes[0, 0].set_ylabel("ability RMSE vs truth")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def calibration(summary: pd.DataFrame):
    """Empirical coverage of the 50% and 90% ability intervals per method and missingness
    condition, against the nominal levels (dashed)."""
    d = summary[summary["method"] != "mml"] if (summary["method"] != "mml").any() else summary
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.4), sharey=False)
    missing = list(dict.fromkeys(d["missing"]))
    methods = [m for m in LABELS if m in set(d["method"])] + sorted(set(d["method"]) - set(LABELS))
    width = 0.8 / max(len(methods), 1)
    for ax, level in zip(axes, (50, 90)):
        for k, method in enumerate(methods):
            r = d[d["method"] == method].set_index("missing").reindex(missing)
            ax.bar(
                np.arange(len(missing)) + k * width,
                r[f"coverage_{level}_mean"],
                width,
                label=LABELS.get(method, method),
            )
        ax.axhline(level / 100, ls="--", color="k", lw=1)
        ax.set_xticks(np.arange(len(missing)) + width * (len(methods) - 1) / 2, missing)
        ax.set_ylim(max(0.0, level / 100 - 0.35), 1.0)
        ax.set_title(f"{level}% intervals")
    axes[0].set_ylabel("coverage of the true ability")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def variants(summary: pd.DataFrame):
    """The VIBO missing-data variants side by side over missingness (ours, and the seed's with
    the averaging encoder it compares with, where they ran): ability RMSE, 90% coverage and
    log score of the hidden responses (MML-EAP as the reference line)."""
    cols = [
        ("ability_rmse_mean", "ability RMSE"),
        ("coverage_90_mean", "90% coverage"),
        ("hidden_log_score_mean", "hidden-cell log score"),
    ]
    missing = list(dict.fromkeys(summary["missing"]))
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    for ax, (col, title) in zip(axes, cols):
        for method in ("vibo_one_prior", "vibo_prior_per_missing", "vibo_seed", "vibo_average_seed", "mml"):
            r = summary[summary["method"] == method].set_index("missing").reindex(missing)
            if r[col].notna().any():
                ax.plot(missing, r[col], marker="o", ls="--" if method == "mml" else "-", label=LABELS[method])
        ax.set_title(title)
        ax.set_xlabel("missingness")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def agreement(summary: pd.DataFrame, reference: str = "mml"):
    """A real-data design (no truth): each method's ability correlation with the reference
    (MML-EAP) fitted to the same data, and the accuracy and mean log score of its predictions of
    the hidden cells, over the missingness conditions (means over replications)."""
    cols = [
        (f"ability_corr_to_{reference}_mean", f"ability correlation with {LABELS.get(reference, reference)}"),
        ("hidden_accuracy_mean", "hidden-cell accuracy"),
        ("hidden_log_score_mean", "hidden-cell log score"),
    ]
    missing = list(dict.fromkeys(summary["missing"]))
    methods = [m for m in LABELS if m in set(summary["method"])]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    for ax, (col, title) in zip(axes, cols):
        for method in methods:
            r = summary[summary["method"] == method].set_index("missing").reindex(missing)
            if col in r and r[col].notna().any():
                ax.plot(missing, r[col], marker="o", ls="--" if method == reference else "-", label=LABELS[method])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("missingness")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig
