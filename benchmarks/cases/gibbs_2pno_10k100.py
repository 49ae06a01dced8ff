"""2PNO Gibbs sampler, 10,000 x 100, 2,000 sweeps, four chains; time per sweep against N x J.

The four chains run in worker processes, one per usable core (``SamplerSettings.chain_processes``;
on 2 cores, 400 sweeps: 5.2 against 7.2 ns per response per sweep per chain vmapped in one
process). The ladder of sizes runs the four chains vmapped in this process, so that its slope
measures the sweep itself, without the workers' start-up and the draws' transfer.

Reports wall time after compilation, max R-hat and ESS per second of the item parameters, and
the time of one sweep (four chains) on a ladder of sizes with the least-squares line through
them (seconds per sweep = intercept + slope * N * J): the sweep's work is a fixed number of
passes over the N x J cells, so time should grow linearly in N x J.
Ability draws are not recorded (10,000 x 1,000 x 4 floats would be kept for nothing here).
``GIBBS_10K_SWEEPS`` overrides the number of sweeps (e.g. 400 for a quick try).
"""

import os
import sys
from pathlib import Path

import jax
import numpy as np

from bayesirt import runtime
from bayesirt.inference.execution.worker_processes import usable_cpus
from bayesirt.inference.samplers import gibbs
from bayesirt.inference.samplers.sampling import SamplerSettings

# as the Gibbs fitting jobs: reductions left to YNNPACK (bayesirt.runtime)
runtime.use_library_reductions()

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gibbs_bench import item_stats, load_average, simulate  # noqa: E402

N, J, CHAINS = 10_000, 100, 4
SWEEPS = int(os.environ.get("GIBBS_10K_SWEEPS", 2000))
LADDER = [(500, 20), (1000, 30), (2000, 50), (5000, 50), (5000, 100), (10_000, 100)]
LADDER_SWEEPS = 200
DATA_SEED, FIT_SEED = 20261011, 2
CHUNK = 250
CHAIN_PROCESSES = None  # worker processes of the main fit; None: one per usable core
# benchmarks/run.py --smoke (chains in this process, as gibbs_2pno_1k30; the ladder's top size and
# sweeps are the main fit's, whose compiled program it reuses)
SMOKE = {
    "N": 200,
    "J": 10,
    "SWEEPS": 40,
    "CHUNK": 20,
    "CHAIN_PROCESSES": 1,
    "LADDER": [(100, 5), (200, 10)],
    "LADDER_SWEEPS": 40,
}


def run() -> dict:
    load_before = load_average()
    y, a, d, _ = simulate(DATA_SEED, N, J)
    processes = CHAIN_PROCESSES or len(usable_cpus())
    settings = SamplerSettings(
        n_chains=CHAINS,
        n_warmup=SWEEPS // 2,
        n_samples=SWEEPS // 2,
        chunk=CHUNK,
        progress_every=0,
        chain_processes=processes,
    )
    res = gibbs.fit(jax.random.key(FIT_SEED), y, None, gibbs.GibbsSettings(settings, abilities=False))
    stats = item_stats(res.summary)
    post = res.idata.posterior
    a_rmse = float(np.sqrt(np.mean((post["discrimination"].mean(("chain", "draw")).values - a) ** 2)))
    d_rmse = float(np.sqrt(np.mean((post["difficulty"].mean(("chain", "draw")).values - d) ** 2)))

    ladder = []
    for n, j in LADDER:
        yy, *_ = simulate(DATA_SEED + n + j, n, j)
        s = SamplerSettings(
            n_chains=CHAINS,
            n_warmup=LADDER_SWEEPS // 2,
            n_samples=LADDER_SWEEPS // 2,
            chunk=LADDER_SWEEPS // 2,
            progress_every=0,
        )
        r = gibbs.fit(jax.random.key(FIT_SEED), yy, None, gibbs.GibbsSettings(s, abilities=False))
        ladder.append({"persons": n, "items": j, "cells": n * j, "seconds_per_sweep": r.wall_seconds / LADDER_SWEEPS})
    cells = np.array([x["cells"] for x in ladder], float)
    per_sweep = np.array([x["seconds_per_sweep"] for x in ladder])
    slope, intercept = np.polyfit(cells, per_sweep, 1)
    fitted = intercept + slope * cells
    r2 = 1 - np.sum((per_sweep - fitted) ** 2) / np.sum((per_sweep - per_sweep.mean()) ** 2)
    return {
        "sizes": {"persons": N, "items": J, "chains": CHAINS, "sweeps": SWEEPS},
        "chain_processes": processes,
        "wall_seconds": res.wall_seconds,
        "compile_seconds": res.compile_seconds,
        "steps": SWEEPS,
        "seconds_per_sweep": res.wall_seconds / SWEEPS,
        "ns_per_response_per_sweep_per_chain": res.wall_seconds / (SWEEPS * N * J * CHAINS) * 1e9,
        "max_r_hat": stats["max_r_hat"],
        "min_ess_bulk": stats["min_ess_bulk"],
        "median_ess_bulk": stats["median_ess_bulk"],
        "min_ess_per_second": stats["min_ess_bulk"] / res.wall_seconds,
        "median_ess_per_second": stats["median_ess_bulk"] / res.wall_seconds,
        "discrimination_rmse": a_rmse,
        "difficulty_rmse": d_rmse,
        "diverged": bool(res.diverged),
        "scaling": ladder,
        "scaling_slope_ns_per_cell_per_sweep": slope * 1e9,
        "scaling_slope_ns_per_cell_per_sweep_per_chain": slope * 1e9 / CHAINS,
        "scaling_intercept_seconds": intercept,
        "scaling_r2": r2,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "note": "the machine's 2 cores may be shared with other jobs; see the load averages",
    }
