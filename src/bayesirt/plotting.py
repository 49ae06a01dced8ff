"""Figures shared by workflow rules and report notebooks (matplotlib, no state)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; notebooks display the returned figures themselves
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bayesirt import io  # noqa: E402

LABELS = {"discrimination": "discrimination α", "base_difficulty": "first threshold τ₁",
          "increments": "threshold increments Δ", "ability": "ability θ"}


def save(fig, path, dpi: int = 120) -> None:
    """Write a PNG atomically and close the figure. PNG metadata carries no timestamp, so
    identical figures give identical files."""
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", bbox_inches="tight", metadata={"Software": None})
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


# ----------------------------------------------------------------------------- amortized_ifa

METHOD_COLORS = {"iwae": "C0", "iwavb": "C3"}
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
        bp = ax.boxplot([data[k] for k in keep], positions=pos[keep], widths=width * 0.85, patch_artist=True,
                        showfliers=True, flierprops={"markersize": 3})
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
    styles = {"loglik_independent": ("-", "o", "method-independent"),
              "loglik_own_proposal": (":", "x", "own proposal (eq. 27)")}
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for method, d in scree_df.groupby("method", sort=True):
        d = d.sort_values("n_factors")
        for c in cols:
            ls, mk, lab = styles[c]
            ax.plot(d["n_factors"], d[c], ls=ls, marker=mk, color=METHOD_COLORS.get(method, None),
                    label=f"{method.upper()}, {lab}")
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
        ax.hist(dm["mean"], bins=edges, density=True, histtype="step", lw=1.5,
                color=METHOD_COLORS.get(method, None), label=f"{method.upper()} posterior means (R={r})")
    ax.plot(density["x"], density["density"], color="k", lw=1.2, label=f"true density ({density['latent'].iloc[0]})")
    ax.set_xlabel(f"latent factor {factor + 1}")
    ax.set_ylabel("density")
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig


def loadings_heatmap(loadings: pd.DataFrame):
    """Geomin-rotated loadings of each method's reference (best-likelihood) fit, items x factors."""
    methods = sorted(set(loadings["method"])) or ["none"]
    fig, axes = plt.subplots(1, len(methods), figsize=(2.2 + 0.5 * max(loadings["factor"].max() + 1, 1) * len(methods), 6),
                             squeeze=False)
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


VIBO_METHODS = {"vibo_one_prior": "VIBO, one prior expert", "vibo_prior_per_missing": "VIBO, prior per missing",
                "mfvi": "mean-field VI", "mml": "MML-EAP", "nuts": "NUTS"}


def vibo_accuracy_time(summary: pd.DataFrame):
    """Ability RMSE against the truth versus fitting time (log scale), one marker per method
    and one panel per missingness condition, mean over replications."""
    missing = list(dict.fromkeys(summary["missing"]))
    fig, axes = plt.subplots(1, len(missing), figsize=(3.6 * len(missing), 3.4), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], missing):
        d = summary[summary["missing"] == m]
        for method, label in VIBO_METHODS.items():
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


def vibo_calibration(summary: pd.DataFrame):
    """Empirical coverage of the 50% and 90% ability intervals per method and missingness
    condition, against the nominal levels (dashed)."""
    d = summary[summary["method"] != "mml"] if (summary["method"] != "mml").any() else summary
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.4), sharey=False)
    missing = list(dict.fromkeys(d["missing"]))
    methods = [m for m in VIBO_METHODS if m in set(d["method"])] + sorted(set(d["method"]) - set(VIBO_METHODS))
    width = 0.8 / max(len(methods), 1)
    for ax, level in zip(axes, (50, 90)):
        for k, method in enumerate(methods):
            r = d[d["method"] == method].set_index("missing").reindex(missing)
            ax.bar(np.arange(len(missing)) + k * width, r[f"coverage_{level}_mean"], width,
                   label=VIBO_METHODS.get(method, method))
        ax.axhline(level / 100, ls="--", color="k", lw=1)
        ax.set_xticks(np.arange(len(missing)) + width * (len(methods) - 1) / 2, missing)
        ax.set_ylim(max(0.0, level / 100 - 0.35), 1.0)
        ax.set_title(f"{level}% intervals")
    axes[0].set_ylabel("coverage of the true ability")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def vibo_variants(summary: pd.DataFrame):
    """The two VIBO missing-data variants side by side over missingness: ability RMSE,
    90% coverage and log score of the hidden responses (MML-EAP as the reference line)."""
    cols = [("ability_rmse_mean", "ability RMSE"), ("coverage_90_mean", "90% coverage"),
            ("hidden_log_score_mean", "hidden-cell log score")]
    missing = list(dict.fromkeys(summary["missing"]))
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    for ax, (col, title) in zip(axes, cols):
        for method in ("vibo_one_prior", "vibo_prior_per_missing", "mml"):
            r = summary[summary["method"] == method].set_index("missing").reindex(missing)
            if r[col].notna().any():
                ax.plot(missing, r[col], marker="o", ls="--" if method == "mml" else "-",
                        label=VIBO_METHODS[method])
        ax.set_title(title)
        ax.set_xlabel("missingness")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def vibo_agreement(summary: pd.DataFrame, reference: str = "mml"):
    """A real-data design (no truth): each method's ability correlation with the reference
    (MML-EAP) fitted to the same data, and the accuracy and mean log score of its predictions of
    the hidden cells, over the missingness conditions (means over replications)."""
    cols = [(f"ability_corr_to_{reference}_mean", f"ability correlation with {VIBO_METHODS.get(reference, reference)}"),
            ("hidden_accuracy_mean", "hidden-cell accuracy"), ("hidden_log_score_mean", "hidden-cell log score")]
    missing = list(dict.fromkeys(summary["missing"]))
    methods = [m for m in VIBO_METHODS if m in set(summary["method"])]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    for ax, (col, title) in zip(axes, cols):
        for method in methods:
            r = summary[summary["method"] == method].set_index("missing").reindex(missing)
            if col in r and r[col].notna().any():
                ax.plot(missing, r[col], marker="o", ls="--" if method == reference else "-",
                        label=VIBO_METHODS[method])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("missingness")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


