"""The vibo study's tables from its fit records and estimates: per simulated design
(``aggregate``: recovery, calibration, missing-response prediction, held-out log-likelihood, the
two missing-data variants side by side, timings) or per real-data design (``aggregate`` with
``observed=True``: no truth, so the methods set against each other, MML-EAP the reference); and
the report's claims (``claim_verdicts``, ``mechanism_table``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.evaluation import verdicts
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.vibo.conditions import METHODS as METHOD_NAMES
from bayesirt.studies.vibo.conditions import VIBO_VARIANTS

KEYS = ["parameter", "item", "person", "category"]
# estimates of each parameter block, with the axes of its rows (a GRM has cuts instead of difficulties)
AXES = {"discrimination": ("item",), "difficulty": ("item",), "cut": ("item", "category"), "ability": ("person",)}


def aggregate(
    fit_records: list[dict], estimates: list[pd.DataFrame], *, observed: bool = False
) -> dict[str, pd.DataFrame]:
    """The tables of one design from all its fits: ``aggregate_simulated`` (against the truth) or,
    for a design of real data (``observed``), ``aggregate_observed`` (the methods against each
    other)."""
    return (aggregate_observed if observed else aggregate_simulated)(fit_records, estimates)


def fit_row(record: dict) -> dict:
    """One row of fits.csv from a fit record."""
    t = record["timing"]
    return {
        "design": record["design"],
        "model": record["model"],
        "missing": record["missing"],
        "method": record["method"],
        "rep": record["replication"],
        "n_persons": record["n_persons"],
        "n_items": record["n_items"],
        "missing_rate": record["missing_rate"],
        "converged": records.is_converged(record),
        "status": records.convergence_status(record),
        "steps": record["steps"],
        **record["evaluation"],
        "wall_seconds": t["wall_seconds"],
        "compile_seconds": t.get("compile_seconds", 0.0),
        "score_new_seconds": t.get("score_new_seconds", np.nan),
    }


METRICS = [
    "ability_rmse",
    "ability_corr",
    "discrimination_rmse",
    "difficulty_rmse",
    "cut_rmse",
    "coverage_50",
    "coverage_90",
    "discrimination_coverage_90",
    "hidden_accuracy",
    "hidden_log_score",
    "heldout_loglik",
    "ability_rmse_to_nuts",
]
TIMES = ["wall_seconds", "score_new_seconds"]  # run-dependent: in timings.csv only


def aggregate_simulated(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one design from its fits: ``fits`` (one row per fit), ``summary`` (mean
    and sd over replications per missingness x method, with the number of replications),
    ``variants`` (the two VIBO missing-data variants side by side), ``timings`` (the only
    run-dependent table)."""
    fits = pd.DataFrame([fit_row(r) for r in fit_records])
    # recovery against the NUTS posterior means of the same data, where NUTS ran
    nuts_means = {
        (r["missing"], r["replication"]): e[e.parameter == "ability"]["mean"].to_numpy()
        for r, e in zip(fit_records, estimates)
        if r["method"] == "nuts"
    }
    to_nuts = []
    for r, e in zip(fit_records, estimates):
        ref = nuts_means.get((r["missing"], r["replication"]))
        m = e[e.parameter == "ability"]["mean"].to_numpy()
        to_nuts.append(float(np.sqrt(np.mean((m - ref) ** 2))) if ref is not None else np.nan)
    fits["ability_rmse_to_nuts"] = to_nuts
    fits = fits.sort_values(["missing", "method", "rep"], kind="stable").reset_index(drop=True)
    summary = _summary(fits, METRICS)
    cols = [
        "ability_rmse",
        "ability_corr",
        "coverage_90",
        "hidden_accuracy",
        "hidden_log_score",
        "heldout_loglik",
        "missing_rate",
    ]
    v = fits[fits.method.isin(list(VIBO_VARIANTS))]
    variants = v.pivot_table(index=["design", "missing", "rep"], columns="method", values=cols).reset_index()
    variants.columns = ["_".join(c for c in col if c) if isinstance(col, tuple) else col for col in variants.columns]
    return {"fits": _stable(fits), "summary": summary, "variants": variants, "timings": _timings(fits)}


