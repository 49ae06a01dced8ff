"""Replications in bulk: a block of fits by the training driver as one compiled program.

A simulation study fits the same model with the same settings to many data sets. Fitted one
process at a time, each fit pays its start-up, its compilation and a fixed cost per step that
small problems never amortise (on a GPU, the kernel-launch latency of every step). Here the
training driver's compiled chunk (``training_chunks.chunk_fn``) is vectorized over the fits of a block
(``jax.vmap``): one program steps every fit at once, each with its own data, key, initial
parameters and minibatch order, so step ``t`` of a fit draws the same minibatch and the same
random numbers as it would alone.

Each fit keeps its own stopping test (``stopping.Stopper``), read after every chunk as the
single driver does. A fit that stops (converged, or its loss became non-finite) is taken out of
the block there: its parameters are the ones it had at that point (the last good ones for a fit
that diverged), so they stop changing while the others run on, and its result gives its own
steps and reason. The block ends when every fit has stopped or reached ``max_steps``. Stopped
fits keep being computed alongside the running ones (their results are discarded). Once half
of the program's fits have stopped, it may be narrowed to the running ones, at the price of one
more compilation: it is, once the seconds already spent stepping stopped fits (their share of
each chunk's wall time) reach the seconds the program took to compile. This is the ski-rental
rule: whenever the running fits stop, the block has spent at most twice what the better of
"narrow at once" and "never narrow" would have, without knowing when they stop. Small blocks
of fits that stop close together (the default config's) keep their program; a few slow fits
in a large block do not pay for a full block for long.

A fit's result depends on its block only through float32 rounding: vectorized arithmetic may
sum in another order than the single fit's (the tests state the tolerance). Over thousands of
steps such differences can grow, and a stopping test can then fire a check earlier or later, so
the studies treat the block size as part of a fit's settings and record it.

Groups. A block may also be stepped in consecutive groups of ``width`` fits, one group after
another to the end, by the same compiled program (``groups_of``). On a CPU the fits of a block
share no arithmetic, and a program as wide as the block holds every fit's step in memory at
once: at the paper's ``normal_p5`` IWAE settings a fit-step costs about the same alone and in
a program of 4 or 8 fits, and half as much again in one of 100, the wide program having left the
core's cache (the Performance page has the figures, ``program_width``). A group's results depend on its
members as a block's do, so the width is part of a fit's settings too. Groups of one block can
run in worker processes, one per core (``inference.execution.bulk_processes``).
"""

from __future__ import annotations

import logging
import time

import jax
import jax.numpy as jnp

from bayesirt import block_plan
from bayesirt.inference.execution import checkpoints
from bayesirt.inference.execution.bulk_group import Group
from bayesirt.inference.execution.checkpoints import Checkpoint
from bayesirt.inference.execution.training import FitResult, Problem
from bayesirt.inference.execution.training_chunks import chunk_fn

log = logging.getLogger("bayesirt")


def _layout(tree) -> tuple:
    """A pytree's structure and leaf shapes (compared by value, whatever its nodes' equality)."""
    return jax.tree.structure(tree), [jnp.shape(x) for x in jax.tree.leaves(tree)]


def check_block(problems: list[Problem]) -> None:
    """Fits of one block must share their loss, size and settings; a one-line error otherwise.

    Parameters
    ----------
    problems : list of training.Problem
        The fits of the block.

    Raises
    ------
    ValueError
        If there are no fits, or they differ in N, training settings, or the structure and
        shapes of their parameters and data.
    """
    if not problems:
        raise ValueError("a block needs at least one fit")
    first = problems[0]
    for p in problems[1:]:
        if p.n_persons != first.n_persons:
            raise ValueError(
                f"fits of one block need the same number of persons: {first.label} has {first.n_persons}, "
                f"{p.label} has {p.n_persons}"
            )
        if p.settings != first.settings:
            raise ValueError(f"fits of one block need the same training settings: {first.label} and {p.label} differ")
        if _layout((p.params, p.data)) != _layout((first.params, first.data)):
            raise ValueError(f"fits of one block need parameters and data of the same shapes: {p.label} differs")


def available_bytes() -> int | None:
    """Memory free for a program: the accelerator's (limit less use) or the machine's available
    memory (``MemAvailable``); None where neither is known.

    Returns
    -------
    int or None
        Free bytes.
    """
    stats = jax.devices()[0].memory_stats()
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def working_bytes(compiled) -> int:
    """A compiled program's working memory as XLA plans it: arguments, outputs and temporaries
    (less what outputs reuse of the arguments).

    Parameters
    ----------
    compiled : jax.stages.Compiled
        The compiled program.

    Returns
    -------
    int
        Bytes; 0 where XLA gives no memory analysis.
    """
    m = compiled.memory_analysis()
    if m is None:
        return 0
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)


def program_width(value: int | str, n_fits: int) -> int | None:
    """Fits per program from a setting: an integer as it is; ``"auto"`` on an accelerator the
    whole block (None: a wide program pays the step's latency once for all its fits), on a CPU
    ``block_plan.cpu_program_width`` (at most 8, groups of equal size).

    Parameters
    ----------
    value : int or str
        The setting: fits per program, or ``"auto"``.
    n_fits : int
        Fits in the block.

    Returns
    -------
    int or None
        Fits per program; None for the whole block (also on a CPU when the width would be
        the block's size).
    """
    if value == "auto":
        width = block_plan.cpu_program_width(n_fits)
        return width if jax.default_backend() == "cpu" and width < n_fits else None
    return int(value)


