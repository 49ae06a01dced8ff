"""The fits of study ``rb_imputation``: the factorized GRM (or, with ``n_dimensions`` > 1, the
mixture GRM) by mean-field ADVI (``studies.grm_advi``, around ``inference.variational.grm_advi``), on the
complete data (``complete``, the reference) or with one imputation objective of
``inference.variational.objectives`` on a replication's masked responses.

``METHODS`` maps each method to its function, ``fit`` looks one up; ``fit_block`` fits one
objective on a block of replications together (``inference.execution.bulk``: the workflow's jobs), each
as the single fit would be up to float32 rounding; ``run_replication`` chains
one replication in one process (benchmarks, statistical tests) through the same functions the
workflow's jobs call: reference fit -> missingness injection -> imputation model (checked and
scored on the hidden cells) -> one fit per objective -> the study's tables.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.imputation import stacking
from bayesirt.imputation.checks import validate_imputation_model
from bayesirt.inference.execution import bulk
from bayesirt.inference.execution.training import TrainSettings, keep_last_good, train_problem
from bayesirt.inference.variational import objectives
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm
from bayesirt.studies import grm_advi
from bayesirt.studies.base import MethodResult
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.rb_imputation import data as study_data
from bayesirt.studies.rb_imputation import tables
from bayesirt.studies.rb_imputation.conditions import (
    COMPLETE,
    OBJECTIVES,
    REFERENCE,
    STUDY,
    Condition,
    uses_copies,
)
from bayesirt.studies.rb_imputation.settings import Settings

log = logging.getLogger("bayesirt")


# The methods read the study's one settings type (``settings.Settings``, built once from the
# validated config, where the defaults live); these turn its plain values into the library's
# settings objects.
def train_settings(settings: Settings) -> TrainSettings:
    """Every fit's training (the config's ``training`` but ``n_draws``, the reference fit's)."""
    return TrainSettings(**{k: v for k, v in settings.training.items() if k != "n_draws"})


def item_priors(settings: Settings) -> fgrm.Priors:
    return fgrm.Priors(**settings.priors)


def reference(data: study_data.Data, *, seed: int, settings: Settings, fields: dict | None = None) -> MethodResult:
    """The complete-data fit (before injection): the yardstick of every objective; it draws the
    config's ``training.n_draws`` parameter values per step (the objectives draw one)."""
    fields = {"study": STUDY, "condition": REFERENCE, "objective": COMPLETE, "replication": None, **(fields or {})}
    return grm_advi.fit(
        data.responses,
        seed=seed,
        settings=train_settings(settings),
        priors=item_priors(settings),
        truth=data.truth,
        n_draws=settings.training["n_draws"],
        posterior_draws=settings.posterior_draws,
        n_dimensions=settings.n_dimensions,
        fields=fields,
        label=f"reference {fields.get('dataset', '')}".strip(),
    )


ELBO_NOTES = {
    "zero_fill": "ELBO of the observed cells only",
    "exact_marginal": "ELBO of the observed cells with missing cells marginalised over the imputation PMFs",
}


def objective_fit(
    name: str,
    data: study_data.Data,
    *,
    seed: int,
    settings: Settings,
    n_copies: int | None = None,
    fields: dict | None = None,
) -> tuple[grm_advi.Fit, dict | None]:
    """One objective's fit, with M = ``n_copies`` imputed copies where it draws them, on a
    replication's masked responses (``studies.grm_advi.Fit``), and the imputation model's checks
    (None for ``zero_fill``, which does not use it)."""
    rm_missing, model = data.responses, data.imputation
    st = grm_advi.structure(rm_missing, settings.n_dimensions)
    extra, checks = None, None
    if name != "zero_fill":
        checks = validate_imputation_model(model, [it.name for it in rm_missing.items], rm_missing.n_categories)
        extra = imputation_extra_data(model, rm_missing)
    if uses_copies(name) and not n_copies:
        raise ValueError(f"objective {name!r} draws imputed copies: give their number M (n_copies)")
    n_copies = n_copies if uses_copies(name) else None
    condition = name if n_copies is None else f"{name}_M{n_copies}"
    fields = {
        "study": STUDY,
        "condition": condition,
        "objective": name,
        "n_copies": n_copies,
        "missing_cells": int((rm_missing.responses < 0).sum()),
        **(fields or {}),
    }
    spec = grm_advi.Fit(
        rm_missing,
        seed,
        settings=train_settings(settings),
        priors=item_priors(settings),
        posterior_draws=settings.posterior_draws,
        truth=data.truth,
        log_likelihood=model_objective(name, st, n_copies or 1),
        extra_data=extra,
        fields=fields,
        n_dimensions=settings.n_dimensions,
        label=f"{condition} rep{fields.get('replication', 0)}",
    )
    return spec, checks