def _summary(fits: pd.DataFrame, metrics) -> pd.DataFrame:
    """Mean and sd over replications of ``metrics`` (those present: a GRM design has cuts, a
    binary one difficulties) per design x missingness x method, with the number of replications
    and the share of converged fits."""
    group = fits.groupby(["design", "missing", "method"], sort=True)
    metrics = [m for m in metrics if m in fits]
    summary = group[metrics].mean().add_suffix("_mean").join(group[metrics].std().add_suffix("_sd"))
    summary.insert(0, "replications", group.size())
    summary.insert(1, "converged", group["converged"].mean())
    return summary.reset_index()


def _timings(fits: pd.DataFrame) -> pd.DataFrame:
    return fits[["design", "missing", "method", "rep", "steps", "wall_seconds", "compile_seconds", "score_new_seconds"]]


def _stable(fits: pd.DataFrame) -> pd.DataFrame:
    """fits.csv without the run-dependent times (those are in timings.csv)."""
    return fits.drop(columns=["wall_seconds", "compile_seconds", "score_new_seconds"])


# real data (a design that names a dataset): no truth, so the methods are set against each other
REFERENCE = "mml"
AGREEMENT_PARAMETERS = ("ability", "discrimination", "difficulty", "cut")
AGREEMENT_COLUMNS = ["design", "missing", "rep", "method", "other", "parameter", "n", "corr", "rmsd", "mean_difference"]
OBSERVED_METRICS = ["hidden_accuracy", "hidden_log_score", "heldout_loglik"] + [
    f"{p}_{m}_to_{REFERENCE}" for p in AGREEMENT_PARAMETERS for m in ("corr", "rmsd")
]


