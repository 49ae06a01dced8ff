"""The vibo study's methods, one short function each (``METHODS``), and ``fit``: one method on
one condition, evaluated alike for every method: recovery and calibration against the truth,
missing-response prediction on the scored cells, held-out log-likelihood of the new persons
(one Laplace importance-sampling evaluator at each method's item point estimates) and the time
to score the new persons. On real data (an empty truth) recovery and calibration are left out.

Every method of a condition shares the data and the fit seed; the seed is split into the same
five keys for each (fit, encoder, predictive draws, held-out evaluator, new persons)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import io, records, tables
from bayesirt.evaluation import person_loglik
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference import mfvi, mml, nuts, vibo
from bayesirt.inference.sampling import SamplerSettings
from bayesirt.inference.training import TrainSettings
from bayesirt.models import irt2pl
from bayesirt.studies.base import MethodResult
from bayesirt.studies.vibo.conditions import METHODS as METHOD_NAMES
from bayesirt.studies.vibo.conditions import STUDY, VIBO_VARIANTS, Condition
from bayesirt.studies.vibo.settings import StudySettings, design_model
from bayesirt.studies.vibo.tables import AXES, KEYS

Z50, Z90 = 0.6744897501960817, 1.6448536269514722


@dataclass(frozen=True)
class Problem:
    """One condition's data, ready for any method: the training and new persons' responses, the
    model's structure and priors, the scored cells, the truth (None on real data), the five keys
    of the fit seed and the record's fields so far."""

    cond: Condition
    settings: StudySettings
    y: np.ndarray
    y_hold: np.ndarray
    st: irt2pl.Structure
    priors: irt2pl.ItemPriors
    rows: np.ndarray
    cols: np.ndarray
    cell_truth: np.ndarray
    truth: pd.DataFrame | None
    keys: dict
    fields: dict


@dataclass
class Fitted:
    """What a method gives before the common evaluation: item estimates (``item_estimates``
    layout), abilities (mean, sd), the predictive probabilities of the scored cells, the record
    built from the fields (``make_record``), the method's settings for the record, losses,
    draws and timings."""

    items: dict
    ability: tuple
    probs: object
    make_record: Callable[[dict], dict]
    settings: dict | None = None
    losses: pd.DataFrame | None = None
    idata: object | None = None
    timing: dict = field(default_factory=dict)  # the record's timing: evaluation adds eval_seconds


def problem(
    train, hidden: pd.DataFrame, holdout, truth: pd.DataFrame, cond: Condition, settings: StudySettings, seed: int
) -> Problem:
    design = settings.design(cond.design)
    y, y_hold = np.asarray(train.responses), np.asarray(holdout.responses)
    n, j = y.shape
    model = design_model(design)
    st = irt2pl.Structure(model, j, 1, n_categories=tuple(int(c) for c in train.n_categories) if model == "grm" else ())
    priors = irt2pl.ItemPriors(**settings.priors)  # keys checked by the config schema
    rows, cols, cell_truth = (hidden[c].to_numpy() for c in ("person", "item", "response"))
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
    return Problem(cond, settings, y, y_hold, st, priors, rows, cols, cell_truth, truth, keys, fields)


# ----------------------------------------------------------------------------------- methods


def train_settings(training: dict, method_cfg: dict, n_persons: int) -> TrainSettings:
    """The study's training settings with the method's own learning rate, minibatches capped at
    the number of persons."""
    t = {**training, "learning_rate": method_cfg["learning_rate"]}
    if t["batch_size"] is not None:
        t["batch_size"] = min(int(t["batch_size"]), n_persons)
    return TrainSettings(**t)


