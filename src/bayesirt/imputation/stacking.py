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
* **Ordinal likelihood: the project's one GRM core.** A cumulative-logit regression is
  P(Y_i >= k | x) = sigmoid(x.beta - c_k) with increasing cuts c, which is exactly
  ``models.grm.category_log_probs`` with score x.beta; cuts are ``grm.ordered_cuts`` of a free
  first cut and softplus-positive increments.
* **Sufficient statistics.** Given the predictor's category a and the target's category b,
  every person in cell (a, b) has the same likelihood term, so each sub-model's likelihood is
  a weighted sum over its K_j x K_i contingency table. Fitting cost does not grow with persons.
* **Bayesian fit by a Laplace approximation** (a fast approach is required: 484 models for
  RWA within minutes on 2 cores): a damped Newton search for the posterior mode on the
  unconstrained scale, vectorised with ``vmap`` over all (i, j) and jitted, then Gaussian
  draws from N(mode, H^-1). With thousands of observations and at most 17 parameters the
  posterior is close to Gaussian; each sub-model reports whether Newton converged (remaining
  step < 1% of a posterior sd, Hessian positive definite) and the Pareto k-hat of importance
  weights posterior/Laplace (PSIS from ArviZ), which flags a poor Gaussian approximation.
* **PSIS-LOO from ArviZ.** The pointwise log-likelihood draws are identical for every person in
  the same contingency cell, and so is the leave-one-out predictive density of any one of
  them; ArviZ's ``az.loo(pointwise=True)`` is therefore run once on the non-empty cells of
  all sub-models, and each person gets the value of his cell.
* **Stacking weights** (Yao et al. 2018) maximise, per target item, the sum over the persons
  who answered it of log sum_m w_m p_loo(y_n | m) over the usable models m, with the weights
  renormalised over the usable models (the same mixture that imputes). Weights are a softmax
  of free logits; the objective (jax, with gradient) is maximised by scipy's L-BFGS-B with a
  tiny ridge on the logits that only removes the softmax's shift invariance.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt import io
from bayesirt.models import grm

log = logging.getLogger("bayesirt")

FORMAT = "bayesirt.stacking_imputation/1"


@dataclass(frozen=True)
class StackingSettings:
    predictor: str = "numeric"  # "numeric" (one slope) or "onehot" (one coefficient per category)
    slope_scale: float = 2.5  # Normal(0, s) prior on each regression coefficient
    first_cut_scale: float = 5.0  # Normal(0, s) prior on the first cut (logit scale)
    increment_scale: float = 3.0  # HalfNormal(s) prior on the gaps between cuts
    newton_steps: int = 40
    n_draws: int = 400  # Laplace draws per sub-model (pointwise log-likelihood, PSIS-LOO)
    ridge: float = 1e-6  # on the stacking logits (the objective is a per-person average per item)
    seed: int = 0


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


# ----------------------------------------------------------------------------- data summaries


def contingency_tables(responses: np.ndarray, n_categories: np.ndarray) -> np.ndarray:
    """counts[t, j, a, k] = persons with Y_j = a and Y_t = k, both observed; on the diagonal
    (j == t) the target's own marginal counts sit in row a = 0."""
    y = np.asarray(responses)
    kmax = int(np.max(n_categories))
    onehot = (y[..., None] == np.arange(kmax)).astype(np.float32)  # missing (-1) -> all zero
    n_items = y.shape[1]
    flat = onehot.reshape(y.shape[0], n_items * kmax)
    joint = (flat.T @ flat).reshape(n_items, kmax, n_items, kmax)  # [j, a, t, k]
    counts = np.transpose(joint, (2, 0, 1, 3)).copy()  # [t, j, a, k]
    marg = onehot.sum(0)  # (I, K)
    for t in range(n_items):
        counts[t, t] = 0.0
        counts[t, t, 0] = marg[t]
    return counts


