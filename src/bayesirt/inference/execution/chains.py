"""The chunked, vmapped chain runner behind :func:`bayesirt.inference.samplers.sampling.sample`.

One *group* of chains (all of a run's chains, or one worker process's share of them, see
:mod:`bayesirt.inference.execution.chain_processes`) is compiled once (:func:`compile_group`) and then run
chunk by chunk (:func:`execute_group`), with the non-finite guard after every chunk. The module
docstring of :mod:`bayesirt.inference.samplers.sampling` describes keys, chunks, compilation and the
guard; this module only holds the pieces both the in-process and the worker-process runs use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

log = logging.getLogger("bayesirt")


@dataclass(frozen=True)
class SamplerSettings:
    """Settings of the Markov-chain driver (``sampling.sample``) and of ``nuts.run_nuts``.

    Attributes
    ----------
    n_chains : int
        Number of chains.
    n_warmup : int
        Burn-in sweeps, discarded.
    n_samples : int
        Sweeps kept after burn-in (before thinning).
    thin : int
        Keep every ``thin``-th sweep; ``n_samples // thin`` draws per chain (``n_draws``).
    chunk : int
        Sweeps per compiled ``lax.scan`` call.
    progress_every : int
        Chunks between progress log lines (0: silent).
    chain_processes : int
        CPU only: run the chains in this many worker processes, each pinned to one core
        (``bayesirt.inference.execution.chain_processes``); 1 runs them all vmapped in this process.

    Raises
    ------
    ValueError
        If ``n_chains``, ``thin``, ``chunk`` or ``chain_processes`` is below 1, ``n_warmup`` or
        ``progress_every`` is negative, or ``n_samples`` is below ``thin``.
    """

    n_chains: int = 4
    n_warmup: int = 1000  # burn-in sweeps, discarded
    n_samples: int = 1000  # sweeps kept after burn-in (before thinning)
    thin: int = 1
    chunk: int = 500  # sweeps per compiled lax.scan call
    progress_every: int = 1  # chunks between progress log lines (0: silent)
    # CPU only: run the chains in this many worker processes, each pinned to one core
    # (bayesirt.inference.execution.chain_processes); 1 runs them all vmapped in this process
    chain_processes: int = 1

    def __post_init__(self):
        for name in ("n_chains", "thin", "chunk", "chain_processes"):
            if getattr(self, name) < 1:
                raise ValueError(f"SamplerSettings.{name} must be at least 1, got {getattr(self, name)}")
        if self.n_warmup < 0 or self.progress_every < 0:
            raise ValueError("SamplerSettings.n_warmup and progress_every must be non-negative")
        if self.n_samples < self.thin:
            raise ValueError(f"SamplerSettings.n_samples ({self.n_samples}) must be at least thin ({self.thin})")

    @property
    def n_draws(self) -> int:
        """Draws kept per chain."""
        return self.n_samples // self.thin


def _named_leaves(prefix: str, tree) -> list[tuple[str, Any]]:
    """(name, leaf) for every leaf of a pytree, named like ``state.theta`` or ``draws.a``."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [(prefix + jax.tree_util.keystr(path, simple=True, separator="."), leaf) for path, leaf in leaves]


def _finite_flags(states, draws) -> dict:
    """Per floating-point field, a (chains,) vector: is every value of that chain finite?"""
    flags = {}
    for name, leaf in _named_leaves("state.", states) + _named_leaves("draws.", draws):
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            flags[name] = jnp.all(jnp.isfinite(leaf).reshape(leaf.shape[0], -1), axis=1)
    return flags


def _chunk_program(step_fn, record_fn, n_draws: int, thin: int, record: bool):
    """All chains, ``n_draws * thin`` sweeps from sweep ``first``; keeps every thin-th if ``record``."""

    def one_chain(state, chain_key, first, data):
        def sweep(state, s):
            return step_fn(jax.random.fold_in(chain_key, s), state, data)

        if not record:
            state, _ = jax.lax.scan(lambda st, s: (sweep(st, s), None), state, first + jnp.arange(n_draws * thin))
            return state, {}

        def draw(state, d):
            base = first + d * thin
            if thin == 1:
                state = sweep(state, base)
            else:
                state = jax.lax.fori_loop(0, thin, lambda i, st: sweep(st, base + i), state)
            return state, record_fn(state)

        return jax.lax.scan(draw, state, jnp.arange(n_draws))

    def chunk(states, chain_keys, first, data):
        states, draws = jax.vmap(one_chain, in_axes=(0, 0, None, None))(states, chain_keys, first, data)
        return states, draws, _finite_flags(states, draws)

    return chunk


