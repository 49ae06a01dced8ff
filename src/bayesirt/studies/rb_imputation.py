"""Study ``rb_imputation`` (seed 000): the factorized GRM fitted by ADVI on data with missing
responses, comparing the imputation objectives of ``inference.objectives`` against the
complete-data fit (and the truth on simulated data).

The shape of every study:

    condition_names(study_config)                       -> the fit conditions a config asks for
    fit_reference(rm, ...) / fit_objective(rm_missing, ...) -> records.FitOutput (one fit)
    fit_imputation_model(rm_missing, settings)          -> (StackingModel, checks)
    compare(reference, fits, imputation_records)        -> dict of tidy tables
    figures(tables, reference, first_fits, outputs)     -> PNG files

``run_replication`` chains the same functions in one process (benchmarks, statistical tests):
one replication = complete-data reference fit -> missingness injection -> stacking imputation
model (checked, and scored on the hidden cells) -> one fit per objective -> the same tables.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from bayesirt import io, records
from bayesirt.data import missingness
from bayesirt.evaluation.recovery import metrics
from bayesirt.imputation import stacking
from bayesirt.imputation.checks import validate_imputation_model
from bayesirt.inference import objectives
from bayesirt.inference.training import TrainSettings
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm
from bayesirt.studies import grm_advi
from bayesirt.studies.rb_conditions import condition_names, parse_condition  # noqa: F401  (re-exported)

log = logging.getLogger("bayesirt")

STUDY = "rb_imputation"
OBJECTIVES = objectives.NAMES
COMPARED = ("discrimination", "base_difficulty", "ability")
KEYS = ["parameter", "item", "person", "scale", "category"]
REFERENCE = "reference"  # condition name of the complete-data fit


@dataclass(frozen=True)
class StudyConfig:
    objectives: tuple = OBJECTIVES
    n_copies: int = 3  # M, as in the seed
    n_dimensions: int = 1  # > 1: the mixture GRM of seed section 1.3
    missing_kind: str = "mcar"
    missing_rate: float = 0.15
    settings: TrainSettings = field(default_factory=TrainSettings)
    priors: fgrm.Priors = field(default_factory=fgrm.Priors)
    stacking: stacking.StackingSettings = field(default_factory=stacking.StackingSettings)


# ----------------------------------------------------------------------------- conditions

# ----------------------------------------------------------------------------- fits

def fit_reference(rm: io.ResponseMatrix, *, seed: int, config: StudyConfig, truth=None, fields=None,
                  n_draws: int = 1, posterior_draws: int = 500):
    """The complete-data fit (before injection): the yardstick of every objective."""
    fields = {"study": STUDY, "condition": REFERENCE, "objective": "complete", "replication": None, **(fields or {})}
    return grm_advi.fit(rm, seed=seed, settings=config.settings, priors=config.priors, truth=truth,
                        n_draws=n_draws, posterior_draws=posterior_draws, n_dimensions=config.n_dimensions,
                        fields=fields, label=f"reference {fields.get('dataset', '')}".strip())


def fit_imputation_model(rm_missing: io.ResponseMatrix, settings: stacking.StackingSettings):
    """Fit the stacking imputation model and run the five checks (raises on a failing one)."""
    model = stacking.fit(rm_missing, settings)
    checks = validate_imputation_model(model, [it.name for it in rm_missing.items], rm_missing.n_categories)
    return model, checks


def imputation_scores(model, rm_missing: io.ResponseMatrix, rm_complete: io.ResponseMatrix, hidden) -> dict:
    """Log score and accuracy of the imputation PMFs on the cells hidden by injection."""
    return stacking.imputation_accuracy(model, rm_missing.responses, rm_complete.responses, hidden)


def imputation_extra_data(model, rm_missing: io.ResponseMatrix) -> dict:
    """Imputation PMFs of every missing cell as the fit's ``extra_data`` (the cell layout of
    ``objectives.imputation_data``: a flat cell list shared by all batches, plus per-person
    start and count)."""
    persons, items = np.nonzero(rm_missing.responses < 0)
    pmf = stacking.predict_pmf(model, rm_missing.responses, persons, items)
    return objectives.imputation_data(rm_missing.responses, persons, items, pmf, rm_missing.n_categories)


ELBO_NOTES = {
    "zero_fill": "ELBO of the observed cells only",
    "exact_marginal": "ELBO of the observed cells with missing cells marginalised over the imputation PMFs",
}


def fit_objective(rm_missing: io.ResponseMatrix, model, objective: str, *, seed: int, config: StudyConfig,
                  truth=None, fields=None, posterior_draws: int = 500) -> records.FitOutput:
    """ADVI fit of the factorized GRM on ``rm_missing`` with one imputation objective."""
    if objective not in objectives.NAMES:
        raise ValueError(f"unknown objective {objective!r}; known: {', '.join(objectives.NAMES)}")
    st = grm_advi.structure(rm_missing, config.n_dimensions)
    extra, checks = None, None
    if objective != "zero_fill":
        checks = validate_imputation_model(model, [it.name for it in rm_missing.items], rm_missing.n_categories)
        extra = imputation_extra_data(model, rm_missing)
    n_copies = config.n_copies if objectives.uses_copies(objective) else None
    condition = objective if n_copies is None else f"{objective}_M{n_copies}"
    fields = {"study": STUDY, "condition": condition, "objective": objective, "n_copies": n_copies,
              "missing_cells": int((rm_missing.responses < 0).sum()), **(fields or {})}
    out = grm_advi.fit(
        rm_missing, seed=seed, settings=config.settings, priors=config.priors, truth=truth,
        log_likelihood=model_objective(objective, st, config.n_copies), extra_data=extra,
        posterior_draws=posterior_draws, n_dimensions=config.n_dimensions, fields=fields,
        label=f"{condition} rep{fields.get('replication', 0)}")
    if checks is not None:
        out.record["imputation_checks"] = checks
    # the ELBO of a copies objective is evaluated with its own stochastic likelihood estimate
    out.record["elbo_note"] = ELBO_NOTES.get(objective, "stochastic: ELBO with the objective's M-copy likelihood estimate")
    return out


def model_objective(objective: str, st, n_copies: int):
    """The objective for the study's model: the factorized GRM's own, or with the mixture
    GRM's observed-cell likelihood and cell probabilities plugged in (``objectives.make``)."""
    if isinstance(st, mixture_grm.Structure):
        return objectives.make(
            objective, st, n_copies,
            cell_probs=lambda params, persons, items: mixture_grm.category_probs(params, persons, items, st),
            observed_log_lik=lambda params, batch: mixture_grm.log_likelihood(params, batch["y"], st))
    return objectives.make(objective, st, n_copies)


