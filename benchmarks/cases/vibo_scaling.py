"""VIBO time per epoch against the number of persons (2PL, 100 items, 20% MCAR), 10k up to 1M.

Target (issue 11): time per epoch linear in N (the slope, seconds per 100k persons, and the
log-log exponent are reported) with peak memory at most 8 GB at 1M persons. Each size runs
a fixed number of steps (no convergence rule) at batch 500 after one compilation; memory is
the process's peak resident set (ru_maxrss), which includes the response matrix.
``VIBO_SCALING_MAX`` (default 1,000,000) caps the largest N.
"""

import os
import resource

import jax
import numpy as np

from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import vibo
from bayesirt.models import irt2pl

J, RATE, BATCH = 100, 0.2, 500
SIZES, MIN_STEPS = (10_000, 30_000, 100_000, 300_000, 1_000_000), 200
SMOKE = {"SIZES": (1000, 2000), "BATCH": 100, "MIN_STEPS": 50}  # benchmarks/run.py --smoke


def responses(n, seed):
    """2PL responses drawn in blocks (float64 intermediates of 1M x 100 would dominate memory)."""
    rng = np.random.default_rng(seed)
    a, d = np.exp(rng.normal(0, 0.3, J)), rng.normal(0, 1, J)
    y = np.empty((n, J), np.int8)
    for s in range(0, n, 100_000):
        th = rng.normal(size=(min(s + 100_000, n) - s, 1))
        p = 1 / (1 + np.exp(-(th * a - d)))
        block = (rng.uniform(size=p.shape) < p).astype(np.int8)
        block[(rng.uniform(size=p.shape) < RATE) & (np.arange(J) > 0)] = -1
        y[s : s + block.shape[0]] = block
    return y


def run() -> dict:
    top = int(os.environ.get("VIBO_SCALING_MAX", 1_000_000))
    sizes = [n for n in SIZES if n <= top]
    st = irt2pl.Structure("2pl", J, 1)
    rows = []
    for n in sizes:
        y = responses(n, n)
        steps = max(n // BATCH, MIN_STEPS)  # at least one epoch, at least 200 steps
        steps = -(-steps // 50) * 50
        settings = TrainSettings(
            learning_rate=0.02, batch_size=BATCH, max_steps=steps, min_steps=steps, check_every=50, progress_every=0
        )
        fit = vibo.fit(jax.random.key(0), y, st, vibo.VIBOSettings(train=settings))
        per_step = fit.wall_seconds / fit.steps
        rows.append(
            {
                "persons": n,
                "steps": fit.steps,
                "wall_seconds": fit.wall_seconds,
                "compile_seconds": fit.compile_seconds,
                "seconds_per_epoch": per_step * n / BATCH,
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            }
        )
    n = np.array([r["persons"] for r in rows], float)
    t = np.array([r["seconds_per_epoch"] for r in rows])
    slope = np.polyfit(n, t, 1)[0] if len(n) > 1 else float("nan")
    exponent = np.polyfit(np.log(n), np.log(t), 1)[0] if len(n) > 1 else float("nan")
    return {
        "sizes": {"items": J, "missing_rate": RATE, "batch": BATCH, "persons": sizes},
        "wall_seconds": float(sum(r["wall_seconds"] for r in rows)),
        "compile_seconds": float(sum(r["compile_seconds"] for r in rows)),
        "seconds_per_epoch_per_100k_persons": float(slope * 1e5),
        "loglog_exponent": float(exponent),
        "largest_persons": int(n[-1]),
        "peak_rss_gb": rows[-1]["peak_rss_gb"],
        "per_size": rows,
    }
