"""Study ``rb_imputation`` (seed 000): factorized GRM fitted by ADVI on data with missing
responses, comparing the imputation objectives of ``inference.objectives`` against the
complete-data fit (and the truth on simulated data).

One replication = complete-data reference fit -> missingness injection -> stacking imputation
model (checked, and scored on the hidden cells) -> one fit per objective -> error tables.
Each step is its own function so a workflow rule can call exactly one of them:

    fit_reference(rm, ...)                               -> FitOutput
    fit_imputation_model(rm_missing, ...)                -> StackingModel (validated)
    imputation_scores(model, rm_missing, rm, hidden)     -> dict (log score, accuracy)
    fit_objective(rm_missing, model, objective, ...)     -> FitOutput
    error_table(fit_estimates, reference_estimates)      -> tidy DataFrame
    run_replication(rm, truth, ...)                      -> Replication (all of the above)
    aggregate(error_tables)                              -> summary across replications
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

log = logging.getLogger("bayesirt")

OBJECTIVES = ("zero_fill", "naive_average", "rao_blackwell", "rao_blackwell_batch", "exact_marginal")
COMPARED = ("discrimination", "base_difficulty", "ability")
KEYS = ["parameter", "item", "person", "scale", "category"]


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


class Replication(NamedTuple):
    reference: records.FitOutput
    fits: dict  # objective -> FitOutput
    imputation: stacking.StackingModel
    imputation_checks: dict
    imputation_scores: dict
    errors: pd.DataFrame  # tidy: objective, parameter, scale, against, rmse, bias, corr, n
    summary: pd.DataFrame  # one row per objective: headline numbers
    hidden: np.ndarray


def fit_reference(rm: io.ResponseMatrix, *, seed: int, config: StudyConfig, truth=None, meta=None):
    """The complete-data fit (before injection): the yardstick of every objective."""
    return records.fit_factorized_grm(rm, seed=seed, settings=config.settings, priors=config.priors,
                                   truth=truth, n_dimensions=config.n_dimensions, meta={"study": "rb_imputation", "objective": "complete_data",
                                                      "label": "reference", **(meta or {})})


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


def fit_objective(rm_missing: io.ResponseMatrix, model, objective: str, *, seed: int, config: StudyConfig,
                  truth=None, meta=None, posterior_draws: int = 500) -> records.FitOutput:
    """ADVI fit of the factorized GRM on ``rm_missing`` with one imputation objective."""
    if objective not in objectives.NAMES:
        raise ValueError(f"unknown objective {objective!r}; known: {', '.join(objectives.NAMES)}")
    st = records.structure(rm_missing, config.n_dimensions)
    extra, checks = None, None
    if objective != "zero_fill":
        checks = validate_imputation_model(model, [it.name for it in rm_missing.items], rm_missing.n_categories)
        extra = imputation_extra_data(model, rm_missing)
    n_copies = config.n_copies if objectives.uses_copies(objective) else None
    out = records.fit_factorized_grm(
        rm_missing, seed=seed, settings=config.settings, priors=config.priors, truth=truth,
        log_likelihood=model_objective(objective, st, config.n_copies), extra_data=extra,
        posterior_draws=posterior_draws, n_dimensions=config.n_dimensions,
        meta={"study": "rb_imputation", "objective": objective, "n_copies": n_copies,
              "label": objective if n_copies is None else f"{objective}(M={n_copies})",
              "missing_cells": int((rm_missing.responses < 0).sum()), **(meta or {})})
    if checks is not None:
        out.record["imputation_checks"] = checks
    # the ELBO of a copies objective is evaluated with its own stochastic likelihood estimate
    out.record["elbo_note"] = {
        "zero_fill": "ELBO of the observed cells only",
        "exact_marginal": "ELBO of the observed cells with missing cells marginalised over the imputation PMFs",
    }.get(objective, "stochastic: ELBO with the objective's M-copy likelihood estimate")
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


def run_replication(rm_complete: io.ResponseMatrix, truth: pd.DataFrame | None, *, mask_seed: int,
                    fit_seed: int, config: StudyConfig = StudyConfig(), rep: int = 0) -> Replication:
    """One replication of the study (see module docstring); fits share ``fit_seed``."""
    t0 = time.perf_counter()
    reference = fit_reference(rm_complete, seed=fit_seed, config=config, truth=truth, meta={"rep": rep})
    rm_missing, hidden = missingness.inject(rm_complete, kind=config.missing_kind, rate=config.missing_rate,
                                            seed=mask_seed)
    model, checks = fit_imputation_model(rm_missing, config.stacking)
    scores = imputation_scores(model, rm_missing, rm_complete, hidden)
    log.info("rb_imputation rep %d: imputation log score %.3f (marginal %.3f), accuracy %.3f",
             rep, scores["log_score"], scores["marginal_log_score"], scores["accuracy"])
    outs, tables, summary = {}, [], []
    ref_tab = error_table(reference.estimates, None)
    tables.append(ref_tab.assign(objective="complete_data"))
    summary.append(summary_row("complete_data", reference, ref_tab))
    for name in config.objectives:
        out = fit_objective(rm_missing, model, name, seed=fit_seed, config=config, truth=truth, meta={"rep": rep})
        outs[name] = out
        tab = error_table(out.estimates, reference.estimates)
        tables.append(tab.assign(objective=name))
        summary.append(summary_row(name, out, tab))
    errors = pd.concat(tables, ignore_index=True).assign(rep=rep, mask_seed=mask_seed, fit_seed=fit_seed)
    summary = pd.DataFrame(summary).assign(rep=rep, seconds_total=time.perf_counter() - t0)
    return Replication(reference, outs, model, checks, scores, errors, summary, hidden)


def summary_row(name: str, out: records.FitOutput, tab: pd.DataFrame) -> dict:
    rec = out.record
    row = {"objective": name, "n_copies": rec.get("n_copies"), "converged": rec["converged"],
           "steps": rec["steps"], "elbo": rec["elbo"], "final_loss": rec["final_loss"],
           "wall_seconds": rec["timing"]["wall_seconds"],
           "seconds_per_step": rec["timing"]["wall_seconds"] / max(rec["steps"], 1)}
    for against in ("complete_data", "truth"):
        for par in COMPARED:
            d = tab[(tab.parameter == par) & (tab.scale == "all") & (tab.against == against)]
            if len(d):
                row[f"{par}_rmse_vs_{against}"] = float(d["rmse"].iloc[0])
                row[f"{par}_corr_vs_{against}"] = float(d["corr"].iloc[0])
    return row


def aggregate(error_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean, sd and count across replications of RMSE, bias and correlation, per objective,
    parameter, scale and reference."""
    df = pd.concat(error_tables, ignore_index=True)
    keys = ["objective", "parameter", "scale", "against"]
    out = df.groupby(keys, sort=False).agg(
        rmse_mean=("rmse", "mean"), rmse_sd=("rmse", "std"), bias_mean=("bias", "mean"),
        corr_mean=("corr", "mean"), n_reps=("rmse", "size")).reset_index()
    return out