def groups_of(n_fits: int, width: int | None) -> list[range]:
    """The consecutive groups of ``width`` fits (the last may be smaller) that one program steps
    together; one group of all ``n_fits`` when ``width`` is None or at least ``n_fits``.

    Parameters
    ----------
    n_fits : int
        Fits in the block.
    width : int or None
        Fits per group; None for one group.

    Returns
    -------
    list of range
        The fits' positions in each group, in order.

    Raises
    ------
    ValueError
        If ``width`` is below 1.
    """
    width = n_fits if width is None else width
    if width < 1:
        raise ValueError(f"fits per program must be at least 1, got {width}")
    return [range(a, min(a + width, n_fits)) for a in range(0, n_fits, width)]


def train_block(
    problems: list[Problem], label: str = "block", setting: str = "the block size", width: int | None = None
) -> list[FitResult]:
    """Fit ``problems`` (``training.Problem``, differing only in parameters, key and data) as one
    vectorized program, or as consecutive groups of ``width`` fits, one group after another, with
    one compiled program; see the module docstring.

    Parameters
    ----------
    problems : list of training.Problem
        The fits of the block. Their ``loss_fn`` and ``optimizer`` are taken from the first.
    label : str
        Name of the block in the progress log.
    setting : str
        The setting that sets the block's size (a config key), named when the block is refused.
    width : int, optional
        Fits stepped together by the program (``groups_of``); the whole block by default. On a
        CPU a narrow program keeps each step's arrays in the core's cache (see the module
        docstring); a fit's result depends on its group as it does on its block.

    Returns
    -------
    list of training.FitResult
        One per problem, in order. ``wall_seconds`` is its group's wall time divided by the
        group's size (the group's share per fit) and ``extra["block"]`` gives the block's size,
        the program's width, the fit's group and position, the block's wall and compile seconds
        and the step at which the fit left its group, the step its group resumed at from a
        checkpoint (``resumed_at_step``, 0 for a fresh start; ``checkpoints``), and the program's
        working memory (``memory_bytes``). A fit whose loss became non-finite has the result
        ``training.keep_last_good`` gives a single fit.

    Raises
    ------
    MemoryError
        Before any step, when the program's working memory exceeds the free memory, naming
        ``setting``.
    """
    check_block(problems)
    first = problems[0]
    settings, n_persons, n_fits = first.settings, first.n_persons, len(problems)
    groups = groups_of(n_fits, width)
    batch_size = min(settings.batch_size or n_persons, n_persons)
    optimizer = first.optimizer if first.optimizer is not None else settings.optimizer()
    track = settings.stopping == "noise"
    chunk = chunk_fn(first.loss_fn, optimizer, n_persons, batch_size, settings.check_every, track)

    def block_chunk(params, opt_state, step_key, perms, data, first_step):
        out = jax.vmap(chunk, in_axes=(0, 0, 0, 0, 0, None))(params, opt_state, step_key, perms, data, first_step)
        finite = jax.vmap(lambda p: jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(p)])))(out[0])
        return (*out, finite)

    jitted = jax.jit(block_chunk)
    init_state = jax.jit(jax.vmap(optimizer.init))
    t0 = time.perf_counter()
    group = Group([problems[i] for i in groups[0]], settings, batch_size, init_state)
    lowered = jitted.lower(*group.arguments(0))
    program = lowered.compile()
    compile_seconds = time.perf_counter() - t0
    digest = checkpoints.program_digest(lowered) if checkpoints.folder() is not None else None
    memory, free = working_bytes(program), available_bytes()
    if free is not None and memory > 0.9 * free:
        raise MemoryError(
            f"a block of {len(groups[0])} fits in one program needs {memory / 1e9:.2f} GB of working memory and "
            f"{free / 1e9:.2f} GB are free: lower {setting}"
        )
    log.info(
        "%s: %d fits, %d in one program (%d group%s), %.1f MB of working memory",
        label,
        n_fits,
        len(groups[0]),
        len(groups),
        "" if len(groups) == 1 else "s",
        memory / 1e6,
    )
    results: list[FitResult] = []
    recompile_seconds = 0.0  # narrowing the groups' programs: compilation, not the fits' wall time
    block_wall = 0.0  # the groups' stepping (with a resumed group's earlier sittings), not compilation
    saved: list[Checkpoint | None] = []
    resumed: list[int] = []  # the step each group started from
    for g, members in enumerate(groups):
        if g > 0:
            group = Group([problems[i] for i in members], settings, batch_size, init_state)
            program = jitted  # compiled at its first call if this group is narrower
        group_label = label if len(groups) == 1 else f"{label} [group {g + 1} of {len(groups)}]"
        saved.append(Checkpoint.for_group(digest, settings, width or n_fits, group.inputs()))
        results += group.run(program, jitted, group_label, compile_seconds, saved[-1])
        recompile_seconds += group.recompile_seconds
        block_wall += group.wall_seconds
        resumed.append(group.resumed_at_step)
    for checkpoint in filter(None, saved if not checkpoints.keep_finished() else []):
        checkpoint.remove()  # the block is whole: its checkpoints are spent
    compile_seconds += recompile_seconds
    for g, members in enumerate(groups):
        for i in members:
            results[i].compile_seconds = compile_seconds / n_fits
            results[i].extra["block"] = {
                "size": n_fits,
                "width": width or n_fits,
                "group": g,
                "position": i,
                "wall_seconds": block_wall,
                "compile_seconds": compile_seconds,
                "left_at_step": results[i].extra.pop("left_at_step"),
                "resumed_at_step": resumed[g],
                "memory_bytes": memory,
            }
    log.info("%s: %d fits in %.2f s (+%.2f s compile)", label, n_fits, block_wall, compile_seconds)
    return results
