"""Chains in worker processes, one CPU core each (``SamplerSettings.chain_processes``).

Why processes. On a CPU, vmapped chains in one process do not use the cores well: XLA's CPU
runtime splits one program's large elementwise passes over the cores (fork-join), which speeds
a single chain and leaves a batch of chains contending. Processes pinned to one core each, with
their share of the chains vmapped inside, keep every core busy with work of its own
(``gibbs_2pno_1k30`` measures both ways on the same data). Stan and PyMC run chains in
processes for the same reason. Several host devices in one process (``jax_num_cpu_devices``)
were measured too and do not do this (see :mod:`bayesirt.inference.samplers.sampling`).

How. The chains are cut into ``min(chain_processes, n_chains)`` contiguous groups.
Each group runs in a fresh Python process (``subprocess``, not ``multiprocessing``: a spawned
multiprocessing child re-runs the parent's main script, and Snakemake's ``script:`` files have
no main guard), pinned to one core *before* JAX starts (XLA sizes its thread pool and its
fork-join width from the cores a process may use: pinned, a program runs single-threaded). The
job (the pickled functions, settings, data and keys) goes through a temporary file. A worker
gets the per-chain keys that :func:`~bayesirt.inference.samplers.sampling.sample` split from the run's
key, so chain ``c`` uses the same keys as in a one-process run, and compiles its group's
programs (from the persistent compilation cache when ``JAX_COMPILATION_CACHE_DIR`` is set; the
environment is inherited). When every worker has compiled, all start together: the reported
``wall_seconds`` runs from that start to the last group's draws read back, ``compile_seconds``
from the first process start to the last worker ready (start-up, imports and compilation).
The parent relays the workers' log lines (progress, warnings) through its own ``bayesirt``
log, so they reach a Snakemake job's log file.

Draws. A group's vmapped program computes each chain's sweeps with the same operations as the
one-process program, so the draws agree with a one-process run to float32 rounding (the unit
tests compare them); equal bit for bit where every group holds two chains or more (four chains,
two processes: the same draws as four vmapped chains, in the benchmarks), but a group of one
chain is compiled without its batch axis and may differ in the last bits. The grouping follows
the settings alone, not the cores found, so a given configuration gives the same draws on
every machine.

Failures. A worker that raises sends its traceback, and the run stops with it. A group that
meets a non-finite value stops and tells the others the sweep it reached; they run up to that
sweep and stop there, so the draws kept are those before the failing chunk, as in a one-process
run, whichever group was ahead. The functions given to ``sample``
must be picklable (module-level functions, or ``functools.partial`` of them with picklable
arguments, as the Gibbs kernels are); a lambda or closure stops with a message naming it.

Blocks. A block of replications (:mod:`bayesirt.inference.samplers.sampling_blocks`) uses the same
workers (:mod:`bayesirt.inference.execution.worker_processes`), its replications cut into groups instead
of its chains.

Only the CPU backend: on a GPU the vmapped chains already run side by side, and processes would
compete for one device's memory; ``chain_processes`` > 1 then falls back to one process, with a
warning.
"""

from __future__ import annotations

import functools
import logging
import pickle
import tempfile
from pathlib import Path

import jax
import numpy as np

from bayesirt.inference.execution.chains import ChainFunctions, GroupRun, SamplerSettings, compile_group, execute_group
from bayesirt.inference.execution.worker_processes import key_payload, keys_from, run_workers, worker_job, worker_ranges

log = logging.getLogger("bayesirt")


def plan_groups(settings: SamplerSettings) -> list[tuple[int, int]]:
    """Contiguous chain ranges [start, stop), one per worker process.

    One range means "run in this process". The ranges depend on the settings only, never on the
    cores found: XLA compiles a group of one chain differently from a batch of two (a degenerate
    batch axis is folded away), which moves the draws in the last bits, so a run reproduces bit
    for bit wherever it runs. With fewer usable cores than workers, the workers share them.

    Parameters
    ----------
    settings : SamplerSettings
        ``n_chains`` and ``chain_processes``.

    Returns
    -------
    list of tuple of (int, int)
        The chain ranges.
    """
    n = settings.n_chains
    return worker_ranges(n, min(settings.chain_processes, n), settings.chain_processes, "the chains vmapped")


