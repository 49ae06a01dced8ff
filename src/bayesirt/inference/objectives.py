"""Imputation-aware log-likelihoods for the factorized GRM (seed 000, section 5, and one more).

Each objective is a factory returning ``log_likelihood(params, batch, key) -> (B,)``, the hook
of ``fits.fit_factorized_grm`` (``advi.Model.log_likelihood``); ADVI adds the prior once,
outside, so "prior added once" (seed 5.3) holds by construction. The imputation PMFs of the
missing cells travel in ``extra_data`` (built by ``imputation_data``), so they are minibatched
with the persons, and imputations are drawn inside the jitted step.

With y_obs the observed cells of person n and q_c the imputation PMF of missing cell c:

* ``zero_fill``      sum_obs log p(y)                  (missing cells contribute 0; seed baseline)
* ``naive_average``  sum_obs log p(y) + 1/M sum_m sum_c log p(y_c^(m))       (seed 5.1)
* ``rao_blackwell``  sum_obs log p(y) + log 1/M sum_m exp(sum_c log p(y_c^(m)))  (seed 5.2-5.3)
* ``exact_marginal`` sum_obs log p(y) + sum_c log sum_k q_c(k) p(Y_c = k)  (the M -> inf limit)

Because log p(Y_obs, Y_mis^(m)) = log p(Y_obs) + log p(Y_mis^(m)) given the parameters, the
observed part is computed once and only the missing cells are evaluated per copy; it factors
out of the log-sum-exp exactly as the prior does in seed 5.3. The category log-probabilities
of the missing cells are computed once per step with the shared GRM core and then gathered
for every copy, so M copies cost little more than one.

``rao_blackwell`` has two granularities. ``per="person"`` (default) takes the log-mean-exp over
copies separately for each person: the marginal likelihood factorizes over persons, and
imputations are drawn independently per person, so this is the lower-variance estimator of
the same quantity. ``per="batch"`` is the seed's code literally: one log-mean-exp of the whole
minibatch's log-likelihood per copy (returned spread evenly over the batch's persons, so the
batch sum is that value).

Special cases (seed 5.5), exact by construction: M = 1 returns the single copy's
log-likelihood; a data set without missing cells returns the complete-case log-likelihood.
Missing cells are padded per person to the largest number of missing cells of any person
(``miss_valid`` marks the real ones).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm

KEYS = ("miss_item", "miss_valid", "miss_pmf", "miss_cdf")
ABSENT_CUT = 1e4  # any value >= the clip of grm.log_mixture_prob (40)
NAMES = ("zero_fill", "naive_average", "rao_blackwell", "rao_blackwell_batch", "exact_marginal")


def imputation_data(responses: np.ndarray, persons: np.ndarray, items: np.ndarray, pmf: np.ndarray,
                    n_categories: np.ndarray) -> dict:
    """Per-person padded arrays of the missing cells and their imputation PMFs (``extra_data``).

    ``persons``, ``items``, ``pmf`` (C, Kmax): one PMF per missing cell of ``responses``
    (every missing cell exactly once). Returns jnp arrays with persons as the leading axis:
    ``miss_item`` (N, Mmax) int32, ``miss_valid`` (N, Mmax) bool, ``miss_pmf`` and
    ``miss_cdf`` (N, Mmax, Kmax) float32.
    """
    y = np.asarray(responses)
    persons, items = np.asarray(persons, np.int64), np.asarray(items, np.int64)
    pmf = np.asarray(pmf, np.float64)
    n, n_items = y.shape
    kmax = int(np.max(n_categories))
    if pmf.shape != (persons.size, kmax):
        raise ValueError(f"imputation PMFs have shape {pmf.shape}, expected ({persons.size}, {kmax})")
    missing = y < 0
    if persons.size != missing.sum() or not np.all(missing[persons, items]):
        raise ValueError("imputation PMFs must be given for exactly the missing cells of the responses")
    if np.unique(persons * n_items + items).size != persons.size:
        raise ValueError("imputation PMFs: a missing cell is listed twice")
    n_cat = np.asarray(n_categories)[items]
    beyond = np.arange(kmax)[None] >= n_cat[:, None]
    if np.any(pmf < 0) or not np.all(np.isfinite(pmf)) or np.any(pmf[beyond] > 0):
        raise ValueError("imputation PMFs must be finite, non-negative and zero beyond an item's categories")
    pmf = pmf / pmf.sum(-1, keepdims=True)

    per_person = missing.sum(1)
    mmax = int(per_person.max()) if n else 0
    order = np.lexsort((items, persons))
    persons, items, pmf, n_cat = persons[order], items[order], pmf[order], n_cat[order]
    slot = np.arange(persons.size) - np.repeat(np.cumsum(per_person) - per_person, per_person)

    miss_item = np.zeros((n, mmax), np.int32)
    valid = np.zeros((n, mmax), bool)
    pmf_pad = np.full((n, mmax, kmax), 1.0 / kmax, np.float32)  # padding: harmless, masked out
    cdf = np.broadcast_to(np.arange(1, kmax + 1) / kmax, (n, mmax, kmax)).astype(np.float32).copy()
    miss_item[persons, slot] = items
    valid[persons, slot] = True
    pmf_pad[persons, slot] = pmf
    c = np.cumsum(pmf, -1)
    c[np.arange(kmax)[None] >= (n_cat - 1)[:, None]] = 1.0  # exact 1 from the last category on
    cdf[persons, slot] = c
    return {"miss_item": jnp.asarray(miss_item), "miss_valid": jnp.asarray(valid),
            "miss_pmf": jnp.asarray(pmf_pad), "miss_cdf": jnp.asarray(cdf)}


def from_dense_pmf(responses: np.ndarray, dense_pmf: np.ndarray, n_categories: np.ndarray) -> dict:
    """``imputation_data`` from an (N, I, Kmax) array whose missing cells hold their PMFs."""
    persons, items = np.nonzero(np.asarray(responses) < 0)
    return imputation_data(responses, persons, items, np.asarray(dense_pmf)[persons, items], n_categories)


# ----------------------------------------------------------------------------- pieces


def _observed(params, batch, st: fgrm.Structure):
    return fgrm.log_likelihood(params, batch["y"], st)  # missing cells contribute 0


def _has_missing(batch) -> bool:
    return "miss_item" in batch and batch["miss_item"].shape[-1] > 0  # static under jit


def item_cuts(params, st: fgrm.Structure):
    """Scores (B, I) and per-item cuts (I, K-1), cuts an item does not have set to a large
    finite value (not inf: XLA may fold isfinite/inf arithmetic on constants unsafely)."""
    score, cuts = fgrm.cell_terms(params, st)
    k = jnp.arange(cuts.shape[-1])
    return score, jnp.where(k[None] >= (st.n_categories - 1)[:, None], ABSENT_CUT, cuts)


def draw_imputation(key, cdf):
    """(B, Mmax) categories drawn from the cells' PMFs by inverse CDF (one uniform per cell)."""
    u = jax.random.uniform(key, cdf.shape[:-1], cdf.dtype)
    return jnp.sum(u[..., None] > cdf[..., :-1], axis=-1)


