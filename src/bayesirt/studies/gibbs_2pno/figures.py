"""The gibbs_2pno study's figures: trace and rank plots and autocorrelation of one shown fit,
true (or another fit's) against estimated values, every method's item intervals, and the
mixture example's posterior. Written with ``plotting.save``."""

from __future__ import annotations

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import norm

from bayesirt import plotting

METHOD_LABELS = {
    "gibbs": "Gibbs (augmented)",
    "gibbs_omit": "Gibbs (omitted)",
    "gibbs_seed": "Gibbs (seed, plain)",
    "nuts": "NUTS",
}
SHOWN_ITEMS = 3


def shown_fit(fit_records: list[dict]) -> tuple[str, int]:
    """The condition whose draws the figures show: the first missingness condition with NUTS
    if any (else with the most methods), replication 0."""
    methods: dict[str, set] = {}
    for r in fit_records:
        if r["replication"] == 0:
            methods.setdefault(r["missing"], set()).add(r["method"])
    best = sorted(methods, key=lambda m: (("nuts" not in methods[m]), -len(methods[m]), m))[0]
    return best, 0


def figures(shown: dict, posteriors: dict, outputs: dict) -> None:
    """Trace and rank plots and autocorrelation of the shown Gibbs fit (with NUTS's beside it
    where it ran), true against estimated, and every method's item means with 90% intervals.
    ``shown``: method -> estimates of the shown fit; ``posteriors``: method -> path of its
    ``posterior.nc`` (see :func:`shown_fit`); ``outputs``: figure name -> path."""
    idata = {m: az.from_netcdf(p) for m, p in posteriors.items()}
    plotting.save(trace(idata["gibbs"]), outputs["figure_trace"])
    plotting.save(rank(idata["gibbs"]), outputs["figure_rank"])
    plotting.save(autocorrelation(idata), outputs["figure_autocorrelation"])
    # real data: no truth, so the augmented fit is set against the other fit of the same data
    other = next((m for m in ("nuts", "gibbs_omit") if m in shown), None)
    plotting.save(recovery(shown["gibbs"], shown.get(other), other or ""), outputs["figure_recovery"])
    plotting.save(intervals(shown), outputs["figure_intervals"])


def mixture_figure(data: pd.DataFrame, sd: float, posterior_path, output) -> None:
    """The mixture example's figure (:func:`mixture_posterior`) from its ``posterior.nc``."""
    plotting.save(mixture_posterior(data, az.from_netcdf(posterior_path), float(sd)), output)


def _first_items(idata, n: int = SHOWN_ITEMS) -> dict:
    return {"item": list(idata.posterior["item"].values[:n])}


def trace(idata):
    """ArviZ trace plot of the first items' discrimination and difficulty, every chain."""
    axes = az.plot_trace(
        idata, var_names=["discrimination", "difficulty"], coords=_first_items(idata), compact=False, figsize=(10, 7)
    )
    fig = np.ravel(axes)[0].figure
    fig.tight_layout()
    return fig


def rank(idata):
    """ArviZ rank plots (rank histograms per chain) of the first items' parameters; flat
    histograms mean chains that sample the same distribution."""
    axes = az.plot_rank(idata, var_names=["discrimination", "difficulty"], coords=_first_items(idata), figsize=(10, 5))
    fig = np.ravel(axes)[0].figure
    fig.tight_layout()
    return fig