def fit_vibo(p: Problem) -> MethodResult:
    """VIBO (the amortized encoder), the condition's missing-data variant; new persons are
    scored by the encoder alone, no refit."""
    cfg, k = p.settings.vibo, p.keys
    settings = train_settings(p.settings.training, cfg, p.y.shape[0])
    vs = vibo.VIBOSettings(p.priors, missing=VIBO_VARIANTS[p.cond.method], hidden=tuple(cfg["hidden"]), train=settings)
    res = vibo.fit(k["fit"], p.y, p.st, vs, label=p.cond.folder)
    ability = vibo.encode(res.params, p.st, vs, k["enc"], p.y)
    probs = vibo.predictive_probs(
        res.params, p.st, vs, k["pred"], p.y, p.rows, p.cols, n_draws=p.settings.posterior_draws
    )
    vibo.encode(res.params, p.st, vs, k["new"], p.y_hold)  # compile the encoder for this shape before timing it
    t0 = time.perf_counter()
    vibo.encode(res.params, p.st, vs, k["new"], p.y_hold)
    timing = {"score_new_seconds": time.perf_counter() - t0}  # the encoder alone, no refit
    items = item_estimates(p.st, vibo.item_posterior(res.params, p.st))
    return evaluated(
        p,
        Fitted(
            items,
            ability,
            probs,
            _train_record(res, settings, timing),
            {"training": asdict(settings), "method": cfg},
            records.loss_table(res.losses),
            timing=timing,
        ),
    )


def fit_mfvi(p: Problem) -> MethodResult:
    """Per-person mean-field VI; new persons are scored by a refit of their q(a)."""
    cfg, k = p.settings.mfvi, p.keys
    settings = train_settings(p.settings.training, cfg, p.y.shape[0])
    ms = mfvi.MFVISettings(p.priors, train=settings)
    res = mfvi.fit(k["fit"], p.y, p.st, ms, label=p.cond.folder)
    ability = mfvi.abilities(res.params)
    draws, theta = mfvi.ability_draws(res.params, k["pred"], p.settings.posterior_draws)
    probs = vibo.predictive_from_draws(draws, theta, p.st, p.rows, p.cols)
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
    items = item_estimates(p.st, vibo.item_posterior(res.params, p.st))
    return evaluated(
        p,
        Fitted(
            items,
            ability,
            probs,
            _train_record(res, settings, timing),
            {"training": asdict(settings), "method": cfg},
            records.loss_table(res.losses),
            timing=timing,
        ),
    )


def _train_record(res, settings: TrainSettings, timing: dict) -> Callable[[dict], dict]:
    return lambda f: records.fit_record(res, f, window=settings.window, timing=timing)


def fit_mml(p: Problem) -> MethodResult:
    """Marginal ML by quadrature with EAP abilities (the point-estimate anchor): 41 nodes for
    the fit, 61 for the person posteriors (with many items a posterior is narrow); the
    unidimensional GRM by the same quadrature (a 2PL item is a GRM item with 2 categories)."""
    y, j = p.y, p.st.n_items
    cats = list(p.st.categories) if p.st.model == "grm" else 2
    res = mml.fit(p.keys["fit"], y, mml.Structure(cats), mml.MMLSettings(n_nodes=41))
    none = np.full(res.cuts.shape, np.nan)
    items = {"discrimination": (res.discrimination, np.full(j, np.nan))}
    items.update({"cut": (res.cuts, none)} if p.st.model == "grm" else {"difficulty": (res.cuts[:, 0], none[:, 0])})
    _, ab_mean, ab_sd = mml.posterior(y, res.discrimination, res.cuts, cats, n_nodes=61)
    probs = mml.predictive_probs(y, res.discrimination, res.cuts, p.rows, p.cols, cats, n_nodes=61)
    t0 = time.perf_counter()
    mml.posterior(p.y_hold, res.discrimination, res.cuts, cats, n_nodes=61)
    timing = {"score_new_seconds": time.perf_counter() - t0}  # EAP of the new persons

    def make_record(f):
        return {
            **f,
            "steps": res.iterations,
            "converged": res.converged,
            "convergence_reason": res.reason,
            "diverged_at_step": None,
            "final_loss": res.mean_nll,
            "versions": io.library_versions(),
            "device": io.device_info(),
            "timing": {"wall_seconds": res.wall_seconds, "compile_seconds": 0.0, **timing},
        }

    return evaluated(
        p,
        Fitted(items, (ab_mean, ab_sd), probs, make_record, losses=records.loss_table(res.loss_history), timing=timing),
    )


