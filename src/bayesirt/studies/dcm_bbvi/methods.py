"""The methods of study ``dcm_bbvi``, each fitting the LCDM to one data set (``METHODS``):

    em            EM marginal maximum likelihood (``inference.dcm.dcm_em``), standard errors from the
                  observed information
    bbvi          the seed's BBVI: Rao-Blackwellized score-function gradients, block coordinate ascent
    bbvi_cv       the same with (leave-one-out) control variates
    bbvi_seed     the seed notebook's runs as written, and its two sub-experiments (``seed``)
    collapsed_vi  Z summed out, reparameterised gradients, minibatches (``inference.dcm.collapsed_vi``)
    nuts          NUTS on the collapsed model (numpyro), the posterior reference

Monotonicity (``monotone: true``, one key for all of ``MONOTONE_METHODS``): em, bbvi, bbvi_cv and
collapsed_vi fit monotone items, main effects >= 0 and interactions >= -min(main effects), all
through ``models.lcdm.monotone_beta``, and report coefficients inside those constraints; NUTS
stays unconstrained (its record says ``monotone: false``).

Every fit's record carries the accuracy of the modal profiles against the true ones and the
recovery of the coefficients (``tables.scored``); a BBVI fit's also the gradient variance with and
without control variates at its final state, and the PSIS k-hat of its approximation (``psis``,
``inference.dcm.bbvi_psis.log_ratios``, ``bbvi_psis.KHAT_DRAWS`` joint draws; a warning above 0.7).

``fit`` fits one method to one data set; ``fit_block`` fits the replications of one condition
(design, missingness, method) in one process, bbvi, bbvi_cv and collapsed_vi as one vectorized
program of the bulk driver (``inference.execution.bulk``), em and nuts one after another, and evaluates
each replication as ``fit`` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.inference.dcm import bbvi, bbvi_psis, collapsed_nuts, collapsed_vi, dcm_em
from bayesirt.inference.execution import bulk, training
from bayesirt.inference.execution.training import FitResult, TrainSettings, keep_last_good, train_problem
from bayesirt.inference.samplers.sampling import SamplerSettings
from bayesirt.inference.variational import psis
from bayesirt.models import lcdm
from bayesirt.studies.base import MethodResult
from bayesirt.studies.dcm_bbvi import seed_methods as seed
from bayesirt.studies.dcm_bbvi.conditions import MONOTONE_METHODS, STUDY, Condition
from bayesirt.studies.dcm_bbvi.data import Problem
from bayesirt.studies.dcm_bbvi.settings import Settings
from bayesirt.studies.dcm_bbvi.tables import estimates_table, scored

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


# The methods read the study's one settings type (``settings.Settings``, built once from the
# validated config, where the defaults live); these turn its plain values into the library's
# settings objects.
def bbvi_train(settings: Settings) -> TrainSettings:
    """BBVI's training: ``BBVI_TRAIN`` with the config's ``bbvi_training`` over it."""
    return replace(BBVI_TRAIN, **settings.bbvi_training)


def collapsed_train(settings: Settings) -> TrainSettings:
    """Collapsed VI's training: ``COLLAPSED_TRAIN`` with the config's ``collapsed_training`` over it."""
    return replace(COLLAPSED_TRAIN, **settings.collapsed_training)


def item_priors(settings: Settings) -> lcdm.Priors:
    return lcdm.Priors(**settings.priors)


def nuts_settings(settings: Settings) -> SamplerSettings:
    return SamplerSettings(**{"progress_every": 0, **settings.nuts})


def em_settings(settings: Settings) -> dcm_em.EMSettings:
    return dcm_em.EMSettings(monotone=settings.monotone)._replace(**settings.em)


# ---------------------------------------------------------------------------------------------
# the methods


def em(p: Problem, settings: Settings) -> MethodResult:
    fit = dcm_em.fit(p.key, p.prob, em_settings(settings))
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


def bbvi_settings(method: str, settings: Settings) -> bbvi.BBVISettings:
    """BBVI's settings for ``bbvi`` or ``bbvi_cv`` (control variates), or the seed's runs'."""
    if method in seed.SEED_METHODS:
        return seed.bbvi_settings()
    return bbvi.BBVISettings(
        n_samples=settings.n_samples,
        control_variates=method == "bbvi_cv",
        priors=item_priors(settings),
        monotone=settings.monotone,
        train=bbvi_train(settings),
    )


