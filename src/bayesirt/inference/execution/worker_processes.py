"""Pinned worker processes, one CPU core each, that compile, wait for a common start and run.

What :mod:`bayesirt.inference.execution.chain_processes` (a run's chains in groups) and
:mod:`bayesirt.inference.execution.chain_blocks` (a block's replications in groups) share; the why and
how are in the docstring of ``chain_processes``. A worker is a fresh Python process
(``subprocess``), pinned to its core before JAX starts; its job (a pickled dict naming a
``prepare`` and an ``execute`` function) goes through a temporary file, its result comes back
the same way, and its log lines are relayed through this process's ``bayesirt`` log.
"""

from __future__ import annotations

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

log = logging.getLogger("bayesirt")

# The worker pins itself to its core (argv[3], "-" for none) before anything is imported: the
# libraries start threads when imported (numpy's BLAS, JAX), and a process pinned after them ran
# a block's program many times slower with two workers side by side (the Performance page has
# the figures).
_WORKER_COMMAND = (
    "import os, sys\n"
    "if sys.argv[3] != '-' and hasattr(os, 'sched_setaffinity'):\n"
    "    os.sched_setaffinity(0, {int(sys.argv[3])})\n"
    "from bayesirt.inference.execution.worker_processes import worker_main\n"
    "worker_main()"
)
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


def job_cores() -> int:
    """The cores a job may keep busy: Snakemake hands a job's thread count to its scripts as
    ``OMP_NUM_THREADS`` (with the other libraries' thread variables), which a job's worker
    processes honour; elsewhere, every usable core.

    Returns
    -------
    int
        At least 1.
    """
    threads = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, int(threads)) if threads.isdigit() else len(usable_cpus())


def worker_ranges(n: int, workers: int, requested: int, in_process: str) -> list[tuple[int, int]]:
    """Contiguous ranges [start, stop) of ``n`` chains or replications, one per worker process
    (one range means "run in this process"). Worker processes are for the CPU: on another
    backend the request falls back to one range, with a warning; more workers than usable cores
    share them, with a warning too.

    Parameters
    ----------
    n : int
        Chains or replications to split.
    workers : int
        Worker processes wanted.
    requested : int
        The ``chain_processes`` setting asked for (for the warning).
    in_process : str
        What then runs in this process (for the warning).

    Returns
    -------
    list of tuple of int
        The ranges, in order.
    """
    if workers > 1 and jax.default_backend() != "cpu":
        log.warning(
            "chain_processes=%d applies to the CPU only; running %s in this process on the %s",
            requested,
            in_process,
            jax.default_backend(),
        )
        workers = 1
    elif workers > len(usable_cpus()):
        log.warning(
            "%d worker processes but only %d usable cores: they share them (same draws, slower)",
            workers,
            len(usable_cpus()),
        )
    bounds = np.linspace(0, n, workers + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def key_payload(keys):
    """Typed or raw JAX keys as (numpy data, implementation name or None), for pickling.

    Parameters
    ----------
    keys : jax.Array
        Typed keys, or raw key data.

    Returns
    -------
    tuple of (numpy.ndarray, str or None)
        The key data, and the implementation's name for typed keys (None for raw ones).
    """
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(keys)), str(jax.random.key_impl(keys))
    return np.asarray(keys), None


def keys_from(payload):
    """The keys of :func:`key_payload` back.

    Parameters
    ----------
    payload : tuple of (numpy.ndarray, str or None)
        As :func:`key_payload` gives it.

    Returns
    -------
    jax.Array
        Typed keys of that implementation, or the raw key data.
    """
    data, impl = payload
    return jax.random.wrap_key_data(data, impl=impl) if impl is not None else jax.numpy.asarray(data)


