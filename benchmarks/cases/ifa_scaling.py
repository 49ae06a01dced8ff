"""IWAE time per epoch at 10k, 100k and 500k persons (IPIP shape: 50 items x 5 categories, P = 5, R = 25).

Each size runs whole epochs (batch 1024), one epoch per compiled ``lax.scan`` chunk, at least
200 steps in all (so 10k persons runs 22 epochs and a fixed per-call cost does not pass for a
per-epoch cost); the figure is wall time after compilation divided by the number of epochs. Target:
linear in N, i.e. the log-log
slope of epoch time against N within [0.9, 1.1]. ``IFA_SCALING_SIZES`` (comma-separated)
overrides the sizes.
"""

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ifa_bench import peak_rss_gb, use_compilation_cache

from bayesirt.data import simulate_mgrm as sm
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iwae
from bayesirt.models import mgrm

BATCH = 1024
SIZES, MIN_STEPS = "10000,100000,500000", 200  # default of IFA_SCALING_SIZES; steps per size at least
SMOKE = {"SIZES": "1000,2000", "BATCH": 128, "MIN_STEPS": 16}  # benchmarks/run.py --smoke


def run() -> dict:
    use_compilation_cache()
    sizes = [int(s) for s in os.environ.get("IFA_SCALING_SIZES", SIZES).split(",")]
    rows = []
    for n in sizes:
        rm, _ = sm.from_preset("ipip", 7, n, include_abilities=False)
        st = mgrm.structure(rm.n_categories, 5, None)
        steps = max(n // BATCH, 1)
        epochs = -(-MIN_STEPS // steps)
        settings = TrainSettings(
            learning_rate=0.003,
            batch_size=BATCH,
            max_steps=epochs * steps,
            min_steps=10 * epochs * steps,
            check_every=steps,
            progress_every=0,
        )
        cfg = iwae.IWAESettings(n_importance=25, hidden=(130,), learning_rate=0.003)
        t0 = time.perf_counter()
        res = iwae.fit(jax.random.key(0), rm.responses, st, replace(cfg, train=settings), label=f"scaling_{n}")
        rows.append(
            {
                "persons": n,
                "steps": res.steps,
                "epochs": res.steps // steps,
                "epoch_seconds": res.wall_seconds / (res.steps // steps),
                "seconds_per_step": res.wall_seconds / res.steps,
                "compile_seconds": res.compile_seconds,
                "total_seconds": time.perf_counter() - t0,
            }
        )
    n = np.array([r["persons"] for r in rows], float)
    t = np.array([r["epoch_seconds"] for r in rows])
    slope = float(np.polyfit(np.log(n), np.log(t), 1)[0]) if len(rows) > 1 else float("nan")
    slope_top = float(np.log(t[-1] / t[-2]) / np.log(n[-1] / n[-2])) if len(rows) > 1 else float("nan")
    return {
        "sizes": {
            "persons": sizes,
            "items": 50,
            "categories": 5,
            "factors": 5,
            "importance_samples": 25,
            "batch_size": BATCH,
        },
        "per_size": rows,
        "wall_seconds": float(sum(r["epoch_seconds"] * r["epochs"] for r in rows)),
        "loglog_slope": slope,
        "loglog_slope_two_largest": slope_top,
        "seconds_per_step_by_size": [r["seconds_per_step"] for r in rows],
        "peak_rss_gb": peak_rss_gb(),
        "targets": {"loglog_slope_range": [0.9, 1.1]},
        "targets_met": bool(0.9 <= slope <= 1.1),
    }