def design_matrices(responses: np.ndarray, n_categories: np.ndarray, predictor: str) -> np.ndarray:
    """Predictor rows per (target, predictor slot, predictor category): (I, I, Kmax, P).

    numeric: the category standardised by the predictor item's observed mean and sd (P = 1);
    onehot: indicators of categories 1..Kmax-1 (category 0 is the baseline; P = Kmax - 1).
    The intercept-only slot (j == t) has an all-zero design.
    """
    y = np.asarray(responses)
    n_items = y.shape[1]
    kmax = int(np.max(n_categories))
    if predictor == "numeric":
        per_item = np.zeros((n_items, kmax, 1), np.float32)
        for j in range(n_items):
            obs = y[:, j][y[:, j] >= 0].astype(np.float64)
            mean = obs.mean() if obs.size else 0.0
            sd = obs.std() if obs.size > 1 and obs.std() > 0 else 1.0
            per_item[j, :, 0] = (np.arange(kmax) - mean) / sd
    elif predictor == "onehot":
        per_item = np.broadcast_to(np.eye(kmax, dtype=np.float32)[:, 1:], (n_items, kmax, kmax - 1)).copy()
    else:
        raise ValueError(f"stacking setting 'predictor' must be 'numeric' or 'onehot', got {predictor!r}")
    design = np.broadcast_to(per_item[None], (n_items,) + per_item.shape).copy()
    design[np.arange(n_items), np.arange(n_items)] = 0.0
    return design


def initial_parameters(counts: np.ndarray, n_slopes: int) -> np.ndarray:
    """Start each sub-model at slope 0 and the cuts of the target's marginal proportions."""
    n_items, _, _, kmax = counts.shape
    marg = counts[np.arange(n_items), np.arange(n_items), 0]  # (I, K)
    total = np.maximum(marg.sum(-1, keepdims=True), 1.0)
    at_least = np.clip(1.0 - np.cumsum(marg, -1)[:, :-1] / total, 0.5 / total, 1 - 0.5 / total)
    cuts = -np.log(at_least / (1 - at_least))  # P(Y >= k) = sigmoid(-c_k) at score 0
    cuts = np.maximum.accumulate(cuts, axis=-1)
    gaps = np.maximum(np.diff(cuts, axis=-1), 0.05)
    raw = np.log(np.expm1(gaps))  # softplus inverse
    u = np.concatenate([np.zeros((n_items, n_slopes)), cuts[:, :1], raw], axis=-1)
    return np.broadcast_to(u[:, None], (n_items, n_items, u.shape[-1])).astype(np.float32).copy()


# ----------------------------------------------------------------------------- one sub-model


def _unpack(u, n_slopes):
    beta = u[:n_slopes]
    cuts = grm.ordered_cuts(u[n_slopes], jax.nn.softplus(u[n_slopes + 1:]))
    return beta, cuts


def _table_log_probs(u, design, n_cat, n_slopes):
    """(Kmax, Kmax) log P(Y_t = k | predictor category a) of one sub-model."""
    beta, cuts = _unpack(u, n_slopes)
    score = design @ beta  # (Kmax,) one score per predictor category
    lp = grm.category_log_probs(score[:, None], cuts[None], n_cat[None])  # (Ka, 1, K)
    return lp[:, 0, :]


def _log_prior(u, n_slopes, s: StackingSettings):
    beta, first, raw = u[:n_slopes], u[n_slopes], u[n_slopes + 1:]
    gaps = jax.nn.softplus(raw)
    lp = -0.5 * jnp.sum((beta / s.slope_scale) ** 2) - 0.5 * (first / s.first_cut_scale) ** 2
    # HalfNormal on the gaps plus log|d softplus / d raw| = log sigmoid(raw)
    lp = lp - 0.5 * jnp.sum((gaps / s.increment_scale) ** 2) + jnp.sum(jax.nn.log_sigmoid(raw))
    return lp


