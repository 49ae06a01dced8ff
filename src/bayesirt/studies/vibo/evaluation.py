"""The vibo study's common evaluation of a fit, the same for every method: recovery and
calibration against the truth (left out on real data, which has none), missing-response
prediction on the scored cells, and the held-out log-likelihood of the new persons (one Laplace
importance-sampling evaluator at each method's item point estimates, its compiled programs
shared by every fit of one model structure in a process: a block's replications compile them
once). ``Prepared`` is one replication's data ready for any method, ``Fitted`` what a method
gives before the evaluation (``methods``)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import tables
from bayesirt.evaluation import person_loglik
from bayesirt.evaluation.recovery import metrics
from bayesirt.models import irt2pl
from bayesirt.studies.base import MethodResult
from bayesirt.studies.vibo.conditions import Condition
from bayesirt.studies.vibo.settings import Settings
from bayesirt.studies.vibo.tables import AXES, KEYS

Z50, Z90 = 0.6744897501960817, 1.6448536269514722


@dataclass(frozen=True)
class Prepared:
    """One replication of a condition, ready for any method: the training and new persons'
    responses, the model's structure and priors, the scored cells, the truth (None on real
    data), the five keys of the fit seed and the record's fields so far."""

    cond: Condition
    settings: Settings
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
    draws and timings. ``corrected_items`` (same layout), where given, are what the tables
    report as the items' mean and sd (a variational fit's Laplace correction); ``items`` then
    stay the method's own, in ``vi_mean`` / ``vi_sd``, and in everything the method predicts."""

    items: dict
    ability: tuple
    probs: object
    make_record: Callable[[dict], dict]
    settings: dict | None = None
    losses: pd.DataFrame | None = None
    idata: object | None = None
    timing: dict = field(default_factory=dict)  # the record's timing: evaluation adds eval_seconds
    corrected_items: dict | None = None


def evaluated(p: Prepared, f: Fitted) -> MethodResult:
    """A method's fit with the common evaluation in its record: recovery and calibration (where
    there is a truth), scores of the scored cells and the held-out log-likelihood."""
    ability = (np.asarray(f.ability[0])[:, 0], np.asarray(f.ability[1])[:, 0])
    est = estimates_table(f.items, ability, p.truth, p.st)
    if f.corrected_items is not None:
        reported = estimates_table(f.corrected_items, ability, p.truth, p.st)
        on_items = (est.parameter != "ability").to_numpy()
        est = reported.assign(
            vi_mean=est["mean"].where(on_items).to_numpy(), vi_sd=est["sd"].where(on_items).to_numpy()
        )
    fields = {**p.fields, **({"settings": f.settings} if f.settings is not None else {})}
    t0 = time.perf_counter()
    fields["evaluation"] = {
        **recovery(est),
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


@functools.lru_cache(maxsize=32)
def _log_lik(st: irt2pl.Structure):
    """``log_lik(point, y, theta)`` of a structure, one function per structure: the held-out
    evaluator keeps its compiled programs per function (``person_loglik``)."""
    return lambda point, y, theta: irt2pl.log_likelihood(dict(point, ability=theta), y, st)


def heldout(key, st, items: dict, y_hold, n_samples: int) -> float:
    """Mean log p(r_i) per new person at the method's item point estimates (``point_items``):
    one Laplace importance-sampling evaluator for every method and model, whose compiled
    programs take the point estimates as an argument (shared by the fits of one structure)."""
    point = point_items(st, items)
    ll = person_loglik.laplace_importance_loglik(key, _log_lik(st), y_hold, 1, n_samples=n_samples, params=point)
    return float(ll.mean())


def item_estimates(st, posterior: dict) -> dict:
    """The study's item blocks from ``vibo_items.item_posterior`` (or any dict of (mean, sd) pairs of
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


def recovery(est: pd.DataFrame) -> dict:
    """Recovery against the truth and calibration of the ability intervals, and of the
    discriminations' 90% intervals (mean +- 1.645 sd; NaN where a method reports no item sd);
    nothing for a fit of real data (no ``true`` column: there is no truth to recover). The
    RMSEs are of the method's own estimates (``vi_mean`` where the table's are corrected), the
    coverage of the intervals the table reports."""
    out = {}
    if "true" not in est:
        return out
    own = est["vi_mean"].fillna(est["mean"]) if "vi_mean" in est else est["mean"]
    for par in ("discrimination", "difficulty", "cut", "ability"):
        d = est[est.parameter == par]
        if d.empty:
            continue
        m = metrics(own[d.index], d["true"])
        out[f"{par}_rmse"], out[f"{par}_corr"] = m["rmse"], m["corr"]
    ab = est[est.parameter == "ability"]
    err, sd = np.abs(ab["mean"] - ab["true"]).to_numpy(), ab["sd"].to_numpy()
    out["coverage_50"] = float(np.mean(err < Z50 * sd))
    out["coverage_90"] = float(np.mean(err < Z90 * sd))
    disc = est[est.parameter == "discrimination"]
    sd = disc["sd"].to_numpy(float)
    # a 1PL's discriminations are fixed (sd 0) and point estimates have none: nothing to cover
    known = np.isfinite(sd) & (sd > 0)
    err = np.abs(disc["mean"] - disc["true"]).to_numpy(float)[known]
    out["discrimination_coverage_90"] = float(np.mean(err < Z90 * sd[known])) if known.any() else float("nan")
    return out
