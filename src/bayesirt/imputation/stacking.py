"""Pairwise ordinal stacking imputation model (seed 000, section 4.2).

For every item i (the target) the model holds I candidate predictive models of Y_i:

* model (i, i): an intercept-only ordinal (cumulative-logit) model, and
* model (i, j), j != i: an ordinal logistic regression of Y_i on the single item j,

each fitted Bayesianly on the persons who answered both items. For a missing cell (n, i) the
imputation PMF is the stacked mixture of the models usable for that person (the intercept-only
model and every (i, j) whose predictor Y_nj is observed), with the stacking weights of the
usable models renormalised to sum to one.

Modelling choices
-----------------
* **Predictor coding: numeric by default.** Y_j enters as one standardised number (one slope),
  ``predictor="onehot"`` gives one coefficient per non-baseline category instead. Numeric is
  the default because answers to the items of one questionnaire relate monotonically (a
  reverse-keyed pair gets a negative slope); a single slope is estimated from thousands of
  pairs with no weakly-identified coefficients for rarely used categories, which keeps the
  PSIS-LOO Pareto k-hat of every sub-model low; the flexibility the one slope lacks is what
  stacking over 21 predictors provides. The one-hot coding is kept for comparison.
* **PSIS-LOO from ArviZ.** The pointwise log-likelihood draws are identical for every person in
  the same contingency cell, and so is the leave-one-out predictive density of any one of
  them; ArviZ's ``az.loo(pointwise=True)`` is therefore run once on the non-empty cells of
  all sub-models, and each person gets the value of his cell.

The sub-models themselves (their ordinal likelihood, sufficient statistics and Laplace fit) are
in ``imputation.stacking_submodels``, the stacking weights in ``imputation.stacking_weights``,
the settings (``StackingSettings``, read by both) in ``imputation.stacking_settings``; this
module holds the fitted model, the fit that runs those steps and PSIS-LOO in between, the
imputation PMFs and their scores, and the model's file.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.imputation.stacking_settings import StackingSettings
from bayesirt.imputation.stacking_submodels import contingency_tables, design_matrices, fit_all, initial_parameters
from bayesirt.imputation.stacking_weights import stacking_weights

log = logging.getLogger("bayesirt")

FORMAT = "bayesirt.stacking_imputation/1"


class StackingModel(NamedTuple):
    """A fitted stacking model. Axis conventions: t = target item, j = predictor slot (j == t is
    the intercept-only model), a = predictor category, k = target category."""

    item_names: list
    n_categories: np.ndarray  # (I,)
    item_types: list  # "binary" or "ordinal" per item
    pmf_tables: np.ndarray  # (I, I, Kmax, Kmax) posterior predictive P(Y_t = k | Y_j = a)
    weights: np.ndarray  # (I, I) stacking weights, rows sum to 1
    elpd_loo: np.ndarray  # (I, I) PSIS-LOO elpd of each sub-model on its own pairs
    pareto_k: np.ndarray  # (I, I) largest PSIS-LOO Pareto k-hat over the sub-model's cells
    laplace_khat: np.ndarray  # (I, I) Pareto k-hat of posterior/Laplace importance weights
    converged: np.ndarray  # (I, I) bool
    n_pairs: np.ndarray  # (I, I) persons with both items observed (target only for j == t)
    settings: dict
    fitted: bool
    info: dict  # timings and sizes


def fit(rm: io.ResponseMatrix, settings: StackingSettings = StackingSettings()) -> StackingModel:
    """Fit all sub-models, their PSIS-LOO, and the stacking weights on the observed responses."""
    # here, not at the top: importing ArviZ costs seconds, which the jobs that only load a fitted
    # model and impute with it need not spend
    import arviz as az

    t_start = time.perf_counter()
    y = np.asarray(rm.responses)
    n_cat = rm.n_categories
    n_items = rm.n_items
    if n_items < 2:
        raise ValueError(f"stacking imputation needs at least 2 items, got {n_items}")
    for i, it in enumerate(rm.items):
        if not (y[:, i] >= 0).any():
            raise ValueError(f"stacking imputation: item '{it.name}' has no observed response")
    counts = contingency_tables(y, n_cat)
    design = design_matrices(y, n_cat, settings.predictor)
    n_slopes = design.shape[-1]
    u0 = initial_parameters(counts, n_slopes)

    t0 = time.perf_counter()
    fit_fn = jax.jit(lambda k, u, c, d, nc: fit_all(k, u, c, d, nc, n_slopes, settings))
    converged, tables, log_w, pmf = fit_fn(
        jax.random.key(settings.seed), jnp.asarray(u0), jnp.asarray(counts), jnp.asarray(design), jnp.asarray(n_cat)
    )
    tables = np.asarray(tables)  # (I, I, S, Ka, K)
    fit_seconds = time.perf_counter() - t0

    # Laplace quality: PSIS k-hat of posterior/Laplace importance weights per sub-model.
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, laplace_khat = az.psislw(np.asarray(log_w, np.float64).reshape(n_items * n_items, -1), reff=1.0)
    laplace_khat = np.asarray(laplace_khat).reshape(n_items, n_items)

    # PSIS-LOO on the non-empty contingency cells of all sub-models at once (see module doc).
    cells = counts > 0  # (I, I, Ka, K)
    cell_ll = np.moveaxis(tables, 2, -1)[cells]  # (n_cells, S)
    idata = az.from_dict(log_likelihood={"cell": cell_ll.T[None].astype(np.float64)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = az.loo(idata, pointwise=True, reff=1.0)
    loo_cell = np.full(counts.shape, np.nan)
    loo_cell[cells] = np.asarray(loo.loo_i)
    k_cell = np.full(counts.shape, -np.inf)
    k_cell[cells] = np.asarray(loo.pareto_k)
    elpd = np.where(cells, counts * np.nan_to_num(loo_cell), 0.0).sum((-2, -1))
    pareto_k = k_cell.max((-2, -1))
    loo_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    weights = stacking_weights(y, loo_cell, settings.ridge)
    stack_seconds = time.perf_counter() - t0

    n_pairs = counts.sum((-2, -1))
    types = ["binary" if k == 2 else "ordinal" for k in n_cat]
    info = {
        "n_persons": rm.n_persons,
        "n_items": n_items,
        "n_submodels": n_items * n_items,
        "n_pairwise": n_items * (n_items - 1),
        "n_intercept_only": n_items,
        "n_loo_cells": int(cells.sum()),
        "fit_seconds": fit_seconds,
        "loo_seconds": loo_seconds,
        "stacking_seconds": stack_seconds,
        "total_seconds": time.perf_counter() - t_start,
    }
    log.info(
        "stacking imputation: %d sub-models, %d converged, fit %.1f s, loo %.1f s, weights %.1f s",
        n_items * n_items,
        int(np.asarray(converged).sum()),
        fit_seconds,
        loo_seconds,
        stack_seconds,
    )
    return StackingModel(
        [it.name for it in rm.items],
        np.asarray(n_cat),
        types,
        np.asarray(pmf, np.float64),
        weights,
        elpd,
        pareto_k,
        laplace_khat,
        np.asarray(converged),
        n_pairs,
        asdict(settings),
        True,
        info,
    )


# ----------------------------------------------------------------------------- prediction


def predict_pmf(model: StackingModel, responses: np.ndarray, persons=None, items=None) -> np.ndarray:
    """Imputation PMFs for cells (persons[c], items[c]): (C, Kmax).

    By default all missing cells of ``responses`` (in row-major order, as ``np.nonzero``).
    Each PMF mixes the posterior predictive PMFs of the models usable for that person
    (intercept-only, and every predictor the person answered), weights renormalised.
    """
    y = np.asarray(responses)
    if y.shape[1] != len(model.item_names):
        raise ValueError(f"responses have {y.shape[1]} items, the imputation model {len(model.item_names)}")
    if persons is None:
        persons, items = np.nonzero(y < 0)
    persons, items = np.asarray(persons), np.asarray(items)
    n_items = y.shape[1]
    rows = y[persons]  # (C, I)
    usable = (rows >= 0) | (np.arange(n_items)[None] == items[:, None])  # (C, J)
    a = np.where(np.arange(n_items)[None] == items[:, None], 0, np.clip(rows, 0, None))
    tables = model.pmf_tables[items[:, None], np.arange(n_items)[None], a]  # (C, J, K)
    w = model.weights[items] * usable  # (C, J)
    w = w / w.sum(-1, keepdims=True)
    pmf = np.einsum("cj,cjk->ck", w, tables)
    return pmf / pmf.sum(-1, keepdims=True)


def imputation_accuracy(
    model: StackingModel, responses_missing: np.ndarray, truth: np.ndarray, hidden: np.ndarray
) -> dict:
    """Log score and accuracy of the PMF's mode on the cells hidden by injection."""
    persons, items = np.nonzero(hidden)
    if persons.size == 0:
        raise ValueError("imputation_accuracy: the hidden mask marks no cell")
    true = np.asarray(truth)[persons, items]
    if (true < 0).any():
        raise ValueError("imputation_accuracy: a hidden cell has no true response")
    pmf = predict_pmf(model, responses_missing, persons, items)
    p_true = pmf[np.arange(true.size), true]
    baseline = model.pmf_tables[items, items, 0]  # intercept-only (marginal) model
    b_true = baseline[np.arange(true.size), true]
    return {
        "n_cells": int(true.size),
        "log_score": float(np.mean(np.log(np.maximum(p_true, 1e-300)))),
        "accuracy": float(np.mean(pmf.argmax(-1) == true)),
        "within_one": float(np.mean(np.abs(pmf.argmax(-1) - true) <= 1)),
        "expected_abs_error": float(np.mean(np.abs(pmf @ np.arange(pmf.shape[1]) - true))),
        "marginal_log_score": float(np.mean(np.log(np.maximum(b_true, 1e-300)))),
        "marginal_accuracy": float(np.mean(baseline.argmax(-1) == true)),
    }