def agreement_table(fit_records: list[dict], estimates: list[pd.DataFrame]) -> pd.DataFrame:
    """Every pair of methods fitted to the same data (one design, missingness condition and
    replication), per parameter block (abilities, discriminations, difficulties or cuts): the
    number of values, the Pearson correlation of the two methods' point estimates (posterior
    means; MML's estimates and EAP abilities), their root mean squared difference and the mean
    difference (``method`` minus ``other``). Methods in ``METHOD_NAMES`` order."""
    by_data: dict = {}
    for r, e in zip(fit_records, estimates):
        by_data.setdefault((r["design"], r["missing"], r["replication"]), {})[r["method"]] = e
    rows = []
    for (design, missing, rep), fits in sorted(by_data.items()):
        methods = [m for m in METHOD_NAMES if m in fits]
        for i, a in enumerate(methods):
            for b in methods[i + 1 :]:
                both = fits[a][KEYS + ["mean"]].merge(fits[b][KEYS + ["mean"]], on=KEYS, suffixes=("_a", "_b"))
                for par in AGREEMENT_PARAMETERS:
                    d = both[both.parameter == par]
                    if d.empty:
                        continue
                    x, y = d["mean_a"].to_numpy(float), d["mean_b"].to_numpy(float)
                    varies = len(x) > 1 and x.std() > 0 and y.std() > 0
                    rows.append(
                        {
                            "design": design,
                            "missing": missing,
                            "rep": rep,
                            "method": a,
                            "other": b,
                            "parameter": par,
                            "n": len(x),
                            "corr": float(np.corrcoef(x, y)[0, 1]) if varies else np.nan,
                            "rmsd": float(np.sqrt(np.mean((x - y) ** 2))),
                            "mean_difference": float(np.mean(x - y)),
                        }
                    )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def aggregate_observed(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one real-data design (no truth) from its fits: ``fits`` (one row per fit,
    with each method's agreement with MML-EAP on the same data: ``ability_corr_to_mml``,
    ``cut_rmsd_to_mml``, ...), ``summary`` (mean and sd over replications of the hidden-cell
    accuracy and log score, the held-out log-likelihood and the agreement with MML-EAP, per
    missingness x method), ``agreement`` (every pair of methods, per replication and parameter
    block: ``agreement_table``) and ``timings``. No recovery, calibration or variants table:
    those need a truth."""
    fits = pd.DataFrame([fit_row(r) for r in fit_records])
    agreement = agreement_table(fit_records, estimates)
    to_ref = agreement[(agreement.method == REFERENCE) | (agreement.other == REFERENCE)]
    to_ref = to_ref.assign(method=np.where(to_ref.method == REFERENCE, to_ref.other, to_ref.method))
    for par in AGREEMENT_PARAMETERS:
        d = to_ref[to_ref.parameter == par].set_index(["design", "missing", "rep", "method"])
        if d.empty:
            continue
        index = pd.MultiIndex.from_frame(fits[["design", "missing", "rep", "method"]])
        for stat in ("corr", "rmsd"):
            fits[f"{par}_{stat}_to_{REFERENCE}"] = d[stat].reindex(index).to_numpy()
    fits = fits.sort_values(["missing", "method", "rep"], kind="stable").reset_index(drop=True)
    return {
        "fits": _stable(fits),
        "summary": _summary(fits, OBSERVED_METRICS),
        "agreement": agreement,
        "timings": _timings(fits),
    }


def with_times(summary: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the mean fit and scoring times per condition from ``timings`` (kept out of
    summary.csv, so that every table but timings.csv is the same bit for bit on a rerun)."""
    keys = ["design", "missing", "method"]
    means = timings.groupby(keys, sort=True)[TIMES].mean().add_suffix("_mean").reset_index()
    return summary.merge(means, on=keys, how="left")


def claim_verdicts(fits: pd.DataFrame, timings: pd.DataFrame, vibo_method: str = "vibo_one_prior") -> list[dict]:
    """The report's claims on VIBO, each judged on paired replications (``evaluation.verdicts``;
    a pair is one design, missingness condition and replication: every method fitted to the
    same data). One {"claim", "verdict"} per claim that the fits can judge:

    * fast: NUTS takes at least 50 times VIBO's time (log time ratio above log 50), where NUTS ran;
    * accurate: VIBO's ability RMSE at most 5% above the reference's (NUTS where it ran, else MML-EAP);
    * robust: from the least to the most MCAR missingness, VIBO's ability RMSE grows at most
      0.01 more than MML-EAP's (a pair is one design and replication here);
    * MNAR stress: from R% MCAR to R% MNAR (same rate, non-ignorable), VIBO's ability RMSE grows
      at most 0.01 more than MML-EAP's, for each R at which a design has both;
    * the two missing-data variants: the one-prior variant's 90% ability intervals are closer
      to their nominal coverage than the seed's prior-per-missing variant's (|coverage − 0.90|
      lower), on the conditions with missing responses.

    Fits of real data (no ``ability_rmse``: no truth) count in none of the claims but the
    first, which needs no truth. Each dict also names the fits' ``figure`` the claim is judged
    on and the ``missing`` conditions it uses (None: every condition of the fits), so that the
    reproduction page can say which fits a claim rests on.
    """
    units = ["design", "missing", "rep"]
    out = []
    # real-data designs have no truth (no ability RMSE, no coverage): left out of every claim on accuracy
    fits = fits[fits["ability_rmse"].notna()] if "ability_rmse" in fits else fits.iloc[:0]
    if (timings["method"] == "nuts").any():
        t = timings.assign(log_seconds=np.log(timings["wall_seconds"]))
        d = verdicts.paired_differences(t, "log_seconds", claimed="nuts", baseline=vibo_method, units=units)
        out.append(
            {
                "claim": "VIBO at least 50 times faster than NUTS",
                "figure": "wall_seconds",
                "missing": None,
                "verdict": verdicts.paired_verdict(
                    d - np.log(50.0), direction="higher", subject="log(NUTS time / VIBO time) − log 50"
                ),
            }
        )
    if fits.empty:
        return out
    ref = "nuts" if (fits["method"] == "nuts").any() else "mml"
    piv = fits.pivot_table(index=units, columns="method", values="ability_rmse")
    if {vibo_method, ref} <= set(piv.columns):
        rel = (piv[vibo_method] / piv[ref] - 1.0).dropna()
        out.append(
            {
                "claim": f"VIBO's ability RMSE within 5% of {ref.upper()}'s",
                "figure": "ability_rmse",
                "missing": None,
                "verdict": verdicts.paired_verdict(
                    rel,
                    direction="lower",
                    margin=0.05,
                    subject=f"VIBO's ability RMSE relative to {ref.upper()}'s (ratio − 1)",
                ),
            }
        )
    kinds = {m: parse_missing(m) for m in fits["missing"].unique()}
    mcar = sorted((m for m, (kind, _) in kinds.items() if kind == "mcar"), key=lambda m: kinds[m][1])
    pairs = [(mcar[0], mcar[-1], "")] if len(mcar) > 1 else []
    same_rate = {rate: m for m, (kind, rate) in kinds.items() if kind == "mcar"}
    pairs += [
        (same_rate[rate], m, " under MNAR")
        for m, (kind, rate) in sorted(kinds.items())
        if kind == "mnar" and rate in same_rate
    ]
    for lo, hi, what in pairs:
        growth = _rmse_growth(fits, lo, hi, (vibo_method, "mml"))
        if growth is not None:
            out.append(
                {
                    "claim": f"VIBO no less robust to missing data{what} than MML-EAP ({lo} to {hi})",
                    "figure": "ability_rmse",
                    "missing": [lo, hi],
                    "verdict": verdicts.paired_verdict(
                        growth,
                        direction="lower",
                        margin=0.01,
                        subject=f"the growth of VIBO's ability RMSE from {lo} to {hi} beyond MML-EAP's",
                    ),
                }
            )
    variants = list(VIBO_VARIANTS)
    if "coverage_90" in fits and set(variants) <= set(fits["method"]):
        missing = fits[fits["missing"].map(lambda m: kinds[m][1] > 0)]
        gap = missing.assign(gap=(missing["coverage_90"] - 0.9).abs())
        d = verdicts.paired_differences(gap, "gap", claimed=variants[0], baseline=variants[1], units=units)
        out.append(
            {
                "claim": "One prior expert gives better calibrated ability intervals than a prior expert per "
                "missing response",
                "figure": "coverage_90",
                "missing": sorted(missing["missing"].unique()),
                "verdict": verdicts.paired_verdict(
                    d,
                    direction="lower",
                    subject="|90% coverage − 0.90| of one prior expert minus that of a prior "
                    "expert per missing response",
                ),
            }
        )
    return out


def _rmse_growth(fits: pd.DataFrame, lo: str, hi: str, methods) -> pd.Series | None:
    """Per (design, rep): the growth of the first method's ability RMSE from missingness ``lo``
    to ``hi`` minus the second's; None when either method lacks either condition."""
    p = fits[fits["missing"].isin([lo, hi])].pivot_table(
        index=["design", "rep"], columns=["method", "missing"], values="ability_rmse"
    )
    growth = {m: p[(m, hi)] - p[(m, lo)] for m in methods if (m, hi) in p and (m, lo) in p}
    if len(growth) < 2:
        return None
    return (growth[methods[0]] - growth[methods[1]]).dropna()


def mechanism_table(summary: pd.DataFrame) -> pd.DataFrame:
    """MCAR and MNAR at the same rate side by side: per design, rate and method, the mean
    ability RMSE, 90% coverage and hidden-cell log score under each mechanism and the change
    (MNAR − MCAR). Only rates at which a design has both mechanisms."""
    cols = ["ability_rmse_mean", "coverage_90_mean", "hidden_log_score_mean"]
    kinds = summary["missing"].map(parse_missing)
    s = summary.assign(mechanism=kinds.map(lambda k: k[0]), rate=kinds.map(lambda k: round(100 * k[1], 6)))
    s = s[s["mechanism"].isin(["mcar", "mnar"])]
    wide = s.pivot_table(index=["design", "rate", "method"], columns="mechanism", values=cols)
    if wide.empty or "mnar" not in wide.columns.get_level_values(1) or "mcar" not in wide.columns.get_level_values(1):
        return pd.DataFrame(columns=["design", "rate", "method"])
    out = pd.DataFrame(index=wide.index)
    for c in cols:
        name = c.removesuffix("_mean")
        out[f"{name}_mcar"], out[f"{name}_mnar"] = wide[(c, "mcar")], wide[(c, "mnar")]
        out[f"{name}_change"] = out[f"{name}_mnar"] - out[f"{name}_mcar"]
    both = out["ability_rmse_mcar"].notna() & out["ability_rmse_mnar"].notna()
    return out[both].reset_index()