def bbvi_problem(method: str, p: Problem, settings: Settings) -> training.Problem:
    """The BBVI fit of ``p`` for the training or the bulk driver."""
    fit_key, _ = jax.random.split(p.key)
    return bbvi.problem(fit_key, p.prob, bbvi_settings(method, settings), label=fit_label(method, p))


def bbvi_scored(method: str, p: Problem, settings: Settings, res: FitResult) -> MethodResult:
    """A BBVI fit evaluated: estimates, record, accuracy, recovery and gradient variance."""
    des = p.prob.design
    _, var_key = jax.random.split(p.key)
    monotone = bbvi_settings(method, settings).monotone
    s = bbvi.summarize(res.params, des, key=jax.random.fold_in(p.key, 2), monotone=monotone)
    est = estimates_table(des, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, s.profile_prob, p.truth)
    record = records.fit_record(res, p.fields, window=bbvi_train(settings).window)
    record["elbo"] = -record["final_loss"]
    # PSIS k-hat of the joint approximation, profiles drawn (``inference.dcm.bbvi_psis.log_ratios`` says
    # why they are not summed out); its key: the fit's, folded (the other keys stay as they were)
    t0 = time.perf_counter()
    log_ratios = bbvi_psis.log_ratios(jax.random.fold_in(p.key, 3), res.params, p.prob, bbvi_settings(method, settings))
    record["psis"] = psis.record(
        log_ratios,
        fit_label(method, p),
        "do not read its coefficient and profile-probability sds, nor its profile probabilities q(Z_i), as calibrated",
    )
    record["timing"]["psis_seconds"] = time.perf_counter() - t0
    record["item_uncertainty"] = {
        "method": "variational",
        "reason": "the approximation's own sds, not corrected; on the nuts_designs the study compares them with NUTS",
    }
    extra = {}
    if settings.variance_repeats:
        t0 = time.perf_counter()
        extra["gradient_variance"] = bbvi.gradient_variance(
            var_key, res.params, p.prob, bbvi_settings(method, settings), settings.variance_repeats
        )
        record["timing"]["variance_seconds"] = time.perf_counter() - t0
    return scored(p, MethodResult(record, est, records.loss_table(res.losses)), s.profile_prob, extra)


def collapsed_settings(settings: Settings) -> collapsed_vi.CollapsedSettings:
    return collapsed_vi.CollapsedSettings(
        priors=item_priors(settings), monotone=settings.monotone, train=collapsed_train(settings)
    )


def collapsed_problem(method: str, p: Problem, settings: Settings) -> training.Problem:
    """The collapsed-VI fit of ``p`` for the training or the bulk driver."""
    fit_key, _ = jax.random.split(p.key)
    return collapsed_vi.problem(fit_key, p.prob, collapsed_settings(settings), label=fit_label(method, p))


def collapsed_scored(method: str, p: Problem, settings: Settings, res: FitResult) -> MethodResult:
    """A collapsed-VI fit evaluated: estimates, record, accuracy and recovery."""
    _, sum_key = jax.random.split(p.key)
    s = collapsed_vi.summarize(sum_key, res.params, p.prob, monotone=settings.monotone)
    est = estimates_table(p.prob.design, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, s.profile_prob, p.truth)
    record = records.fit_record(res, p.fields, window=collapsed_train(settings).window)
    record["elbo"] = -record["final_loss"]
    return scored(p, MethodResult(record, est, records.loss_table(res.losses)), s.profile_prob)


# the methods run by the training driver: (the fit for the driver, its evaluation); a block of
# their replications is one program of the bulk driver (``fit_block``)
TRAINED = {
    "bbvi": (bbvi_problem, bbvi_scored),
    "bbvi_cv": (bbvi_problem, bbvi_scored),
    "collapsed_vi": (collapsed_problem, collapsed_scored),
} | {name: (seed.problem, bbvi_scored) for name in seed.SEED_METHODS}


def trained(method: str, p: Problem, settings: Settings) -> MethodResult:
    """One fit of a method of ``TRAINED`` by the training driver, evaluated; a fit whose loss
    becomes non-finite keeps its last good state, is evaluated there, and its record says so."""
    build, evaluate = TRAINED[method]
    return evaluate(method, p, settings, keep_last_good(train_problem, build(method, p, settings)))


def bbvi_plain(p: Problem, settings: Settings) -> MethodResult:
    return trained("bbvi", p, settings)


