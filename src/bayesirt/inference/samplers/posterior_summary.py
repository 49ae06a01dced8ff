"""Posterior summaries of Markov chains: the tidy summary table of a run's draws (mean, sd,
equal-tailed 90% interval, MCSE, bulk and tail ESS, R-hat) and the worst-case diagnostics that
fit records carry.

R-hat, ESS and MCSE are ArviZ's (rank-normalized split R-hat, bulk and tail ESS, the MCSE of
the mean; Vehtari et al. 2021), computed here for every parameter of a variable at once: ArviZ
applies them one parameter at a time in Python, which cost a paper-size Gibbs block more than
its sampling (benchmark case ``posterior_summaries``). The unit tests hold these to ArviZ's own
values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # for the annotations only: the functions import ArviZ and xarray when they run
    import arviz as az
    import xarray as xr

STAT_COLUMNS = ["mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]
_SAMPLE_DIMS = ("chain", "draw")


def summary_table(idata: az.InferenceData, var_names: list[str] | None = None) -> pd.DataFrame:
    """Tidy posterior summary: one row per scalar parameter.

    Columns: ``parameter`` (the variable's name), one column per index dimension (coordinate
    values; missing for variables without that dimension), then ``mean``, ``sd`` (ddof=1),
    ``q5``, ``q95`` (equal-tailed 90% interval), ``mcse_mean``, ``ess_bulk``, ``ess_tail``,
    ``r_hat``. The row labels are ArviZ-style names (``a[3]``). R-hat, ESS and MCSE are those of
    ``az.rhat``, ``az.ess`` and ``az.mcse`` (rank-normalized split R-hat; bulk and tail ESS),
    computed for all of a variable's parameters at once (``_diagnostics_vectorized``).

    Parameters
    ----------
    idata : arviz.InferenceData
        Draws with a posterior group (chain x draw x ...).
    var_names : list of str, optional
        The variables to summarise (all by default).

    Returns
    -------
    pandas.DataFrame
        One row per scalar parameter; every statistic missing when there are no draws.
    """
    import xarray as xr  # here, not at the top: only summaries need it, and it is slow to import

    post = idata.posterior
    if var_names is not None:
        post = post[list(var_names)]
    n_draws = post.sizes.get("draw", 0)
    frames = []
    for name, var in post.data_vars.items():
        index_dims = [d for d in var.dims if d not in _SAMPLE_DIMS]
        if n_draws == 0:  # a run that diverged in burn-in: keep the rows, every statistic missing
            blank = xr.full_like(var.sum(_SAMPLE_DIMS), np.nan, dtype=float)
            stats = dict.fromkeys(STAT_COLUMNS, blank)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                # a parameter that never moves (e.g. a fixed anchor) has no R-hat: NaN, counted
                # by convergence() rather than warned about once per parameter
                stats = _stats(var)
        ds = xr.Dataset({s: v.astype(float) for s, v in stats.items()})
        if index_dims:
            frame = ds.to_dataframe().reset_index()
            frame = frame[index_dims + STAT_COLUMNS]
            labels = (name + "[" + frame[index_dims].astype(str).agg(", ".join, axis=1) + "]").tolist()
        else:
            frame = pd.DataFrame({s: [float(ds[s])] for s in STAT_COLUMNS})
            labels = [name]
        frame.insert(0, "parameter", name)
        frame.index = labels
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["parameter"] + STAT_COLUMNS)
    table = pd.concat(frames)
    index_cols = [c for c in table.columns if c not in ["parameter"] + STAT_COLUMNS]
    return table[["parameter"] + index_cols + STAT_COLUMNS]


# The statistics go through a variable in slices along its first index dimension of at most
# this many values (chains x draws x parameters): their float64 copies and padded FFTs take
# tens of times the draws' memory (over 40 GB for 4 x 10,000 draws of 10,000 abilities at
# once), a slice a few hundred MB. Every parameter's statistics are computed on its own, so the
# slicing moves values by float64 rounding at most (the FFTs' batches, ~1e-15 relative).
VECTORIZED_SLICE_VALUES = 4_000_000


def _split_chains(x: np.ndarray) -> np.ndarray:
    """(chain, draw, ...) -> (2 chain, draw // 2, ...): each chain's halves as two chains (the
    odd last draw dropped), as in split R-hat."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _average_ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks 1..S along axis 0 of (S, P), ties given their average rank (scipy's ``rankdata``,
    method "average", which is several times slower along an axis). Ties are common where it
    matters: the folded draws |x - median| of an even count hold the two middle ones at one
    distance. Works on the parameters' rows (P, S), where sorting and gathering are contiguous."""
    rows = np.ascontiguousarray(flat.T)
    s = rows.shape[1]
    order = np.argsort(rows, axis=1)
    in_order = np.take_along_axis(rows, order, axis=1)
    position = np.arange(s)
    starts = np.ones(rows.shape, bool)
    starts[:, 1:] = in_order[:, 1:] != in_order[:, :-1]
    ends = np.ones(rows.shape, bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, s - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return ranks.T


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalize over all chains and draws of each parameter (Vehtari et al. 2021):
    z = Phi^-1((rank - 3/8) / (S + 1/4)), average ranks for ties."""
    from scipy.special import ndtri

    c, d = x.shape[:2]
    flat = x.reshape(c * d, -1)
    return ndtri((_average_ranks(flat) - 0.375) / (c * d + 0.25)).reshape(x.shape)


def _rhat_classic(x: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    between = n * x.mean(axis=1).var(axis=0, ddof=1)
    within = x.var(axis=1, ddof=1).mean(axis=0)
    return np.sqrt((between / within + n - 1) / n)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of every parameter of ``x`` (chain, draw, ...) at once, as ArviZ's
    ``_ess`` computes it for one: autocovariances by FFT, combined over chains; Geyer's initial
    positive sequence (the pairs of autocorrelations up to the first pair whose sum is not
    positive, or lag n - 3), the first such pair's even term added where positive, Geyer's
    initial monotone sequence, and the autocorrelation time at least 1 / log10(chains x draws).
    A parameter whose draws do not move counts chains x draws; one with a NaN draw gets NaN."""
    from scipy.fft import irfft, next_fast_len, rfft

    m, n = x.shape[:2]
    centred = x - x.mean(axis=1, keepdims=True)
    size = next_fast_len(2 * n, real=True)
    spectrum = rfft(centred, n=size, axis=1)
    acov = irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n  # biased, per chain
    mean_var = acov[:, 0].mean(axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (x.mean(axis=1).var(axis=0, ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    n_pairs = n // 2
    even, pair = rho[0 : 2 * n_pairs : 2], rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    # ArviZ's loop stops at the first pair k whose sum is not positive, or at k = ceil((n - 4) / 2)
    bound = min(max(-(-(n - 4) // 2), 0), n_pairs - 1)
    stop = np.where((pair[: bound + 1] <= 0).any(axis=0), (pair[: bound + 1] <= 0).argmax(axis=0), bound)
    before = np.arange(n_pairs).reshape((-1,) + (1,) * (pair.ndim - 1)) < stop
    monotone = np.minimum.accumulate(np.where(before, pair, np.inf), axis=0)
    at_stop = np.take_along_axis(even, stop[None], axis=0)[0]
    pair_at_stop = np.take_along_axis(pair, stop[None], axis=0)[0]
    # the stopping pair's even term counts where positive (ArviZ's "improve estimation"), or where
    # ArviZ kept the pair (a sum of exactly 0); its first pair (lag 0 and 1) always starts the loop
    last = np.where((at_stop > 0) | (pair_at_stop >= 0) | (stop == 0), at_stop, 0.0)
    tau = -1.0 + 2.0 * np.where(before, monotone, 0.0).sum(axis=0) + last
    tau = np.maximum(tau, 1.0 / np.log10(m * n))
    ess = m * n / tau
    still = (x.max(axis=(0, 1)) - x.min(axis=(0, 1))) < np.finfo(float).resolution
    return np.where(np.isnan(x).any(axis=(0, 1)), np.nan, np.where(still, float(m * n), ess))


def _diagnostics_vectorized(x: np.ndarray) -> dict:
    """The equal-tailed 90% interval (numpy's default quantiles) and ArviZ's rank-normalized
    split R-hat (the larger of the bulk and the folded-tail one), bulk and tail ESS and MCSE of
    the mean, for every parameter of ``x`` (chain, draw, ...) at once: the ESS (:func:`_ess`) of
    the split chains of the rank-normalized draws (bulk), of the 5% and 95% quantile indicators
    (tail, the smaller of the two) and of the draws themselves (for the
    MCSE). The unit tests compare every one with ArviZ's."""
    q5, q95 = np.quantile(x.reshape(-1, *x.shape[2:]), [0.05, 0.95], axis=0)
    if x.shape[1] < 4:  # ArviZ's rule: no diagnostic from fewer than four draws
        nothing = np.full(x.shape[2:], np.nan)
        return {"q5": q5, "q95": q95} | dict.fromkeys(["mcse_mean", "ess_bulk", "ess_tail", "r_hat"], nothing)
    split = _split_chains(x)
    z_split = _z_scale(split)
    folded = np.abs(split - np.median(split.reshape(-1, *split.shape[2:]), axis=0))
    r_hat = np.maximum(_rhat_classic(z_split), _rhat_classic(_z_scale(folded)))
    ess_bulk = _ess(z_split)
    ess_tail = np.minimum(_ess(_split_chains((x <= q5).astype(float))), _ess(_split_chains((x <= q95).astype(float))))
    ess_mean = _ess(split)
    mcse_mean = x.reshape(-1, *x.shape[2:]).std(axis=0, ddof=1) / np.sqrt(ess_mean)
    if x.shape[0] < 2:  # ArviZ's rule: R-hat needs two chains
        r_hat = np.full_like(r_hat, np.nan)
    return {"q5": q5, "q95": q95, "mcse_mean": mcse_mean, "ess_bulk": ess_bulk, "ess_tail": ess_tail, "r_hat": r_hat}


def _stats_vectorized(var: xr.DataArray) -> dict:
    """Mean, sd, quantiles and the array-wide diagnostics (``_diagnostics_vectorized``) of a variable."""
    index_dims = [d for d in var.dims if d not in _SAMPLE_DIMS]
    template = var.isel(chain=0, draw=0, drop=True)
    diag = _diagnostics_vectorized(var.transpose("chain", "draw", *index_dims).values.astype(np.float64))
    return {
        "mean": var.mean(_SAMPLE_DIMS),
        "sd": var.std(_SAMPLE_DIMS, ddof=1),
        **{k: template.copy(data=np.reshape(v, template.shape)) for k, v in diag.items()},
    }


def _stats(var: xr.DataArray) -> dict:
    """A variable's statistics, in slices along its first index dimension (memory)."""
    import xarray as xr

    index_dims = [d for d in var.dims if d not in _SAMPLE_DIMS]
    if not index_dims:
        return _stats_vectorized(var)
    first = index_dims[0]
    step = max(1, VECTORIZED_SLICE_VALUES // max(var.size // var.sizes[first], 1))
    if step >= var.sizes[first]:
        return _stats_vectorized(var)
    parts = [_stats_vectorized(var.isel({first: slice(a, a + step)})) for a in range(0, var.sizes[first], step)]
    return {k: xr.concat([part[k] for part in parts], dim=first) for k in parts[0]}


def convergence(summary: pd.DataFrame) -> dict:
    """Worst-case diagnostics of a summary table, for fit records.

    NaN entries (e.g. R-hat of a parameter that never moves) are ignored in the extremes but
    counted in ``n_nan_r_hat`` so a record never hides them.

    Parameters
    ----------
    summary : pandas.DataFrame
        A table of :func:`summary_table`.

    Returns
    -------
    dict
        ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail`` (nan where none is finite),
        ``n_parameters`` and ``n_nan_r_hat``.
    """
    if summary.empty:
        return {
            "max_r_hat": float("nan"),
            "min_ess_bulk": float("nan"),
            "min_ess_tail": float("nan"),
            "n_parameters": 0,
            "n_nan_r_hat": 0,
        }

    def extreme(fn, col):
        values = summary[col].to_numpy(float)
        return float(fn(values)) if np.isfinite(values).any() else float("nan")

    return {
        "max_r_hat": extreme(np.nanmax, "r_hat"),
        "min_ess_bulk": extreme(np.nanmin, "ess_bulk"),
        "min_ess_tail": extreme(np.nanmin, "ess_tail"),
        "n_parameters": int(len(summary)),
        "n_nan_r_hat": int(summary["r_hat"].isna().sum()),
    }
