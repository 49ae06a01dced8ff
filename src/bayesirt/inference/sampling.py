"""The one driver for every Markov-chain method (Gibbs samplers, NUTS references).

A method supplies three pure functions of one chain:

* ``init_fn(key) -> state``: the starting state, a NamedTuple (or any pytree) of arrays;
* ``step_fn(key, state) -> state``: one sweep; pure and jittable;
* ``record_fn(state) -> dict[str, array]``: what is kept per draw. Only this is stored, so the
  memory of a run is (chains x draws x what is recorded), never sweeps x persons x items
  unless a method records that on purpose. (An optional ``stats_fn`` does the same for the
  ``sample_stats`` group, e.g. acceptance indicators a Metropolis step keeps in its state.)

Data (response matrices) should come in through ``sample(..., data=...)``, which makes the two
functions ``init_fn(key, data)`` and ``step_fn(key, state, data)``: arrays a function closes
over are compiled into the program as constants, which XLA may spend minutes folding.

The driver owns everything else:

* **Keys.** The key is split once into ``init`` and ``sweeps`` keys, each split into one key per
  chain. Sweep ``s`` (counted over burn-in and sampling together) of chain ``c`` uses
  ``fold_in(sweeps_key[c], s)``. The draws therefore depend only on the key and the number of
  sweeps, not on how the sweeps are cut into chunks, and the same key gives the same draws.
* **Chains** by ``jax.vmap`` over the per-chain keys and states: on one GPU, a vectorized batch
  of chains is the cheapest way to run them. On a CPU, ``settings.chain_processes`` > 1 cuts the
  chains into groups, each run vmapped in its own worker process pinned to one core
  (:mod:`bayesirt.inference.chain_processes`), with the same keys and draws: XLA's CPU runtime
  splits one program's large elementwise passes over the cores (fork-join), which speeds a
  single chain and leaves a vmapped batch contending, so four chains in two pinned processes
  finish sooner than four vmapped in one (``gibbs_2pno_1k30`` reports both). Several host
  devices in one process (``jax_num_cpu_devices`` with ``shard_map``) were measured and
  rejected: the devices' fork-join threads contend.
* **Chunks.** ``settings.chunk`` sweeps run inside one jitted ``lax.scan`` (a Python loop of
  jitted single sweeps pays dispatch overhead per sweep, which dominates a cheap Gibbs sweep).
  Sampling chunks keep every ``thin``-th sweep (a sampling chunk holds ``max(1, chunk // thin)``
  draws); burn-in keeps nothing (it reuses the sampling program and drops its draws, so the
  step is compiled once fewer; see ``_plan``). ``n_samples // thin`` draws are kept per chain, so
  ``n_warmup + thin * (n_samples // thin)`` sweeps are run in all.
* **Compilation** of the (at most three) chunk shapes is done ahead of time with
  ``jit(...).lower(...).compile()`` and timed apart: ``compile_seconds`` is that, plus the
  initial-state program (with worker processes: from their start to the last one ready);
  ``wall_seconds`` is initialisation, burn-in and sampling.
* **Progress** lines through ``logging.getLogger("bayesirt")`` every ``progress_every`` chunks:
  sweep i / total, phase, sweeps per second (per chain; all chains advance together).
* **Non-finite guard.** After each chunk every floating-point field of the state and of the
  chunk's draws is checked (on the device, one flag per field and chain). On the first
  non-finite value the run stops; the draws up to the last good chunk are kept, ``diverged`` is
  set and ``reason`` names the chunk's sweep range, the field and the chains. The state is only
  checked at chunk ends, so draws inside the bad chunk are dropped even if some look finite.
  (For the same reason the state buffers are not donated to the next chunk: the last good
  state must survive a bad chunk. It is returned as ``extra["final_state"]``, chains first.)
* **Output**: ArviZ ``InferenceData`` from ``az.from_dict`` (``created_at`` dropped, so a rerun
  writes an identical file) and a tidy summary whose R-hat, ESS and MCSE come from ArviZ.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np
import pandas as pd

from bayesirt.inference import chain_processes
from bayesirt.inference.chains import ChainFunctions, SamplerSettings, compile_group, execute_group

if TYPE_CHECKING:  # for the annotations only: the functions import ArviZ and xarray when they run
    import arviz as az
    import xarray as xr

__all__ = [
    "STAT_COLUMNS",
    "SampleResult",
    "SamplerSettings",
    "convergence",
    "sample",
    "summary_table",
    "to_inference_data",
]

log = logging.getLogger("bayesirt")

STAT_COLUMNS = ["mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]
_SAMPLE_DIMS = ("chain", "draw")


class SampleResult(NamedTuple):
    idata: az.InferenceData  # posterior group: chain x draw x ...; sample_stats if any
    summary: pd.DataFrame  # summary_table(idata): parameter, index columns, STAT_COLUMNS
    n_sweeps: int  # sweeps (NUTS: iterations) run per chain, burn-in included
    wall_seconds: float  # after compilation
    compile_seconds: float
    diverged: bool  # non-finite state met
    reason: str  # "completed", or where/what went non-finite
    # method-specific extras: sample() gives "final_state" (the last good state, chains first,
    # e.g. to continue a run); run_nuts gives divergences and phase timings
    extra: dict | None = None


# ---------------------------------------------------------------------------------------------
# the driver


def sample(
    key,
    init_fn: Callable,
    step_fn: Callable,
    record_fn: Callable,
    settings: SamplerSettings,
    *,
    coords: dict | None = None,
    dims: dict | None = None,
    label: str = "sampler",
    stats_fn: Callable | None = None,
    data=None,
) -> SampleResult:
    """Run ``settings.n_chains`` chains of ``step_fn`` from ``init_fn``; see the module docstring.

    ``coords`` and ``dims`` go to ``az.from_dict`` (``dims`` maps a recorded name to the names
    of its axes after chain and draw). ``stats_fn(state) -> dict`` (optional) is recorded like
    ``record_fn`` into the ``sample_stats`` group.

    ``data`` (optional, any pytree of arrays): passed to the compiled programs as an argument,
    and then the functions are called as ``init_fn(key, data)`` and ``step_fn(key, state,
    data)``. Give large arrays (response matrices) this way rather than closing over them: XLA
    folds closed-over arrays into the program as constants, which can make compilation take
    minutes (a 2000 x 2000 float32 matrix: ~20 s instead of 0.2 s).

    ``settings.chain_processes`` > 1 runs the chains in that many worker processes on the CPU
    (see :mod:`bayesirt.inference.chain_processes`); the functions must then be picklable.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the chains' initial-state and sweep keys.
    init_fn : callable
        ``init_fn(key)`` (or ``init_fn(key, data)``): a chain's starting state.
    step_fn : callable
        ``step_fn(key, state)`` (or ``step_fn(key, state, data)``): one sweep.
    record_fn : callable
        ``record_fn(state) -> dict``: what is kept per draw.
    settings : SamplerSettings
        Chains, burn-in, draws, thinning, chunks, progress and worker processes.
    coords : dict, optional
        Coordinates for ``az.from_dict``.
    dims : dict, optional
        Axis names after chain and draw of each recorded name, for ``az.from_dict``.
    label : str
        Name of the run in the progress log.
    stats_fn : callable, optional
        ``stats_fn(state) -> dict``, recorded into the ``sample_stats`` group.
    data : pytree of arrays, optional
        The data, passed to the compiled programs as an argument.

    Returns
    -------
    SampleResult
        Draws (InferenceData, chain x draw), summary table, sweeps run per chain, timings,
        whether a non-finite value stopped the run and why, and ``extra["final_state"]``, the
        last good state, chains first.
    """
    init_key, sweeps_key = jax.random.split(key)
    init_keys = jax.random.split(init_key, settings.n_chains)
    chain_keys = jax.random.split(sweeps_key, settings.n_chains)
    fns = ChainFunctions(init_fn, step_fn, record_fn, stats_fn, data is not None)

    groups = chain_processes.plan_groups(settings)
    if len(groups) > 1:
        run = chain_processes.run_groups(groups, init_keys, chain_keys, fns, settings, data, label)
    else:
        compiled = compile_group(fns, settings, init_keys, chain_keys, data)
        run = execute_group(compiled, init_keys, chain_keys, settings, label)

    idata = to_inference_data(run.posterior, run.stats, coords=coords, dims=dims)
    log.info(
        "%s: %s after %d sweeps x %d chains, %.2f s (+%.2f s compile)",
        label,
        "diverged" if run.diverged else "completed",
        run.done,
        settings.n_chains,
        run.wall_seconds,
        run.compile_seconds,
    )
    return SampleResult(
        idata,
        summary_table(idata),
        run.done,
        run.wall_seconds,
        run.compile_seconds,
        run.diverged,
        run.reason,
        {"final_state": run.states},
    )


# ---------------------------------------------------------------------------------------------
# InferenceData and summaries


def to_inference_data(posterior: dict, sample_stats: dict | None = None, *, coords=None, dims=None) -> az.InferenceData:
    """``az.from_dict`` of chain x draw arrays, without the ``created_at`` stamp.

    Parameters
    ----------
    posterior : dict
        Name -> array (chains, draws, ...).
    sample_stats : dict, optional
        Name -> array (chains, draws, ...) for the ``sample_stats`` group.
    coords : dict, optional
        Coordinates for ``az.from_dict``.
    dims : dict, optional
        Axis names after chain and draw of each name, for ``az.from_dict``.

    Returns
    -------
    arviz.InferenceData
        The posterior group (and ``sample_stats`` when given and not empty).
    """
    import arviz as az  # here, not at the top: importing ArviZ costs seconds in every workflow job

    with warnings.catch_warnings():
        # ArviZ guesses the axes are swapped when there are more chains than draws (e.g. a run
        # that diverged early); ours are always chain x draw
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        idata = az.from_dict(
            posterior={k: np.asarray(v) for k, v in posterior.items()},
            sample_stats=None if not sample_stats else {k: np.asarray(v) for k, v in sample_stats.items()},
            coords=coords,
            dims=dims,
        )
    for group in idata.groups():
        idata[group].attrs.pop("created_at", None)
    return idata


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


# R-hat, ESS and MCSE are ArviZ's (rank-normalized split R-hat, bulk and tail ESS, the MCSE of
# the mean; Vehtari et al. 2021), computed here for every parameter of a variable at once:
# ArviZ applies them one parameter at a time in Python, which cost a paper-size Gibbs block
# more than its sampling (benchmark case posterior_summaries). The unit tests hold these to
# ArviZ's own values.
#
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