def autocorrelation(idata: dict, max_lag: int = 50):
    """Autocorrelation of every item parameter's draws (first chain; thin lines) and their
    mean (thick), per method: how fast each sampler forgets."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3), sharey=True)
    for ax, par in zip(axes, ("discrimination", "difficulty")):
        for k, (method, data) in enumerate(idata.items()):
            draws = data.posterior[par].values[0]  # draw x item
            lags = min(max_lag, draws.shape[0] - 1)
            acf = np.array([az.autocorr(draws[:, j])[: lags + 1] for j in range(draws.shape[1])])
            color = f"C{k}"
            ax.plot(acf.T, color=color, alpha=0.15, lw=0.7)
            ax.plot(acf.mean(0), color=color, lw=2, label=METHOD_LABELS.get(method, method))
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(par)
        ax.set_xlabel("lag (draws)")
    axes[0].set_ylabel("autocorrelation")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def recovery(estimates: pd.DataFrame, reference: pd.DataFrame | None = None, reference_name: str = ""):
    """Posterior means against the true values (items with their 90% intervals; abilities as
    EAPs), with the identity line. Real data have no true values: then the x axis is the
    posterior mean of ``reference`` (another method's fit of the same data), and the figure
    says so."""
    has_truth = "true" in estimates and estimates["true"].notna().any()
    if not has_truth and reference is None:
        raise ValueError("recovery figure: no true values and no reference fit to compare with")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.5))
    for ax, par in zip(axes, ("discrimination", "difficulty", "ability")):
        e = estimates[estimates.parameter == par]
        if has_truth:
            x = e["true"]
        else:
            r = reference[reference.parameter == par].set_index(["item", "person"])["mean"]
            x = r.reindex(pd.MultiIndex.from_frame(e[["item", "person"]])).to_numpy()
        if par == "ability":
            ax.scatter(x, e["mean"], s=4, alpha=0.4)
        else:
            ax.errorbar(
                x, e["mean"], yerr=[e["mean"] - e["q5"], e["q95"] - e["mean"]], fmt="o", ms=3, lw=0.8, capsize=0
            )
        lo, hi = np.nanmin([np.nanmin(x), e["mean"].min()]), np.nanmax([np.nanmax(x), e["mean"].max()])
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_title(par)
        ax.set_xlabel("true" if has_truth else f"posterior mean, {reference_name}")
    axes[0].set_ylabel("posterior mean (90% interval)")
    if not has_truth:
        fig.suptitle(f"real data, no true values: Gibbs (augmented) against {reference_name}", fontsize=10)
    fig.tight_layout()
    return fig


def intervals(estimates: dict):
    """Every method's posterior mean and 90% interval of each item parameter, side by side per
    item, with the true value (x)."""
    fig, axes = plt.subplots(2, 1, figsize=(10, 6))
    methods = list(estimates)
    width = 0.8 / max(len(methods), 1)
    for ax, par in zip(axes, ("discrimination", "difficulty")):
        for k, method in enumerate(methods):
            e = estimates[method]
            e = e[e.parameter == par].sort_values("item")
            x = e["item"].to_numpy() + (k - (len(methods) - 1) / 2) * width
            ax.errorbar(
                x,
                e["mean"],
                yerr=[e["mean"] - e["q5"], e["q95"] - e["mean"]],
                fmt="o",
                ms=3,
                lw=1,
                color=f"C{k}",
                label=METHOD_LABELS.get(method, method),
            )
        e = estimates[methods[0]]
        e = e[e.parameter == par]
        if "true" in e:
            ax.scatter(e["item"], e["true"], marker="x", color="k", s=20, zorder=3, label="true")
        ax.set_ylabel(par)
    axes[1].set_xlabel("item")
    axes[0].legend(fontsize=8, ncol=4)
    fig.tight_layout()
    return fig


def mixture_posterior(data: pd.DataFrame, idata, sd: float):
    """The mixture example: the heights with the posterior-mean mixture density (known
    component sd ``sd``), and the posterior draws of the component means and of pi (all chains)."""
    post = idata.posterior
    mu, pi = post["mu"].values.reshape(-1, 2), post["pi"].values.ravel()
    x = data["height"].to_numpy()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    grid = np.linspace(x.min() - 3, x.max() + 3, 300)
    m0, m1, p = mu[:, 0].mean(), mu[:, 1].mean(), pi.mean()
    axes[0].hist(x, bins=40, density=True, color="0.8")
    axes[0].plot(grid, (1 - p) * norm.pdf(grid, m0, sd) + p * norm.pdf(grid, m1, sd), "k", lw=1.5)
    axes[0].set_title("heights and the posterior-mean mixture")
    for k in (0, 1):
        axes[1].hist(mu[:, k], bins=50, density=True, alpha=0.7, label=f"μ{k}")
    axes[1].set_title("component means")
    axes[1].legend(fontsize=8)
    axes[2].hist(pi, bins=50, density=True, color="C2")
    axes[2].set_title("π (weight of component 1)")
    fig.tight_layout()
    return fig