# ---- gibbs_2pno (seed 001; bayesirt.studies.gibbs_2pno) ----

GIBBS_METHODS = {"gibbs": "Gibbs (augmented)", "gibbs_omit": "Gibbs (omitted)", "nuts": "NUTS"}
GIBBS_SHOWN_ITEMS = 3


def _first_items(idata, n: int = GIBBS_SHOWN_ITEMS) -> dict:
    return {"item": list(idata.posterior["item"].values[:n])}


def gibbs_trace(idata):
    """ArviZ trace plot of the first items' discrimination and difficulty, every chain."""
    import arviz as az

    axes = az.plot_trace(idata, var_names=["discrimination", "difficulty"], coords=_first_items(idata),
                         compact=False, figsize=(10, 7))
    fig = np.ravel(axes)[0].figure
    fig.tight_layout()
    return fig


def gibbs_rank(idata):
    """ArviZ rank plots (rank histograms per chain) of the first items' parameters; flat
    histograms mean chains that sample the same distribution."""
    import arviz as az

    axes = az.plot_rank(idata, var_names=["discrimination", "difficulty"], coords=_first_items(idata),
                        figsize=(10, 5))
    fig = np.ravel(axes)[0].figure
    fig.tight_layout()
    return fig


def gibbs_autocorrelation(idata: dict, max_lag: int = 50):
    """Autocorrelation of every item parameter's draws (first chain; thin lines) and their
    mean (thick), per method: how fast each sampler forgets."""
    import arviz as az

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3), sharey=True)
    for ax, par in zip(axes, ("discrimination", "difficulty")):
        for k, (method, data) in enumerate(idata.items()):
            draws = data.posterior[par].values[0]  # draw x item
            lags = min(max_lag, draws.shape[0] - 1)
            acf = np.array([az.autocorr(draws[:, j])[: lags + 1] for j in range(draws.shape[1])])
            color = f"C{k}"
            ax.plot(acf.T, color=color, alpha=0.15, lw=0.7)
            ax.plot(acf.mean(0), color=color, lw=2, label=GIBBS_METHODS.get(method, method))
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(par)
        ax.set_xlabel("lag (draws)")
    axes[0].set_ylabel("autocorrelation")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def gibbs_recovery(estimates: pd.DataFrame, reference: pd.DataFrame | None = None, reference_name: str = ""):
    """Posterior means against the true values (items with their 90% intervals; abilities as
    EAPs), with the identity line. Real data have no true values: then the x axis is the
    posterior mean of ``reference`` (another method's fit of the same data), and the figure
    says so."""
    has_truth = "true" in estimates and estimates["true"].notna().any()
    if not has_truth and reference is None:
        raise ValueError("gibbs_recovery: no true values and no reference fit to compare with")
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
            ax.errorbar(x, e["mean"], yerr=[e["mean"] - e["q5"], e["q95"] - e["mean"]], fmt="o", ms=3,
                        lw=0.8, capsize=0)
        lo, hi = np.nanmin([np.nanmin(x), e["mean"].min()]), np.nanmax([np.nanmax(x), e["mean"].max()])
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_title(par)
        ax.set_xlabel("true" if has_truth else f"posterior mean, {reference_name}")
    axes[0].set_ylabel("posterior mean (90% interval)")
    if not has_truth:
        fig.suptitle(f"real data, no true values: Gibbs (augmented) against {reference_name}", fontsize=10)
    fig.tight_layout()
    return fig


def gibbs_intervals(estimates: dict):
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
            ax.errorbar(x, e["mean"], yerr=[e["mean"] - e["q5"], e["q95"] - e["mean"]], fmt="o", ms=3, lw=1,
                        color=f"C{k}", label=GIBBS_METHODS.get(method, method))
        e = estimates[methods[0]]
        e = e[e.parameter == par]
        if "true" in e:
            ax.scatter(e["item"], e["true"], marker="x", color="k", s=20, zorder=3, label="true")
        ax.set_ylabel(par)
    axes[1].set_xlabel("item")
    axes[0].legend(fontsize=8, ncol=4)
    fig.tight_layout()
    return fig


def gibbs_mixture_posterior(data: pd.DataFrame, idata, sd: float):
    """The mixture example: the heights with the posterior-mean mixture density (known
    component sd ``sd``), and the posterior draws of the component means and of pi (all chains)."""
    from scipy.stats import norm

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
