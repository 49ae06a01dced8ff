"""The vibo study's methods, one short function each (``METHODS``), and ``fit``: one method on
one replication of a condition, evaluated alike for every method (``evaluation``): recovery and
calibration against the truth, missing-response prediction on the scored cells, held-out
log-likelihood of the new persons and the time to score the new persons. On real data (an
empty truth) recovery and calibration are left out.

``fit_block`` fits the replications of one condition together, as the workflow's fit job does:
the methods of the training driver (VIBO's two variants and mean-field VI) as one vectorized
program (``inference.execution.bulk``), MML and NUTS (``reference_methods``) one replication after the
other; each replication is then evaluated exactly as ``fit`` evaluates it alone.

The records of the variational methods (VIBO, mean-field VI) carry the PSIS k-hat of their
approximation (``psis``: ``vibo_programs.KHAT_DRAWS`` joint draws of items and every person's ability,
``inference.variational.vibo.log_ratios`` / ``inference.variational.mfvi.log_ratios``; a warning above 0.7).

Every method of a condition shares the data and the fit seed; the seed is split into the same
five keys for each (fit, encoder, predictive draws, held-out evaluator, new persons)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import jax
import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.inference.execution import bulk
from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, keep_last_good, train_problem
from bayesirt.inference.marginal import irt2pl_laplace
from bayesirt.inference.variational import mfvi, psis, vibo, vibo_items, vibo_programs
from bayesirt.models import irt2pl
from bayesirt.studies.base import MethodResult
from bayesirt.studies.vibo import seed_methods
from bayesirt.studies.vibo.conditions import METHODS as METHOD_NAMES
from bayesirt.studies.vibo.conditions import SEED_METHODS, STUDY, VIBO_VARIANTS, Condition
from bayesirt.studies.vibo.evaluation import Fitted, Prepared, evaluated, item_estimates
from bayesirt.studies.vibo.reference_methods import MML_SE_MAX_WORK, fit_mml, fit_nuts
from bayesirt.studies.vibo.settings import Settings, design_model

BLOCK_KEY = f"studies.{STUDY}.designs.{{design}}.block_size"
log = logging.getLogger("bayesirt")


@dataclass(frozen=True)
class Replication:
    """One replication of a condition as ``data.condition_data`` gives it (training persons,
    scored cells, new persons, truth), its condition (design, missingness, method, replication)
    and its fit seed."""

    train: object
    hidden: pd.DataFrame
    holdout: object
    truth: pd.DataFrame | None
    cond: Condition
    seed: int


def prepare(rep: Replication, settings: Settings) -> Prepared:
    """The replication's data, ready for any method (``evaluation.Prepared``)."""
    train, hidden, holdout, truth, cond, seed = rep.train, rep.hidden, rep.holdout, rep.truth, rep.cond, rep.seed
    design = settings.design(cond.design)
    y, y_hold = np.asarray(train.responses), np.asarray(holdout.responses)
    n, j = y.shape
    model = design_model(design)
    st = irt2pl.Structure(model, j, 1, n_categories=tuple(int(c) for c in train.n_categories) if model == "grm" else ())
    # keys checked by the config schema; a seed method has the seed's prior
    priors = seed_methods.SEED_ITEM_PRIORS if cond.method in SEED_METHODS else irt2pl.ItemPriors(**settings.priors)
    # as integers: an empty table (a 0% condition scores no cells) read from CSV has no dtype
    rows, cols, cell_truth = (hidden[c].to_numpy(np.int64) for c in ("person", "item", "response"))
    keys = dict(zip(("fit", "enc", "pred", "ll", "new"), jax.random.split(jax.random.key(seed), 5)))
    truth = truth if truth is not None and len(truth) else None  # real data: no truth
    fields = {
        "model": model,
        "method": cond.method,
        "study": STUDY,
        "dataset": design.get("dataset", cond.design),
        "design": cond.design,
        "missing": cond.missing,
        "condition": f"{cond.missing}_{cond.method}",
        "replication": cond.rep,
        "seed": seed,
        "n_persons": n,
        "n_items": j,
        "n_heldout": int(y_hold.shape[0]),
        "missing_rate": float(np.mean(y == -1)),
    }
    if model == "grm":
        fields["n_categories"] = [int(c) for c in st.categories]
    return Prepared(cond, settings, y, y_hold, st, priors, rows, cols, cell_truth, truth, keys, fields)


# ----------------------------------------------------------------------------------- methods


