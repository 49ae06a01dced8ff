"""The fits one compiled program of a block steps together (``bulk.train_block``): their stacked
state, their stopping tests and results, and when the program is narrowed to the fits still
running (``narrows``, the ski-rental rule of ``bulk``'s docstring)."""

from __future__ import annotations

import logging
import time

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution import checkpoints
from bayesirt.inference.execution.checkpoints import Checkpoint
from bayesirt.inference.execution.stopping import Stopper
from bayesirt.inference.execution.training import FitResult, Problem, diverged_result, finished
from bayesirt.inference.execution.training_chunks import EpochPermutations

log = logging.getLogger("bayesirt")


def stack(trees: list):
    """Pytrees of the same structure and shapes stacked along a new leading axis.

    Parameters
    ----------
    trees : list of pytree
        The pytrees, n of them.

    Returns
    -------
    pytree
        Their structure, each leaf of shape (n, *shape).
    """
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def member(tree, i):
    """Entry ``i`` of a stacked pytree.

    Parameters
    ----------
    tree : pytree
        Leaves with a leading axis (as ``stack`` makes them).
    i : int or array
        Index into the leading axis (an integer array selects several entries).

    Returns
    -------
    pytree
        The structure of ``tree``, each leaf indexed by ``i``.
    """
    return jax.tree.map(lambda a: a[i], tree)


def narrows(width: int, running: int, spent_on_stopped: float, compile_seconds: float) -> bool:
    """Whether a program stepping ``width`` fits is narrowed to those still running: once at
    most half still run and the seconds spent stepping the stopped ones have reached the seconds
    a compilation takes (the ski-rental rule of ``bulk``'s module docstring).

    Parameters
    ----------
    width : int
        Fits the program steps.
    running : int
        Those of them that have not stopped.
    spent_on_stopped : float
        Seconds of the program's chunks spent on stopped fits (their share of each chunk's wall
        time) since it was compiled.
    compile_seconds : float
        Seconds the program took to compile: the price of narrowing.

    Returns
    -------
    bool
        True when the program should be compiled again for the running fits.
    """
    return running <= width // 2 and spent_on_stopped >= compile_seconds


