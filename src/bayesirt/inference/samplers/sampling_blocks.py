"""Replications in bulk for the Markov-chain driver: :func:`sample_block` runs one sampler on a
block of data sets (the replications of a condition) as one compiled program
(:mod:`bayesirt.inference.execution.chain_blocks`) and gives each replication the ``SampleResult`` that
:func:`bayesirt.inference.samplers.sampling.sample` gives a single run: its draws, summary, sweeps,
divergence and reason, with ``extra["block"]`` added.

Worker processes (``settings.chain_processes`` > 1, CPU only, as for a single run). A block's
*replications* are cut into ``min(chain_processes, n_chains, replications)`` contiguous groups,
each run as a block in its own worker pinned to one core
(:mod:`bayesirt.inference.execution.worker_processes`); a job asks for as many cores as a single fit with
the same settings. Why replications and not chains: every chain of a replication is then in one
process, so a replication that goes non-finite stops alone inside its worker, with no signal to
the others, and each worker's batch (its replications times all chains) is as large as the
block allows. A block of one replication is a single run (``sampling.sample``: its chains in
the workers as before, the same draws bit for bit). The grouping follows the settings and the
block alone, so the draws do not depend on the cores found; they agree with the block run in
one process to float32 rounding.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from bayesirt.inference.execution.chain_blocks import (
    BlockRun,
    block_keys,
    check_memory,
    compile_block,
    draws_bytes,
    execute_block,
    program_bytes,
)
from bayesirt.inference.execution.chain_processes import check_picklable
from bayesirt.inference.execution.chains import ChainFunctions, SamplerSettings
from bayesirt.inference.execution.worker_processes import (
    key_payload,
    keys_from,
    run_workers,
    usable_cpus,
    worker_job,
    worker_ranges,
)
from bayesirt.inference.samplers.posterior_summary import summary_table
from bayesirt.inference.samplers.sampling import SampleResult, sample, to_inference_data

log = logging.getLogger("bayesirt")


def plan_replication_groups(settings: SamplerSettings, n_reps: int) -> list[tuple[int, int]]:
    """Contiguous replication ranges [start, stop) of a block, one per worker process.

    Parameters
    ----------
    settings : SamplerSettings
        ``chain_processes`` and ``n_chains`` (a job has ``min(chain_processes, n_chains)`` cores).
    n_reps : int
        Replications in the block.

    Returns
    -------
    list of tuple of (int, int)
        The ranges; one range means "run in this process".
    """
    workers = min(settings.chain_processes, settings.n_chains, n_reps)
    return worker_ranges(n_reps, workers, settings.chain_processes, "the block")


def sample_block(
    keys,
    init_fn: Callable,
    step_fn: Callable,
    record_fn: Callable,
    settings: SamplerSettings,
    datas: list,
    *,
    coords: dict | None = None,
    dims: dict | None = None,
    label: str = "block",
    setting: str = "the block size",
    stats_fn: Callable | None = None,
) -> list[SampleResult]:
    """Run ``settings.n_chains`` chains of ``step_fn`` on every data set of ``datas`` at once.

    Parameters
    ----------
    keys : sequence of jax.Array
        One key per replication: the key its single run would get.
    init_fn, step_fn, record_fn : callable
        As for ``sampling.sample`` with ``data``: ``init_fn(key, data)``, ``step_fn(key, state,
        data)``, ``record_fn(state)``.
    settings : SamplerSettings
        The sampler's settings, shared by the block.
    datas : list of pytrees of arrays
        Each replication's data (same structure and shapes).
    coords, dims : dict, optional
        For ``az.from_dict``, shared by the block.
    label : str
        Name of the block in the log.
    setting : str
        The config key that sets the block's size, named when the block does not fit in memory.
    stats_fn : callable, optional
        As for ``sampling.sample``.

    Returns
    -------
    list of sampling.SampleResult
        One per replication, in order. ``wall_seconds`` and ``compile_seconds`` are the block's
        divided by its size; ``extra["block"]`` gives the block's size, the replication's
        position, the block's wall and compile seconds, the sweeps the replication ran
        (``left_at_step``) and the block's working memory (``memory_bytes``; 0 for a block of one
        replication, which runs as a single fit).

    Raises
    ------
    MemoryError
        Before any sweep, when the block would not fit in the free memory, naming ``setting``.
    """
    n_reps = len(datas)
    if n_reps == 1:
        res = sample(
            keys[0], init_fn, step_fn, record_fn, settings, coords=coords, dims=dims, label=label, stats_fn=stats_fn,
            data=datas[0],
        )  # fmt: skip
        block = {"size": 1, "position": 0, "wall_seconds": res.wall_seconds}
        block |= {"compile_seconds": res.compile_seconds, "left_at_step": res.n_sweeps, "memory_bytes": 0}
        return [res._replace(extra={**res.extra, "block": block})]
    shapes = [jax.tree.map(np.shape, d) for d in datas]
    for r, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ValueError(f"the replications of one block need data of the same shapes: replication {r} differs")
    fns = ChainFunctions(init_fn, step_fn, record_fn, stats_fn, True)
    init_keys, chain_keys = block_keys(keys, settings.n_chains)
    data = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *datas)
    groups = plan_replication_groups(settings, n_reps)
    if len(groups) > 1:
        run = _run_in_workers(groups, fns, settings, init_keys, chain_keys, data, label, setting)
    else:
        compiled = compile_block(fns, settings, init_keys, chain_keys, data)
        memory = program_bytes(compiled)
        check_memory(memory, draws_bytes(compiled, settings), n_reps, setting)
        log.info("%s: %d replications in one program, %.1f MB of working memory", label, n_reps, memory / 1e6)
        run = execute_block(compiled, init_keys, chain_keys, settings, label)
    log.info(
        "%s: %d replications, %d diverged, %.2f s (+%.2f s compile)",
        label,
        n_reps,
        int(run.diverged.sum()),
        run.wall_seconds,
        run.compile_seconds,
    )
    # the replications' summaries (sorting and FFTs, which release the GIL) on every usable core
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(n_reps, len(usable_cpus())))) as pool:
        results = list(pool.map(lambda r: _result(run, r, settings, coords, dims, stats_fn is not None), range(n_reps)))
    log.info("%s: %d summaries in %.1f s", label, n_reps, time.perf_counter() - t0)
    return results


def _result(run: BlockRun, r: int, settings: SamplerSettings, coords, dims, has_stats: bool) -> SampleResult:
    """Replication ``r``'s SampleResult from its block's run."""
    n_reps = len(run.reasons)
    draws = jax.tree.map(lambda a: a[r, :, : run.kept[r]], run.draws)
    posterior, stats = (dict(draws["posterior"]), dict(draws["sample_stats"])) if has_stats else (dict(draws), None)
    idata = to_inference_data(posterior, stats, coords=coords, dims=dims)
    block = {
        "size": n_reps,
        "position": r,
        "wall_seconds": run.wall_seconds,
        "compile_seconds": run.compile_seconds,
        "left_at_step": int(run.done[r]),
        "memory_bytes": int(run.memory_bytes),
    }
    return SampleResult(
        idata,
        summary_table(idata),
        int(run.done[r]),
        run.wall_seconds / n_reps,
        run.compile_seconds / n_reps,
        bool(run.diverged[r]),
        run.reasons[r],
        {"final_state": jax.tree.map(lambda a: a[r], run.states), "block": block},
    )


def _run_in_workers(groups, fns, settings, init_keys, chain_keys, data, label, setting) -> BlockRun:
    """The block's replication groups each in a pinned worker process, put back together."""
    check_picklable(fns)
    n_reps = init_keys.shape[0]
    jobs = [
        {
            **worker_job(f"replications {a}-{b - 1}", index, label),
            "prepare": _prepare_block,
            "execute": _execute_block,
            "fns": fns,
            "settings": settings,
            "data": _slice(data, a, b),
            "init_keys": key_payload(init_keys[a:b]),
            "chain_keys": key_payload(chain_keys[a:b]),
            "first_rep": a,
            "n_workers": len(groups),
            "n_reps": n_reps,
            "setting": setting,
        }
        for index, (a, b) in enumerate(groups)
    ]
    runs, wall, compile_seconds = run_workers(jobs, label)
    return BlockRun(
        jax.tree.map(_join, *[r.states for r in runs]),
        jax.tree.map(_join, *[r.draws for r in runs]),
        _join(*[r.kept for r in runs]),
        _join(*[r.done for r in runs]),
        _join(*[r.diverged for r in runs]),
        [reason for r in runs for reason in r.reasons],
        wall,
        compile_seconds,
        sum(r.memory_bytes for r in runs),
    )


def _slice(tree, a: int, b: int):
    return jax.tree.map(lambda x: x[a:b], tree)


def _join(*xs):
    return np.concatenate(xs, axis=0)


def _prepare_block(job: dict):
    """A worker's share of a block, before the go: its keys and programs, and the memory check
    of the whole block (every worker's programs at once, about this one's times their number,
    and all the draws, which come back to the parent)."""
    init_keys, chain_keys = keys_from(job["init_keys"]), keys_from(job["chain_keys"])
    settings = job["settings"]
    compiled = compile_block(job["fns"], settings, init_keys, chain_keys, job["data"])
    share = init_keys.shape[0]
    all_draws = draws_bytes(compiled, settings) * job["n_reps"] // share
    check_memory(program_bytes(compiled) * job["n_workers"], all_draws, job["n_reps"], job["setting"])
    return compiled, init_keys, chain_keys


def _execute_block(job: dict, prepared) -> BlockRun:
    """A worker's share of a block, after the go: its run."""
    compiled, init_keys, chain_keys = prepared
    return execute_block(compiled, init_keys, chain_keys, job["settings"], job["label"], job["first_rep"])