def check_picklable(fns: ChainFunctions) -> None:
    """Check that a method's per-chain functions can be sent to worker processes.

    Parameters
    ----------
    fns : ChainFunctions
        The functions ``init_fn``, ``step_fn``, ``record_fn`` and ``stats_fn``.

    Raises
    ------
    ValueError
        Naming the first function that does not pickle, and what to use instead.
    """
    for name in ("init_fn", "step_fn", "record_fn", "stats_fn"):
        fn = getattr(fns, name)
        try:
            pickle.dumps(fn)
        except Exception as err:  # pickle raises several types
            raise ValueError(
                f"chain_processes > 1 needs picklable functions, but {name} ({fn!r}) is not "
                f"({err}); use module-level functions or functools.partial of them, or "
                f"chain_processes=1"
            ) from None


def _prepare_chains(job: dict):
    """A chain group's worker, before the go: its keys and compiled programs."""
    init_keys, chain_keys = keys_from(job["init_keys"]), keys_from(job["chain_keys"])
    return compile_group(job["fns"], job["settings"], init_keys, chain_keys, job["data"]), init_keys, chain_keys


def _execute_chains(job: dict, prepared) -> GroupRun:
    """A chain group's worker, after the go: its run, stopped where another group went non-finite."""
    compiled, init_keys, chain_keys = prepared
    stops = Path(job["stop_dir"])
    run = execute_group(
        compiled,
        init_keys,
        chain_keys,
        job["settings"],
        job["label"],
        job["first_chain"],
        functools.partial(_reached_a_stop, stops),
    )
    if run.diverged:
        # the sweeps this group completed before it went non-finite: the other groups run
        # up to there and stop, so the draws kept do not depend on which group was ahead
        mark = stops / f"stop-{job['first_chain']}"
        mark.with_suffix(".tmp").write_text(str(run.done))
        mark.with_suffix(".tmp").replace(mark)
    return run._replace(states=jax.device_get(run.states))


def _reached_a_stop(stops: Path, done: int) -> bool:
    """True once this group has completed as many sweeps as the earliest group that went
    non-finite had (its ``stop-<first chain>`` file in ``stops``)."""
    marks = [int(p.read_text()) for p in stops.glob("stop-*") if p.suffix != ".tmp"]
    return bool(marks) and done >= min(marks)


def run_groups(
    groups, init_keys, chain_keys, fns: ChainFunctions, settings: SamplerSettings, data, label: str
) -> GroupRun:
    """Run each chain range of ``groups`` in its own pinned worker process.

    Parameters
    ----------
    groups : list of tuple of (int, int)
        Chain ranges from ``plan_groups``.
    init_keys, chain_keys : jax.Array
        Per-chain keys (all chains).
    fns : ChainFunctions
        The method's per-chain functions (picklable).
    settings : SamplerSettings
        Chains, sweeps, chunking.
    data : pytree of arrays or None
        Data passed to the programs.
    label : str
        Name of the run in the log.

    Returns
    -------
    chains.GroupRun
        The chains together, in order.

    Raises
    ------
    ValueError
        If the chain functions cannot be pickled.
    """
    check_picklable(fns)
    data_np = None if data is None else jax.device_get(data)
    with tempfile.TemporaryDirectory(prefix="bayesirt-stops-") as stops:
        jobs = [
            {
                **worker_job(f"chains {a}-{b - 1}", index, label),
                "prepare": _prepare_chains,
                "execute": _execute_chains,
                "fns": fns,
                "settings": settings,
                "data": data_np,
                "first_chain": a,
                "init_keys": key_payload(init_keys[a:b]),
                "chain_keys": key_payload(chain_keys[a:b]),
                "stop_dir": stops,
            }
            for index, (a, b) in enumerate(groups)
        ]
        runs, wall, compile_seconds = run_workers(jobs, label)
    return _combine(runs, wall, compile_seconds)


def _combine(runs: list[GroupRun], wall: float, compile_seconds: float) -> GroupRun:
    """The groups' chains side by side; draws cut to what every group completed."""
    n_draws = min(next(iter(r.posterior.values())).shape[1] if r.posterior else 0 for r in runs)

    def join(dicts):
        if dicts[0] is None:
            return None
        return {k: np.concatenate([d[k][:, :n_draws] for d in dicts], axis=0) for k in dicts[0]}

    done = min(r.done for r in runs)
    diverged = any(r.diverged for r in runs)
    reasons = [r.reason for r in runs if r.diverged]
    aligned = all(r.done == done for r in runs)
    states = jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *[r.states for r in runs]) if aligned else None
    reason = "; ".join(reasons) if diverged else "completed"
    if diverged and not aligned:
        reason += f"; the groups stopped at different sweeps (kept the {n_draws} draws all completed; no final state)"
    return GroupRun(
        states,
        join([r.posterior for r in runs]),
        join([r.stats for r in runs]),
        done,
        diverged,
        reason,
        wall,
        compile_seconds,
    )
