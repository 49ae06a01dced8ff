"""The figures of amortized_ifa's reproduction page (``amortized_ifa.reproduction``): the
paper's Figures 8, 9, 11 and 12 (and its scree plot, Figure 6) drawn from the run's tables."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesirt import plotting
from bayesirt.studies.amortized_ifa import figures as ifa_figures
from bayesirt.studies.amortized_ifa.reproduction_pairs import LATENT, PARAMETERS, per_replication


def mse_figure(fits: pd.DataFrame):
    """The paper's Figures 8 and 11 as box plots: MSE per method and R, by design and parameter."""
    conf = fits[fits.design.isin(list(LATENT))]
    designs = list(dict.fromkeys(conf.design))
    fig, axes = plt.subplots(
        len(PARAMETERS), max(len(designs), 1), figsize=(3.8 * max(len(designs), 1), 8), squeeze=False
    )
    for col, design in enumerate(designs):
        d = conf[conf.design == design]
        for row, par in enumerate(PARAMETERS):
            ax = axes[row][col]
            groups = [
                (f"{m}\nR={int(r)}", g[f"{par}_mse"].dropna().to_numpy())
                for (m, r), g in d.groupby(["method", "importance_samples"])
            ]
            groups = [(label, v) for label, v in groups if len(v)]
            if groups:
                ax.boxplot([v for _, v in groups], showfliers=False)
                ax.set_xticks(range(1, len(groups) + 1), [label for label, _ in groups], fontsize=7)
            ax.set_title(f"{design}: {PARAMETERS[par]} MSE", fontsize=9)
    fig.tight_layout()
    return fig


def loglik_figure(fits: pd.DataFrame):
    """The paper's Figures 9 and 12 as pairs: each replication's held-out log-likelihood per
    person (method-independent, averaged over R) under IWAE and IWAVB, joined by a line."""
    conf = fits[fits.design.isin(list(LATENT))]
    designs = list(dict.fromkeys(conf.design))
    fig, axes = plt.subplots(1, max(len(designs), 1), figsize=(3.2 * max(len(designs), 1), 3.4), squeeze=False)
    for ax, design in zip(axes[0], designs):
        pairs = per_replication(conf[conf.design == design], "loglik_independent")
        for _, row in pairs.iterrows():
            ax.plot([0, 1], [row.get("iwae", np.nan), row.get("iwavb", np.nan)], "o-", color="0.4", alpha=0.7)
        ax.set_xticks([0, 1], ["IWAE", "IWAVB"])
        ax.set_xlim(-0.4, 1.4)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_title(f"{design} ({len(pairs)} replication{'' if len(pairs) == 1 else 's'})", fontsize=9)
    axes[0][0].set_ylabel("held-out log-likelihood per person")
    fig.tight_layout()
    return fig


def figures(tables: dict, folder) -> list[tuple[str, str]]:
    plotting.save(mse_figure(tables["fits"]), folder / "mse.png")
    plotting.save(loglik_figure(tables["fits"]), folder / "loglik.png")
    out = [
        (
            "mse.png",
            "The paper's Figures 8 and 11 from this run: MSE of loadings, intercepts and factor correlations per "
            "replication, by method and number of importance samples R.",
        ),
        (
            "loglik.png",
            "The paper's Figures 9 and 12 from this run: each replication's held-out log-likelihood per person "
            "(method-independent estimate, averaged over R), IWAE and IWAVB joined.",
        ),
    ]
    if len(tables["scree"]):
        plotting.save(ifa_figures.scree(tables["scree"]), folder / "scree.png")
        out.append(
            (
                "scree.png",
                "The paper's Figure 6 from this run: held-out log-likelihood per person against the number of "
                "factors on the IPIP-shaped data (replication 0 of each P).",
            )
        )
    return out
