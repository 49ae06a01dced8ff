"""The methods of study ``dcm_bbvi``, each fitting the LCDM to one data set (``METHODS``):

    em            EM marginal maximum likelihood (``inference.dcm_em``), standard errors from the
                  observed information
    bbvi          the seed's BBVI: Rao-Blackwellized score-function gradients, block coordinate ascent
    bbvi_cv       the same with (leave-one-out) control variates
    collapsed_vi  Z summed out, reparameterised gradients, minibatches (``inference.collapsed_vi``)
    nuts          NUTS on the collapsed model (numpyro), the posterior reference

Monotonicity (``monotone: true``, one key for all of ``MONOTONE_METHODS``): em, bbvi, bbvi_cv and
collapsed_vi fit monotone items, main effects >= 0 and interactions >= -min(main effects), all
through ``models.lcdm.monotone_beta``, and report coefficients inside those constraints; NUTS
stays unconstrained (its record says ``monotone: false``).

Every fit's record carries the accuracy of the modal profiles against the true ones and the
recovery of the coefficients; a BBVI fit's also the gradient variance with and without control
variates at its final state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import jax
import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference import bbvi, collapsed_vi, dcm_em
from bayesirt.inference.sampling import SamplerSettings
from bayesirt.inference.training import FitResult, TrainSettings
from bayesirt.models import lcdm
from bayesirt.studies.base import MethodResult
from bayesirt.studies.dcm_bbvi.conditions import MONOTONE_METHODS, STUDY
from bayesirt.studies.dcm_bbvi.settings import Settings

# BBVI on the seed design: the seed's block schedule (10, 20, 20, 30 steps per sweep), a sweep
# per convergence check
BBVI_TRAIN = TrainSettings(
    max_steps=4000,
    min_steps=320,
    check_every=80,
    window=160,
    rel_tol=2e-4,
    patience=2,
    lr_decay_steps=500,
    progress_every=0,
)
COLLAPSED_TRAIN = TrainSettings(
    learning_rate=0.05,
    max_steps=5000,
    min_steps=300,
    check_every=100,
    window=200,
    rel_tol=1e-4,
    patience=3,
    progress_every=0,
)


@dataclass(frozen=True)
class StudyConfig:
    """The settings of every method; its defaults are the config schema's (a unit test holds
    ``study_config`` of a config without keys equal to ``StudyConfig()``)."""

    n_samples: int = 50  # M of BBVI
    bbvi_train: TrainSettings = BBVI_TRAIN
    collapsed_train: TrainSettings = COLLAPSED_TRAIN
    em: dcm_em.EMSettings = dcm_em.EMSettings()
    nuts: SamplerSettings = field(
        default_factory=lambda: SamplerSettings(n_chains=4, n_warmup=500, n_samples=500, progress_every=0)
    )
    priors: lcdm.Priors = lcdm.Priors()
    variance_repeats: int = 32  # draws of the gradient estimator for its variance (BBVI fits)
    monotone: bool = False  # MONOTONE_METHODS: monotone coefficients (models.lcdm.monotone_beta)


def study_config(settings: Settings) -> StudyConfig:
    """The methods' settings from the config's (``settings.Settings``)."""
    return StudyConfig(
        n_samples=settings.n_samples,
        bbvi_train=replace(BBVI_TRAIN, **settings.bbvi_training),
        collapsed_train=replace(COLLAPSED_TRAIN, **settings.collapsed_training),
        nuts=SamplerSettings(**{"progress_every": 0, **settings.nuts}),
        priors=lcdm.Priors(**settings.priors),
        variance_repeats=settings.variance_repeats,
        monotone=settings.monotone,
    )


class Problem(NamedTuple):
    """One data set as every method takes it."""

    y: np.ndarray  # responses, -1 for missing
    q: np.ndarray  # Q-matrix
    prob: Any  # bbvi.prepare(y, q): design and data arrays
    key: Any  # the fit's PRNG key
    truth: pd.DataFrame | None
    fields: dict  # the record's condition fields
    allow_zero_rows: bool


# ---------------------------------------------------------------------------------------------
# the methods


def em(p: Problem, config: StudyConfig) -> MethodResult:
    fit = dcm_em.fit(p.key, p.prob, config.em._replace(monotone=config.monotone))
    res = FitResult(
        {},
        np.array([-fit.loglik]),
        max(fit.n_iter, 1),
        fit.converged,
        fit.reason,
        fit.wall_seconds,
        fit.compile_seconds,
    )
    nan = np.full_like(fit.beta, np.nan)
    post = np.exp(fit.log_posterior)
    est = estimates_table(
        p.prob.design,
        fit.beta,
        fit.beta_se if fit.beta_se is not None else nan,
        np.exp(fit.log_pi),
        fit.pi_se if fit.pi_se is not None else np.full(len(fit.log_pi), np.nan),
        post,
        p.truth,
    )
    record = records.fit_record(res, p.fields, window=1)
    record["loglik"] = fit.loglik
    return scored(p, MethodResult(record, est, records.loss_table([-fit.loglik])), post)


def _bbvi(method: str, p: Problem, config: StudyConfig) -> MethodResult:
    des = p.prob.design
    settings = bbvi.BBVISettings(
        n_samples=config.n_samples,
        control_variates=method == "bbvi_cv",
        priors=config.priors,
        monotone=config.monotone,
        train=config.bbvi_train,
    )
    fit_key, var_key = jax.random.split(p.key)
    res = bbvi.fit(fit_key, p.prob, settings, label=method)
    s = bbvi.summarize(res.params, des, key=jax.random.fold_in(p.key, 2), monotone=config.monotone)
    est = estimates_table(des, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, s.profile_prob, p.truth)
    record = records.fit_record(res, p.fields, window=config.bbvi_train.window)
    record["elbo"] = -record["final_loss"]
    extra = {}
    if config.variance_repeats:
        t0 = time.perf_counter()
        extra["gradient_variance"] = bbvi.gradient_variance(
            var_key, res.params, p.prob, settings, config.variance_repeats
        )
        record["timing"]["variance_seconds"] = time.perf_counter() - t0
    return scored(p, MethodResult(record, est, records.loss_table(res.losses)), s.profile_prob, extra)


def bbvi_plain(p: Problem, config: StudyConfig) -> MethodResult:
    return _bbvi("bbvi", p, config)


def bbvi_cv(p: Problem, config: StudyConfig) -> MethodResult:
    return _bbvi("bbvi_cv", p, config)


def collapsed(p: Problem, config: StudyConfig) -> MethodResult:
    fit_key, sum_key = jax.random.split(p.key)
    res = collapsed_vi.fit(
        fit_key,
        p.prob,
        collapsed_vi.CollapsedSettings(priors=config.priors, monotone=config.monotone, train=config.collapsed_train),
    )
    s = collapsed_vi.summarize(sum_key, res.params, p.prob, monotone=config.monotone)
    est = estimates_table(p.prob.design, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, s.profile_prob, p.truth)
    record = records.fit_record(res, p.fields, window=config.collapsed_train.window)
    record["elbo"] = -record["final_loss"]
    return scored(p, MethodResult(record, est, records.loss_table(res.losses)), s.profile_prob)


def nuts(p: Problem, config: StudyConfig) -> MethodResult:
    des, prob = p.prob.design, p.prob
    samp = collapsed_vi.run_collapsed_nuts(p.key, prob, config.nuts, config.priors)
    idata = samp.idata
    post_beta = np.asarray(idata.posterior["beta"]).reshape(-1, *des.feature_mask.shape) * des.feature_mask
    theta = np.asarray(idata.posterior["theta"]).reshape(-1, des.delta.shape[1] - 1)
    pi = np.exp(np.asarray(jax.nn.log_softmax(np.concatenate([theta, np.zeros((len(theta), 1))], 1))))
    post = np.asarray(
        collapsed_vi.profile_posterior(
            post_beta.mean(0), np.log(pi.mean(0)), prob.data["shared"]["delta"], prob.data["y_obs"], prob.data["n_obs"]
        )
    )
    est = estimates_table(des, post_beta.mean(0), post_beta.std(0), pi.mean(0), pi.std(0), post, p.truth)
    return scored(p, MethodResult(records.sample_record(samp, p.fields), est, None, idata), post)


METHODS = {
    "em": em,
    "bbvi": bbvi_plain,
    "bbvi_cv": bbvi_cv,
    "collapsed_vi": collapsed,
    "nuts": nuts,
}  # conditions.METHODS


def fit(
    method: str,
    rm,
    truth,
    q,
    seed: int,
    config: StudyConfig = StudyConfig(),
    fields: dict | None = None,
    allow_zero_rows: bool = True,
) -> MethodResult:
    """Fit one method (``METHODS``) to one data set; all methods of a data set take one seed."""
    if method not in METHODS:
        raise ValueError(f"dcm_bbvi: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    y = rm.responses
    prob = bbvi.prepare(y, q, allow_zero_rows=allow_zero_rows)
    fields = {
        "model": "lcdm",
        "method": method,
        "study": STUDY,
        "dataset": "simulated",
        "condition": method,
        "seed": int(seed),
        "n_persons": int(y.shape[0]),
        "n_items": int(y.shape[1]),
        "n_attributes": int(q.shape[1]),
        "missing_rate": float((y < 0).mean()),
        "monotone": bool(config.monotone and method in MONOTONE_METHODS),
        **(fields or {}),
    }
    return METHODS[method](Problem(y, q, prob, jax.random.PRNGKey(seed), truth, fields, allow_zero_rows), config)


# ---------------------------------------------------------------------------------------------
# scoring


def scored(p: Problem, result: MethodResult, profile_prob, extra: dict | None = None) -> MethodResult:
    """The fit's record with the accuracy of its modal profiles and its coefficients' recovery
    (where the truth is known), then ``extra``."""
    record = result.record
    if p.truth is not None:
        true_profile = p.truth[p.truth.parameter == "profile"].value.to_numpy().astype(int)
        record["accuracy"] = accuracy(profile_prob, true_profile, p.q.shape[1])
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
    attribute), per-profile accuracy (by true profile), from the modal profile of each person."""
    pred = np.asarray(profile_prob).argmax(1)
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


def oracle_accuracy(rm, truth, q) -> dict:
    """Accuracy of the modal posterior profile at the true beta and pi: the ceiling any
    estimator of this data set can be expected to reach (up to chance)."""
    des = lcdm.design(q)
    tb = truth[truth.parameter == "beta"]
    beta = lcdm.pack_beta([tb[tb.item == j].value.to_numpy() for j in range(q.shape[0])], des.delta.shape[2])
    log_pi = np.log(truth[truth.parameter == "profile_probability"].value.to_numpy())
    y_obs, n_obs = lcdm.observed_counts(rm.responses)
    post = collapsed_vi.profile_posterior(
        np.asarray(beta, np.float32), np.asarray(log_pi, np.float32), np.asarray(des.delta, np.float32), y_obs, n_obs
    )
    true_profile = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    return accuracy(np.asarray(post), true_profile, q.shape[1])