def train_settings(training: dict, method_cfg: dict, n_persons: int) -> TrainSettings:
    """The study's training settings with the method's own learning rate, minibatches capped at
    the number of persons."""
    t = {**training, "learning_rate": method_cfg["learning_rate"]}
    if t["batch_size"] is not None:
        t["batch_size"] = min(int(t["batch_size"]), n_persons)
    return TrainSettings(**t)


def vibo_problem(p: Prepared, n_samples: int | None = None) -> tuple[Problem, vibo.VIBOSettings]:
    """VIBO's fit of the replication for the training driver, with its settings: the
    condition's missing-data variant, or the seed's settings and encoder (``seed_methods``);
    ``n_samples``: samples per gradient other than the method's (a diagnostic's)."""
    cfg = p.settings.vibo
    settings = train_settings(p.settings.training, cfg, p.y.shape[0])
    if p.cond.method in SEED_METHODS:
        vs = seed_methods.vibo_settings(cfg["hidden"], settings)
    else:
        vs = vibo.VIBOSettings(
            p.priors, missing=VIBO_VARIANTS[p.cond.method], hidden=tuple(cfg["hidden"]), train=settings
        )
    if n_samples is not None:
        vs = replace(vs, n_samples=n_samples)
    return seed_methods.encoder_module(p.cond.method).problem(p.keys["fit"], p.y, p.st, vs, label=p.cond.folder), vs


def vibo_evaluated(p: Prepared, vs: vibo.VIBOSettings, res: FitResult) -> MethodResult:
    """A VIBO fit evaluated; new persons are scored by the encoder alone, no refit."""
    k, enc = p.keys, seed_methods.encoder_module(p.cond.method)
    ability = enc.encode(res.params, p.st, vs, k["enc"], p.y)
    probs = enc.predictive_probs(
        res.params, p.st, vs, k["pred"], p.y, p.rows, p.cols, n_draws=p.settings.posterior_draws
    )
    enc.encode(res.params, p.st, vs, k["new"], p.y_hold)  # compile the encoder for this shape before timing it
    t0 = time.perf_counter()
    enc.encode(res.params, p.st, vs, k["new"], p.y_hold)
    timing = {"score_new_seconds": time.perf_counter() - t0}  # the encoder alone, no refit
    items = item_estimates(p.st, vibo_items.item_posterior(res.params, p.st))  # q(d), either encoder
    t0 = time.perf_counter()
    log_ratios = enc.log_ratios(res.params, p.st, vs, psis_key(p), p.y, n_draws=vibo_programs.KHAT_DRAWS)
    timing["psis_seconds"] = time.perf_counter() - t0
    entry = psis.record(log_ratios, p.cond.folder, KHAT_CONSEQUENCE)
    cfg = seed_methods.method_record(p.cond.method, p.settings.vibo)
    fitted = _driver_fitted(res, vs.train, cfg, items, ability, probs, timing, entry)
    return evaluated(p, _with_corrected_items(p, res.params, fitted, timing))


def mfvi_problem(p: Prepared) -> tuple[Problem, mfvi.MFVISettings]:
    """Mean-field VI's fit of the replication for the training driver, with its settings."""
    settings = train_settings(p.settings.training, p.settings.mfvi, p.y.shape[0])
    ms = mfvi.MFVISettings(p.priors, train=settings)
    return mfvi.problem(p.keys["fit"], p.y, p.st, ms, label=p.cond.folder), ms


def mfvi_evaluated(p: Prepared, ms: mfvi.MFVISettings, res: FitResult) -> MethodResult:
    """A mean-field VI fit evaluated; new persons are scored by a refit of their q(a)."""
    k, settings = p.keys, ms.train
    ability = mfvi.abilities(res.params)
    draws, theta = mfvi.ability_draws(res.params, k["pred"], p.settings.posterior_draws)
    probs = vibo_programs.predictive_from_draws(draws, theta, p.st, p.rows, p.cols)
    t0 = time.perf_counter()
    mfvi.score_new(
        res.params,
        p.st,
        ms,
        k["new"],
        p.y_hold,
        TrainSettings(learning_rate=settings.learning_rate, max_steps=settings.max_steps, progress_every=0),
    )
    timing = {"score_new_seconds": time.perf_counter() - t0}  # a refit of the new persons' q(a)
    items = item_estimates(p.st, vibo_items.item_posterior(res.params, p.st))
    t0 = time.perf_counter()
    log_ratios = mfvi.log_ratios(res.params, p.st, ms, psis_key(p), p.y, n_draws=vibo_programs.KHAT_DRAWS)
    timing["psis_seconds"] = time.perf_counter() - t0
    entry = psis.record(log_ratios, p.cond.folder, KHAT_CONSEQUENCE)
    fitted = _driver_fitted(res, settings, p.settings.mfvi, items, ability, probs, timing, entry)
    return evaluated(p, _with_corrected_items(p, res.params, fitted, timing))