# ----------------------------------------------------------------------------- tables

def error_table(estimates: pd.DataFrame, reference: pd.DataFrame | None, parameters=COMPARED) -> pd.DataFrame:
    """RMSE, bias and correlation of posterior means per parameter and scale (and 'all'),
    against a reference fit's posterior means and, where the estimates carry it, the truth."""
    rows = []
    est = estimates[estimates.parameter.isin(parameters)]
    targets = []
    if reference is not None:
        keys = KEYS + (["dimension"] if "dimension" in est else [])  # the mixture GRM's
        merged = est.merge(reference[keys + ["mean"]].rename(columns={"mean": "ref"}), on=keys, how="left")
        if merged["ref"].isna().any():
            raise ValueError("estimates and reference fit do not cover the same parameters")
        targets.append(("complete_data", merged, "ref"))
    if "true" in est.columns and est["true"].notna().all():
        targets.append(("truth", est, "true"))
    for against, df, col in targets:
        for par, d_par in df.groupby("parameter", sort=False):
            groups = [("all", d_par)] + list(d_par.groupby("scale", sort=True))
            for scale, d in groups:
                rows.append({"parameter": par, "scale": scale, "against": against,
                             **metrics(d["mean"], d[col])})
    return pd.DataFrame(rows)


def summary_row(record: dict, table: pd.DataFrame) -> dict:
    """One fit's headline numbers: convergence, ELBO and the overall RMSE per parameter."""
    row = {"condition": record["condition"], "objective": record["objective"], "n_copies": record.get("n_copies"),
           "rep": record["replication"], "converged": record["converged"], "steps": record["steps"],
           "elbo": record["elbo"]}
    for (against, parameter), r in table[table.scale == "all"].set_index(["against", "parameter"]).iterrows():
        row[f"{parameter}_rmse_vs_{against}"] = r["rmse"]
    return row


def timing_row(record: dict) -> dict:
    return {"condition": record["condition"], "rep": record["replication"], "steps": record["steps"],
            **record["timing"], "seconds_per_step": record["timing"]["wall_seconds"] / max(record["steps"], 1)}


def compare(reference: pd.DataFrame, fits: list[tuple[dict, pd.DataFrame]], imputation: list[dict]) -> dict:
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
    agg = aggregate([errors.assign(objective=errors["condition"])]).rename(columns={"objective": "condition"})
    scores = pd.DataFrame([{"rep": r["replication"], **r["scores"]} for r in imputation])  # timings stay in the json
    return {"errors": errors, "summary": pd.DataFrame(rows), "aggregate": agg, "imputation": scores,
            "timings": pd.DataFrame(timings)}


