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
over are compiled into the program as constants, which XLA may spend a long time folding.

The driver owns everything else:

* **Keys.** The key is split once into ``init`` and ``sweeps`` keys, each split into one key per
  chain. Sweep ``s`` (counted over burn-in and sampling together) of chain ``c`` uses
  ``fold_in(sweeps_key[c], s)``. The draws therefore depend only on the key and the number of
  sweeps, not on how the sweeps are cut into chunks, and the same key gives the same draws.
* **Chains** by ``jax.vmap`` over the per-chain keys and states: on one GPU, a vectorized batch
  of chains is the cheapest way to run them. On a CPU, ``settings.chain_processes`` > 1 cuts the
  chains into groups, each run vmapped in its own worker process pinned to one core
  (:mod:`bayesirt.inference.execution.chain_processes`), with the same keys and draws: XLA's CPU runtime
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
  writes an identical file) and a tidy summary whose R-hat, ESS and MCSE are ArviZ's
  (``inference.samplers.posterior_summary``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np

from bayesirt.inference.execution import chain_processes
from bayesirt.inference.execution.chains import ChainFunctions, SamplerSettings, compile_group, execute_group
from bayesirt.inference.samplers.posterior_summary import summary_table

if TYPE_CHECKING:  # for the annotations only (ArviZ is imported where it is used, it costs seconds)
    import arviz as az
    import pandas as pd

__all__ = [
    "SampleResult",
    "SamplerSettings",
    "sample",
    "to_inference_data",
]

log = logging.getLogger("bayesirt")


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
    compiles closed-over arrays into the program as constants and may fold them, which has made
    compilation take many times longer (the Performance page has the measurements).

    ``settings.chain_processes`` > 1 runs the chains in that many worker processes on the CPU
    (see :mod:`bayesirt.inference.execution.chain_processes`); the functions must then be picklable.

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