# what a k-hat above the limit means for a variational fit's tables (``inference.variational.psis.record``)
KHAT_CONSEQUENCE = "do not read its item and ability sds (nor interval coverage) as calibrated"


# what the item values of VIBO and mean-field VI in the tables are (the records say it)
CORRECTED = "laplace_at_marginal_mode"
UNCORRECTED = "variational"


def corrected_items(p: Prepared, params: dict) -> tuple[dict | None, dict]:
    """A variational fit's item values corrected by a Laplace approximation of the items'
    marginal posterior (``inference.marginal.irt2pl_laplace``: abilities integrated out, Newton's method
    from the fit's item means to the mode), and the record's ``item_uncertainty`` entry.

    The approximations' own item sds are too narrow and their means biased (the Performance
    page's ``vi_item_calibration`` gives the coverage of their intervals). Not corrected, with the
    reason in the entry: more than one ability dimension, a fit above ``MML_SE_MAX_WORK``
    person x item-value products (the curvature costs a pass over the data per item value), or
    a curvature that is not positive definite.

    Parameters
    ----------
    p : Prepared
        The replication.
    params : dict
        The fit's parameters; ``params["items"]["loc"]`` are its unconstrained item means.

    Returns
    -------
    tuple
        ``(items or None, entry)``: the corrected items in ``item_estimates`` layout (None when
        not corrected) and the entry (``method``, with Newton's steps, convergence and the
        curvature's condition number, or the reason).
    """
    n_values = sum(int(np.prod(shape)) for shape in p.st.item_shapes().values())
    if p.st.n_factors != 1:
        return None, {"method": UNCORRECTED, "reason": f"not corrected: {p.st.n_factors} ability dimensions"}
    if p.y.shape[0] * n_values > MML_SE_MAX_WORK:
        reason = f"not corrected: {p.y.shape[0]} persons x {n_values} item values is above {MML_SE_MAX_WORK:.0e}"
        return None, {"method": UNCORRECTED, "reason": reason}
    try:
        post = irt2pl_laplace.item_posterior(p.y, p.st, params["items"]["loc"], p.priors, seed=int(p.fields["seed"]))
    except ValueError as err:
        log.warning("%s: item sds left as the approximation's own (too narrow): %s", p.cond.folder, err)
        return None, {"method": UNCORRECTED, "reason": f"not corrected: {err}"}
    if not post.converged:
        log.warning("%s: Newton's method did not reach the items' marginal mode; sds at its last point", p.cond.folder)
    entry = {
        "method": CORRECTED,
        "newton_steps": post.newton_steps,
        "converged": post.converged,
        "condition_number": post.condition_number,
    }
    return item_estimates(p.st, post.summary), entry


def _with_corrected_items(p: Prepared, params: dict, fitted: Fitted, timing: dict) -> Fitted:
    """``fitted`` with its tables' item values corrected (``corrected_items``, timed) and its
    record saying what they are."""
    t0 = time.perf_counter()
    items, entry = corrected_items(p, params)
    timing["item_correction_seconds"] = time.perf_counter() - t0
    make_record = fitted.make_record
    fitted.make_record = lambda fields: make_record({**fields, "item_uncertainty": entry})
    fitted.corrected_items = items
    return fitted


def psis_key(p: Prepared):
    """The key of a variational fit's PSIS draws: the predictive draws' key, folded (the five
    keys of the fit seed stay as they were)."""
    return jax.random.fold_in(p.keys["pred"], 1)


def _driver_fitted(
    res: FitResult, settings: TrainSettings, cfg: dict, items, ability, probs, timing, psis_entry: dict
) -> Fitted:
    """A training-driver fit for the evaluation: its record (``records.fit_record``, with the
    block for a fit of a block, and the PSIS k-hat of the approximation, ``psis_entry``), the
    training and method settings, the losses."""

    def make_record(f):
        fields = {**f, "psis": psis_entry}
        return records.fit_record(res, fields, window=settings.window, timing=timing)

    settings_record = {"training": asdict(settings), "method": cfg}
    return Fitted(items, ability, probs, make_record, settings_record, records.loss_table(res.losses), timing=timing)


