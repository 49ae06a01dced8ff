"""Fits per program: what one IWAE step costs per fit when a program steps 1 to 100 fits at once.

The paper's ``normal_p5`` IWAE (N 500, 50 items, 5 categories, P 5, batch 32, R 15, encoder
hidden 100). For each width (fits stepped together by one compiled program, as
``inference.execution.bulk`` does), a process pinned to one core compiles the driver's chunk of 100
steps vectorized over that many fits, runs it once untimed, then times ``CHUNKS`` chunks:
milliseconds per step of the program and per fit-step. Then the same with two processes side
by side, one per core, as a block's worker processes run (``inference.execution.bulk_processes``). The
widths' figures set ``block_plan.CPU_PROGRAM_WIDTH``: the narrowest program whose cost per
fit-step is within a few percent of the best.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

WIDTHS = (1, 4, 8, 16, 100)
CHUNKS = 5
N_PERSONS = 500
SMOKE = {"WIDTHS": (1, 2), "CHUNKS": 1, "N_PERSONS": 60}


def measure(width: int, chunks: int, n_persons: int) -> dict:
    """In this process (pinned by the caller): the chunk for ``width`` fits, timed."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from bayesirt.data import simulate_mgrm as sm
    from bayesirt.inference.execution import bulk_group
    from bayesirt.inference.execution.training import TrainSettings
    from bayesirt.inference.execution.training_chunks import EpochPermutations, chunk_fn
    from bayesirt.inference.variational import iwae
    from bayesirt.models import mgrm

    steps = 100
    train = TrainSettings(batch_size=32, check_every=steps, learning_rate=1e-3, progress_every=0)
    cfg = iwae.IWAESettings(n_importance=15, hidden=(100,), learning_rate=1e-3, train=train)
    problems = []
    for r in range(width):
        rm = sm.from_preset("normal_p5", seed=r, n_persons=n_persons)[0]
        st = mgrm.structure(rm.n_categories, 5, sm.q_matrix(rm), positive_loadings=True)
        problems.append(iwae.problem(jax.random.key(r), np.asarray(rm.responses), st, cfg))
    first = problems[0]
    chunk = chunk_fn(first.loss_fn, first.optimizer, n_persons, 32, steps)
    keys = jnp.stack([jax.random.split(p.key) for p in problems])
    perms = EpochPermutations(keys[:, 1], n_persons, 32, steps, width)
    params, data = bulk_group.stack([p.params for p in problems]), bulk_group.stack([p.data for p in problems])
    state = jax.jit(jax.vmap(first.optimizer.init))(params)
    program = jax.jit(jax.vmap(chunk, in_axes=(0, 0, 0, 0, 0, None)))
    t0 = time.perf_counter()
    out = jax.block_until_ready(program(params, state, keys[:, 0], perms.for_chunk(0), data, 0))
    compile_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in range(1, chunks + 1):
        out = program(out[0], out[1], keys[:, 0], perms.for_chunk(c * steps), data, c * steps)
    jax.block_until_ready(out)
    step = (time.perf_counter() - t0) / (chunks * steps)
    return {
        "width": width,
        "step_ms": round(step * 1e3, 4),
        "fit_step_ms": round(step * 1e3 / width, 4),
        "first_call_seconds": round(compile_seconds, 2),
    }


def pinned(width: int, cpu: int) -> subprocess.Popen:
    code = f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import program_width as p; "
    code += f"import json; print(json.dumps(p.measure({width}, {CHUNKS}, {N_PERSONS})))"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),  # before JAX starts in the child
    )


def result(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"a measuring process failed (exit {proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def run() -> dict:
    t0 = time.perf_counter()
    cpus = sorted(os.sched_getaffinity(0))
    one = [result(pinned(w, cpus[0])) for w in WIDTHS]
    two = []
    if len(cpus) > 1:
        for w in WIDTHS:
            procs = [pinned(w, cpus[0]), pinned(w, cpus[1])]
            runs = [result(p) for p in procs]
            two.append({"width": w, "fit_step_ms": round(sum(r["fit_step_ms"] for r in runs) / 2, 4)})
    best = min(r["fit_step_ms"] for r in one)
    by_width = {r["width"]: r["fit_step_ms"] for r in one}
    return {
        "fit_step_ms_alone": by_width[WIDTHS[0]],
        "fit_step_ms_best": best,
        "fit_step_ms_widest": by_width[WIDTHS[-1]],
        "widest_over_best": round(by_width[WIDTHS[-1]] / best, 2),
        "one_process": one,
        "two_processes": two,
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "sizes": {"widths": list(WIDTHS), "chunks": CHUNKS, "steps_per_chunk": 100, "n_persons": N_PERSONS},
    }