def noted(name: str, out: MethodResult, checks: dict | None) -> MethodResult:
    """An objective's result with the imputation model's checks and what its ELBO is."""
    if checks is not None:
        out.record["imputation_checks"] = checks
    # the ELBO of a copies objective is evaluated with its own stochastic likelihood estimate
    out.record["elbo_note"] = ELBO_NOTES.get(name, "stochastic: ELBO with the objective's M-copy likelihood estimate")
    return out


def objective(name: str, data: study_data.Data, **fit_args) -> MethodResult:
    """ADVI fit on the masked responses with one imputation objective (the imputation PMFs of
    ``data.imputation`` unless ``zero_fill``); ``fit_args``: the keywords of :func:`objective_fit`
    (``seed``, ``settings``, ``n_copies``, ``fields``)."""
    spec, checks = objective_fit(name, data, **fit_args)
    fitted = grm_advi.problem(spec)
    return noted(name, grm_advi.result(spec, fitted, keep_last_good(train_problem, fitted)), checks)


@dataclass(frozen=True)
class Replication:
    """One replication of a condition in a block: its data (masked responses, truth, imputation
    model), its condition (``conditions.Condition``: data set, objective with its M, missingness,
    replication) and its seed."""

    data: study_data.Data
    cond: Condition
    seed: int

    @property
    def fields(self) -> dict:
        """What the fit's record says of the replication."""
        return {"dataset": self.cond.dataset, "missing": self.cond.missing, "replication": self.cond.rep}


BLOCK_KEY = f"studies.{STUDY}.block_size"


def fit_block(reps: list[Replication], settings: Settings) -> list[MethodResult]:
    """One condition's objective (with its M) on the replications of a block, fitted together as
    one program (``inference.execution.bulk``; the masks' missing cells padded to one layout,
    ``objectives.block_data``), then each evaluated and recorded as :func:`objective` does a
    single fit. Each record's ``block`` gives the block's size and the fit's position in it."""
    names = {(r.cond.dataset, r.cond.missing, r.cond.condition) for r in reps}
    if len(names) != 1:
        raise ValueError(f"a block fits one condition, not {sorted(names)}")
    name, n_copies = reps[0].cond.method, reps[0].cond.n_copies
    if name not in OBJECTIVES:
        raise ValueError(f"a block fits an imputation objective ({', '.join(OBJECTIVES)}), not {name!r}")
    specs = [
        objective_fit(name, r.data, seed=r.seed, settings=settings, n_copies=n_copies, fields=r.fields) for r in reps
    ]
    first = jax.tree.flatten(specs[0][0].structure())
    for spec, _ in specs[1:]:
        tree = jax.tree.flatten(spec.structure())
        if tree[1] != first[1] or not all(np.array_equal(a, b) for a, b in zip(tree[0], first[0], strict=True)):
            raise ValueError(
                f"fits of one block need one model structure: {spec.label} differs from {specs[0][0].label}"
            )
    fitted = [grm_advi.problem(spec) for spec, _ in specs]
    padded = objectives.block_data([p.data for p in fitted])
    block = [replace(p, data=d) for p, d in zip(fitted, padded, strict=True)]
    reps_of = [r.cond.rep for r in reps]
    label = f"{specs[0][0].fields['condition']} reps {reps_of[0]}-{reps_of[-1]}"
    results = bulk.train_block(block, label=label, setting=BLOCK_KEY)
    # evaluated on the block's data (one shape: the evaluation's programs are compiled once)
    evaluate = grm_advi.evaluator(specs[0][0], block[0].n_persons)
    return [
        noted(name, grm_advi.result(spec, p, res, evaluate), checks)
        for (spec, checks), p, res in zip(specs, block, results, strict=True)
    ]


METHODS = {COMPLETE: reference, **{name: partial(objective, name) for name in OBJECTIVES}}