def worker_main() -> None:
    """A worker process: ``argv[1]`` is the job file, ``argv[2]`` where the result goes (``argv[3]``,
    its core, was applied by ``_WORKER_COMMAND`` before any import).

    The job (a dict) names two module-level functions: ``job["prepare"](job)`` compiles (then
    the worker prints its ready line and waits for the go line on standard input) and
    ``job["execute"](job, prepared)`` runs; its value goes back to the parent. A MemoryError
    goes back as such (its one-line message), anything else with its traceback."""
    job_path, result_path = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        job = pickle.loads(job_path.read_bytes())
        if job["log_level"] is not None:
            from bayesirt.logs import quiet_libraries

            quiet_libraries()
            # bare lines: the parent relays them through its own log (_relay_log)
            logging.basicConfig(level=job["log_level"], format="%(levelname)s %(message)s")
        jax.config.update("jax_enable_x64", job["x64"])
        prepared = job["prepare"](job)
        print(_READY, flush=True)
        if sys.stdin.readline().strip() != _GO:
            return  # the parent gave up (another worker failed)
        result = ("done", job["execute"](job, prepared))
    except MemoryError as err:  # a block too large for the memory: its message names the setting
        result = ("memory", str(err))
    except BaseException as err:  # everything goes back to the parent
        import traceback

        result = ("error", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
    result_path.write_bytes(pickle.dumps(result))


def worker_job(what: str, index: int, label: str) -> dict:
    """The fields every worker job has: its part (``what``, e.g. ``chains 0-1``, for messages),
    its core, log level and float width; the caller adds ``prepare``, ``execute`` and their data.

    Parameters
    ----------
    what : str
        The worker's part, for messages.
    index : int
        The worker's number; its core is the ``index``-th usable core (cycling).
    label : str
        Name of the run in the log.

    Returns
    -------
    dict
        ``what``, ``label`` (``label [what]``), ``cpu``, ``log_level`` (INFO, or None where the
        ``bayesirt`` log does not show INFO) and ``x64``.
    """
    cpus = usable_cpus()
    bayesirt_log = logging.getLogger("bayesirt")
    return {
        "what": what,
        "label": f"{label} [{what}]",
        "cpu": cpus[index % len(cpus)],
        "log_level": logging.INFO if bayesirt_log.isEnabledFor(logging.INFO) else None,
        "x64": bool(jax.config.jax_enable_x64),
    }


def run_workers(jobs: list[dict], label: str) -> tuple[list, float, float]:
    """Run ``jobs`` (from :func:`worker_job`, with ``prepare`` and ``execute``), each in its own
    pinned worker process, all starting together once every one is ready.

    Parameters
    ----------
    jobs : list of dict
        The workers' jobs (picklable).
    label : str
        Name of the run in the log.

    Returns
    -------
    tuple of (list, float, float)
        What each job's ``execute`` returned, in order; the wall seconds from the go to the last
        result; the seconds from the first start to the last worker ready.

    Raises
    ------
    MemoryError
        With a worker's message, if its part did not fit in memory.
    RuntimeError
        With a worker's error and traceback, if one failed.
    """
    with tempfile.TemporaryDirectory(prefix="bayesirt-chains-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        workers, relays = [], []
        try:
            for index, job in enumerate(jobs):
                (tmp / f"job{index}.pkl").write_bytes(pickle.dumps(job))
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            _WORKER_COMMAND,
                            str(tmp / f"job{index}.pkl"),
                            str(tmp / f"result{index}.pkl"),
                            "-" if job["cpu"] is None else str(job["cpu"]),
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
                    _read_result(tmp, index, jobs[index]["what"], worker)  # raises with the worker's error
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
                runs.append(_read_result(tmp, index, jobs[index]["what"], worker))
            wall = time.perf_counter() - t0
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
            for relay in relays:
                relay.join(timeout=10)
    return runs, wall, compile_seconds


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


def _read_result(tmp: Path, index: int, what: str, worker):
    """The worker's result; raises with its error, or with its exit code if it left none."""
    path = tmp / f"result{index}.pkl"
    if not path.exists():
        raise RuntimeError(
            f"chain worker for {what} ended with exit code {worker.returncode} and no result (see its messages above)"
        )
    status, payload = pickle.loads(path.read_bytes())
    if status == "memory":
        raise MemoryError(payload)
    if status == "error":
        raise RuntimeError(f"chain worker for {what} failed: {payload}")
    return payload
