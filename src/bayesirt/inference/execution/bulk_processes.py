"""A block's groups in worker processes: ``bulk.train_block`` spread over a job's cores.

XLA runs one of these small programs on one core, so a block fitted in one process leaves the
other cores of its job idle while a job per replication would have used them all. Here the
block's groups (``bulk.groups_of``: consecutive fits, ``width`` of them, stepped together by
one program) are dealt out in contiguous runs to worker processes, one pinned to each core
(``inference.execution.worker_processes``), and each worker fits its groups with ``bulk.train_block``.
Which fits share a program depends on the width alone, not on the number of processes, so a
fit's result is the same bit for bit whatever the cores found.

A worker cannot be handed a ``training.Problem`` (its loss is a closure): it gets ``build``, a
module-level function (or a ``functools.partial`` of one) that makes a fit's problem from a
picklable description, and rebuilds its problems itself.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Callable

import jax

from bayesirt.inference.execution import bulk
from bayesirt.inference.execution.training import FitResult
from bayesirt.inference.execution.worker_processes import run_workers, worker_job

log = logging.getLogger("bayesirt")


def plan(n_fits: int, width: int | None, processes: int) -> list[range]:
    """The fits of each worker: whole groups (``bulk.groups_of``), contiguous, as evenly as the
    groups allow; one range means "in this process".

    Parameters
    ----------
    n_fits : int
        Fits in the block.
    width : int or None
        Fits per group (``bulk.groups_of``); None for one group.
    processes : int
        Most worker processes.

    Returns
    -------
    list of range
        The positions of each worker's fits, at most ``processes`` ranges (at least one).
    """
    groups = bulk.groups_of(n_fits, width)
    n_workers = max(1, min(processes, len(groups)))
    cuts = [round(w * len(groups) / n_workers) for w in range(n_workers + 1)]
    return [range(groups[cuts[w]].start, groups[cuts[w + 1] - 1].stop) for w in range(n_workers)]


def train_block(
    build: Callable,
    specs: list,
    *,
    width: int | None,
    processes: int,
    label: str = "block",
    setting: str = "the block size",
) -> list[FitResult]:
    """Fit ``[build(s) for s in specs]`` as one block in groups of ``width``, the groups spread
    over up to ``processes`` worker processes (see the module docstring).

    Parameters
    ----------
    build : callable
        ``build(spec) -> training.Problem``; picklable when more than one process runs.
    specs : list
        One picklable description per fit.
    width : int or None
        Fits per program (``bulk.train_block``); None: the whole block in one program.
    processes : int
        Most worker processes (the job's cores); 1 fits the block in this process.
    label, setting : str
        As for ``bulk.train_block``.

    Returns
    -------
    list of training.FitResult
        As ``bulk.train_block`` gives them, in order, with ``extra["block"]`` describing the
        whole block (its size, the fit's position and group, the block's wall seconds from the
        workers' start; the compile seconds are its worker's), ``extra["block"]["processes"]``,
        the workers that ran it, and ``startup_seconds``, their start-up before it.
    """
    parts = plan(len(specs), width, processes)
    if len(parts) == 1:
        results = bulk.train_block([build(s) for s in specs], label, setting, width)
        for r in results:
            r.extra["block"]["processes"] = 1
        return results
    try:
        pickle.dumps(build)
    except Exception as err:  # pickle raises several types
        message = f"fits in worker processes need a picklable build function, but {build!r} is not ({err})"
        raise ValueError(message) from None
    jobs = [
        {
            **worker_job(f"fits {part.start}-{part.stop - 1}", index, label),
            "prepare": _prepare,
            "execute": _execute,
            "build": build,
            "specs": specs[part.start : part.stop],
            "width": width,
            "setting": setting,
        }
        for index, part in enumerate(parts)
    ]
    t0 = time.perf_counter()
    runs, wall, ready_seconds = run_workers(jobs, label)
    total = time.perf_counter() - t0
    # the widest program's memory (the first worker's; a last, narrower group may be alone)
    memory = max(r.extra["block"]["memory_bytes"] for run in runs for r in run)
    results = []
    for part, run in zip(parts, runs, strict=True):
        first_group = part.start // (width or len(specs))
        for r in run:
            block = r.extra["block"]
            block.update(
                size=len(specs),
                position=part.start + block["position"],
                group=first_group + block["group"],
                wall_seconds=wall,
                startup_seconds=ready_seconds,
                processes=len(parts),
                memory_bytes=memory,
            )
            results.append(r)
    log.info(
        "%s: %d fits in %d worker processes, %.2f s (+%.2f s start-up and compilation; %.2f s in all)",
        label,
        len(specs),
        len(parts),
        wall,
        ready_seconds,
        total,
    )
    return results


def _prepare(job: dict):
    """A worker, before the go: its fits' problems, with their data on the device."""
    return [job["build"](s) for s in job["specs"]]


def _execute(job: dict, problems) -> list[FitResult]:
    """A worker, after the go: its groups fitted; the parameters come back as numpy arrays."""
    results = bulk.train_block(problems, job["label"], job["setting"], job["width"])
    for r in results:
        r.params = jax.device_get(r.params)
    return results
