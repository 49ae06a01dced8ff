"""The fits of one amortized_ifa design into tidy tables (fits, summary, eq. 29 MSE, latent
densities, scree, Table 1 stability), and the seed's claims judged on the fits of every design."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import io, records
from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import rotation
from bayesirt.studies.amortized_ifa.conditions import ITEM_PARAMETERS, KEYS
from bayesirt.studies.amortized_ifa.settings import Design


def fit_rows(fit_records: list[dict]):
    """One row per fit (fits.csv) and its timings (timings.csv, the only run-dependent table)."""
    rows, timings = [], []
    for r in fit_records:
        ll = r["heldout_loglik"]
        key = {
            "method": r["method"],
            "condition": r["condition"],
            "n_factors": r["n_factors"],
            "importance_samples": r["importance_samples"],
            "rep": r["replication"],
        }
        rows.append(
            {
                **key,
                "converged": records.is_converged(r),
                "status": records.convergence_status(r),
                "steps": r["steps"],
                "epochs": r["epochs"],
                "final_loss": r["final_loss"],
                "loglik_independent": ll["independent"],
                "loglik_independent_method": ll["independent_method"],
                "loglik_own_proposal": ll["own_proposal"],
                **{
                    k: r["recovery"].get(k)
                    for k in ("loading_mse", "intercept_mse", "factor_corr_mse", "ability_rmse", "ability_corr")
                },
            }
        )
        timings.append({**key, **r["timing"], "seconds_per_step": r["timing"]["wall_seconds"] / max(r["steps"], 1)})
    order = ["method", "n_factors", "importance_samples", "rep"]
    return (
        pd.DataFrame(rows).sort_values(order, ignore_index=True),
        pd.DataFrame(timings).sort_values(order, ignore_index=True),
    )


def summary_table(fits_df: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and count across replications per method, P and R."""
    value_cols = [
        c
        for c in fits_df.columns
        if c in ("loglik_independent", "loglik_own_proposal")
        or c.endswith("_mse")
        or c.startswith("ability_")
        or c in ("steps", "epochs", "final_loss")
    ]
    value_cols = [c for c in value_cols if fits_df[c].notna().any()]
    g = fits_df.groupby(["method", "n_factors", "importance_samples"], sort=True)
    out = g[value_cols].agg(["mean", "std"])
    out.columns = [f"{c}_{s}" for c, s in out.columns]
    out["n_fits"] = g.size()
    out["n_converged"] = g["converged"].sum()
    return out.reset_index()


def parameter_mse(estimates: dict) -> pd.DataFrame:
    """Paper eq. 29: per parameter, the MSE (and bias) over replications against the truth.

    ``estimates``: {(method, n_factors, importance_samples, rep): DataFrame}. Free loadings only."""
    frames = []
    for (method, p, r, rep), est in estimates.items():
        if "true" not in est:
            continue
        d = est[est.parameter.isin(ITEM_PARAMETERS) & est["true"].notna()]
        d = d[(d.parameter != "loading") | (d["mean"] != 0) | (d["true"] != 0)]
        frames.append(d[KEYS + ["mean", "true"]].assign(method=method, n_factors=p, importance_samples=r, rep=rep))
    if not frames:
        return pd.DataFrame(columns=["method", "n_factors", "importance_samples", *KEYS, "mse", "bias", "n_reps"])
    df = pd.concat(frames, ignore_index=True)
    df["err"] = df["mean"] - df["true"]
    df["sq"] = df["err"] ** 2
    keys = ["method", "n_factors", "importance_samples", *KEYS]
    # the true value is kept so that an outlying MSE can be told apart from an extreme true value
    # (a design draws one set of item parameters, shared by its replications)
    out = df.groupby(keys, sort=True).agg(
        mse=("sq", "mean"), bias=("err", "mean"), n_reps=("sq", "size"), true=("true", "mean")
    )
    return out.reset_index()


