"""Replicated and completed data sets: each person's latent state drawn from their posterior,
then cells from the model; and predictive p-values of any statistic over the replications.
"""

from __future__ import annotations

import numpy as np

from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid
from bayesirt.evaluation.fit_checks.posteriors import _posteriors
from bayesirt.evaluation.fit_checks.prepared import _prepare, _Prepared


def _generator(key_or_seed) -> np.random.Generator:
    if isinstance(key_or_seed, np.random.Generator):
        return key_or_seed
    if isinstance(key_or_seed, (int, np.integer)):
        return np.random.default_rng(int(key_or_seed))
    arr = key_or_seed
    if "key<" in str(getattr(arr, "dtype", "")):
        # a typed JAX key (jax.random.key): its raw words seed the generator
        import jax

        arr = jax.random.key_data(arr)
    return np.random.default_rng(np.asarray(arr).astype(np.uint64).ravel().tolist())


def _draw_categorical(rng: np.random.Generator, cdf: np.ndarray) -> np.ndarray:
    u = rng.random(cdf.shape[:-1] + (1,))
    return np.minimum((u > cdf).sum(-1), cdf.shape[-1] - 1)


def _response_sampler(p: _Prepared):
    """A function rng -> one response in every cell, (N, I): each person's latent state on every
    scale drawn from their posterior given their observed cells, then each cell from
    P(Y_j | state). The posteriors are computed once, here."""
    post_cdf = np.cumsum(np.exp(_posteriors(p)), axis=-1)  # (N, S, Q)
    post_cdf[..., -1] = 1.0
    # the last category of each item closes its cdf at exactly 1, so rounding can never draw a
    # category beyond K_j
    last = np.arange(p.probs.shape[2])[None, :] >= (p.n_cat - 1)[:, None]  # (I, K)
    cat_cdf = np.where(last[None], 1.0, np.cumsum(p.probs, axis=-1))  # (Q, I, K)
    items = np.arange(p.y.shape[1])[None, :]

    def draw(rng: np.random.Generator) -> np.ndarray:
        state = _draw_categorical(rng, post_cdf)  # (N, S)
        return _draw_categorical(rng, cat_cdf[state[:, p.scale], items, :])  # from (N, I, K) cdfs

    return draw


def complete(key_or_seed, y, grid: LatentGrid) -> np.ndarray:
    """The data with every missing cell drawn from the model given the person's observed cells.

    One draw of each person's latent state from their posterior, then each missing cell from
    P(Y_j | state); observed cells are kept. With the model's item values, the completed data
    have the model's own distribution whatever the missingness, as long as it is MAR: the
    observed part is p(y_obs) p(m | y_obs) and the drawn part p(y_mis | y_obs), so summed over
    the masks m their product is p(y). Checks of completed data therefore need no model of the
    missingness (Gelman, Van Mechelen, Verbeke, Heitjan & Meulders, 2005).

    Parameters
    ----------
    key_or_seed : int, numpy.random.Generator or JAX PRNG key
        Source of randomness (a JAX key's words seed a numpy Generator).
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.

    Returns
    -------
    np.ndarray (N, I)
        int64 responses with no missing cell, equal to ``y`` where ``y`` is observed.
    """
    p = _prepare(y, grid)
    return np.where(p.observed, p.y, _response_sampler(p)(_generator(key_or_seed)))


def replicate(key_or_seed, y, grid: LatentGrid, n: int = 1) -> np.ndarray:
    """Posterior-predictive replicated data sets with each person's missing mask held fixed.

    Each replication draws every person's latent state on every scale from their posterior on
    the grid (given their observed cells), then every observed cell from P(Y_j | state);
    missing cells stay -1.

    Parameters
    ----------
    key_or_seed : int, numpy.random.Generator or JAX PRNG key
        Source of randomness (a JAX key's words seed a numpy Generator).
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    n : int
        Number of replicated data sets.

    Returns
    -------
    np.ndarray (n, N, I)
        int64 replicated responses, -1 exactly where ``y`` is missing.
    """
    rng = _generator(key_or_seed)
    p = _prepare(y, grid)
    draw = _response_sampler(p)
    out = np.empty((n,) + p.y.shape, dtype=np.int64)
    for r in range(n):
        out[r] = np.where(p.observed, draw(rng), -1)
    return out


def predictive_p_values(y, grid: LatentGrid, statistic, n_replications: int = 100, seed=0) -> np.ndarray:
    """Simulation p-values of any discrepancy: p = (1 + #{T_rep >= T_obs}) / (1 + R), elementwise.

    The replications come from ``replicate`` (latent states drawn from each person's posterior,
    missing masks kept). The grid holds point estimates of the item values and no parameter
    draws are made, so this is a parametric bootstrap at the estimates (a posterior-predictive
    check with the item values fixed), not a full posterior-predictive check; like those it
    tends to be conservative, since the states are drawn given the observed data.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model.
    statistic : callable
        ``statistic(y) -> array`` (or float), larger meaning worse fit, e.g.
        ``lambda y: item_fit(y, grid)["statistic"].to_numpy()``.
    n_replications : int
        R.
    seed : int, numpy.random.Generator or JAX PRNG key
        Seeds ``replicate``.

    Returns
    -------
    np.ndarray
        The shape of ``statistic(y)``. Replications where an element is NaN are left out of
        that element's count and of its R; an element NaN in the data gets NaN.
    """
    t_obs = np.asarray(statistic(y), dtype=np.float64)
    reps = replicate(seed, y, grid, n_replications)
    exceed = np.zeros(t_obs.shape)
    used = np.zeros(t_obs.shape)
    for y_rep in reps:
        t_rep = np.asarray(statistic(y_rep), dtype=np.float64)
        finite = np.isfinite(t_rep)
        used += finite
        exceed += finite & (t_rep >= t_obs)
    return np.where(np.isfinite(t_obs), (1.0 + exceed) / (1.0 + used), np.nan)