def fit_nuts(p: Problem) -> MethodResult:
    """NUTS on the joint posterior of items and abilities (the reference posterior)."""
    ns, st, y = p.settings.nuts, p.st, p.y
    settings = SamplerSettings(
        n_chains=int(ns["n_chains"]), n_warmup=int(ns["n_warmup"]), n_samples=int(ns["n_samples"]), progress_every=0
    )
    init = dict(irt2pl.initial_items(y, st), ability=jnp.zeros((y.shape[0], 1)))
    res = nuts.run_nuts(
        p.keys["fit"],
        lambda q, data: irt2pl.log_joint(q, data["y"], st, p.priors),
        init,
        settings,
        data={"y": jnp.asarray(y)},
        label=p.cond.folder,
    )
    post = res.idata.posterior
    theta = post["ability"].values  # chain, draw, person, 1
    flat = lambda v: jnp.asarray(v.reshape((-1,) + v.shape[2:]))
    draw_items = {k: flat(post[k].values) for k in irt2pl.initial_items(y, st)}
    constrained = jax.vmap(lambda d: irt2pl.constrain(d, st))(draw_items)  # every draw, constrained
    pairs = {k: (np.asarray(v).mean(0), np.asarray(v).std(0)) for k, v in constrained.items()}
    block = "cuts" if st.model == "grm" else "difficulty"
    items = item_estimates(st, {"discrimination": pairs["discrimination"], block: pairs[block]})
    probs = vibo.predictive_from_draws(draw_items, flat(theta), st, p.rows, p.cols)
    return evaluated(
        p,
        Fitted(
            items,
            (theta.mean((0, 1)), theta.std((0, 1))),
            probs,
            lambda f: records.sample_record(res, f),
            {"sampler": asdict(settings)},
            idata=res.idata,
        ),
    )


METHODS: dict[str, Callable[[Problem], MethodResult]] = {
    "vibo_one_prior": fit_vibo,
    "vibo_prior_per_missing": fit_vibo,
    "mfvi": fit_mfvi,
    "mml": fit_mml,
    "nuts": fit_nuts,
}


def fit(
    train, hidden: pd.DataFrame, holdout, truth: pd.DataFrame, cond: Condition, *, settings: StudySettings, seed: int
) -> MethodResult:
    """One method (``cond.method``) on one condition's data (``data.condition_data``),
    evaluated (``evaluated``). The record's ``dataset`` is the design's data set on real data."""
    if cond.method not in METHODS:
        raise ValueError(f"vibo method '{cond.method}' is not known; expected one of {list(METHOD_NAMES)}")
    return METHODS[cond.method](problem(train, hidden, holdout, truth, cond, settings, seed))


# -------------------------------------------------------------------------------- evaluation


def evaluated(p: Problem, f: Fitted) -> MethodResult:
    """A method's fit with the common evaluation in its record: recovery and calibration (where
    there is a truth), scores of the scored cells and the held-out log-likelihood."""
    est = estimates_table(f.items, (np.asarray(f.ability[0])[:, 0], np.asarray(f.ability[1])[:, 0]), p.truth, p.st)
    fields = {**p.fields, **({"settings": f.settings} if f.settings is not None else {})}
    t0 = time.perf_counter()
    fields["evaluation"] = {
        **evaluation(est),
        **{f"hidden_{k}": v for k, v in scores(np.asarray(f.probs), p.cell_truth).items()},
        "heldout_loglik": heldout(p.keys["ll"], p.st, f.items, p.y_hold, p.settings.eval_samples),
    }
    f.timing["eval_seconds"] = time.perf_counter() - t0
    return MethodResult(f.make_record(fields), est, f.losses, f.idata)


def scores(probs, truth) -> dict:
    """Accuracy and mean log score of predicted category probabilities (cells, C)."""
    truth = np.asarray(truth, int)
    if truth.size == 0:
        return {"accuracy": float("nan"), "log_score": float("nan"), "n_cells": 0}
    p = np.clip(probs[np.arange(truth.size), truth], 1e-12, 1.0)
    return {
        "accuracy": float(np.mean(probs.argmax(1) == truth)),
        "log_score": float(np.mean(np.log(p))),
        "n_cells": int(truth.size),
    }


