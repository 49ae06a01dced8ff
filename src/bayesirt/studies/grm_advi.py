"""The factorized GRM of seed 000 (or its discrimination-weighted mixture extension, section
1.3) fitted by mean-field ADVI, for a study: a response matrix in, a ``MethodResult`` (tables,
record, losses, draws) out.

The fit itself is ``inference.variational.grm_advi.fit`` on arrays; this wrapper builds the structure
from the response matrix, labels the estimates with its items and scales, attaches the truth
and writes the record. Used by the rb_imputation study for every fit (the complete-data
reference and each imputation objective, which replaces the likelihood).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import jax
import numpy as np
import pandas as pd

from bayesirt import io, records, tables
from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, keep_last_good, train_problem
from bayesirt.inference.marginal import grm_laplace
from bayesirt.inference.variational import grm_advi, psis
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm
from bayesirt.studies.base import MethodResult

log = logging.getLogger("bayesirt")

ITEM_PARAMETERS = ("discrimination", "base_difficulty", "increments")


def structure(rm: io.ResponseMatrix, n_dimensions: int = 1):
    """The factorized GRM's structure, or the D-dimensional mixture's when ``n_dimensions`` > 1."""
    return fgrm.structure_of(rm) if n_dimensions == 1 else mixture_grm.structure_of(rm, n_dimensions)


@dataclass(frozen=True)
class Fit:
    """One fit's arguments (those of :func:`fit`): the response matrix, seed, settings, the
    truth, a replaced likelihood with its data, the record's ``fields`` and the label."""

    rm: io.ResponseMatrix
    seed: int
    settings: TrainSettings = TrainSettings()
    priors: fgrm.Priors = fgrm.Priors()
    n_draws: int = 1
    posterior_draws: int = 500
    truth: pd.DataFrame | None = None
    log_likelihood: object = None
    extra_data: dict | None = None
    fields: dict | None = None
    n_dimensions: int = 1
    label: str = "factorized_grm"

    def structure(self):
        return structure(self.rm, self.n_dimensions)

    def key(self):
        return jax.random.key(self.seed)

    def advi_settings(self) -> grm_advi.GRMADVISettings:
        return grm_advi.GRMADVISettings(
            priors=self.priors, n_draws=self.n_draws, posterior_draws=self.posterior_draws, train=self.settings
        )


def problem(spec: Fit) -> Problem:
    """The fit for the training driver (``inference.variational.grm_advi.problem``); one of a block of fits
    (``inference.execution.bulk``) when their structures, likelihoods and settings agree."""
    return grm_advi.problem(
        spec.key(),
        spec.rm.responses,
        spec.structure(),
        spec.advi_settings(),
        log_likelihood=spec.log_likelihood,
        extra_data=spec.extra_data,
        label=spec.label,
    )


def fit(
    rm: io.ResponseMatrix,
    *,
    seed: int,
    settings: TrainSettings = TrainSettings(),
    priors: fgrm.Priors = fgrm.Priors(),
    n_draws: int = 1,
    posterior_draws: int = 500,
    truth: pd.DataFrame | None = None,
    log_likelihood=None,
    extra_data: dict | None = None,
    fields: dict | None = None,
    n_dimensions: int = 1,
    label: str = "factorized_grm",
) -> MethodResult:
    """Mean-field ADVI fit (``inference.variational.grm_advi.fit`` with ``jax.random.key(seed)``).
    ``fields`` go into the record (study, data set, condition ...); a fit whose loss becomes
    non-finite keeps its last good state and its record says so."""
    spec = Fit(
        rm,
        seed,
        settings,
        priors,
        n_draws,
        posterior_draws,
        truth,
        log_likelihood,
        extra_data,
        fields,
        n_dimensions,
        label,
    )
    fitted = problem(spec)
    return result(spec, fitted, keep_last_good(train_problem, fitted))


def evaluator(spec: Fit, n_persons: int):
    """``inference.variational.grm_advi.evaluator`` of ``spec``'s model: its programs serve every fit of a
    block (one model, data of one shape)."""
    return grm_advi.evaluator(spec.structure(), spec.advi_settings(), n_persons, spec.log_likelihood)