class Group:
    """The fits one program steps together: their stacked state, stopping tests and results."""

    def __init__(self, problems: list[Problem], settings, batch_size: int, init_state):
        self.problems, self.settings = problems, settings
        n_fits, n_persons = len(problems), problems[0].n_persons
        keys = jnp.stack([jax.random.split(p.key) for p in problems])  # (fits, 2): step key, permutation key
        self.step_keys = keys[:, 0]
        self.permutations = EpochPermutations(keys[:, 1], n_persons, batch_size, settings.check_every, n_fits)
        self.params = stack([p.params for p in problems])
        self.data = stack([p.data for p in problems])
        self.opt_state = init_state(self.params)
        self.stoppers = [Stopper(settings, n_persons) for _ in problems]
        self.recompile_seconds = 0.0  # narrowing the program (``run``)
        self.wall_seconds = 0.0  # stepping, once ``run`` has finished
        self.resumed_at_step = 0  # the step ``run`` started from (a checkpoint's, or 0)

    def arguments(self, steps: int) -> tuple:
        return self.params, self.opt_state, self.step_keys, self.permutations.for_chunk(steps), self.data, steps

    def inputs(self) -> tuple:
        """What the group's fits start from (for its checkpoint's fingerprint)."""
        return self.params, self.step_keys, self.permutations.key, self.data

    def run(
        self, program, jitted, label: str, compile_seconds: float, checkpoint: Checkpoint | None = None
    ) -> list[FitResult]:
        """Step the group until every fit has stopped or reached ``max_steps``; ``program`` is the
        compiled program for the full group (``jitted`` compiles the narrower ones), which took
        ``compile_seconds`` (the price of narrowing, see the module docstring). The seconds spent
        narrowing are ``recompile_seconds`` afterwards, not part of the fits' wall time. With a
        ``checkpoint`` (``inference.execution.checkpoints``) the group resumes from its saved
        state and saves its state as it goes."""
        settings, problems = self.settings, self.problems
        n_fits, track = len(problems), settings.stopping == "noise"
        results: list = [None] * n_fits
        left_at = [0] * n_fits
        running = np.arange(n_fits)  # the fits the program steps, in its order
        params, opt_state, run_keys, run_data = self.params, self.opt_state, self.step_keys, self.data
        steps, spent_on_stopped, elapsed = 0, 0.0, 0.0
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is not None and saved["steps"] > settings.max_steps:
            log.info("%s: the checkpoint at step %d is past max_steps; starting afresh", label, saved["steps"])
            saved = None
        if saved is not None:
            results, left_at, running, steps = saved["results"], saved["left_at"], saved["running"], saved["steps"]
            params, opt_state, self.stoppers = saved["params"], saved["opt_state"], saved["stoppers"]
            spent_on_stopped, elapsed, self.recompile_seconds = saved["spent_on_stopped"], *saved["seconds"]
            for stopper in self.stoppers:  # saved under another step cap, perhaps: this one's holds
                stopper.settings = settings
                if not stopper.converged:
                    stopper.reason = f"reached max_steps={settings.max_steps}"
            if len(running) < n_fits:  # it had been narrowed: the program for the running fits
                run_keys, run_data = self.step_keys[jnp.asarray(running)], member(self.data, jnp.asarray(running))
                t_compile = time.perf_counter()
                perms = self.permutations.for_chunk(steps)[jnp.asarray(running)]
                program = jitted.lower(params, opt_state, run_keys, perms, run_data, steps).compile()
                compile_seconds = time.perf_counter() - t_compile
                self.recompile_seconds += compile_seconds
            log.info("%s: resumed at step %d from %s", label, steps, checkpoint.path)
        self.resumed_at_step = steps
        stoppers = self.stoppers

        def state() -> dict:
            seconds = (time.perf_counter() - t0, self.recompile_seconds)
            return dict(
                results=results,
                left_at=left_at,
                running=running,
                steps=steps,
                params=params,
                opt_state=opt_state,
                stoppers=stoppers,
                spent_on_stopped=spent_on_stopped,
                seconds=seconds,
            )

        t0 = time.perf_counter() - elapsed
        while steps < settings.max_steps and any(r is None for r in results):
            active = np.asarray([i for i in running if results[i] is None])
            narrow = narrows(len(running), len(active), spent_on_stopped, compile_seconds)
            if narrow:  # the program narrowed to the fits still running
                keep = jnp.asarray(np.searchsorted(running, active))
                params, opt_state = member(params, keep), member(opt_state, keep)
                running = active
                run_keys, run_data = self.step_keys[jnp.asarray(running)], member(self.data, jnp.asarray(running))
            perms = self.permutations.for_chunk(steps)
            if len(running) < n_fits:  # full batch: one row of zeros per fit, narrowed alike
                perms = perms[jnp.asarray(running)]
            if narrow:
                t_compile = time.perf_counter()
                program = jitted.lower(params, opt_state, run_keys, perms, run_data, steps).compile()
                compile_seconds = time.perf_counter() - t_compile
                self.recompile_seconds += compile_seconds
                spent_on_stopped = 0.0
            t_chunk = time.perf_counter()
            new_params, new_state, losses, sums, finite = program(params, opt_state, run_keys, perms, run_data, steps)
            losses, finite = np.asarray(losses), np.asarray(finite)
            stopped = sum(results[i] is not None for i in running)
            spent_on_stopped += (time.perf_counter() - t_chunk) * stopped / len(running)
            sums = jax.device_get(sums) if track else None
            for pos, i in enumerate(running):
                if results[i] is not None:
                    continue
                bad = ~np.isfinite(losses[pos])
                if bad.any() or not finite[pos]:
                    at = steps + (int(np.argmax(bad)) if bad.any() else settings.check_every - 1)
                    log.error(
                        "%s: non-finite loss at step %d; stopped and kept the last good state", problems[i].label, at
                    )
                    before = np.concatenate(stoppers[i].losses + [losses[pos, : at - steps]])
                    reason = f"loss became non-finite at step {at}; stopped and kept the last good state"
                    results[i] = diverged_result(at, member(params, pos), before, 0.0, reason)
                    left_at[i] = at
                elif stoppers[i].update(losses[pos], member(sums, pos) if track else None):
                    results[i] = stoppers[i].final_params(member(new_params, pos))
                    left_at[i] = stoppers[i].steps
            params, opt_state = new_params, new_state
            steps += settings.check_every
            if settings.progress_every and (steps // settings.check_every) % settings.progress_every == 0:
                live = [pos for pos, i in enumerate(running) if results[i] is None]
                mean = float(losses[live].mean()) if live else float("nan")
                log.info(
                    "%s: step %d  %d of %d fits running  mean loss %.5g  (%.1f s)",
                    label,
                    steps,
                    len(live),
                    n_fits,
                    mean,
                    time.perf_counter() - t0,
                )
            if checkpoint is not None and checkpoint.due():
                checkpoint.save(state())
        if checkpoint is not None and time.perf_counter() - t0 >= checkpoints.SAVE_EVERY_SECONDS:
            checkpoint.save(state())  # a group as long as that is worth keeping whole for later groups
        for pos, i in enumerate(running):
            if results[i] is None:  # reached max_steps
                results[i] = member(params, pos)
                left_at[i] = steps
        jax.block_until_ready([r if not isinstance(r, FitResult) else r.params for r in results])
        self.wall_seconds = time.perf_counter() - t0 - self.recompile_seconds  # every sitting's, when resumed
        share = self.wall_seconds / n_fits
        out = []
        for i, r in enumerate(results):
            if not isinstance(r, FitResult):
                r = finished(stoppers[i], r, share, 0.0, problems[i].label)
            else:
                r.wall_seconds = share
            r.extra["left_at_step"] = left_at[i]
            out.append(r)
        return out