def _plan(settings: SamplerSettings) -> list[tuple[str, tuple[bool, int], int]]:
    """(phase, program, sweeps) for every chunk in order; a program is (records?, length).

    A sampling chunk holds ``max(1, chunk // thin)`` draws. Burn-in runs in chunks of the same
    number of sweeps through the same program, its draws thrown away (they cost what one
    sampling chunk costs, and the step is compiled once fewer); only a shorter last burn-in
    chunk gets a program of its own that records nothing.
    """
    per_chunk = max(1, settings.chunk // settings.thin)
    full = per_chunk * settings.thin
    plan = [("burn-in", (True, per_chunk), full)] * (settings.n_warmup // full)
    if settings.n_warmup % full:
        plan.append(("burn-in", (False, settings.n_warmup % full), settings.n_warmup % full))
    n_full, rest = divmod(settings.n_draws, per_chunk)
    plan += [("sampling", (True, per_chunk), full)] * n_full
    if rest:
        plan.append(("sampling", (True, rest), rest * settings.thin))
    return plan


class ChainFunctions(NamedTuple):
    """A method's per-chain functions as :func:`sample` received them.

    Picklable when they are module-level functions or ``functools.partial`` of them.

    Attributes
    ----------
    init_fn : callable
        ``init_fn(key)`` or ``init_fn(key, data)``: a chain's starting state.
    step_fn : callable
        ``step_fn(key, state)`` or ``step_fn(key, state, data)``: one sweep.
    record_fn : callable
        ``record_fn(state) -> dict``: what is kept per draw.
    stats_fn : callable or None
        ``stats_fn(state) -> dict`` for the ``sample_stats`` group.
    takes_data : bool
        Whether ``init_fn`` and ``step_fn`` take ``data``.
    """

    init_fn: Callable
    step_fn: Callable
    record_fn: Callable
    stats_fn: Callable | None
    takes_data: bool

    def init_with(self):
        return self.init_fn if self.takes_data else (lambda k, d: self.init_fn(k))

    def step_with(self):
        return self.step_fn if self.takes_data else (lambda k, s, d: self.step_fn(k, s))

    def recorder(self):
        if self.stats_fn is None:
            return self.record_fn

        def both(state):
            return {"posterior": self.record_fn(state), "sample_stats": self.stats_fn(state)}

        return both


class CompiledGroup(NamedTuple):
    """The programs for one group of chains (all chains, or one worker's share).

    Attributes
    ----------
    init_program : compiled program
        The initial-state program.
    programs : dict
        (records?, length) -> compiled chunk program.
    state_shape : pytree of shapes
        Shapes of the chains' state.
    plan : list
        The chunks in order (from ``_plan``).
    recorder : callable
        State -> what is recorded per draw.
    has_stats : bool
        Whether ``sample_stats`` are recorded.
    data : pytree or None
        The data, on the device.
    compile_seconds : float
        Time spent compiling.
    """

    init_program: Any
    programs: dict  # (records?, length) -> compiled chunk program
    state_shape: Any
    plan: list
    recorder: Callable
    has_stats: bool
    data: Any
    compile_seconds: float


class GroupRun(NamedTuple):
    """What running a group of chains gives (numpy arrays, chains first).

    Attributes
    ----------
    states : pytree
        The last good state.
    posterior : dict
        Name -> array (chains, draws, ...).
    stats : dict or None
        Name -> array (chains, draws, ...), for ``sample_stats``.
    done : int
        Sweeps run per chain.
    diverged : bool
        Whether a non-finite value was met.
    reason : str
        ``"completed"``, or where/what went non-finite.
    wall_seconds : float
        Wall time of the run.
    compile_seconds : float
        Compilation time.
    """

    states: Any  # the last good state
    posterior: dict  # name -> (chains, draws, ...)
    stats: dict | None
    done: int  # sweeps run per chain
    diverged: bool
    reason: str
    wall_seconds: float
    compile_seconds: float


def compile_group(fns: ChainFunctions, settings: SamplerSettings, init_keys, chain_keys, data) -> CompiledGroup:
    """Compile the initial-state program and every chunk program of :func:`_plan` ahead of time.

    Parameters
    ----------
    fns : ChainFunctions
        The method's per-chain functions.
    settings : SamplerSettings
        Chains, sweeps, chunking.
    init_keys, chain_keys : jax.Array
        Per-chain keys (n_chains of each) for the initial states and the sweeps.
    data : pytree of arrays or None
        Data passed to the programs as an argument.

    Returns
    -------
    CompiledGroup
        The compiled programs.
    """
    if data is not None:
        data = jax.device_put(data)  # once, not at every chunk
    vmapped_init = jax.vmap(fns.init_with(), in_axes=(0, None))
    return compile_programs(fns, vmapped_init, fns.step_with(), settings, init_keys, chain_keys, data)


def compile_programs(
    fns: ChainFunctions, vmapped_init, step, settings: SamplerSettings, init_keys, chain_keys, data, batch=None
) -> CompiledGroup:
    """The programs of :func:`compile_group`, also for ``chain_blocks.compile_block``.

    Parameters
    ----------
    fns, settings, init_keys, chain_keys, data
        As for :func:`compile_group`.
    vmapped_init, step : callable
        The initial-state function over the keys' axes; the per-chain step.
    batch : callable, optional
        Maps a chain's chunk program over further axes (replications, with their data).

    Returns
    -------
    CompiledGroup
    """
    recorder = fns.recorder()
    plan = _plan(settings)
    t0 = time.perf_counter()
    init_program = jax.jit(vmapped_init).lower(init_keys, data).compile()
    state_shape = jax.eval_shape(vmapped_init, init_keys, data)
    first = jnp.asarray(0, jnp.int32)
    programs = {}
    for _, (record, n), _ in plan:
        if (record, n) not in programs:
            fn = _chunk_program(step, recorder, n, settings.thin if record else 1, record)
            fn = fn if batch is None else batch(fn)
            programs[record, n] = jax.jit(fn).lower(state_shape, chain_keys, first, data).compile()
    return CompiledGroup(
        init_program, programs, state_shape, plan, recorder, fns.stats_fn is not None, data, time.perf_counter() - t0
    )


def execute_group(
    compiled: CompiledGroup,
    init_keys,
    chain_keys,
    settings: SamplerSettings,
    label: str,
    first_chain: int = 0,
    should_stop: Callable[[int], bool] | None = None,
) -> GroupRun:
    """Initialise and run the compiled chunks in order, checking for non-finite values after each.

    Parameters
    ----------
    compiled : CompiledGroup
        The group's programs.
    init_keys, chain_keys : jax.Array
        Per-chain keys for the initial states and the sweeps.
    settings : SamplerSettings
        Chains, sweeps, progress.
    label : str
        Name of the run in the log.
    first_chain : int
        Number of the group's first chain, for messages.
    should_stop : callable, optional
        ``should_stop(done)`` (checked between chunks, with the sweeps completed so far) ends the
        run early, e.g. once it has reached the sweep where another group of chains went
        non-finite.

    Returns
    -------
    GroupRun
        Last good states, draws, sweeps done, divergence, timings.
    """
    plan, data = compiled.plan, compiled.data
    total = sum(sweeps for *_, sweeps in plan)
    t0 = time.perf_counter()
    states = compiled.init_program(init_keys, data)
    draws: list = []
    done, diverged, reason = 0, False, "completed"
    bad = _bad_fields(jax.device_get(_finite_flags(states, {})), first_chain)
    if bad:
        diverged, reason = True, f"non-finite initial state: {bad}"
        plan = []
    for i, (phase, program, sweeps) in enumerate(plan):
        if should_stop is not None and should_stop(done):
            reason = f"stopped after sweep {done}: another group of chains went non-finite"
            break
        new_states, chunk_draws, flags = compiled.programs[program](
            states, chain_keys, jnp.asarray(done, jnp.int32), data
        )
        bad = _bad_fields(jax.device_get(flags), first_chain)
        if bad:
            diverged = True
            reason = (
                f"non-finite values in {bad} during sweeps {done + 1}-{done + sweeps} "
                f"({phase} chunk {i + 1} of {len(plan)}); kept the draws before sweep {done + 1}"
            )
            log.error("%s: %s", label, reason)
            break
        states = new_states
        if phase == "sampling":
            draws.append(jax.device_get(chunk_draws))
        done += sweeps
        if settings.progress_every and ((i + 1) % settings.progress_every == 0 or i + 1 == len(plan)):
            elapsed = time.perf_counter() - t0
            log.info("%s: sweep %d / %d (%s), %.1f sweeps/s", label, done, total, phase, done / max(elapsed, 1e-9))
    jax.block_until_ready(states)
    wall = time.perf_counter() - t0
    posterior, stats = _stack_draws(draws, compiled.state_shape, compiled.recorder, compiled.has_stats)
    return GroupRun(states, posterior, stats, done, diverged, reason, wall, compiled.compile_seconds)


def _bad_fields(flags: dict, first_chain: int = 0) -> str:
    """'field (chains 0, 2), ...' for every field with a non-finite value; '' if none."""
    parts = []
    for name, ok in flags.items():
        ok = np.asarray(ok)
        if not ok.all():
            parts.append(f"{name} (chains {', '.join(str(first_chain + c) for c in np.flatnonzero(~ok))})")
    return "; ".join(parts)


def _stack_draws(draws: list, state_shape, recorder, has_stats: bool):
    """Concatenate the chunks' draws along the draw axis; zero-draw arrays when none were kept."""
    if draws:
        stacked = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *draws)
    else:
        one = jax.eval_shape(jax.vmap(recorder), state_shape)
        stacked = jax.tree.map(lambda s: np.zeros((s.shape[0], 0, *s.shape[1:]), s.dtype), one)
    if has_stats:
        return dict(stacked["posterior"]), dict(stacked["sample_stats"])
    return dict(stacked), None