def aggregate(error_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean, sd and count across replications of RMSE, bias and correlation, per objective,
    parameter, scale and reference."""
    df = pd.concat(error_tables, ignore_index=True)
    keys = ["objective", "parameter", "scale", "against"]
    return df.groupby(keys, sort=False).agg(
        rmse_mean=("rmse", "mean"), rmse_sd=("rmse", "std"), bias_mean=("bias", "mean"),
        corr_mean=("corr", "mean"), n_reps=("rmse", "size")).reset_index()


def figures(errors: pd.DataFrame, estimates: dict, losses: dict, outputs: dict) -> None:
    """Loss curves, discriminations and abilities by condition, errors by condition.
    ``estimates``/``losses``: condition -> table, the reference and replication 0 of each."""
    from bayesirt import plotting  # here: Matplotlib costs every fitting job a second at import

    plotting.save(plotting.loss_curves(losses), outputs["loss_figure"])
    plotting.save(plotting.estimates_by_condition(estimates, "discrimination"), outputs["discrimination_figure"])
    plotting.save(plotting.abilities_against_reference(estimates), outputs["ability_figure"])
    fits = errors[errors.condition != REFERENCE]
    fig = plotting.errors_by_condition(fits)
    n = int(fits["rep"].nunique()) if "rep" in fits and len(fits) else 0
    fig.suptitle(f"{n} replication{'s' if n != 1 else ''}: one dot each, bars their mean", fontsize=10)
    fig.tight_layout()
    plotting.save(fig, outputs["error_figure"])


# ----------------------------------------------------------------------------- one process

class Replication(NamedTuple):
    reference: records.FitOutput
    fits: dict  # condition -> FitOutput
    imputation: stacking.StackingModel
    imputation_checks: dict
    imputation_scores: dict
    tables: dict  # compare(...)
    hidden: np.ndarray
    seconds: float


def run_replication(rm_complete: io.ResponseMatrix, truth: pd.DataFrame | None, *, mask_seed: int,
                    fit_seed: int, config: StudyConfig = StudyConfig(), rep: int = 0) -> Replication:
    """One replication in one process, through the same functions the workflow's rules call;
    the fits share ``fit_seed`` (common random numbers across objectives)."""
    t0 = time.perf_counter()
    reference = fit_reference(rm_complete, seed=fit_seed, config=config, truth=truth)
    rm_missing, hidden = missingness.inject(rm_complete, kind=config.missing_kind, rate=config.missing_rate,
                                            seed=mask_seed)
    model, checks = fit_imputation_model(rm_missing, config.stacking)
    scores = imputation_scores(model, rm_missing, rm_complete, hidden)
    log.info("rb_imputation rep %d: imputation log score %.3f (marginal %.3f), accuracy %.3f",
             rep, scores["log_score"], scores["marginal_log_score"], scores["accuracy"])
    outs = {}
    for name in config.objectives:
        out = fit_objective(rm_missing, model, name, seed=fit_seed, config=config, truth=truth,
                            fields={"replication": rep})
        outs[out.record["condition"]] = out
    tables = compare(reference.estimates, [(o.record, o.estimates) for o in outs.values()],
                     [{"replication": rep, "scores": scores}])
    return Replication(reference, outs, model, checks, scores, tables, hidden, time.perf_counter() - t0)


def config_record(config: StudyConfig) -> dict:
    return {"objectives": list(config.objectives), "n_copies": config.n_copies, "n_dimensions": config.n_dimensions,
            "missing_kind": config.missing_kind, "missing_rate": config.missing_rate,
            "settings": asdict(config.settings), "priors": asdict(config.priors),
            "stacking": asdict(config.stacking)}


def jensen_verdict(summary: pd.DataFrame, rao_blackwell: str, naive: str):
    """Seed 000's claim that averaging likelihoods over the imputed copies (``rao_blackwell``
    condition) brings the fit closer to the complete-data one than averaging log-likelihoods
    (``naive``), judged on the discrimination RMSE against the complete-data fit, paired by
    replication (both fitted to the same mask and imputations; ``evaluation.verdicts``)."""
    from bayesirt.evaluation import verdicts

    per_rep = summary.pivot_table(index="rep", columns="condition", values="discrimination_rmse_vs_complete_data")
    if rao_blackwell not in per_rep or naive not in per_rep:
        raise ValueError(f"summary has no conditions {rao_blackwell!r} and {naive!r} to compare")
    return verdicts.paired_verdict(per_rep[rao_blackwell] - per_rep[naive], direction="lower",
                                   subject=f"the discrimination RMSE of {rao_blackwell} (against {naive})")