def copies_missing_log_lik(key, params, batch, st: fgrm.Structure, n_copies: int):
    """(M, B): each copy's log-likelihood of its imputed cells, vmapped over the copies.

    The cumulative probabilities of every missing cell are computed once
    (``grm.cumulative_probs``); each copy draws its categories and reads off their
    log-probabilities (``grm.log_prob_from_cumulative``), so a copy costs a few selects.
    """
    score, cuts = item_cuts(params, st)
    score = jnp.take_along_axis(score, batch["miss_item"], axis=1)
    s, t = grm.cumulative_probs(score, cuts, item=batch["miss_item"])  # (B, Mmax, K-1)
    valid = batch["miss_valid"]

    def one_copy(k):
        y_imp = draw_imputation(k, batch["miss_cdf"])
        return jnp.where(valid, grm.log_prob_from_cumulative(y_imp, s, t), 0.0).sum(-1)

    return jax.vmap(one_copy)(jax.random.split(key, n_copies))


# ----------------------------------------------------------------------------- objectives


def zero_fill(st: fgrm.Structure):
    def log_likelihood(params, batch, key):
        return _observed(params, batch, st)

    return log_likelihood


def _copies_objective(st: fgrm.Structure, n_copies: int, combine):
    if int(n_copies) != n_copies or n_copies < 1:
        raise ValueError(f"number of imputed copies must be a positive integer, got {n_copies!r}")

    def log_likelihood(params, batch, key):
        obs = _observed(params, batch, st)
        if not _has_missing(batch):  # seed 5.5: nothing to impute, fall through
            return obs
        miss = copies_missing_log_lik(key, params, batch, st, n_copies)  # (M, B)
        if n_copies == 1:  # seed 5.5: single imputation, exactly
            return obs + miss[0]
        return obs + combine(miss)

    return log_likelihood


def naive_average(st: fgrm.Structure, n_copies: int):
    return _copies_objective(st, n_copies, lambda miss: miss.mean(0))


def rao_blackwell(st: fgrm.Structure, n_copies: int, per: str = "person"):
    log_m = math.log(n_copies)
    if per == "person":
        return _copies_objective(st, n_copies, lambda miss: jax.nn.logsumexp(miss, axis=0) - log_m)
    if per == "batch":
        def combine(miss):
            total = jax.nn.logsumexp(miss.sum(1)) - log_m
            return jnp.full(miss.shape[1], total / miss.shape[1], miss.dtype)

        return _copies_objective(st, n_copies, combine)
    raise ValueError(f"rao_blackwell: 'per' must be 'person' or 'batch', got {per!r}")


def exact_marginal(st: fgrm.Structure):
    def log_likelihood(params, batch, key):
        obs = _observed(params, batch, st)
        if not _has_missing(batch):
            return obs
        score, cuts = item_cuts(params, st)
        score = jnp.take_along_axis(score, batch["miss_item"], axis=1)
        cell = grm.log_mixture_prob(batch["miss_pmf"], score, cuts, item=batch["miss_item"])  # (B, Mmax)
        return obs + jnp.where(batch["miss_valid"], cell, 0.0).sum(-1)

    return log_likelihood


def make(name: str, st: fgrm.Structure, n_copies: int = 3):
    """An objective by its study name (see ``NAMES``)."""
    if name == "zero_fill":
        return zero_fill(st)
    if name == "naive_average":
        return naive_average(st, n_copies)
    if name == "rao_blackwell":
        return rao_blackwell(st, n_copies, "person")
    if name == "rao_blackwell_batch":
        return rao_blackwell(st, n_copies, "batch")
    if name == "exact_marginal":
        return exact_marginal(st)
    raise ValueError(f"unknown objective {name!r}; known: {', '.join(NAMES)}")


def uses_copies(name: str) -> bool:
    return name in ("naive_average", "rao_blackwell", "rao_blackwell_batch")
