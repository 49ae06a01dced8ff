"""Tables of study ``dcm_bbvi`` from its fit records (and the estimates and losses beside them):
one row per fit, accuracy and recovery per design, missingness and method, accuracy per profile,
gradient variances, the coefficients and ELBO traces of the first replication, timings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bayesirt import io, records


def fit_records(paths) -> pd.DataFrame:
    """One row per fit record."""
    rows = []
    for path in paths:
        rec = io.read_json(path)
        design, missing, method = rec["design"], *rec["condition"].split("/")
        acc = rec.get("accuracy", {})
        rows.append(
            {
                "design": design,
                "missing": missing,
                "method": method,
                "rep": rec.get("replication"),
                "n_persons": rec["n_persons"],
                "converged": records.is_converged(rec),
                "status": records.convergence_status(rec),
                "steps": rec["steps"],
                "wall_seconds": rec["timing"]["wall_seconds"],
                "compile_seconds": rec["timing"]["compile_seconds"],
                "pattern_accuracy": acc.get("pattern_accuracy"),
                "attribute_accuracy": acc.get("attribute_accuracy"),
                "beta_rmse": rec.get("recovery", {}).get("beta", {}).get("rmse"),
                "beta_coverage_95": rec.get("recovery", {}).get("beta_coverage_95"),
                "final_loss": rec.get("final_loss"),
                "path": str(path),
            }
        )
    return pd.DataFrame(rows)


def aggregate(paths) -> dict[str, pd.DataFrame]:
    """Tidy tables from fit records (``paths`` of fit.json; the estimates and losses beside them)."""
    fits = fit_records(paths)
    keys = ["design", "missing", "method"]
    summary = (
        fits.groupby(keys, sort=False)
        .agg(
            fits=("rep", "size"),
            converged=("converged", "mean"),
            pattern_accuracy=("pattern_accuracy", "mean"),
            pattern_accuracy_sd=("pattern_accuracy", "std"),
            attribute_accuracy=("attribute_accuracy", "mean"),
            beta_rmse=("beta_rmse", "mean"),
            beta_coverage_95=("beta_coverage_95", "mean"),
        )
        .reset_index()
    )
    profile_rows, variance_rows, beta_rows, loss_rows = [], [], [], []
    for f in fits.itertuples():
        rec = io.read_json(f.path)
        base = {"design": f.design, "missing": f.missing, "method": f.method, "rep": f.rep}
        for label, acc in rec.get("accuracy", {}).get("profile_accuracy", {}).items():
            profile_rows.append({**base, "profile": label, "accuracy": acc})
        for block, v in rec.get("gradient_variance", {}).items():
            variance_rows.append(
                {
                    **base,
                    "block": block,
                    "variance_plain": v["plain"],
                    "variance_control_variates": v["control_variates"],
                    "reduction": v["reduction"],
                }
            )
        folder = Path(f.path).parent
        if f.rep == 0:
            est = pd.read_csv(folder / "estimates.csv")
            b = est[est.parameter.isin(["beta", "profile_probability"])].copy()
            b["lower"], b["upper"] = b["mean"] - 1.96 * b["sd"], b["mean"] + 1.96 * b["sd"]
            beta_rows.append(b.assign(**base))
            if (folder / "loss.csv").exists() and f.method != "em":
                loss_rows.append(pd.read_csv(folder / "loss.csv").assign(**base))
    # wall times vary run to run: they go to timings.csv alone, so every other table rebuilds bit for bit
    times = ["wall_seconds", "compile_seconds"]
    tables = {
        "fits": fits.drop(columns=["path", *times]),
        "summary": summary,
        "profile_accuracy": pd.DataFrame(profile_rows),
        "gradient_variance": pd.DataFrame(
            variance_rows,
            columns=[
                "design",
                "missing",
                "method",
                "rep",
                "block",
                "variance_plain",
                "variance_control_variates",
                "reduction",
            ],
        ),
        "estimates": pd.concat(beta_rows, ignore_index=True) if beta_rows else pd.DataFrame(),
        "elbo": pd.concat(loss_rows, ignore_index=True)
        if loss_rows
        else pd.DataFrame(columns=["step", "loss", "design", "missing", "method", "rep"]),
    }
    tables["timings"] = fits[keys + ["rep", "steps", *times]]
    return tables