OUTLIER_FACTOR = 10.0  # an MSE this many times the median of its panel is called outlying


def mse_outliers(parameter_mse: pd.DataFrame, factor: float = OUTLIER_FACTOR) -> pd.DataFrame:
    """Parameters whose MSE exceeds ``factor`` times the median MSE of their parameter type
    (per method and R), with their true value and its rank by size among the design's true
    values of that type (1 = largest)."""
    cols = ["parameter", "item", "factor", "method", "importance_samples", "mse", "true", "rank_of_true", "n_true"]
    if parameter_mse.empty or "true" not in parameter_mse:
        return pd.DataFrame(columns=cols)
    d = parameter_mse.copy()
    panel = ["parameter", "method", "importance_samples"]
    d["median_mse"] = d.groupby(panel)["mse"].transform("median")
    ident = ["parameter", "item", "factor", "factor2", "category"]
    truths = d.drop_duplicates(ident).copy()
    truths["rank_of_true"] = truths.groupby("parameter")["true"].rank(ascending=False, method="min")
    d = d.merge(truths[ident + ["rank_of_true"]], on=ident)
    d["n_true"] = d["parameter"].map(truths.groupby("parameter").size())
    out = d[d["mse"] > factor * d["median_mse"]]
    return out[cols].sort_values("mse", ascending=False, ignore_index=True)


def mse_note(parameter_mse: pd.DataFrame, factor: float = OUTLIER_FACTOR, show: int = 3) -> str:
    """One sentence on the outlying MSEs of a design: which parameters, and their true values."""
    out = mse_outliers(parameter_mse, factor)
    if out.empty:
        return f"No MSE exceeds {factor:g} times the median of its panel."
    parts = []
    for (par, item), g in out.groupby(["parameter", "item"], sort=False):
        r = g.iloc[0]
        size = (
            f"the largest of {int(r['n_true'])}"
            if r["rank_of_true"] == 1
            else f"rank {int(r['rank_of_true'])} of {int(r['n_true'])} by size"
        )
        parts.append(
            f"{par.replace('_', ' ')} of item {int(item)} (true value {r['true']:.2f}, {size}; "
            f"MSE up to {g['mse'].max():.3g})"
        )
    more = f" and {len(parts) - show} more" if len(parts) > show else ""
    return (
        f"Outlying MSEs (above {factor:g} times the median of their panel): "
        + "; ".join(parts[:show])
        + more
        + ". The design draws one set of item parameters, shared by its replications, so an extreme draw "
        "shows in every replication."
    )


def n_replications(fits_df: pd.DataFrame) -> int:
    """Replications per method, P and R (the most any condition has)."""
    if fits_df.empty:
        return 0
    return int(fits_df.groupby(["method", "n_factors", "importance_samples"])["rep"].nunique().max())


def replications_label(n: int) -> str:
    return f"{n} replication{'s' if n != 1 else ''}"


def latent_tables(estimates: dict, design: Design, truth_attrs: dict):
    """Posterior means of replication 0 (latent.csv) and the true latent marginal density on a
    grid (latent_density.csv), for the figure of the learned latent distribution."""
    frames = []
    for (method, _p, r, rep), est in estimates.items():
        d = est[est.parameter == "ability"]
        if rep != 0 or d.empty:
            continue
        frames.append(
            d[["person", "factor", "factor_name", "mean", "sd"] + (["true"] if "true" in d else [])].assign(
                method=method, importance_samples=r
            )
        )
    latent = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(
            columns=["person", "factor", "factor_name", "mean", "sd", "true", "method", "importance_samples"]
        )
    )
    x = np.linspace(-4.0, 4.0, 401)
    latent_kind = design.latent
    if latent_kind == "mixture":
        s = float(truth_attrs.get("latent_scale_divisor", 1.0))
        dens = sum(w * _normal_pdf(x, m / s, sm.MIXTURE_SD / s) for w, m in zip(sm.MIXTURE_WEIGHTS, sm.MIXTURE_MEANS))
    else:
        dens = _normal_pdf(x, 0.0, 1.0)
    density = pd.DataFrame({"x": x, "density": dens, "latent": latent_kind})
    return latent, density


