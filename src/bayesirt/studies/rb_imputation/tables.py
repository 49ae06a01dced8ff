"""Tables of study ``rb_imputation``: every objective's fit against the complete-data reference
(and the truth on simulated data), across replications; the reference fit's recovery of the
truth; and seed 000's claim (``jensen_verdict``)."""

from __future__ import annotations

import pandas as pd

from bayesirt import records
from bayesirt.evaluation import verdicts
from bayesirt.evaluation.recovery import metrics, recovery_table
from bayesirt.studies.rb_imputation.conditions import REFERENCE

COMPARED = ("discrimination", "base_difficulty", "ability")
KEYS = ["parameter", "item", "person", "scale", "category"]
RECOVERY_COLUMNS = ["parameter", "scale", "rmse", "bias", "mse", "corr", "n"]


def error_table(estimates: pd.DataFrame, reference: pd.DataFrame | None, parameters=COMPARED) -> pd.DataFrame:
    """RMSE, bias and correlation of posterior means per parameter and scale (and 'all'),
    against a reference fit's posterior means and, where the estimates carry it, the truth.

    The means compared are mean-field VI's own (``vi_mean`` where a table has it): the seed
    compares objectives of one VI method, and the fits with the GRM's own likelihood (the
    reference, zero-fill) report corrected item means in ``mean`` that the others lack."""
    rows = []
    est = vi_means(estimates[estimates.parameter.isin(parameters)])
    targets = []
    if reference is not None:
        keys = KEYS + (["dimension"] if "dimension" in est else [])  # the mixture GRM's
        ref = vi_means(reference)
        merged = est.merge(ref[keys + ["mean"]].rename(columns={"mean": "ref"}), on=keys, how="left")
        if merged["ref"].isna().any():
            raise ValueError("estimates and reference fit do not cover the same parameters")
        targets.append(("complete_data", merged, "ref"))
    if "true" in est.columns and est["true"].notna().all():
        targets.append(("truth", est, "true"))
    for against, df, col in targets:
        for par, d_par in df.groupby("parameter", sort=False):
            groups = [("all", d_par)] + list(d_par.groupby("scale", sort=True))
            for scale, d in groups:
                rows.append({"parameter": par, "scale": scale, "against": against, **metrics(d["mean"], d[col])})
    return pd.DataFrame(rows)


def vi_means(estimates: pd.DataFrame) -> pd.DataFrame:
    """The table with mean-field VI's means as ``mean`` (its ``vi_mean``, where it has one)."""
    return estimates.assign(mean=estimates["vi_mean"]) if "vi_mean" in estimates else estimates


def summary_row(record: dict, table: pd.DataFrame) -> dict:
    """One fit's headline numbers: convergence, ELBO and the overall RMSE per parameter."""
    row = {
        "condition": record["condition"],
        "objective": record["objective"],
        "n_copies": record.get("n_copies"),
        "rep": record["replication"],
        "converged": records.is_converged(record),
        "status": records.convergence_status(record),
        "steps": record["steps"],
        "elbo": record["elbo"],
    }
    for (against, parameter), r in table[table.scale == "all"].set_index(["against", "parameter"]).iterrows():
        row[f"{parameter}_rmse_vs_{against}"] = r["rmse"]
    return row


def timing_row(record: dict) -> dict:
    return {
        "condition": record["condition"],
        "rep": record["replication"],
        "steps": record["steps"],
        **record["timing"],
        "seconds_per_step": record["timing"]["wall_seconds"] / max(record["steps"], 1),
    }


def aggregate(reference: pd.DataFrame, fits: list[tuple[dict, pd.DataFrame]], imputation: list[dict]) -> dict:
    """Every fit (record, estimates) against the complete-data ``reference`` estimates (and the
    truth): ``errors`` (tidy), ``summary`` (one row per fit), ``aggregate`` (across
    replications), ``imputation`` (hidden-cell scores per replication) and ``timings`` (the only
    run-dependent table)."""
    tables = [error_table(reference, None).assign(condition=REFERENCE, rep=-1)]
    rows, timings = [], []
    for record, estimates in fits:
        table = error_table(estimates, reference)
        tables.append(table.assign(condition=record["condition"], rep=record["replication"]))
        rows.append(summary_row(record, table))
        timings.append(timing_row(record))
    errors = pd.concat(tables, ignore_index=True)
    agg = across_replications([errors.assign(objective=errors["condition"])]).rename(columns={"objective": "condition"})
    scores = pd.DataFrame([{"rep": r["replication"], **r["scores"]} for r in imputation])  # timings stay in the json
    return {
        "errors": errors,
        "summary": pd.DataFrame(rows),
        "aggregate": agg,
        "imputation": scores,
        "timings": pd.DataFrame(timings),
    }


def across_replications(error_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean, sd and count across replications of RMSE, bias and correlation, per objective,
    parameter, scale and reference."""
    df = pd.concat(error_tables, ignore_index=True)
    keys = ["objective", "parameter", "scale", "against"]
    return (
        df.groupby(keys, sort=False)
        .agg(
            rmse_mean=("rmse", "mean"),
            rmse_sd=("rmse", "std"),
            bias_mean=("bias", "mean"),
            corr_mean=("corr", "mean"),
            n_reps=("rmse", "size"),
        )
        .reset_index()
    )


def recovery(estimates: pd.DataFrame, fit: str) -> pd.DataFrame:
    """The reference fit's recovery of the true parameters (empty on real data), its rows
    labelled with the fit's condition."""
    table = recovery_table(estimates) if "true" in estimates else pd.DataFrame(columns=RECOVERY_COLUMNS)
    table.insert(0, "fit", fit)
    return table


def paired_rmse_verdict(
    summary: pd.DataFrame, condition: str, baseline: str, column: str = "discrimination_rmse_vs_complete_data"
):
    """The claim that ``condition`` brings the fit closer to the complete-data one than
    ``baseline`` does, judged on ``column`` (an RMSE against the complete-data fit), paired by
    replication (both fitted to the same mask; ``evaluation.verdicts``)."""
    per_rep = summary.pivot_table(index="rep", columns="condition", values=column)
    if condition not in per_rep or baseline not in per_rep:
        raise ValueError(f"summary has no conditions {condition!r} and {baseline!r} to compare")
    what = column.split("_rmse")[0].replace("_", " ")
    return verdicts.paired_verdict(
        per_rep[condition] - per_rep[baseline],
        direction="lower",
        subject=f"the {what} RMSE of {condition} (against {baseline})",
    )


def jensen_verdict(summary: pd.DataFrame, rao_blackwell: str, naive: str):
    """Seed 000's claim that averaging likelihoods over the imputed copies (``rao_blackwell``
    condition) brings the fit closer to the complete-data one than averaging log-likelihoods
    (``naive``), judged on the discrimination RMSE against the complete-data fit, paired by
    replication (both fitted to the same mask and imputations; ``evaluation.verdicts``)."""
    return paired_rmse_verdict(summary, rao_blackwell, naive)
