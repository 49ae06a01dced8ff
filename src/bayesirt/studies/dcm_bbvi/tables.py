"""Tables of study ``dcm_bbvi``: a fit's tidy estimates and the scores its record carries
(``estimates_table``, ``scored``: the accuracy of its modal profiles against the true ones, the
coefficients' recovery); and, from the fit records of the study (and the estimates and losses
beside them), one row per fit, accuracy and recovery per design, missingness and method,
accuracy per profile, gradient variances, the coefficients and ELBO traces of the first
replication, timings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import io, records
from bayesirt.evaluation.recovery import metrics
from bayesirt.models import lcdm
from bayesirt.studies.base import MethodResult
from bayesirt.studies.dcm_bbvi.data import Problem, true_profiles


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


# ---------------------------------------------------------------------------------------------
# one fit: its scores and tidy estimates


def scored(p: Problem, result: MethodResult, profile_prob, extra: dict | None = None) -> MethodResult:
    """The fit's record with the accuracy of its modal profiles and its coefficients' recovery
    (where the truth is known), then ``extra``."""
    record = result.record
    if p.truth is not None:
        record["accuracy"] = accuracy(profile_prob, true_profiles(p.truth), p.q.shape[1])
        b = result.estimates[result.estimates.parameter == "beta"]
        record["recovery"] = {
            "beta": metrics(b["mean"], b["true"]),
            "beta_coverage_95": float(np.mean(np.abs(b["mean"] - b["true"]) <= 1.96 * b["sd"]))
            if b["sd"].notna().all()
            else None,
        }
    record.update(extra or {})
    return result


def accuracy(profile_prob: np.ndarray, true_profile: np.ndarray, n_attributes: int) -> dict:
    """Pattern accuracy (all attributes right), attribute accuracy (mean over attributes, and per
    attribute), per-profile accuracy (by true profile), from the modal profile of each person;
    and the share of persons whose true profile is among their two most probable (seed 002:
    "Correct classification always in top 2")."""
    pred = np.asarray(profile_prob).argmax(1)
    top_two = np.argsort(-np.asarray(profile_prob), 1)[:, :2]
    prof = lcdm.profiles(n_attributes)
    attr = (prof[pred] == prof[true_profile]).mean(0)
    per_profile = {
        lcdm.profile_label(c, n_attributes): float((pred[true_profile == c] == c).mean())
        for c in range(2**n_attributes)
        if (true_profile == c).any()
    }
    return {
        "pattern_accuracy": float((pred == true_profile).mean()),
        "attribute_accuracy": float(attr.mean()),
        "attribute_accuracy_by_attribute": attr.tolist(),
        "profile_accuracy": per_profile,
        "top2_accuracy": float(np.mean((top_two == true_profile[:, None]).any(1))),
    }


def estimates_table(design: lcdm.Design, beta_mean, beta_sd, pi_mean, pi_sd, profile_prob, truth) -> pd.DataFrame:
    """Tidy estimates: beta (item, category = feature position), profile_probability
    (category = profile index), profile_posterior_max (person; mean = modal profile, sd empty)."""
    rows = []
    tb = truth[truth.parameter == "beta"] if truth is not None else None
    for j in range(design.delta.shape[0]):
        k = int(design.n_features[j])
        true = tb[tb.item == j].value.to_numpy() if tb is not None else np.full(k, np.nan)
        rows.append(
            pd.DataFrame(
                {
                    "parameter": "beta",
                    "item": j,
                    "person": -1,
                    "scale": "all",
                    "category": np.arange(k),
                    "mean": beta_mean[j, :k],
                    "sd": beta_sd[j, :k],
                    "true": true,
                }
            )
        )
    n_prof = len(pi_mean)
    tp = (
        truth[truth.parameter == "profile_probability"].value.to_numpy()
        if truth is not None
        else np.full(n_prof, np.nan)
    )
    rows.append(
        pd.DataFrame(
            {
                "parameter": "profile_probability",
                "item": -1,
                "person": -1,
                "scale": "all",
                "category": np.arange(n_prof),
                "mean": pi_mean,
                "sd": pi_sd,
                "true": tp,
            }
        )
    )
    pred = np.asarray(profile_prob).argmax(1)
    tz = truth[truth.parameter == "profile"].value.to_numpy() if truth is not None else np.full(len(pred), np.nan)
    rows.append(
        pd.DataFrame(
            {
                "parameter": "profile",
                "item": -1,
                "person": np.arange(len(pred)),
                "scale": "all",
                "category": -1,
                "mean": pred.astype(float),
                "sd": np.nan,
                "true": tz,
            }
        )
    )
    return pd.concat(rows, ignore_index=True)