def summary_table(model: StackingModel):
    """Tidy table, one row per sub-model: target, predictor, weight, elpd_loo, k-hats, converged."""
    names = model.item_names
    n = len(names)
    t, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return pd.DataFrame(
        {
            "target": [names[i] for i in t.ravel()],
            "predictor": ["(intercept)" if a == b else names[b] for a, b in zip(t.ravel(), j.ravel())],
            "weight": model.weights.ravel(),
            "elpd_loo": model.elpd_loo.ravel(),
            "pareto_k": model.pareto_k.ravel(),
            "laplace_khat": model.laplace_khat.ravel(),
            "converged": model.converged.ravel(),
            "n_pairs": model.n_pairs.ravel().astype(int),
        }
    )


# ----------------------------------------------------------------------------- files


def save(model: StackingModel, path) -> None:
    """One .npz file (arrays) with the metadata as a JSON string inside; written atomically."""
    path = Path(path)
    meta = {
        "format": FORMAT,
        "item_names": model.item_names,
        "item_types": model.item_types,
        "settings": model.settings,
        "fitted": model.fitted,
        # timings vary run to run; leaving them out keeps the file identical on reruns
        "info": {k: v for k, v in model.info.items() if not k.endswith("_seconds")},
    }
    io.write_npz(
        path,
        meta=np.array(json.dumps(meta, default=io._json_default)),
        n_categories=model.n_categories,
        pmf_tables=model.pmf_tables,
        weights=model.weights,
        elpd_loo=model.elpd_loo,
        pareto_k=model.pareto_k,
        laplace_khat=model.laplace_khat,
        converged=model.converged,
        n_pairs=model.n_pairs,
    )


def load(path) -> StackingModel:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: imputation model not found")
    try:
        z = np.load(path, allow_pickle=False)
        meta = json.loads(str(z["meta"]))
    except Exception as err:  # any unreadable file gets the same clear message
        raise io.DataFormatError(f"{path}: not a readable stacking imputation model ({err})") from err
    if meta.get("format") != FORMAT:
        raise io.DataFormatError(f"{path}: format is {meta.get('format')!r}, expected {FORMAT!r}")
    return StackingModel(
        meta["item_names"],
        z["n_categories"],
        meta["item_types"],
        z["pmf_tables"],
        z["weights"],
        z["elpd_loo"],
        z["pareto_k"],
        z["laplace_khat"],
        z["converged"].astype(bool),
        z["n_pairs"],
        meta["settings"],
        bool(meta["fitted"]),
        meta["info"],
    )