def _log_posterior(u, counts, design, n_cat, n_slopes, s):
    lp = _table_log_probs(u, design, n_cat, n_slopes)
    loglik = jnp.sum(jnp.where(counts > 0, counts * jnp.where(counts > 0, lp, 0.0), 0.0))
    return loglik + _log_prior(u, n_slopes, s)


def _newton_fit(u0, counts, design, n_cat, n_slopes, s: StackingSettings):
    """Posterior mode by damped (eigenvalue-modified) Newton with a backtracking grid."""
    f = lambda u: -_log_posterior(u, counts, design, n_cat, n_slopes, s)
    grad = jax.grad(f)
    hess = jax.hessian(f)
    steps = 0.5 ** jnp.arange(10)

    def direction(u):
        g, h = grad(u), hess(u)
        lam, vec = jnp.linalg.eigh(h)
        lam = jnp.maximum(jnp.abs(lam), 1e-6 * jnp.max(jnp.abs(lam)) + 1e-8)
        return -(vec @ ((vec.T @ g) / lam))

    def body(u, _):
        d = direction(u)
        f0 = f(u)
        trial = jax.vmap(lambda t: f(u + t * d))(steps)
        # float32 cannot resolve changes of f below a few ulps of |f| (~1e-3 for 10^4
        # observations), which near the mode are larger than the remaining decrease: steps
        # within that resolution are accepted, where the Newton step is reliable anyway.
        ok = jnp.isfinite(trial) & (trial <= f0 + 8 * jnp.finfo(f0.dtype).eps * jnp.abs(f0))
        best = jnp.argmax(ok)  # first (largest) step that does not increase f
        u_new = jnp.where(jnp.any(ok), u + steps[best] * d, u)
        return u_new, None

    u, _ = jax.lax.scan(body, u0, None, length=s.newton_steps)
    g, h = grad(u), hess(u)
    lam, vec = jnp.linalg.eigh(h)
    pos_def = jnp.all(lam > 0)
    cov = vec @ jnp.diag(1.0 / jnp.maximum(lam, 1e-12)) @ vec.T
    step = cov @ g
    sd = jnp.sqrt(jnp.diag(cov))
    converged = pos_def & jnp.all(jnp.isfinite(u)) & (jnp.max(jnp.abs(step) / sd) < 0.01)
    return u, cov, converged


def _laplace_draws(key, u, cov, counts, design, n_cat, n_slopes, s: StackingSettings):
    """Draws from N(u, cov), their (Ka, K) log-probability tables, and log(p/q) weights."""
    dim = u.shape[0]
    chol = jnp.linalg.cholesky(cov + 1e-9 * jnp.eye(dim))
    z = jax.random.normal(key, (s.n_draws, dim), u.dtype)
    draws = u + z @ chol.T
    tables = jax.vmap(lambda v: _table_log_probs(v, design, n_cat, n_slopes))(draws)
    log_p = jax.vmap(lambda v: _log_posterior(v, counts, design, n_cat, n_slopes, s))(draws)
    log_q = -0.5 * jnp.sum(z ** 2, -1)  # up to a constant, which PSIS ignores
    return tables, log_p - log_q


# ----------------------------------------------------------------------------- fitting


def _fit_all(key, u0, counts, design, n_cat_target, n_slopes, s: StackingSettings):
    """vmap over all (target, predictor) pairs: mode, covariance, convergence, draw tables."""

    def one(k, u0_, c, d, nc):
        u, cov, conv = _newton_fit(u0_, c, d, nc, n_slopes, s)
        tables, log_w = _laplace_draws(k, u, cov, c, d, nc, n_slopes, s)
        pmf = jnp.exp(tables).mean(0)  # posterior predictive
        return conv, tables, log_w, pmf

    n_items = counts.shape[0]
    keys = jax.random.split(key, n_items * n_items).reshape(n_items, n_items)
    nc = jnp.broadcast_to(n_cat_target[:, None], (n_items, n_items))
    inner = jax.vmap(one)
    return jax.vmap(inner)(keys, u0, counts, design, nc)