def fit(method: str, data: study_data.Data, **fit_args) -> MethodResult:
    """One fit: ``complete`` (the reference, :func:`reference`'s keywords) or an imputation
    objective (``METHODS``; the keywords of :func:`objective_fit`, M = ``n_copies`` where it
    draws copies)."""
    if method not in METHODS:
        raise ValueError(f"unknown objective {method!r}; known: {', '.join(METHODS)}")
    return METHODS[method](data, **fit_args)


def imputation_extra_data(model, rm_missing: io.ResponseMatrix) -> dict:
    """Imputation PMFs of every missing cell as the fit's ``extra_data`` (the cell layout of
    ``objectives.imputation_data``: a flat cell list shared by all batches, plus per-person
    start and count)."""
    persons, items = np.nonzero(rm_missing.responses < 0)
    pmf = stacking.predict_pmf(model, rm_missing.responses, persons, items)
    return objectives.imputation_data(rm_missing.responses, persons, items, pmf, rm_missing.n_categories)


def model_objective(objective: str, st, n_copies: int):
    """The objective for the study's model: the factorized GRM's own, or with the mixture
    GRM's observed-cell likelihood and cell probabilities plugged in (``objectives.make``)."""
    if isinstance(st, mixture_grm.Structure):
        return objectives.make(
            objective,
            st,
            n_copies,
            cell_probs=lambda params, persons, items: mixture_grm.category_probs(params, persons, items, st),
            observed_log_lik=lambda params, batch: mixture_grm.log_likelihood(params, batch["y"], st),
        )
    return objectives.make(objective, st, n_copies)


# ----------------------------------------------------------------------------- one process


class ReplicationRun(NamedTuple):
    """One replication chained in one process (``run_replication``)."""

    reference: MethodResult
    fits: dict  # condition -> MethodResult
    imputation: stacking.StackingModel
    imputation_checks: dict
    imputation_scores: dict
    tables: dict  # tables.aggregate(...)
    hidden: np.ndarray
    seconds: float


def run_replication(
    rm_complete: io.ResponseMatrix,
    truth: pd.DataFrame | None,
    *,
    mask_seed: int,
    fit_seed: int,
    settings: Settings,
    rep: int = 0,
) -> ReplicationRun:
    """One replication in one process, through the same functions the workflow's rules call:
    the first of ``settings.missing``, every objective of ``settings.objectives`` (each copies
    objective at every M of ``settings.n_copies``); the fits share ``fit_seed`` (common random
    numbers across objectives)."""
    t0 = time.perf_counter()
    ref = fit(COMPLETE, study_data.Data(rm_complete, truth), seed=fit_seed, settings=settings)
    kind, rate = parse_missing(settings.missing[0])
    rm_missing, hidden = study_data.mask(rm_complete, kind, rate, mask_seed)
    model, checks = study_data.fit_imputation_model(rm_missing, stacking.StackingSettings(**settings.stacking))
    scores = study_data.imputation_scores(model, rm_missing, rm_complete, hidden)
    log.info(
        "rb_imputation rep %d: imputation log score %.3f (marginal %.3f), accuracy %.3f",
        rep,
        scores["log_score"],
        scores["marginal_log_score"],
        scores["accuracy"],
    )
    outs = {}
    data = study_data.Data(rm_missing, truth, model)
    for name in settings.objectives:
        for m in settings.n_copies if uses_copies(name) else (None,):
            out = fit(name, data, seed=fit_seed, settings=settings, n_copies=m, fields={"replication": rep})
            outs[out.record["condition"]] = out
    tabs = tables.aggregate(
        ref.estimates, [(o.record, o.estimates) for o in outs.values()], [{"replication": rep, "scores": scores}]
    )
    return ReplicationRun(ref, outs, model, checks, scores, tabs, hidden, time.perf_counter() - t0)


def config_record(settings: Settings) -> dict:
    """What ``run_replication`` ran with, for a benchmark's result."""
    return {
        "objectives": list(settings.objectives),
        "n_copies": list(settings.n_copies),
        "n_dimensions": settings.n_dimensions,
        "missing": list(settings.missing),
        "settings": asdict(train_settings(settings)),
        "n_draws": settings.training["n_draws"],
        "priors": asdict(item_priors(settings)),
        "stacking": asdict(stacking.StackingSettings(**settings.stacking)),
    }
