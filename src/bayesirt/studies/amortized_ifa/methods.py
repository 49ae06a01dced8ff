"""One fit of the amortized_ifa study: IWAE or IWAVB on a design's training persons, then its
held-out log-likelihood, item estimates (rotated and aligned for exploratory designs) and, with
a truth, recovery. ``METHODS`` maps each method to its function; ``fit`` looks it up.

Estimates of item parameters are point estimates (the decoder's values, MML-like), so their
``sd`` is empty; person rows (``ability``) carry the mean and sd of the fitted q(z | x).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import io, records, tables
from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import loglik, rotation
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference.execution import bulk, bulk_processes
from bayesirt.inference.execution.training import TrainSettings, keep_last_good, train_problem
from bayesirt.inference.execution.worker_processes import job_cores
from bayesirt.inference.variational import iwae, iwavb
from bayesirt.models import mgrm
from bayesirt.studies.amortized_ifa import seed_methods
from bayesirt.studies.amortized_ifa.conditions import ITEM_PARAMETERS, KEYS, STUDY, Condition
from bayesirt.studies.amortized_ifa.settings import Design, Evaluation, Settings, Training
from bayesirt.studies.base import MethodResult

log = logging.getLogger("bayesirt")


def iwae_settings(spec: Condition, design: Design) -> iwae.IWAESettings:
    return iwae.IWAESettings(n_importance=int(spec.n_importance), **asdict(design.iwae))


def iwavb_settings(spec: Condition, design: Design) -> iwavb.IWAVBSettings:
    return iwavb.IWAVBSettings(n_importance=int(spec.n_importance), **asdict(design.iwavb))


# each method's module (``problem``, ``sampler``) and the function giving its settings; the
# seed-as-written methods run the same modules with seed 003's settings (``seed_methods``)
METHOD_MODULES = {
    "iwae": (iwae, iwae_settings),
    "iwavb": (iwavb, iwavb_settings),
    "iwae_seed": (iwae, seed_methods.iwae_seed_settings),
    "iwavb_seed": (iwavb, seed_methods.iwavb_seed_settings),
}


DESCRIPTIONS = {
    "iwae": "IWAE: a Gaussian encoder q(z | x), trained on the importance-weighted bound with R samples",
    "iwavb": "IWAVB: an implicit encoder q(z | x) whose density ratio a discriminator learns",
    "iwae_seed": "IWAE as seed 003 trains it (studies.amortized_ifa.seed_methods)",
    "iwavb_seed": "IWAVB as seed 003's Algorithm 2 writes it (studies.amortized_ifa.seed_methods)",
}


def _fit_by(name: str) -> Callable[..., MethodResult]:
    def fit_method(train, holdout, truth, spec, design, evaluation, *, seed, dataset=None) -> MethodResult:
        module, settings = METHOD_MODULES[name]
        return amortized_fit(
            module, settings(spec, design), train, holdout, truth, spec, design, evaluation, seed=seed, dataset=dataset
        )

    fit_method.__doc__ = f"{DESCRIPTIONS[name]}: ``amortized_fit`` of its module with its settings."
    return fit_method


METHODS: dict[str, Callable[..., MethodResult]] = {name: _fit_by(name) for name in METHOD_MODULES}


def fit(
    train: io.ResponseMatrix,
    holdout: io.ResponseMatrix,
    truth,
    spec: Condition,
    design: Design,
    evaluation: Evaluation,
    *,
    seed: int,
    dataset: str | None = None,
) -> MethodResult:
    """One fit of the study by its method (``spec.method``), evaluated."""
    return METHODS[spec.method](train, holdout, truth, spec, design, evaluation, seed=seed, dataset=dataset)


def train_settings(training: Training, learning_rate: float) -> TrainSettings:
    """The driver's settings from a design's ``training`` (the learning rate is the method's own;
    the decay floor is ``lr_floor`` times it)."""
    t = asdict(training)
    floor = t.pop("lr_floor")
    return TrainSettings(learning_rate=learning_rate, min_learning_rate=learning_rate * floor, **t)


def model_structure(rm: io.ResponseMatrix, n_factors: int, analysis: str):
    """Confirmatory: Q-matrix of the data (simulated structure, or one factor per scale),
    positive loadings, correlated factors. Exploratory: every loading free, identity prior."""
    if analysis == "confirmatory":
        q = sm.q_matrix(rm)
        if q.shape[1] != n_factors:
            raise ValueError(f"confirmatory design: the data have {q.shape[1]} factors, the fit asks for {n_factors}")
        return mgrm.structure(rm.n_categories, n_factors, q, positive_loadings=True)
    return mgrm.structure(rm.n_categories, n_factors, None)


_SAMPLERS: dict = {}


def sampler(method: ModuleType, st, cfg):
    """The method's proposal (``method.sampler``), one per structure and settings in a process,
    so that fits of one shape (a block's replications) share its compiled programs."""
    key = (method.__name__, cfg, loglik.structure_key(st))
    if key not in _SAMPLERS:
        _SAMPLERS[key] = method.sampler(st, cfg)
    return _SAMPLERS[key]


def heldout_loglik(key, method: ModuleType, params, st, cfg, y_hold, n_samples: int) -> dict:
    """Mean held-out log-likelihood per person with the method's own proposal (paper eq. 27)
    and method-independently: Gauss-Hermite quadrature for P <= 2, else Laplace importance
    sampling (``evaluation.loglik``), so methods are compared on their item parameters alone."""
    k_own, k_lap = jax.random.split(key)
    chunk = min(500, n_samples)
    draw = sampler(method, st, cfg)
    own = loglik.importance_sampled_loglik(
        k_own, params["model"], st, y_hold, draw, n_samples=n_samples, sample_chunk=chunk, draw_params=params
    )
    if st.n_factors <= 2:
        indep, how = loglik.quadrature_loglik(params["model"], st, y_hold), "quadrature"
    else:
        indep = loglik.laplace_is_loglik(k_lap, params["model"], st, y_hold, n_samples=n_samples, sample_chunk=chunk)
        how = "laplace_is"
    return {"own_proposal": float(own.mean()), "independent": float(indep.mean()), "independent_method": how}


_MOMENTS: dict = {}


def person_moments(key, method: ModuleType, params, st, cfg, y, n_draws: int, batch: int = 1024):
    """Mean and sd of the fitted q(z | x) per person from ``n_draws`` draws: (N, P), (N, P)."""
    draw = sampler(method, st, cfg)
    if (draw, n_draws) not in _MOMENTS:  # one compiled program per proposal (see ``sampler``)

        def moments(p, k, yy):
            z, _ = draw(p, k, yy, n_draws)
            return z.mean(0), z.std(0)

        _MOMENTS[draw, n_draws] = jax.jit(moments)
    moments = _MOMENTS[draw, n_draws]
    means, sds = [], []
    for c, a in enumerate(range(0, y.shape[0], batch)):
        m, s = moments(params, jax.random.fold_in(key, c), jnp.asarray(y[a : a + batch], jnp.int8))
        means.append(np.asarray(m, np.float64))
        sds.append(np.asarray(s, np.float64))
    return np.concatenate(means), np.concatenate(sds)


def item_estimates(params, st, rm: io.ResponseMatrix, analysis: str, truth=None):
    """Loadings, intercepts and factor correlations (natural scale) and rotation info.

    Exploratory solutions are Geomin-rotated (oblique), reflected, and aligned to the true
    loadings when the truth has the same number of factors (else left in Geomin order)."""
    lam = np.asarray(mgrm.loadings(params, st), np.float64)
    corr = np.asarray(mgrm.factor_corr(params, st), np.float64)
    ints = np.asarray(mgrm.intercepts(params, st), np.float64)
    info = {"rotation": None}
    if analysis == "exploratory":
        rot = rotation.geomin(lam)
        lam, corr = rot.loadings, rot.factor_corr
        true_lam = truth_matrix(truth, "loading", lam.shape) if truth is not None else None
        if true_lam is not None:
            lam, corr, perm, _ = rotation.align(lam, true_lam, corr)
            info = {
                "rotation": "geomin",
                "aligned_to": "truth",
                "congruence_with_truth": rotation.tucker_congruence(lam, true_lam).tolist(),
            }
        else:
            lam, corr, _ = rotation.reflect(lam, corr)
            info = {"rotation": "geomin", "aligned_to": None}
        info["geomin_converged"] = bool(rot.converged)
    return lam, ints, corr, info


def truth_matrix(truth, parameter, shape):
    d = truth[truth.parameter == parameter]
    if d.empty or d.factor.max() + 1 != shape[1] or d.item.max() + 1 != shape[0]:
        return None
    m = np.zeros(shape)
    m[d.item.to_numpy(), d.factor.to_numpy()] = d.value.to_numpy()
    return m


def estimates_table(rm: io.ResponseMatrix, lam, ints, corr, abilities=None, truth=None) -> pd.DataFrame:
    """Tidy estimates (workflow/schemas/estimates.schema.yaml): parameter, item, item_name,
    person, factor, factor_name, factor2, category, scale, mean, sd[, true]."""
    ncat = rm.n_categories
    p = lam.shape[1]
    names = rm.attrs.get("factor_names") if p == len(rm.attrs.get("factor_names") or []) else None
    names = names or [f"F{k + 1}" for k in range(p)]
    values = {"loading": lam, "intercept": [ints[j, : ncat[j] - 1] for j in range(rm.n_items)], "factor_corr": corr}
    if abilities is not None:
        values["ability"] = abilities[0]
    est = tables.mgrm_table(values, item_names=[it.name for it in rm.items], factor_names=names, value_column="mean")
    est["sd"] = np.nan
    if abilities is not None:
        est.loc[est.parameter == "ability", "sd"] = abilities[1].ravel()
    item_scale = np.asarray([it.scale for it in rm.items] + ["all"], dtype=object)
    scale = np.where(est.factor >= 0, est.factor_name, item_scale[est.item.to_numpy()])
    est.insert(est.columns.get_loc("category") + 1, "scale", scale)
    est.loc[est.parameter == "factor_corr", "scale"] = "all"
    if truth is not None:
        est = tables.attach_truth(est, truth, KEYS)
        if est.loc[est.parameter == "intercept", "true"].isna().any():
            raise ValueError("truth table does not cover the intercepts of the fitted items")
    return est


def amortized_fit(
    method: ModuleType,
    cfg,
    train: io.ResponseMatrix,
    holdout: io.ResponseMatrix,
    truth,
    spec: Condition,
    design: Design,
    evaluation: Evaluation,
    *,
    seed: int,
    dataset: str | None = None,
) -> MethodResult:
    """One fit of an amortized method (its module: ``problem``, ``proposal``; its settings ``cfg``),
    evaluated: the record, the tidy estimates and the loss history (``records.write_fit`` writes
    them). A fit whose loss becomes non-finite keeps its last good state, is evaluated there,
    and its record says so."""
    rep = Replication(train, holdout, truth, spec, seed)
    problem, st, cfg = fit_problem(method, cfg, rep, design)
    res = keep_last_good(train_problem, problem)
    return evaluated(method, cfg, st, res, rep, design, evaluation, dataset)


@dataclass(frozen=True)
class Replication:
    """One replication of a condition: its training and held-out persons, truth, fit and seed."""

    train: io.ResponseMatrix
    holdout: io.ResponseMatrix
    truth: pd.DataFrame | None
    cond: Condition
    seed: int


def fit_setup(cfg, rep: Replication, design: Design):
    """The replication's model structure and the method's settings with the design's training
    settings (what evaluation needs; ``fit_problem`` adds the fit)."""
    if cfg.seed is not None:  # a seed-as-written method: the seed's batch and stopping rule
        cfg = replace(cfg, train=seed_methods.train_settings(design))
    else:
        cfg = replace(cfg, train=train_settings(design.training, cfg.learning_rate))
    return model_structure(rep.train, rep.cond.n_factors, design.analysis), cfg


def fit_problem(method: ModuleType, cfg, rep: Replication, design: Design):
    """The replication's fit for the training driver, its model structure and the method's
    settings with the design's training settings."""
    st, cfg = fit_setup(cfg, rep, design)
    k_fit = jax.random.split(jax.random.key(rep.seed), 3)[0]
    label = f"{rep.cond.design} {rep.cond.condition} rep{rep.cond.rep}"
    return method.problem(k_fit, np.asarray(rep.train.responses), st, cfg, label=label), st, cfg


def fit_block(reps: list[Replication], settings: Settings, *, adjust: Callable | None = None) -> list[MethodResult]:
    """The replications of one condition (method, P, R) fitted as one block (``inference.execution.bulk``),
    in groups of the design's ``fits_per_program`` spread over worker processes, at most the job's
    cores (``inference.execution.bulk_processes``, ``worker_processes.job_cores``), then each
    evaluated as ``fit`` evaluates a single fit, with the study's ``settings`` (its design and
    evaluation). Each record's ``block`` gives the block's size, the program's width and the fit's
    group and position. ``adjust``: a change of the method's settings (a diagnostic's variant),
    made before the fits are built."""
    spec = reps[0].cond
    design, evaluation = settings.design(spec.design), settings.evaluation
    method, cfg = METHOD_MODULES[spec.method]
    cfg = cfg(spec, design) if adjust is None else adjust(cfg(spec, design))
    prepared = [fit_setup(cfg, rep, design) for rep in reps]  # the fits are built where they run
    label = f"{spec.design} {spec.condition} reps {reps[0].cond.rep}-{reps[-1].cond.rep}"
    results = bulk_processes.train_block(
        partial(block_problem, spec.method, cfg, design),
        reps,
        width=bulk.program_width(design.fits_per_program, len(reps)),
        processes=job_cores(),
        label=label,
        setting=BLOCK_KEY.format(design=spec.design),
    )
    return [
        evaluated(method, c, st, res, rep, design, evaluation, design.dataset)
        for (st, c), res, rep in zip(prepared, results, reps, strict=True)
    ]


def block_problem(method: str, cfg, design: Design, rep: Replication):
    """A replication's ``training.Problem`` (``fit_problem``), from picklable arguments: what a
    worker process of ``fit_block`` builds its fits from."""
    return fit_problem(METHOD_MODULES[method][0], cfg, rep, design)[0]


BLOCK_KEY = f"studies.{STUDY}.designs.{{design}}.block_size"


def evaluated(method: ModuleType, cfg, st, res, rep: Replication, design: Design, evaluation: Evaluation, dataset):
    """A fitted replication evaluated: held-out log-likelihood, estimates, recovery, the record."""
    train, holdout, truth, spec, seed = rep.train, rep.holdout, rep.truth, rep.cond, rep.seed
    analysis = design.analysis
    settings = cfg.train
    _, k_eval, k_post = jax.random.split(jax.random.key(seed), 3)
    y = np.asarray(train.responses)
    t0 = time.perf_counter()
    eval_samples = evaluation.eval_samples
    ll = heldout_loglik(k_eval, method, res.params, st, cfg, np.asarray(holdout.responses), eval_samples)
    lam, ints, corr, rot_info = item_estimates(res.params["model"], st, train, analysis, truth)
    abilities = None
    # confirmatory fits score every person with the encoder (real data: the person table's
    # scores); on simulated data only where the truth has abilities to compare with
    if analysis == "confirmatory" and (truth is None or (truth.parameter == "ability").any()):
        abilities = person_moments(k_post, method, res.params, st, cfg, y, evaluation.posterior_draws)
    estimates = estimates_table(train, lam, ints, corr, abilities, truth)
    eval_seconds = time.perf_counter() - t0

    batch = min(settings.batch_size or train.n_persons, train.n_persons)
    record = records.fit_record(
        res,
        {
            "model": "mgrm",
            "method": spec.method,
            "study": STUDY,
            "dataset": dataset or spec.design,
            "design": spec.design,
            "analysis": analysis,
            "condition": spec.condition,
            "replication": spec.rep,
            "n_factors": spec.n_factors,
            "importance_samples": spec.n_importance,
            "seed": seed,
            "n_persons": train.n_persons,
            "n_items": train.n_items,
            "n_heldout": holdout.n_persons,
            "epochs": float(res.steps * batch / train.n_persons),
            "heldout_loglik": ll,
            "eval_samples": eval_samples,
            "recovery": recovery_metrics(estimates),
            **rot_info,
            "settings": {
                "training": asdict(settings),
                "method": {k: v for k, v in asdict(cfg).items() if k != "train"},
            },
        },
        window=settings.window,
        timing={"eval_seconds": eval_seconds},
    )
    return MethodResult(record, estimates, records.loss_table(res.losses))


def recovery_metrics(estimates: pd.DataFrame) -> dict:
    """MSE against the truth per item-parameter type (free loadings only: a confirmatory
    model's fixed zeros are exact), and ability RMSE/correlation; {} without truth."""
    out = {}
    if "true" not in estimates:
        return out
    for par in (*ITEM_PARAMETERS, "ability"):
        d = estimates[(estimates.parameter == par) & estimates["true"].notna()]
        if par == "loading":
            d = d[(d["mean"] != 0) | (d["true"] != 0)]
        if d.empty:
            continue
        m = metrics(d["mean"], d["true"])
        if par == "ability":
            out["ability_rmse"], out["ability_corr"] = m["rmse"], m["corr"]
        else:
            out[f"{par}_mse"] = m["mse"]
    return out
