"""Figures shared by several studies, and ``save``, which writes every figure of the project
(matplotlib, no state). Each study's own figures are in ``bayesirt.studies.<study>.figures``.

Importing this module leaves matplotlib's backend alone, so a notebook keeps its own: ``save``
renders with Agg whatever the backend is.
"""

from __future__ import annotations

import io as io_bytes

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import io

LABELS = {
    "discrimination": "discrimination α",
    "base_difficulty": "first threshold τ₁",
    "increments": "threshold increments Δ",
    "ability": "ability θ",
}


def save(fig, path, dpi: int = 120) -> None:
    """Write a PNG atomically and close the figure. PNG metadata carries no timestamp, so
    identical figures give identical files."""
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", bbox_inches="tight", metadata={"Software": None}, backend="agg")
    plt.close(fig)


def show(fig, dpi: int = 100) -> None:
    """Show a figure in a notebook as one embedded PNG, drawn with Agg, and close it: whatever
    the notebook's matplotlib backend, the figure appears once, where it is shown (an inline
    backend would otherwise draw it again at the end of the cell)."""
    # IPython is there whenever a notebook runs; the rest of the library does not need it
    from IPython.display import Image, display

    buffer = io_bytes.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", backend="agg")
    plt.close(fig)
    display(Image(data=buffer.getvalue()))


def loss_curves(losses: dict[str, pd.DataFrame], smooth: int = 25):
    """Training loss against step for each fit, with a running mean to show the trend."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for label, df in losses.items():
        y = df["loss"].to_numpy()
        ax.plot(df["step"], y, alpha=0.25, lw=0.8)
        if len(y) >= smooth:
            kernel = np.ones(smooth) / smooth
            ax.plot(
                df["step"].to_numpy()[smooth - 1 :],
                np.convolve(y, kernel, "valid"),
                color=ax.lines[-1].get_color(),
                lw=1.6,
                label=label,
            )
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


def true_vs_estimated(
    estimates: pd.DataFrame,
    parameters=("discrimination", "base_difficulty", "increments", "ability"),
    max_points: int = 2000,
):
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
                ax.errorbar(ds["true"], ds["mean"], yerr=ds["sd"], fmt="o", ms=3, lw=0.8, label=f"scale {scale}")
        lims = [min(d["true"].min(), d["mean"].min()), max(d["true"].max(), d["mean"].max())]
        ax.plot(lims, lims, color="0.5", lw=0.8, ls="--")
        rmse = float(np.sqrt(((d["mean"] - d["true"]) ** 2).mean()))
        ax.set_title(f"{LABELS.get(name, name)}\nRMSE {rmse:.3f}", fontsize=10)
        ax.set_xlabel("true")
    axes[0].set_ylabel("posterior mean")
    axes[0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig

    fig.tight_layout()
    return fig


def model_checks(items: pd.DataFrame, persons: pd.DataFrame, alpha: float = 0.05):
    """The checks of one fit (``studies.model_checks``): the item-fit and local-dependence
    p-values (uniform under the model) and the persons' lz with the flagging line.

    Parameters
    ----------
    items : pandas.DataFrame
        ``item_fit.csv``.
    persons : pandas.DataFrame
        ``person_fit.csv``.
    alpha : float
        The flags' level (a line on the p-value panel).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    bins = np.linspace(0, 1, 11)
    for column, label in (("p_value", "item fit"), ("ld_p_value", "local dependence")):
        values = items[column].dropna()
        axes[0].hist(values, bins=bins, alpha=0.6, label=f"{label} ({len(values)} items)")
    axes[0].axvline(alpha, color="0.3", ls="--", lw=0.8)
    axes[0].set_xlabel("p-value")
    axes[0].set_ylabel("items")
    axes[0].legend(frameon=False, fontsize=8)
    axes[0].set_title("uniform if the model fits", fontsize=9)
    lz = persons["lz"].dropna()
    axes[1].hist(lz, bins=40, color="C2", alpha=0.7)
    axes[1].axvline(-1.645, color="0.3", ls="--", lw=0.8)
    axes[1].set_xlabel("person fit lz")
    axes[1].set_ylabel("persons")
    axes[1].set_title(f"{persons['flagged'].mean():.1%} below -1.645", fontsize=9)
    fig.tight_layout()
    return fig