def result(spec: Fit, fitted: Problem, res: FitResult, evaluate=None) -> MethodResult:
    """The fit's record, tables and draws from its training result ``res`` (of ``fitted``,
    :func:`problem` of ``spec``, fitted alone or in a block); ``evaluate``: the
    :func:`evaluator` to use (by default one of its own)."""
    rm, n_dimensions, truth = spec.rm, spec.n_dimensions, spec.truth
    evaluate = evaluate or evaluator(spec, fitted.n_persons)
    out = evaluate(spec.key(), fitted.data, res)
    training, samples = out.training, out.draws
    table = tables.factorized_grm_table if n_dimensions == 1 else tables.mixture_grm_table
    estimates = table({k: v.mean(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "mean")
    estimates["sd"] = table({k: v.std(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "sd")["sd"]
    # mean-field VI's own values stay beside the corrected ones (the study compares VI fits)
    estimates["vi_mean"], estimates["vi_sd"] = estimates["mean"], estimates["sd"]
    uncertainty, samples = corrected_items(spec, samples)
    if uncertainty["method"] == CORRECTED:
        estimates = table({k: v.mean(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "mean").assign(
            sd=table({k: v.std(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "sd")["sd"],
            vi_mean=estimates["vi_mean"],
            vi_sd=estimates["vi_sd"],
        )
    truth_note = None
    if truth is not None and ("dimension" in estimates) != ("dimension" in truth):
        # e.g. a D-dimensional mixture fitted to data simulated from the one-dimensional model:
        # no parameter of one has a counterpart in the other
        truth_note = "not attached: the data were simulated from a model with other parameters"
        log.warning("true parameters %s", truth_note)
    elif truth is not None:
        keys = ["parameter", "item", "person", "scale", "category"] + (
            ["dimension"] if "dimension" in estimates else []
        )
        estimates = tables.attach_truth(estimates, truth, keys)

    record = records.fit_record(
        training,
        {
            "model": "factorized_grm" if n_dimensions == 1 else "mixture_grm",
            "method": "advi",
            "n_dimensions": n_dimensions,
            **({"truth": truth_note} if truth_note else {}),
            **(spec.fields or {}),
            "seed": spec.seed,
            "n_persons": rm.n_persons,
            "n_items": rm.n_items,
            "n_scales": len(rm.scales),
            "scales": rm.scales,
            "elbo": out.elbo,
            "item_uncertainty": uncertainty,
            "psis": psis.record(out.log_ratios, spec.label, KHAT_CONSEQUENCE[uncertainty["method"]]),
            "settings": asdict(spec.settings),
            "priors": asdict(spec.priors),
            "n_draws": spec.n_draws,
            "posterior_draws": spec.posterior_draws,
        },
        window=spec.settings.window,
    )
    return MethodResult(record, estimates, records.loss_table(training.losses), item_inference_data(samples, rm))


CORRECTED = "laplace_at_marginal_mode"
UNCORRECTED = "mean_field_vi"
KHAT_CONSEQUENCE = {
    CORRECTED: "mean-field VI's own sds (vi_sd) are too narrow; the items' sd is the Laplace correction's",
    UNCORRECTED: "do not read its sds as calibrated",
}


def corrected_items(spec: Fit, samples: dict) -> tuple[dict, dict]:
    """Item-parameter draws whose sds can be read as standard errors, and the record's
    ``item_uncertainty`` entry saying which ones the table reports.

    Mean-field VI's item sds ignore the coupling of items and abilities and come out too narrow
    (90% intervals covered 9% of RWA-size discriminations), and its item means are biased.
    Where the fit's likelihood is the GRM's own (not an imputation objective's replacement)
    and the model has one dimension, the item draws are replaced by those of a Laplace
    approximation of the items' marginal posterior at its mode (``inference.marginal.grm_laplace``,
    Newton's method from VI's means); abilities keep VI's draws. Otherwise, or when the
    correction fails, VI's draws stay and the entry says why.

    Parameters
    ----------
    spec : Fit
        The fit.
    samples : dict
        VI's draws of every parameter.

    Returns
    -------
    tuple
        ``(entry, samples)``: the record entry (``method``: ``CORRECTED`` or ``UNCORRECTED``,
        with the reason, Newton's steps and the curvature's condition number) and the draws.
    """
    if spec.n_dimensions != 1:
        return {"method": UNCORRECTED, "reason": "mixture GRM: no correction is implemented"}, samples
    if spec.log_likelihood is not None:
        reason = "the likelihood is an imputation objective, not the observed-data marginal the correction uses"
        return {"method": UNCORRECTED, "reason": reason}, samples
    means = {k: samples[k].mean(0) for k in ITEM_PARAMETERS}
    try:
        post = grm_laplace.item_posterior(
            spec.rm.responses, spec.structure(), means, spec.priors, n_draws=spec.posterior_draws, seed=spec.seed
        )
    except ValueError as err:
        log.warning("%s: item sds left as mean-field VI's (too narrow): %s", spec.label, err)
        return {"method": UNCORRECTED, "reason": str(err)}, samples
    entry = {
        "method": CORRECTED,
        "newton_steps": post.newton_steps,
        "converged": post.converged,
        "condition_number": post.condition_number,
    }
    if not post.converged:
        log.warning("%s: Newton's method did not reach the items' marginal mode; sds are at its last point", spec.label)
    dtype = samples["discrimination"].dtype
    draws = {
        "discrimination": post.discrimination,
        "base_difficulty": post.base_difficulty,
        "increments": post.increments,
    }
    return entry, {**samples, **{k: v.astype(dtype) for k, v in draws.items()}}


def item_inference_data(samples: dict, rm: io.ResponseMatrix):
    """ArviZ InferenceData with the item parameters' draws (one chain of independent draws)."""
    import arviz as az  # here, not at the top: importing ArviZ costs seconds in every workflow job

    names = [it.name for it in rm.items]
    posterior = {k: samples[k][None] for k in ITEM_PARAMETERS}
    coords = {"item": names, "increment": np.arange(1, samples["increments"].shape[-1] + 1)}
    dims = {"discrimination": ["item"], "base_difficulty": ["item"], "increments": ["item", "increment"]}
    if samples["discrimination"].ndim == 3:  # the mixture model: one discrimination per dimension
        coords["dimension"] = np.arange(samples["discrimination"].shape[-1])
        dims["discrimination"] = ["item", "dimension"]
    return az.from_dict(posterior=posterior, coords=coords, dims=dims)
