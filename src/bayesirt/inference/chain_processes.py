"""Chains in worker processes, one CPU core each (``SamplerSettings.chain_processes``).

Why processes. On a CPU, vmapped chains in one process do not use the cores well: XLA's CPU
runtime splits one program's large elementwise passes over the cores (fork-join), which speeds
a single chain and leaves a batch of chains contending. Processes pinned to one core each, with
their share of the chains vmapped inside, keep every core busy with work of its own
(``gibbs_2pno_1k30`` measures both ways on the same data). Stan and PyMC run chains in
processes for the same reason. Several host devices in one process (``jax_num_cpu_devices``)
were measured too and do not do this (see :mod:`bayesirt.inference.sampling`).

How. The chains are cut into ``min(chain_processes, n_chains)`` contiguous groups.
Each group runs in a fresh Python process (``subprocess``, not ``multiprocessing``: a spawned
multiprocessing child re-runs the parent's main script, and Snakemake's ``script:`` files have
no main guard), pinned to one core *before* JAX starts (XLA sizes its thread pool and its
fork-join width from the cores a process may use: pinned, a program runs single-threaded). The
job (the pickled functions, settings, data and keys) goes through a temporary file. A worker
gets the per-chain keys that :func:`~bayesirt.inference.sampling.sample` split from the run's
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

Only the CPU backend: on a GPU the vmapped chains already run side by side, and processes would
compete for one device's memory; ``chain_processes`` > 1 then falls back to one process, with a
warning.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import jax
import numpy as np

from bayesirt.inference.chains import ChainFunctions, GroupRun, SamplerSettings, compile_group, execute_group

log = logging.getLogger("bayesirt")

_WORKER_COMMAND = "from bayesirt.inference.chain_processes import worker_main; worker_main()"
_READY, _GO = "ready", "go"


def usable_cpus() -> list[int]:
    """The cores this process may run on (all of them where affinity cannot be read).

    Returns
    -------
    list of int
        Core numbers, sorted.
    """
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


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
    workers = min(settings.chain_processes, n)
    if workers > 1 and jax.default_backend() != "cpu":
        log.warning(
            "chain_processes=%d applies to the CPU only; running the chains vmapped in this process on the %s",
            settings.chain_processes,
            jax.default_backend(),
        )
        workers = 1
    elif workers > len(usable_cpus()):
        log.warning(
            "chain_processes=%d but only %d usable cores: the workers share them (same draws, slower)",
            workers,
            len(usable_cpus()),
        )
    bounds = np.linspace(0, n, workers + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _key_payload(keys):
    """Typed or raw JAX keys as (numpy data, implementation name or None), for pickling."""
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(keys)), str(jax.random.key_impl(keys))
    return np.asarray(keys), None


def _keys_from(payload):
    data, impl = payload
    return jax.random.wrap_key_data(data, impl=impl) if impl is not None else jax.numpy.asarray(data)


def _check_picklable(fns: ChainFunctions) -> None:
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


def worker_main() -> None:
    """A worker process: ``argv[1]`` is the job file, ``argv[2]`` where the result goes.
    Prints a ready line when compiled, waits for the go line on standard input, runs."""
    job_path, result_path = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        job = pickle.loads(job_path.read_bytes())
        if job["cpu"] is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {job["cpu"]})  # before JAX starts its backend
        if job["log_level"] is not None:
            from bayesirt.logs import quiet_libraries

            quiet_libraries()
            # bare lines: the parent relays them through its own log (_relay_log)
            logging.basicConfig(level=job["log_level"], format="%(levelname)s %(message)s")
        jax.config.update("jax_enable_x64", job["x64"])
        init_keys, chain_keys = _keys_from(job["init_keys"]), _keys_from(job["chain_keys"])
        compiled = compile_group(job["fns"], job["settings"], init_keys, chain_keys, job["data"])
        print(_READY, flush=True)
        if sys.stdin.readline().strip() != _GO:
            return  # the parent gave up (another worker failed)
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
        result = ("done", run._replace(states=jax.device_get(run.states)))
    except BaseException as err:  # everything goes back to the parent
        import traceback

        result = ("error", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
    result_path.write_bytes(pickle.dumps(result))


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
    _check_picklable(fns)
    cpus = usable_cpus()
    data_np = None if data is None else jax.device_get(data)
    bayesirt_log = logging.getLogger("bayesirt")
    log_level = logging.INFO if bayesirt_log.isEnabledFor(logging.INFO) else None
    with tempfile.TemporaryDirectory(prefix="bayesirt-chains-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        workers, relays = [], []
        try:
            for index, (a, b) in enumerate(groups):
                job = {
                    "fns": fns,
                    "settings": settings,
                    "data": data_np,
                    "first_chain": a,
                    "init_keys": _key_payload(init_keys[a:b]),
                    "chain_keys": _key_payload(chain_keys[a:b]),
                    "label": f"{label} [chains {a}-{b - 1}]",
                    "cpu": cpus[index % len(cpus)],
                    "log_level": log_level,
                    "x64": bool(jax.config.jax_enable_x64),
                    "stop_dir": str(tmp),
                }
                (tmp / f"job{index}.pkl").write_bytes(pickle.dumps(job))
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            _WORKER_COMMAND,
                            str(tmp / f"job{index}.pkl"),
                            str(tmp / f"result{index}.pkl"),
                        ],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
                relays.append(threading.Thread(target=_relay_log, args=(workers[-1].stderr,), daemon=True))
                relays[-1].start()
            for index, worker in enumerate(workers):
                if not _wait_ready(worker):
                    worker.wait()
                    _read_result(tmp, index, groups, worker)  # raises with the worker's error
                    raise RuntimeError(f"chain worker {index} ended before it was ready")
            compile_seconds = time.perf_counter() - t0
            log.info(
                "%s: %d worker processes ready after %.1f s (start-up and compilation)",
                label,
                len(workers),
                compile_seconds,
            )
            t0 = time.perf_counter()
            for worker in workers:
                worker.stdin.write(_GO + "\n")
                worker.stdin.flush()
            runs = []
            for index, worker in enumerate(workers):
                worker.wait()
                runs.append(_read_result(tmp, index, groups, worker))
            wall = time.perf_counter() - t0
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
            for relay in relays:
                relay.join(timeout=10)
    return _combine(runs, wall, compile_seconds)


def _relay_log(stream) -> None:
    """Pass a worker's standard error on, line by line, through this process's ``bayesirt``
    log (so a Snakemake job's log file gets its workers' progress lines). Lines the worker's
    logging wrote keep their level; anything else (warnings, tracebacks) goes as INFO."""
    for line in stream:
        line = line.rstrip("\n")
        level, _, message = line.partition(" ")
        if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") and message:
            log.log(getattr(logging, level), "%s", message)
        elif line:
            log.info("%s", line)


def _wait_ready(worker) -> bool:
    """Read the worker's standard output up to its ready line (anything else a library prints
    there is passed on); False if it ended first."""
    for line in worker.stdout:
        if line.strip() == _READY:
            return True
        sys.stdout.write(line)
    return False


def _read_result(tmp: Path, index: int, groups, worker) -> GroupRun:
    """The worker's result; raises with its error, or with its exit code if it left none."""
    a, b = groups[index]
    path = tmp / f"result{index}.pkl"
    if not path.exists():
        raise RuntimeError(
            f"chain worker for chains {a}-{b - 1} ended with exit code {worker.returncode} "
            "and no result (see its messages above)"
        )
    what, payload = pickle.loads(path.read_bytes())
    if what == "error":
        raise RuntimeError(f"chain worker for chains {a}-{b - 1} failed: {payload}")
    return payload


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