def config_record(config: StudyConfig) -> dict:
    return {"objectives": list(config.objectives), "n_copies": config.n_copies, "n_dimensions": config.n_dimensions,
            "missing_kind": config.missing_kind, "missing_rate": config.missing_rate,
            "settings": asdict(config.settings), "priors": asdict(config.priors),
            "stacking": asdict(config.stacking)}


def write_imputation(model, checks: dict, scores: dict | None, folder) -> None:
    """Imputation-model outputs in ``folder``: ``model.npz`` (``stacking.load`` reads it back),
    ``submodels.csv`` (one row per sub-model: weight, elpd_loo, k-hats, convergence) and,
    last, ``imputation.json`` (sizes, timings, the five checks and the hidden-cell scores)."""
    from pathlib import Path

    folder = Path(folder)
    stacking.save(model, folder / "model.npz")
    io.write_table(stacking.summary_table(model), folder / "submodels.csv")
    io.write_json({"study": "rb_imputation", "info": model.info, "settings": model.settings,
                   "checks": checks, "scores_hidden_cells": scores, "versions": io.library_versions()},
                  folder / "imputation.json")


def config_from_dict(d: dict, where: str = "config key 'rb_imputation'") -> StudyConfig:
    """A ``StudyConfig`` from a plain mapping (e.g. the workflow config); unknown keys, unknown
    objectives and bad values raise one-line errors naming the key."""
    import dataclasses

    d = dict(d or {})
    nested = {"settings": TrainSettings, "priors": fgrm.Priors, "stacking": stacking.StackingSettings}
    top = {f.name for f in dataclasses.fields(StudyConfig)}
    unknown = sorted(set(d) - top)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(top)}")
    kwargs = {}
    for name, cls in nested.items():
        if name in d:
            sub = d.pop(name) or {}
            allowed = {f.name for f in dataclasses.fields(cls)}
            bad = sorted(set(sub) - allowed)
            if bad:
                raise ValueError(f"{where}.{name}: unknown key(s) {bad}; expected some of {sorted(allowed)}")
            kwargs[name] = cls(**sub)
    if "objectives" in d:
        objs = tuple(d.pop("objectives"))
        bad = [o for o in objs if o not in objectives.NAMES]
        if bad or not objs:
            raise ValueError(f"{where}.objectives: unknown objective(s) {bad}; expected some of {list(objectives.NAMES)}")
        kwargs["objectives"] = objs
    if "n_copies" in d:
        m = d.pop("n_copies")
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"{where}.n_copies: expected a positive integer, got {m!r}")
        kwargs["n_copies"] = m
    if "n_dimensions" in d:
        m = d.pop("n_dimensions")
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"{where}.n_dimensions: expected a positive integer, got {m!r}")
        kwargs["n_dimensions"] = m
    if "missing_rate" in d:
        r = d.pop("missing_rate")
        if not isinstance(r, (int, float)) or not 0.0 <= r < 1.0:
            raise ValueError(f"{where}.missing_rate: expected a number in [0, 1), got {r!r}")
        kwargs["missing_rate"] = float(r)
    kwargs.update(d)  # missing_kind: checked by missingness.inject
    return StudyConfig(**kwargs)