def _normal_pdf(x, m, s):
    return np.exp(-0.5 * ((x - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))


def stability_table(estimates: dict, fits_df: pd.DataFrame, n_factors: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paper Table 1: for each method, the repeated fits at ``n_factors`` against the one with
    the highest held-out log-likelihood (method-independent estimate): RMSE of the
    Geomin-rotated loadings (after reflection and column alignment to the reference),
    intercepts and factor covariance (off-diagonal), and Tucker congruence.

    Returns (per-repeat rows, one summary row per method: mean and SD over repeats)."""
    col = "loglik_independent"
    rows = []
    for method in sorted(set(fits_df.method)):
        f = fits_df[(fits_df.method == method) & (fits_df.n_factors == n_factors)]
        if len(f) < 2:
            continue
        ref_row = f.loc[f[col].idxmax()]
        ref = _matrices(estimates[_key(ref_row)], n_factors)
        low = np.tril_indices(n_factors, -1)
        for _, row in f.iterrows():
            if row["rep"] == ref_row["rep"] and row["importance_samples"] == ref_row["importance_samples"]:
                continue
            lam, ints, corr = _matrices(estimates[_key(row)], n_factors)
            lam, corr, _, _ = rotation.align(lam, ref[0], corr)
            rows.append(
                {
                    "method": method,
                    "importance_samples": int(row["importance_samples"]),
                    "rep": int(row["rep"]),
                    "reference_rep": int(ref_row["rep"]),
                    "loading_rmse": float(np.sqrt(np.mean((lam - ref[0]) ** 2))),
                    "intercept_rmse": float(np.sqrt(np.nanmean((ints - ref[1]) ** 2))),
                    "covariance_rmse": float(np.sqrt(np.mean((corr[low] - ref[2][low]) ** 2)))
                    if n_factors > 1
                    else 0.0,
                    "mean_congruence": float(rotation.tucker_congruence(lam, ref[0]).mean()),
                }
            )
    per = pd.DataFrame(
        rows,
        columns=[
            "method",
            "importance_samples",
            "rep",
            "reference_rep",
            "loading_rmse",
            "intercept_rmse",
            "covariance_rmse",
            "mean_congruence",
        ],
    )
    metrics_cols = ["loading_rmse", "intercept_rmse", "covariance_rmse", "mean_congruence"]
    g = per.groupby("method", sort=True)[metrics_cols].agg(["mean", "std"])
    g.columns = [f"{c}_{s}" for c, s in g.columns]
    summary = g.reset_index()
    summary["n_compared"] = per.groupby("method", sort=True).size().to_numpy() if len(per) else []
    return per, summary


def _key(row):
    return (row["method"], int(row["n_factors"]), int(row["importance_samples"]), int(row["rep"]))


def _matrices(est: pd.DataFrame, p: int):
    lam_d = est[est.parameter == "loading"]
    n_items = int(lam_d.item.max()) + 1
    lam = np.zeros((n_items, p))
    lam[lam_d.item.to_numpy(), lam_d.factor.to_numpy()] = lam_d["mean"].to_numpy()
    int_d = est[est.parameter == "intercept"]
    ints = np.full((n_items, int(int_d.category.max())), np.nan)
    ints[int_d.item.to_numpy(), int_d.category.to_numpy() - 1] = int_d["mean"].to_numpy()
    corr = np.eye(p)
    c = est[est.parameter == "factor_corr"]
    corr[c.factor.to_numpy(), c.factor2.to_numpy()] = c["mean"].to_numpy()
    corr[c.factor2.to_numpy(), c.factor.to_numpy()] = c["mean"].to_numpy()
    return lam, ints, corr


def scree_table(fits_df: pd.DataFrame) -> pd.DataFrame:
    """Held-out log-likelihood per person against P (replication 0 of each P), per method."""
    d = fits_df[fits_df.rep == 0]
    cols = ["loglik_independent", "loglik_independent_method", "loglik_own_proposal"]
    return d[["method", "importance_samples", "n_factors", *cols]].sort_values(
        ["method", "importance_samples", "n_factors"], ignore_index=True
    )


def aggregate(record_paths, design: Design, truth_attrs: dict | None = None) -> dict[str, pd.DataFrame]:
    """Every table of one design from its fit folders (record paths ``.../fit.json``)."""
    fit_records = [io.read_json(p) for p in record_paths]
    estimates = {}
    for path, r in zip(record_paths, fit_records):
        estimates[(r["method"], r["n_factors"], r["importance_samples"], r["replication"])] = pd.read_csv(
            Path(path).parent / "estimates.csv"
        )
    fits_df, timings = fit_rows(fit_records)
    tables = {"fits": fits_df, "timings": timings, "summary": summary_table(fits_df)}
    if design.analysis == "confirmatory":
        tables["parameter_mse"] = parameter_mse(estimates)
        tables["latent"], tables["latent_density"] = latent_tables(estimates, design, truth_attrs or {})
    else:
        tables["scree"] = scree_table(fits_df)
        tables["stability"], tables["stability_summary"] = stability_table(estimates, fits_df, design.repeat_factors)
        ref = {}
        for method in sorted(set(fits_df.method)):
            f = fits_df[(fits_df.method == method) & (fits_df.n_factors == design.repeat_factors)]
            if len(f):
                ref[method] = estimates[_key(f.loc[f["loglik_independent"].idxmax()])]
        tables["reference_loadings"] = (
            pd.concat(
                [
                    e[e.parameter == "loading"][["item", "item_name", "factor", "mean"]].assign(method=m)
                    for m, e in ref.items()
                ],
                ignore_index=True,
            )
            if ref
            else pd.DataFrame(columns=["item", "item_name", "factor", "mean", "method"])
        )
    return tables


# A fit's latent scale beside its loadings (the diagnostics' latent_scale and the doubling check):
# with a latent whose fitted spread differs from the true one, the loadings grow or shrink by the
# ratio of the sds; the loading MSE on a common scale (each loading times its factor's latent sd,
# fitted and true) leaves that drift of scale out.
def scale_rows(estimates: pd.DataFrame) -> list[dict]:
    """One row per factor of one fit's estimates (loadings and the training persons' abilities,
    with their truth): the fitted and true latent variances, the loadings' slope on the true
    ones, and the loading MSE as the run scores it (free loadings) and on a common scale."""
    ability = estimates[(estimates.parameter == "ability") & estimates["true"].notna()]
    loading = estimates[(estimates.parameter == "loading") & estimates["true"].notna()]
    loading = loading[(loading["mean"] != 0) | (loading["true"] != 0)]  # a confirmatory model's fixed zeros
    rows = []
    for factor, a in ability.groupby("factor"):
        fitted = float(a["mean"].var(ddof=0) + (a["sd"] ** 2).mean())
        true = float(a["true"].var(ddof=0))
        lam = loading[loading.factor == factor]
        est, tru = lam["mean"].to_numpy(float), lam["true"].to_numpy(float)
        rows.append(
            {
                "factor": int(factor),
                "latent_variance": fitted,
                "true_variance": true,
                "loading_slope": float(est @ tru / (tru @ tru)) if len(tru) else np.nan,
                "loading_mse": float(np.mean((est - tru) ** 2)) if len(tru) else np.nan,
                "loading_mse_common_scale": (
                    float(np.mean((est * np.sqrt(fitted) - tru * np.sqrt(true)) ** 2)) if len(tru) else np.nan
                ),
            }
        )
    return rows