def bbvi_cv(p: Problem, settings: Settings) -> MethodResult:
    return trained("bbvi_cv", p, settings)


def collapsed(p: Problem, settings: Settings) -> MethodResult:
    return trained("collapsed_vi", p, settings)


def seed_run(p: Problem, settings: Settings) -> MethodResult:
    """One of the seed notebook's runs (``seed.SEED_METHODS``: the fit's method)."""
    return trained(p.fields["method"], p, settings)


def nuts(p: Problem, settings: Settings) -> MethodResult:
    des, prob = p.prob.design, p.prob
    samp = collapsed_nuts.run_collapsed_nuts(p.key, prob, nuts_settings(settings), item_priors(settings))
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
} | dict.fromkeys(seed.SEED_METHODS, seed_run)  # conditions.METHODS


def fit_label(method: str, p: Problem) -> str:
    """The fit's name in the log: its method and, in a study, its condition and replication."""
    f = p.fields
    return f"{f['condition']} rep{f['replication']}" if "replication" in f else method


def data_problem(
    method: str,
    rm,
    truth,
    q,
    seed: int,
    settings: Settings,
    fields: dict | None = None,
    allow_zero_rows: bool = True,
) -> Problem:
    """One data set as ``method`` takes it, with its key (from ``seed``) and its record's fields."""
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
        "monotone": bool(settings.monotone and method in MONOTONE_METHODS),
        **(fields or {}),
    }
    return Problem(y, q, prob, jax.random.PRNGKey(seed), truth, fields, allow_zero_rows)


def fit(
    method: str,
    rm,
    truth,
    q,
    seed: int,
    settings: Settings,
    fields: dict | None = None,
    allow_zero_rows: bool = True,
) -> MethodResult:
    """Fit one method (``METHODS``) to one data set; all methods of a data set take one seed."""
    p = data_problem(method, rm, truth, q, seed, settings, fields, allow_zero_rows)
    return METHODS[method](p, settings)


@dataclass(frozen=True)
class Replication:
    """One replication of a condition: its data (responses, truth, Q-matrix), its fit and seed."""

    rm: Any  # io.ResponseMatrix, -1 for hidden cells
    truth: pd.DataFrame | None
    q: np.ndarray
    cond: Condition
    seed: int


BLOCK_KEY = f"studies.{STUDY}.designs.{{design}}.block_size"


def fit_block(reps: list[Replication], settings: Settings) -> list[MethodResult]:
    """The replications of one condition (design, missingness, method) fitted as one block.

    The methods of ``TRAINED`` (bbvi, bbvi_cv, collapsed_vi) fit the block as one vectorized
    program (``inference.execution.bulk.train_block``: each replication with its own data, key, minibatches
    and stopping test); EM and NUTS fit one replication after another. Each replication is then
    evaluated as ``fit`` evaluates a single fit, and its record's ``block`` gives the block's
    size and the replication's position in it (EM and NUTS: the step it left the block is its
    own last, and ``memory_bytes`` 0, as they run no block program).

    Parameters
    ----------
    reps : list of Replication
        The block's replications, all of one condition.
    settings : Settings
        The study's settings.

    Returns
    -------
    list of MethodResult
        One per replication, in order.

    Raises
    ------
    ValueError
        If the replications are not all of one condition.
    MemoryError
        If the block's program would not fit in memory (naming the design's ``block_size``).
    """
    spec = reps[0].cond
    if any((r.cond.design, r.cond.missing, r.cond.method) != (spec.design, spec.missing, spec.method) for r in reps):
        raise ValueError("dcm_bbvi: the replications of a block must be of one design, missingness and method")
    method = spec.method
    problems = [data_problem(method, r.rm, r.truth, r.q, r.seed, settings, r.cond.fields) for r in reps]
    if method in TRAINED:
        build, evaluate = TRAINED[method]
        label = f"{spec.design}/{spec.missing}/{method} reps {reps[0].cond.rep}-{reps[-1].cond.rep}"
        block = [build(method, p, settings) for p in problems]
        results = bulk.train_block(block, label=label, setting=BLOCK_KEY.format(design=spec.design))
        return [evaluate(method, p, settings, res) for p, res in zip(problems, results, strict=True)]
    outs = []
    for position, p in enumerate(problems):
        out = METHODS[method](p, settings)
        out.record["block"] = {
            "size": len(problems),
            "position": position,
            "left_at_step": out.record["steps"],
            "memory_bytes": 0,
        }
        outs.append(out)
    return outs