def fit(rm: io.ResponseMatrix, settings: StackingSettings = StackingSettings()) -> StackingModel:
    """Fit all sub-models, their PSIS-LOO, and the stacking weights on the observed responses."""
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
    fit_fn = jax.jit(lambda k, u, c, d, nc: _fit_all(k, u, c, d, nc, n_slopes, settings))
    converged, tables, log_w, pmf = fit_fn(jax.random.key(settings.seed), jnp.asarray(u0),
                                           jnp.asarray(counts), jnp.asarray(design),
                                           jnp.asarray(n_cat))
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
    info = {"n_persons": rm.n_persons, "n_items": n_items, "n_submodels": n_items * n_items,
            "n_pairwise": n_items * (n_items - 1), "n_intercept_only": n_items,
            "n_loo_cells": int(cells.sum()), "fit_seconds": fit_seconds, "loo_seconds": loo_seconds,
            "stacking_seconds": stack_seconds, "total_seconds": time.perf_counter() - t_start}
    log.info("stacking imputation: %d sub-models, %d converged, fit %.1f s, loo %.1f s, weights %.1f s",
             n_items * n_items, int(np.asarray(converged).sum()), fit_seconds, loo_seconds, stack_seconds)
    return StackingModel([it.name for it in rm.items], np.asarray(n_cat), types, np.asarray(pmf, np.float64),
                         weights, elpd, pareto_k, laplace_khat, np.asarray(converged), n_pairs,
                         asdict(settings), True, info)


# ----------------------------------------------------------------------------- stacking


def _usable(y: np.ndarray) -> np.ndarray:
    """(N, I_target, I_slot): model (t, j) is usable for person n if Y_nj is observed or j == t."""
    obs = y >= 0
    n_items = y.shape[1]
    return obs[:, None, :] | np.eye(n_items, dtype=bool)[None]


def _slot_category(y: np.ndarray) -> np.ndarray:
    """(N, I_target, I_slot): the predictor category each model sees (0 for the intercept slot)."""
    n_items = y.shape[1]
    a = np.broadcast_to(np.clip(y, 0, None)[:, None, :], (y.shape[0], n_items, n_items)).copy()
    a[:, np.arange(n_items), np.arange(n_items)] = 0
    return a


def stacking_weights(y: np.ndarray, loo_cell: np.ndarray, ridge: float) -> np.ndarray:
    """Stacking weights per target item from the per-cell LOO log predictive densities."""
    from scipy.optimize import minimize

    n, n_items = y.shape
    usable = _usable(y)
    a = _slot_category(y)
    k = np.clip(y, 0, None)[:, :, None]  # target category
    t_idx = np.arange(n_items)[None, :, None]
    j_idx = np.arange(n_items)[None, None, :]
    lpd = loo_cell[t_idx, j_idx, a, k]  # (N, I, I)
    usable = usable & (y >= 0)[:, :, None] & np.isfinite(lpd)
    lpd = np.where(usable, lpd, 0.0)
    # shift per (person, target) so the exps stay in range; the shift is a constant
    shift = np.where(usable, lpd, -np.inf).max(-1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    dens = np.where(usable, np.exp(lpd - shift), 0.0).astype(np.float64)
    answered = (y >= 0).astype(np.float64)  # (N, I): which persons count for each target
    n_ans = np.maximum(answered.sum(0), 1.0)

    dens_j, usable_j, answered_j = (jnp.asarray(dens, jnp.float32), jnp.asarray(usable, jnp.float32),
                                    jnp.asarray(answered, jnp.float32))
    n_ans_j = jnp.asarray(n_ans, jnp.float32)

    @jax.jit
    def objective(z):
        z = z.reshape(n_items, n_items)
        w = jax.nn.softmax(z, axis=-1)[None]  # (1, I, I)
        num = jnp.sum(w * dens_j, -1)
        den = jnp.sum(w * usable_j, -1)
        term = jnp.where(answered_j > 0, jnp.log(jnp.maximum(num, 1e-30)) - jnp.log(jnp.maximum(den, 1e-30)), 0.0)
        per_item = term.sum(0) / n_ans_j
        return -per_item.sum() + ridge * jnp.sum(z ** 2)

    value_and_grad = jax.jit(jax.value_and_grad(objective))

    def fun(z):
        v, g = value_and_grad(jnp.asarray(z, jnp.float32))
        return float(v), np.asarray(g, np.float64)

    res = minimize(fun, np.zeros(n_items * n_items), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500, "gtol": 1e-7})
    w = np.asarray(jax.nn.softmax(jnp.asarray(res.x.reshape(n_items, n_items)), axis=-1), np.float64)
    return w / w.sum(-1, keepdims=True)


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


