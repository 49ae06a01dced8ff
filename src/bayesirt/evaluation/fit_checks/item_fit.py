"""S-X2-type item fit that works with missing responses: persons grouped by their leave-one-out
expected score, the other items' missing cells completed by one draw from the model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid, _dot
from bayesirt.evaluation.fit_checks.pooling import _default_parameters, _fit_row, _pool
from bayesirt.evaluation.fit_checks.posteriors import _loo
from bayesirt.evaluation.fit_checks.prepared import _prepare, _Prepared
from bayesirt.evaluation.fit_checks.replication import complete


def _loo_groups(p: _Prepared, pred: np.ndarray, j: int, n_groups: int):
    """Persons who answered j, sorted by E[Y_nj | rest], split into nearly equal groups."""
    persons = np.flatnonzero(p.observed[:, j])
    # Rounded: persons with the same other responses must tie exactly. Unrounded, dividing
    # the cell out of the posterior leaves rounding noise that depends on y_nj itself, which
    # would sort a tie block by the response and put its 0s and 1s in different groups.
    score = np.round(_dot("nk,k->n", pred[persons, j, :], np.arange(pred.shape[2], dtype=np.float64)), 9)
    persons = persons[np.argsort(score, kind="stable")]
    return [g for g in np.array_split(persons, min(n_groups, max(len(persons), 1))) if len(g)]


def _group_tables(p: _Prepared, pred: np.ndarray, j: int, groups):
    k = p.n_cat[j]
    obs = np.stack([np.bincount(p.y[g, j], minlength=k)[:k] for g in groups])
    exp = np.stack([pred[g, j, :k].sum(axis=0) for g in groups])
    return obs, exp


def _item_predictives(y, grid: LatentGrid, seed, item: int | None = None):
    """The prepared data and the leave-one-out predictives of ``item_fit`` (with ``item``'s
    leave-one-out weights, as ``_loo``): from the data completed by ``complete`` (seeded by
    ``seed``), or from the observed cells alone when ``seed`` is None or nothing is missing.
    Groups and counts read the prepared data's real answers; only the predictives see drawn
    cells."""
    p = _prepare(y, grid)
    completed = p if seed is None or p.observed.all() else _prepare(complete(seed, p.y, grid), grid)
    return (p, *_loo(completed, item))


def item_fit(
    y,
    grid: LatentGrid,
    n_groups: int = 10,
    n_parameters=None,
    alpha: float = 0.05,
    min_expected: float = 1.0,
    seed=0,
) -> pd.DataFrame:
    """S-X2-type item fit that works with missing responses (leave-one-out grouping).

    The missing cells are first completed by one draw from the model (``complete``, seeded by
    ``seed``). For item j, the persons who answered it are ordered by their leave-one-out
    expected score E[Y_nj | their other responses on j's scale, completed] (for the GRM and 2PL
    monotone in the ability estimate without item j, in place of the summed score of S-X2,
    which missing responses make incomparable) and cut into ``n_groups`` groups of nearly equal
    size. In group g, O_gk counts the persons answering k (real answers only: no drawn cell of
    item j enters) and E_gk sums their leave-one-out predictive probabilities of k, and

        X2_j = sum_g sum_k (O_gk - E_gk)^2 / E_gk,   df_j = G_j (K_j - 1) - m_j.

    Because the grouping uses only the other responses, the persons' y_nj are independent
    given the grouping with exactly those probabilities under the model, so with known item
    values X2_j is close to chi-square with G_j (K_j - 1) df (slightly below it: the probabilities
    vary within a group); m_j subtracts the estimated parameters by the S-X2 convention, an
    approximation. Why complete first: under MAR the other items' missing cells may depend on
    y_nj (an item that drives the missingness), so the observed rest alone, together with which
    cells are missing, says more about y_nj than the model's predictive from the observed rest;
    completed data have the model's distribution under any MAR mechanism (``complete``), so the
    predictive from the completed rest is the right one. With ``seed=None`` the predictive
    conditions on the observed rest only, which is exact under MCAR.

    Pooling: a group with an expected count below ``min_expected`` in some category, or with
    fewer than two categories observed, is merged with a neighbour (the lowest such group
    first; an end group inward, an inner group into the neighbour with fewer persons) until
    none is left; ``pooled`` counts the merges.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model (item values at their estimates).
    n_groups : int
        Groups per item before pooling.
    n_parameters : int or array (I,), optional
        m_j, the item's estimated parameters; default K_j (a slope and K_j - 1 cuts, right for
        the GRM and 2PL; pass it for other models, or 0 for known item values).
    alpha : float
        Level of ``flagged``.
    min_expected : float
        Smallest expected count a cell may keep without pooling.
    seed : int, numpy.random.Generator, JAX PRNG key or None
        Seeds the completion of the missing cells; None: no completion (see above).

    Returns
    -------
    pandas.DataFrame
        One row per item: item, n_observed, statistic, df, p_value, groups, pooled, flagged
        (p_value < alpha). Items with df <= 0 get p_value NaN and are not flagged.
    """
    p, pred, _ = _item_predictives(y, grid, seed)
    m = _default_parameters(p.n_cat, n_parameters)
    rows = []
    for j in range(p.y.shape[1]):
        groups = _loo_groups(p, pred, j, n_groups)
        n_obs = sum(len(g) for g in groups)
        if n_obs == 0:
            rows.append(
                _fit_row(j, 0, np.zeros((0, p.n_cat[j])), np.zeros((0, p.n_cat[j])), 0, p.n_cat[j], m[j], alpha)
            )
            continue
        obs, exp = _group_tables(p, pred, j, groups)
        obs, exp, merges = _pool(obs, exp, min_expected, two_categories=True)
        rows.append(_fit_row(j, n_obs, obs, exp, merges, p.n_cat[j], m[j], alpha))
    return pd.DataFrame(rows)


def observed_expected(y, grid: LatentGrid, item: int, n_groups: int = 10, seed=0) -> pd.DataFrame:
    """The observed and expected table behind ``item_fit`` for one item, before pooling.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    item : int
        The item.
    n_groups : int
        Groups of persons (ordered by the leave-one-out expected score, as in ``item_fit``).
    seed : int, numpy.random.Generator, JAX PRNG key or None
        Seeds the completion of the missing cells, as in ``item_fit``.

    Returns
    -------
    pandas.DataFrame
        Long table, one row per (group, category): group, category, n (persons in the group),
        observed, expected, mean_order (the group's mean leave-one-out posterior mean of
        ``grid.order``, e.g. theta; NaN when the grid has no order) and mean_expected_score
        (the group's mean E[Y_nj | rest]).
    """
    j = int(item)
    p, pred, item_weights = _item_predictives(y, grid, seed, j)
    groups = _loo_groups(p, pred, j, n_groups)
    if not groups:
        cols = ["group", "category", "n", "observed", "expected", "mean_order", "mean_expected_score"]
        return pd.DataFrame(columns=cols)
    obs, exp = _group_tables(p, pred, j, groups)
    k = p.n_cat[j]
    scores = pred[:, j, :] @ np.arange(pred.shape[2])
    order = None if grid.order is None else np.asarray(grid.order, dtype=np.float64)
    rows = []
    for g, persons in enumerate(groups):
        mean_order = float(np.mean(item_weights[persons] @ order)) if order is not None else np.nan
        for c in range(k):
            rows.append(
                {
                    "group": g,
                    "category": c,
                    "n": len(persons),
                    "observed": int(obs[g, c]),
                    "expected": float(exp[g, c]),
                    "mean_order": mean_order,
                    "mean_expected_score": float(scores[persons].mean()),
                }
            )
    return pd.DataFrame(rows)
