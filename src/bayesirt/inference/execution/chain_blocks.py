"""A block of data sets' chains as one compiled program (replications in bulk, issue #29).

A simulation study runs one sampler with one set of settings on many data sets, the
replications of a condition. Here the chunk program of :mod:`bayesirt.inference.execution.chains`, which
is vmapped over a run's chains, is vmapped once more over the data sets of a *block*: one
compiled program sweeps every chain of every replication. :func:`compile_block` compiles it,
:func:`execute_block` runs it chunk by chunk (the same plan of chunks as a single run), and
:func:`bayesirt.inference.samplers.sampling_blocks.sample_block` turns a block's run into one
``SampleResult`` per replication.

Each replication keeps what it has alone: its data (the block's data are stacked along a
leading axis, so they must have the same shapes), its keys (split from its own key as
``sampling.sample`` splits it, so sweep ``s`` of chain ``c`` draws the same random numbers as in
a single run), its draws and its non-finite guard. After every chunk each replication's fields
are checked; one that went non-finite is stopped alone: its state is held at the last good one
(it is still swept alongside the others, and those sweeps are thrown away), its draws are cut
before the failing chunk, and its ``reason`` names the chunk, the field and the chains, as in a
single run, while the other replications run to the end.

Draws agree with a single run's to float32 rounding: the batched program may sum over persons
or items in another order. With XLA's own reductions (this package's default; the unit tests)
they were equal bit for bit on the CPU. Where reductions go to the YNNPACK library (the Gibbs
workflow jobs, ``runtime.use_library_reductions``), sums differ in the last bits, and a
Metropolis step (the scale move, ``gibbs_expansion.rescale``) can then accept in one run and
reject in the other, after which that chain's path differs by a little for a stretch of sweeps
(rarely; the Performance page has the figures). Both runs are then valid chains of the same
posterior, whose estimates agree to Monte Carlo error;
the studies record the block in every fit record, as part of a fit's settings.

Memory (:func:`check_memory`). Before any sweep the block's working memory as XLA plans it (the
largest of its compiled programs, ``bulk.working_bytes``) and, on the CPU, where the draws kept
share the same memory, the draws (replications x chains x draws x the values recorded per
draw) are compared with the free memory (``bulk.available_bytes``); a block that would not fit
is refused with a MemoryError that names the setting to lower. On an accelerator only the
programs are checked against its memory (the draws go to the host). The Performance page gives
the sizes of a large block.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.bulk import available_bytes, working_bytes
from bayesirt.inference.execution.chains import (
    ChainFunctions,
    CompiledGroup,
    SamplerSettings,
    _bad_fields,
    _finite_flags,
    compile_programs,
)

log = logging.getLogger("bayesirt")


class BlockRun(NamedTuple):
    """What running a block gives (numpy arrays, replications first, then chains).

    Attributes
    ----------
    states : pytree
        Every replication's last good state (replications, chains, ...).
    draws : pytree
        What ``recorder`` keeps, (replications, chains, draws, ...); replication ``r`` holds
        ``kept[r]`` valid draws.
    kept : numpy.ndarray
        Draws kept per replication.
    done : numpy.ndarray
        Sweeps run per replication (per chain).
    diverged : numpy.ndarray
        Whether each replication met a non-finite value.
    reasons : list of str
        ``"completed"``, or where and what went non-finite, per replication.
    wall_seconds : float
        Wall time of the block's run.
    compile_seconds : float
        Compilation time.
    memory_bytes : int
        Working memory of the block's largest program.
    """

    states: Any
    draws: Any
    kept: np.ndarray
    done: np.ndarray
    diverged: np.ndarray
    reasons: list
    wall_seconds: float
    compile_seconds: float
    memory_bytes: int


def block_keys(keys, n_chains: int):
    """Per replication and chain, the initial-state and sweep keys that ``sampling.sample``
    would split from each replication's key.

    Parameters
    ----------
    keys : sequence of jax.Array
        One key per replication.
    n_chains : int
        Chains per replication.

    Returns
    -------
    tuple of jax.Array
        Initial-state keys and sweep keys, each (replications, chains).
    """
    init, sweeps = [], []
    for key in keys:
        init_key, sweeps_key = jax.random.split(key)
        init.append(jax.random.split(init_key, n_chains))
        sweeps.append(jax.random.split(sweeps_key, n_chains))
    return jnp.stack(init), jnp.stack(sweeps)


def compile_block(fns: ChainFunctions, settings: SamplerSettings, init_keys, chain_keys, data) -> CompiledGroup:
    """Compile a block's initial-state program and every chunk program of the run's plan.

    Parameters
    ----------
    fns : ChainFunctions
        The method's per-chain functions; they must take ``data``.
    settings : SamplerSettings
        Chains, sweeps, chunking.
    init_keys, chain_keys : jax.Array
        Keys from :func:`block_keys`, (replications, chains).
    data : pytree of arrays
        The replications' data stacked along a leading axis.

    Returns
    -------
    chains.CompiledGroup
        The programs, over (replications, chains).
    """
    if not fns.takes_data:
        raise ValueError("a block of replications needs chain functions that take each replication's data")
    data = jax.device_put(data)
    vmapped_init = jax.vmap(jax.vmap(fns.init_fn, in_axes=(0, None)), in_axes=(0, 0))
    over_replications = functools.partial(jax.vmap, in_axes=(0, 0, None, 0))
    return compile_programs(fns, vmapped_init, fns.step_fn, settings, init_keys, chain_keys, data, over_replications)


def program_bytes(compiled: CompiledGroup) -> int:
    """Working memory of a block's largest program (they run one after another).

    Parameters
    ----------
    compiled : chains.CompiledGroup
        From :func:`compile_block`.

    Returns
    -------
    int
        Bytes (``bulk.working_bytes`` of the initial-state and chunk programs, the largest).
    """
    return max(working_bytes(p) for p in [compiled.init_program, *compiled.programs.values()])


def draws_bytes(compiled: CompiledGroup, settings: SamplerSettings) -> int:
    """Memory of every draw a block keeps (all its replications and chains).

    Parameters
    ----------
    compiled : chains.CompiledGroup
        From :func:`compile_block`.
    settings : SamplerSettings
        Draws kept per chain (``n_draws``).

    Returns
    -------
    int
        Bytes: replications x chains x draws x the bytes the recorder keeps per draw.
    """
    per_draw = jax.eval_shape(jax.vmap(jax.vmap(compiled.recorder)), compiled.state_shape)
    return sum(math.prod(s.shape) * s.dtype.itemsize for s in jax.tree.leaves(per_draw)) * settings.n_draws


def check_memory(working: int, draws: int, n_reps: int, setting: str) -> None:
    """Refuse a block that would not fit in the free memory (see the module docstring).

    Parameters
    ----------
    working : int
        Working memory of the block's programs, in bytes (all of them that run at once).
    draws : int
        Memory of the draws kept, in bytes.
    n_reps : int
        Replications in the block, for the message.
    setting : str
        The config key that sets the block's size, named in the message.

    Raises
    ------
    MemoryError
        One line: what the block needs, what is free, and ``setting``.
    """
    free = available_bytes()
    on_cpu = jax.default_backend() == "cpu"
    need = working + (draws if on_cpu else 0)
    if free is not None and need > 0.9 * free:
        parts = f"{working / 1e9:.2f} GB for its programs" + (f", {draws / 1e9:.2f} GB for its draws" if on_cpu else "")
        raise MemoryError(
            f"a block of {n_reps} replications needs {need / 1e9:.2f} GB ({parts}) and {free / 1e9:.2f} GB are "
            f"free: lower {setting}"
        )


def _rep_flags(states, draws=None) -> dict:
    """Per floating-point field, a (replications, chains) array: is every value finite?"""
    return jax.vmap(lambda s, d: _finite_flags(s, d))(states, {} if draws is None else draws)


def _hold(stopped: np.ndarray, new, old):
    """``new`` states, but ``old`` ones for the replications flagged in ``stopped``."""
    mask = jnp.asarray(stopped)
    return jax.tree.map(lambda n, o: jnp.where(mask.reshape((-1,) + (1,) * (n.ndim - 1)), o, n), new, old)


def execute_block(
    compiled: CompiledGroup, init_keys, chain_keys, settings: SamplerSettings, label: str, first_rep: int = 0
) -> BlockRun:
    """Initialise and run a block's compiled chunks, each replication with its own guard.

    Parameters
    ----------
    compiled : chains.CompiledGroup
        From :func:`compile_block`.
    init_keys, chain_keys : jax.Array
        Keys from :func:`block_keys`.
    settings : SamplerSettings
        Chains, sweeps, progress.
    label : str
        Name of the block in the log.
    first_rep : int
        Position of the first replication in its whole block, for messages.

    Returns
    -------
    BlockRun
        Last good states, draws, and per replication the draws kept, sweeps run and divergence.
    """
    plan, data = compiled.plan, compiled.data
    n_reps = init_keys.shape[0]
    total = sum(sweeps for *_, sweeps in plan)
    t0 = time.perf_counter()
    states = compiled.init_program(init_keys, data)
    per_draw = jax.eval_shape(jax.vmap(jax.vmap(compiled.recorder)), compiled.state_shape)
    store = jax.tree.map(lambda s: np.empty((*s.shape[:2], settings.n_draws, *s.shape[2:]), s.dtype), per_draw)
    kept, done = np.zeros(n_reps, int), np.zeros(n_reps, int)
    stopped = np.zeros(n_reps, bool)
    reasons = ["completed"] * n_reps

    def stop_bad(flags: dict, what: str) -> np.ndarray:
        bad_reps = np.zeros(n_reps, bool)
        for r in range(n_reps):
            bad = _bad_fields({name: f[r] for name, f in flags.items()})
            if bad and not stopped[r]:
                bad_reps[r] = True
                reasons[r] = what.format(bad=bad)
                log.error("%s: replication %d (of the block): %s", label, first_rep + r, reasons[r])
        return bad_reps

    stopped |= stop_bad(jax.device_get(_rep_flags(states)), "non-finite initial state: {bad}")
    sweep = 0
    for i, (phase, program, sweeps) in enumerate(plan):
        if stopped.all():
            break
        new_states, chunk_draws, flags = compiled.programs[program](
            states, chain_keys, jnp.asarray(sweep, jnp.int32), data
        )
        stopped |= stop_bad(
            jax.device_get(flags),
            f"non-finite values in {{bad}} during sweeps {sweep + 1}-{sweep + sweeps} ({phase} chunk {i + 1} of "
            f"{len(plan)}); kept the draws before sweep {sweep + 1}",
        )
        states = _hold(stopped, new_states, states) if stopped.any() else new_states
        running = ~stopped
        if phase == "sampling":
            got = jax.device_get(chunk_draws)
            n = jax.tree.leaves(got)[0].shape[2]
            at = int(kept[running][0]) if running.any() else 0  # every running replication has as many
            for target, source in zip(jax.tree.leaves(store), jax.tree.leaves(got)):
                target[running, :, at : at + n] = source[running]
            kept[running] += n
        done[running] += sweeps
        sweep += sweeps
        if settings.progress_every and ((i + 1) % settings.progress_every == 0 or i + 1 == len(plan)):
            elapsed = time.perf_counter() - t0
            log.info(
                "%s: sweep %d / %d (%s), %d of %d replications running, %.1f sweeps/s",
                label,
                sweep,
                total,
                phase,
                int(running.sum()),
                n_reps,
                sweep / max(elapsed, 1e-9),
            )
    states = jax.device_get(states)
    wall = time.perf_counter() - t0
    return BlockRun(
        states, store, kept, done, stopped, reasons, wall, compiled.compile_seconds, program_bytes(compiled)
    )
