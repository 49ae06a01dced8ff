"""Imputation-aware log-likelihoods for the factorized GRM (seed 000, section 5, and one more).

Each objective is a factory returning ``log_likelihood(params, batch, key) -> (B,)``, the hook
of ``inference.variational.grm_advi.fit`` (``advi.Model.log_likelihood``); ADVI adds the prior once,
outside, so "prior added once" (seed 5.3) holds by construction. The imputation PMFs of the
missing cells travel in ``extra_data`` (built by ``imputation_data``), and imputations are
drawn inside the jitted step.

With y_obs the observed cells of person n and q_c the imputation PMF of missing cell c:

* ``zero_fill``      sum_obs log p(y)                  (missing cells contribute 0; seed baseline)
* ``naive_average``  sum_obs log p(y) + 1/M sum_m sum_c log p(y_c^(m))       (seed 5.1)
* ``rao_blackwell``  sum_obs log p(y) + log 1/M sum_m exp(sum_c log p(y_c^(m)))  (seed 5.2-5.3)
* ``exact_marginal`` sum_obs log p(y) + sum_c log sum_k q_c(k) p(Y_c = k)  (the M -> inf limit)
* ``importance_weighted`` sum_obs log p(y) + log 1/M sum_m exp(sum_c [log p(y_c^(m)) - log q_c(y_c^(m))])
                     (this project's, not the seed's: the copies divided by the probability of
                     their imputation; the mean of the weights is 1 for every parameter value, so
                     as M grows the objective tends to zero_fill's observed-data likelihood,
                     which is the right one under MCAR and MAR, whatever the imputation model)

Because log p(Y_obs, Y_mis^(m)) = log p(Y_obs) + log p(Y_mis^(m)) given the parameters, the
observed part is computed once and only the missing cells are evaluated per copy; it factors
out of the log-sum-exp exactly as the prior does in seed 5.3. The missing cells' part, with
its imputations drawn in the jitted step, is ``missing_log_lik``.

``rao_blackwell`` has two granularities. ``per="person"`` (default) takes the log-mean-exp over
copies separately for each person: the marginal likelihood factorizes over persons, and
imputations are drawn independently per person, so this is the lower-variance estimator of
the same quantity. ``per="batch"`` is the seed's code literally: one log-mean-exp of the whole
minibatch's log-likelihood per copy (returned spread evenly over the batch's persons, so the
batch sum is that value).

Special cases (seed 5.5), exact by construction: M = 1 returns the single copy's
log-likelihood; a data set without missing cells returns the complete-case log-likelihood.

Model interface. An objective needs two things from the model, both replaceable in ``make``:

* ``observed_log_lik(params, batch) -> (B,)``: each batch person's log-likelihood of the
  observed cells (missing cells contribute 0); default: the factorized GRM's;
* ``cell_probs(params, persons, items) -> (C, Kmax)``: the category probabilities
  P(Y = k | params) of a list of cells, where ``persons`` are row numbers into the batch's
  local parameters (e.g. ``params["ability"]``, whose rows are the batch's persons) and
  ``items`` item numbers (integer arrays that broadcast together, see the data layout
  below; write it with ``table[items]`` lookups and broadcasting); zero beyond an item's
  categories. Default: the factorized GRM's
  (``factorized_cell_probs``). A mixture model returns sum_d w_d P_d(Y = k) here; nothing
  else changes. Probabilities are floored at 1e-37 before any log.

Data layout: ``inference.variational.missing_cells`` (``imputation_data``; its names are importable from
here too): the missing cells as a flat list sorted by person, and for a full batch as one row
per item; padded to one layout for a block of fits (``block_data``), each fit drawing the
imputations it draws alone. Per-person sums are segment sums over the cells' persons. ``cell_probs`` therefore receives
``persons`` and ``items`` that broadcast together ((C,) and (C,), or (I, Cmax) and (I, 1))
and returns their broadcast shape plus the category axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from bayesirt.inference.execution.training import SHARED  # noqa: F401
from bayesirt.inference.variational.missing_cells import (  # noqa: F401  (the layout's names, as objectives has them)
    BLOCK_WASTE,
    CELLS,
    KEYS,
    MissingCells,
    block_data,
    from_dense_pmf,
    imputation_data,
    missing_cells,
)
from bayesirt.inference.variational.missing_log_lik import copies_missing_log_lik, exact_missing_log_lik
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm

# rao_blackwell_seed: seed 000's name for rao_blackwell_batch's estimator (run at the seed's M)
# importance_weighted: this project's, the copies divided by their imputation probability
NAMES = (
    "zero_fill",
    "naive_average",
    "rao_blackwell",
    "rao_blackwell_batch",
    "exact_marginal",
    "rao_blackwell_seed",
    "importance_weighted",
)


# ----------------------------------------------------------------------------- the model's part


def factorized_observed(st: fgrm.Structure):
    """Observed-cells log-likelihood of the factorized GRM (missing cells contribute 0).

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item.

    Returns
    -------
    callable
        ``observed_log_lik(params, batch) -> (B,)``: ``fgrm.log_likelihood`` of ``batch["y"]``
        (B, I).
    """

    def observed_log_lik(params, batch):
        return fgrm.log_likelihood(params, batch["y"], st)

    return observed_log_lik


def factorized_cell_probs(st: fgrm.Structure):
    """``cell_probs`` of the factorized GRM: (C, Kmax) category probabilities of the cells
    (``grm.category_probs``: products of positive factors, accurate in every tail, with the
    per-item tables of ``grm.exp_cut_tables`` looked up once per cell).

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item.

    Returns
    -------
    callable
        ``cell_probs(params, persons, items)``: the category probabilities of the cells, shape
        the broadcast shape of ``persons`` and ``items`` plus Kmax; zero beyond an item's
        categories.
    """

    def cell_probs(params, persons, items):
        alpha = params["discrimination"]
        cuts = alpha[:, None] * grm.ordered_cuts(params["base_difficulty"], params["increments"])
        e, gap = grm.exp_cut_tables(cuts, st.n_categories)
        kmax = gap.shape[-1]
        rows = jnp.concatenate([e, gap, alpha[:, None]], axis=-1)[items]  # (..., 2 Kmax + 2)
        theta = params["ability"][persons, st.scale_index[items]]
        top = grm.top_category_mask(st.n_categories[items], kmax, rows.dtype)
        return grm.category_probs(rows[..., -1] * theta, rows[..., : kmax + 1], rows[..., kmax + 1 : -1], top)

    return cell_probs


# ----------------------------------------------------------------------------- objectives


def _defaults(st, observed_log_lik, cell_probs):
    return (observed_log_lik or factorized_observed(st)), (cell_probs or factorized_cell_probs(st))


def zero_fill(st: fgrm.Structure, observed_log_lik: Callable | None = None):
    """The ``zero_fill`` objective: the observed cells' log-likelihood, missing cells contribute 0.

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item (used only for the default ``observed_log_lik``).
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``; ``key`` is unused.
    """
    observed = observed_log_lik or factorized_observed(st)

    def log_likelihood(params, batch, key):
        return observed(params, batch)

    return log_likelihood


def _copies_objective(st, n_copies: int, combine, observed_log_lik=None, cell_probs=None, weighted=False):
    if int(n_copies) != n_copies or n_copies < 1:
        raise ValueError(f"number of imputed copies must be a positive integer, got {n_copies!r}")
    observed, cell_probs = _defaults(st, observed_log_lik, cell_probs)

    def log_likelihood(params, batch, key):
        obs = observed(params, batch)
        if missing_cells(batch) is None:  # seed 5.5: nothing to impute, fall through
            return obs
        miss = copies_missing_log_lik(key, params, batch, cell_probs, n_copies, weighted)  # (M, B)
        if n_copies == 1:  # seed 5.5: single imputation, exactly
            return obs + miss[0]
        return obs + combine(miss)

    return log_likelihood


def naive_average(st: fgrm.Structure, n_copies: int, observed_log_lik=None, cell_probs=None):
    """The ``naive_average`` objective: observed part plus the mean over M copies of the
    imputed cells' log-likelihood (seed 5.1).

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item (used only for the defaults of the model's part).
    n_copies : int
        M, imputed copies per step.
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).
    cell_probs : callable, optional
        ``cell_probs(params, persons, items)`` (default: ``factorized_cell_probs(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``.

    Raises
    ------
    ValueError
        If ``n_copies`` is not a positive integer.
    """
    return _copies_objective(st, n_copies, lambda miss: miss.mean(0), observed_log_lik, cell_probs)


def rao_blackwell(st: fgrm.Structure, n_copies: int, per: str = "person", observed_log_lik=None, cell_probs=None):
    """The ``rao_blackwell`` objective: observed part plus the log-mean-exp over M copies of the
    imputed cells' log-likelihood (seed 5.2-5.3), per person or per batch (module docstring).

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item (used only for the defaults of the model's part).
    n_copies : int
        M, imputed copies per step.
    per : str
        ``"person"`` (one log-mean-exp per person) or ``"batch"`` (one per minibatch, spread
        evenly over its persons).
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).
    cell_probs : callable, optional
        ``cell_probs(params, persons, items)`` (default: ``factorized_cell_probs(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``.

    Raises
    ------
    ValueError
        If ``per`` is unknown or ``n_copies`` is not a positive integer.
    """
    log_m = math.log(n_copies) if n_copies >= 1 else 0.0
    if per == "person":

        def combine(miss):
            return jax.nn.logsumexp(miss, axis=0) - log_m
    elif per == "batch":

        def combine(miss):
            total = jax.nn.logsumexp(miss.sum(1)) - log_m
            return jnp.full(miss.shape[1], total / miss.shape[1], miss.dtype)
    else:
        raise ValueError(f"rao_blackwell: 'per' must be 'person' or 'batch', got {per!r}")
    return _copies_objective(st, n_copies, combine, observed_log_lik, cell_probs)


def importance_weighted(st: fgrm.Structure, n_copies: int, observed_log_lik=None, cell_probs=None):
    """The ``importance_weighted`` objective (this project's): observed part plus, per person,
    the log-mean-exp over M copies of the imputed cells' log-likelihood minus the log
    probability of their imputation (module docstring). An unbiased estimate of each person's
    observed-data likelihood times 1 (Jensen makes its log a lower bound that tightens with M),
    so it targets zero-fill's likelihood with the imputations as a proposal.

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item (used only for the defaults of the model's part).
    n_copies : int
        M, imputed copies per step.
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).
    cell_probs : callable, optional
        ``cell_probs(params, persons, items)`` (default: ``factorized_cell_probs(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``.

    Raises
    ------
    ValueError
        If ``n_copies`` is not a positive integer.
    """
    log_m = math.log(n_copies) if n_copies >= 1 else 0.0
    return _copies_objective(
        st, n_copies, lambda miss: jax.nn.logsumexp(miss, axis=0) - log_m, observed_log_lik, cell_probs, weighted=True
    )


def exact_marginal(st: fgrm.Structure, observed_log_lik=None, cell_probs=None):
    """The ``exact_marginal`` objective: observed part plus sum_c log sum_k q_c(k) P(Y_c = k)
    over the missing cells (the M -> inf limit; no draws, ``key`` is unused).

    Parameters
    ----------
    st : fgrm.Structure
        Scales and categories per item (used only for the defaults of the model's part).
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).
    cell_probs : callable, optional
        ``cell_probs(params, persons, items)`` (default: ``factorized_cell_probs(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``.
    """
    observed, cell_probs = _defaults(st, observed_log_lik, cell_probs)

    def log_likelihood(params, batch, key):
        obs = observed(params, batch)
        if missing_cells(batch) is None:
            return obs
        return obs + exact_missing_log_lik(params, batch, cell_probs)

    return log_likelihood


def make(
    name: str,
    st: fgrm.Structure,
    n_copies: int = 3,
    cell_probs: Callable | None = None,
    observed_log_lik: Callable | None = None,
):
    """An objective by its study name (see ``NAMES``).

    ``cell_probs(params, persons, items) -> (C, Kmax)`` and ``observed_log_lik(params, batch)
    -> (B,)`` replace the factorized GRM's (see the module docstring); ``st`` is only used
    for those defaults.

    Parameters
    ----------
    name : str
        One of ``NAMES``.
    st : fgrm.Structure
        Scales and categories per item.
    n_copies : int
        M, imputed copies per step (the copies objectives only).
    cell_probs : callable, optional
        ``cell_probs(params, persons, items)`` (default: ``factorized_cell_probs(st)``).
    observed_log_lik : callable, optional
        ``observed_log_lik(params, batch) -> (B,)`` (default: ``factorized_observed(st)``).

    Returns
    -------
    callable
        ``log_likelihood(params, batch, key) -> (B,)``, the hook of ``grm_advi.fit``.

    Raises
    ------
    ValueError
        If ``name`` is unknown, or as the objective's factory raises.
    """
    if name == "zero_fill":
        return zero_fill(st, observed_log_lik)
    if name == "naive_average":
        return naive_average(st, n_copies, observed_log_lik, cell_probs)
    if name == "rao_blackwell":
        return rao_blackwell(st, n_copies, "person", observed_log_lik, cell_probs)
    if name in ("rao_blackwell_batch", "rao_blackwell_seed"):
        return rao_blackwell(st, n_copies, "batch", observed_log_lik, cell_probs)
    if name == "exact_marginal":
        return exact_marginal(st, observed_log_lik, cell_probs)
    if name == "importance_weighted":
        return importance_weighted(st, n_copies, observed_log_lik, cell_probs)
    raise ValueError(f"unknown objective {name!r}; known: {', '.join(NAMES)}")