# the methods of the training driver: their fit for the driver, and its evaluation
DRIVER: dict[str, tuple[Callable, Callable]] = {
    "vibo_one_prior": (vibo_problem, vibo_evaluated),
    "vibo_prior_per_missing": (vibo_problem, vibo_evaluated),
    "vibo_seed": (vibo_problem, vibo_evaluated),
    "vibo_average_seed": (vibo_problem, vibo_evaluated),
    "mfvi": (mfvi_problem, mfvi_evaluated),
}


def fit_vibo(p: Prepared) -> MethodResult:
    """VIBO (the amortized encoder), the condition's missing-data variant; new persons are
    scored by the encoder alone, no refit."""
    problem, vs = vibo_problem(p)
    return vibo_evaluated(p, vs, keep_last_good(train_problem, problem))


def fit_mfvi(p: Prepared) -> MethodResult:
    """Per-person mean-field VI; new persons are scored by a refit of their q(a)."""
    problem, ms = mfvi_problem(p)
    return mfvi_evaluated(p, ms, keep_last_good(train_problem, problem))


METHODS: dict[str, Callable[[Prepared], MethodResult]] = {
    "vibo_one_prior": fit_vibo,
    "vibo_prior_per_missing": fit_vibo,
    "vibo_seed": fit_vibo,
    "vibo_average_seed": fit_vibo,
    "mfvi": fit_mfvi,
    "mml": fit_mml,
    "nuts": fit_nuts,
}


def _known(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"vibo method '{method}' is not known; expected one of {list(METHOD_NAMES)}")


def fit(
    train, hidden: pd.DataFrame, holdout, truth: pd.DataFrame, cond: Condition, *, settings: Settings, seed: int
) -> MethodResult:
    """One method (``cond.method``) on one replication's data (``data.condition_data``),
    evaluated (``evaluation.evaluated``). The record's ``dataset`` is the design's data set on
    real data."""
    _known(cond.method)
    return METHODS[cond.method](prepare(Replication(train, hidden, holdout, truth, cond, seed), settings))


def fit_block(reps: list[Replication], settings: Settings, *, n_samples: int | None = None) -> list[MethodResult]:
    """The replications of one condition (design, missingness, method) fitted together, then
    each evaluated as ``fit`` evaluates a single fit (see the module docstring).

    Parameters
    ----------
    reps : list of Replication
        The block's replications, all of one condition.
    settings : Settings
        The study's settings.
    n_samples : int, optional
        VIBO's samples per gradient other than the method's (``vibo_problem``; a diagnostic's).

    Returns
    -------
    list of MethodResult
        One per replication, in order. The records of VIBO and mean-field VI have the block
        (``records.fit_record``: its size, the fit's position, the step it left the block);
        the records of MML and NUTS, fitted one after the other, are those of single fits
        (no ``block``).

    Raises
    ------
    ValueError
        An unknown method, replications of more than one condition, more of them than the
        design's ``block_size``, or ``n_samples`` for a method that is not VIBO.
    MemoryError
        A block whose program would not fit in memory, naming the design's ``block_size``.
    """
    if not reps:
        raise ValueError("a block needs at least one replication")
    cond = reps[0].cond
    _known(cond.method)
    for rep in reps:
        if (rep.cond.design, rep.cond.missing, rep.cond.method) != (cond.design, cond.missing, cond.method):
            raise ValueError(f"a block holds one condition: {rep.cond.folder} is not of {cond.design}/{cond.missing}")
    if len(reps) > settings.block_size(cond.design):
        key = BLOCK_KEY.format(design=cond.design)
        raise ValueError(
            f"a block of {len(reps)} replications is larger than {key} ({settings.block_size(cond.design)})"
        )
    if n_samples is not None and DRIVER.get(cond.method, (None,))[0] is not vibo_problem:
        raise ValueError(f"n_samples is VIBO's samples per gradient: {cond.method} draws none")
    prepared = [prepare(rep, settings) for rep in reps]
    if cond.method not in DRIVER:  # MML and NUTS: one replication after the other
        return [METHODS[cond.method](p) for p in prepared]
    build, finish = DRIVER[cond.method]
    options = {} if n_samples is None else {"n_samples": n_samples}
    problems, configs = zip(*(build(p, **options) for p in prepared), strict=True)
    label = f"{cond.design}/{cond.missing}/{cond.method} reps {reps[0].cond.rep}-{reps[-1].cond.rep}"
    results = bulk.train_block(list(problems), label=label, setting=BLOCK_KEY.format(design=cond.design))
    return [finish(p, c, res) for p, c, res in zip(prepared, configs, results, strict=True)]