def point_items(st, items: dict) -> dict:
    """Unconstrained item values (``models.irt2pl``) at a method's point estimates of the
    constrained ones: ``items`` maps discrimination (J,) and difficulty (J,) or cut (J, C-1)
    to (mean, sd) pairs. Cuts of an item with fewer categories than the widest are filler:
    their gaps are kept positive, and the likelihood never reads them."""
    out = {}
    if st.model != "1pl":
        out["log_discrimination"] = jnp.log(jnp.asarray(items["discrimination"][0], jnp.float32)).reshape(st.n_items, 1)
    if st.model == "grm":
        cuts = np.asarray(items["cut"][0], np.float64).reshape(st.n_items, -1)
        out["first_cut"] = jnp.asarray(cuts[:, 0], jnp.float32)
        gaps = np.diff(cuts, axis=1)
        out["log_gaps"] = jnp.asarray(np.log(np.where(np.isfinite(gaps) & (gaps > 1e-6), gaps, 1e-6)), jnp.float32)
    else:
        out["difficulty"] = jnp.asarray(items["difficulty"][0], jnp.float32)
    return out


def heldout(key, st, items: dict, y_hold, n_samples: int) -> float:
    """Mean log p(r_i) per new person at the method's item point estimates (``point_items``):
    one Laplace importance-sampling evaluator for every method and model."""
    point = point_items(st, items)
    ll = lambda yb, t: irt2pl.log_lik(yb, t, point, st)
    return float(person_loglik.laplace_importance_loglik(key, ll, y_hold, 1, n_samples=n_samples).mean())


def item_estimates(st, posterior: dict) -> dict:
    """The study's item blocks from ``vibo.item_posterior`` (or any dict of (mean, sd) pairs of
    discrimination (J, K), difficulty (J,), cuts (J, C-1)): discrimination (J,) and difficulty
    or cut, each (mean, sd); a 1PL's discriminations are 1 with sd 0."""
    j = st.n_items
    disc = posterior.get("discrimination", (np.ones((j, 1)), np.zeros((j, 1))))
    out = {"discrimination": (np.asarray(disc[0])[:, 0], np.asarray(disc[1])[:, 0])}
    if st.model == "grm":
        out["cut"] = posterior["cuts"]
    else:
        out["difficulty"] = posterior["difficulty"]
    return out


def _category_mask(values, st) -> np.ndarray:
    """``values`` (J, C-1) as a masked array without the cuts an item does not have."""
    values = np.asarray(values, float)
    k = np.arange(values.shape[1])[None, :]
    return np.ma.masked_array(values, mask=k >= (st.categories[:, None] - 1))


def estimates_table(items: dict, ability, truth, st=None) -> pd.DataFrame:
    """Tidy estimates: parameter, item, person, category, mean, sd, true. ``items`` maps
    discrimination (J,) and difficulty (J,) or cut (J, C-1) to (mean, sd) pairs, ``ability`` is
    a (mean, sd) pair of (N,) arrays (sd NaN for point estimates). Cuts are numbered from 1,
    and an item's cuts beyond its own categories (``st``) are left out."""
    pairs = {**items, "ability": ability}
    blocks = []
    for which in (0, 1):
        arrays = {}
        for k, v in pairs.items():
            a = np.asarray(v[which], float)
            arrays[k] = _category_mask(a, st) if k == "cut" and st is not None else a
        blocks.append(
            tables.long_table(
                arrays, AXES, ["item", "person", "category"], "mean" if which == 0 else "sd", start={"category": 1}
            )
        )
    mean, sd = blocks
    mean["sd"] = sd["sd"].to_numpy()
    return tables.attach_truth(mean, truth, KEYS) if truth is not None else mean


def evaluation(est: pd.DataFrame) -> dict:
    """Recovery against the truth and calibration of the ability intervals; nothing for a fit
    of real data (no ``true`` column: there is no truth to recover)."""
    out = {}
    if "true" not in est:
        return out
    for par in ("discrimination", "difficulty", "cut", "ability"):
        d = est[est.parameter == par]
        if d.empty:
            continue
        m = metrics(d["mean"], d["true"])
        out[f"{par}_rmse"], out[f"{par}_corr"] = m["rmse"], m["corr"]
    ab = est[est.parameter == "ability"]
    err, sd = np.abs(ab["mean"] - ab["true"]).to_numpy(), ab["sd"].to_numpy()
    out["coverage_50"] = float(np.mean(err < Z50 * sd))
    out["coverage_90"] = float(np.mean(err < Z90 * sd))
    return out
