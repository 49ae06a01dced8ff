"""The missing cells' part of the imputation-aware objectives (``objectives``): their
log-likelihood under M imputed copies, or exactly under the imputation PMFs, summed into the
batch's persons.

The cells come in ``inference.variational.missing_cells``' layout (``batch_cells``: a flat list sorted by
person, or for a full batch one row per item; padding marked ``valid`` false). ``cell_probs(params,
persons, items)`` is the model's part (see ``objectives``): the category probabilities of the
cells. The category probabilities are computed once per step; each copy only selects its drawn
category's entry, so M copies cost little more than one. All M copies' categories are drawn at
once by inverse CDF; they do not depend on the parameters. Probabilities are floored at
``TINY`` before any log.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesirt.inference.variational.missing_cells import CellView, batch_cells, draw_uniforms, missing_cells

TINY = 1e-37  # floor of a probability before its log


def per_person(values, view: CellView, n_batch: int):
    """Sum cell values (..., *cell shape) into the batch's persons: (..., B).

    Parameters
    ----------
    values : array (..., *cell shape)
        One value per cell, with any leading axes (e.g. copies).
    view : CellView
        The batch's missing cells; padding (``view.valid`` false) contributes 0.
    n_batch : int
        B, persons in the batch.

    Returns
    -------
    jax.Array
        Per-person sums, shape (..., B); 0 for persons without cells.
    """
    if view.valid is not None:
        values = jnp.where(view.valid, values, 0.0)
    n_cell_axes = view.persons.ndim
    flat = values.reshape(values.shape[: values.ndim - n_cell_axes] + (-1,))
    out = jax.ops.segment_sum(
        jnp.moveaxis(flat, -1, 0), view.persons.reshape(-1), num_segments=n_batch, indices_are_sorted=view.sorted
    )
    return jnp.moveaxis(out, 0, -1)


def draw_imputations(key, cdf, n_copies: int, view: CellView | None = None):
    """(M, ...) categories drawn from the cells' PMFs by inverse CDF, one uniform per copy and
    cell, all copies in one call; ``cdf`` (..., Kmax-1). With ``view`` (the cells of a batch,
    ``cdf`` its), padded cells draw the uniforms of their fit's own layout
    (``missing_cells.draw_uniforms``).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    cdf : array (..., Kmax-1)
        The cells' imputation CDFs at categories 0..Kmax-2.
    n_copies : int
        M, imputed copies.
    view : CellView, optional
        The batch's cells whose ``cdf`` this is (None: uniforms drawn on ``cdf``'s cell shape).

    Returns
    -------
    jax.Array
        Integer categories, shape (M, ...).
    """
    if view is None:
        u = jax.random.uniform(key, (n_copies,) + cdf.shape[:-1], cdf.dtype)
    else:
        u = draw_uniforms(key, n_copies, view)
    return jnp.sum(u[..., None] > cdf, axis=-1)


def select_log_prob(probs, y):
    """log probs[..., y] for categories y (M, ...) and probabilities (..., K) -> (M, ...).

    Parameters
    ----------
    probs : array (..., K)
        Category probabilities of the cells.
    y : array (M, ...)
        Categories, one per copy and cell.

    Returns
    -------
    jax.Array
        Log-probabilities, shape (M, ...); probabilities floored at ``TINY`` before the log.
    """
    # the copies axis goes next to the categories: the gradient then sums the copies over a
    # minor axis, which XLA's CPU backend does faster than a sum over the leading axis (the
    # Performance page has the measurement); the values are the same bit for bit
    y_last = jnp.moveaxis(y, 0, -1)  # (..., M)
    k = jnp.arange(probs.shape[-1])
    p = jnp.sum(jnp.where(y_last[..., None] == k, probs[..., None, :], 0.0), axis=-1)
    return jnp.moveaxis(jnp.log(jnp.maximum(p, TINY)), -1, 0)


def copies_missing_log_lik(key, params, batch, cell_probs, n_copies: int, weighted: bool = False):
    """(M, B): each copy's log-likelihood of its imputed cells (0 for persons without any), or
    with ``weighted`` its log importance weight, log p(y) - log q(y) summed over the cells (q the
    imputation PMF the cell was drawn from).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the imputations.
    params : dict
        Model parameters, as ``cell_probs`` takes them.
    batch : dict
        The minibatch, with its missing cells (``missing_cells``) and ``miss_count`` (B,).
    cell_probs : callable
        ``cell_probs(params, persons, items)``, see ``objectives``.
    n_copies : int
        M, imputed copies.
    weighted : bool
        Subtract each drawn category's log imputation probability (an importance weight whose
        mean over the draws is exactly 1 when p sums to one: ``objectives.importance_weighted``).

    Returns
    -------
    jax.Array
        Log-likelihoods (or log weights), shape (M, B).
    """
    view = batch_cells(batch, missing_cells(batch))
    probs = cell_probs(params, view.persons, view.items)
    y_imp = draw_imputations(key, view.cdf, n_copies, view)
    values = select_log_prob(probs, y_imp)
    if weighted:  # q does not depend on the parameters: a constant of the gradient, not of the weights
        values = values - select_log_prob(view.pmf, y_imp)
    return per_person(values, view, batch["miss_count"].shape[0])


def exact_missing_log_lik(params, batch, cell_probs):
    """(B,): sum over each person's missing cells of log sum_k q_c(k) P(Y_c = k).

    Parameters
    ----------
    params : dict
        Model parameters, as ``cell_probs`` takes them.
    batch : dict
        The minibatch, with its missing cells (``missing_cells``) and ``miss_count`` (B,).
    cell_probs : callable
        ``cell_probs(params, persons, items)``, see ``objectives``.

    Returns
    -------
    jax.Array
        Log-likelihoods, shape (B,).
    """
    view = batch_cells(batch, missing_cells(batch))
    probs = cell_probs(params, view.persons, view.items)
    mix = jnp.sum(view.pmf * probs, axis=-1)
    return per_person(jnp.log(jnp.maximum(mix, TINY)), view, batch["miss_count"].shape[0])