def imputation_accuracy(model: StackingModel, responses_missing: np.ndarray, truth: np.ndarray,
                        hidden: np.ndarray) -> dict:
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
    return {"n_cells": int(true.size),
            "log_score": float(np.mean(np.log(np.maximum(p_true, 1e-300)))),
            "accuracy": float(np.mean(pmf.argmax(-1) == true)),
            "within_one": float(np.mean(np.abs(pmf.argmax(-1) - true) <= 1)),
            "expected_abs_error": float(np.mean(np.abs(pmf @ np.arange(pmf.shape[1]) - true))),
            "marginal_log_score": float(np.mean(np.log(np.maximum(b_true, 1e-300)))),
            "marginal_accuracy": float(np.mean(baseline.argmax(-1) == true))}


def summary_table(model: StackingModel):
    """Tidy table, one row per sub-model: target, predictor, weight, elpd_loo, k-hats, converged."""
    import pandas as pd

    names = model.item_names
    n = len(names)
    t, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return pd.DataFrame({
        "target": [names[i] for i in t.ravel()],
        "predictor": ["(intercept)" if a == b else names[b] for a, b in zip(t.ravel(), j.ravel())],
        "weight": model.weights.ravel(), "elpd_loo": model.elpd_loo.ravel(),
        "pareto_k": model.pareto_k.ravel(), "laplace_khat": model.laplace_khat.ravel(),
        "converged": model.converged.ravel(), "n_pairs": model.n_pairs.ravel().astype(int)})


# ----------------------------------------------------------------------------- files


def save(model: StackingModel, path) -> None:
    """One .npz file (arrays) with the metadata as a JSON string inside; written atomically."""
    path = Path(path)
    meta = {"format": FORMAT, "item_names": model.item_names, "item_types": model.item_types,
            "settings": model.settings, "fitted": model.fitted,
            # timings vary run to run; leaving them out keeps the file identical on reruns
            "info": {k: v for k, v in model.info.items() if not k.endswith("_seconds")}}
    io.write_npz(path, meta=np.array(json.dumps(meta, default=io._json_default)),
                 n_categories=model.n_categories, pmf_tables=model.pmf_tables,
                 weights=model.weights, elpd_loo=model.elpd_loo, pareto_k=model.pareto_k,
                 laplace_khat=model.laplace_khat, converged=model.converged, n_pairs=model.n_pairs)


def load(path) -> StackingModel:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: imputation model not found")
    try:
        z = np.load(path, allow_pickle=False)
        meta = json.loads(str(z["meta"]))
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise io.DataFormatError(f"{path}: not a readable stacking imputation model ({err})") from err
    if meta.get("format") != FORMAT:
        raise io.DataFormatError(f"{path}: format is {meta.get('format')!r}, expected {FORMAT!r}")
    return StackingModel(meta["item_names"], z["n_categories"], meta["item_types"], z["pmf_tables"],
                         z["weights"], z["elpd_loo"], z["pareto_k"], z["laplace_khat"],
                         z["converged"].astype(bool), z["n_pairs"], meta["settings"], bool(meta["fitted"]),
                         meta["info"])
