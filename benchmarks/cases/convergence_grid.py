"""Stopping rule across user settings: iwae_grm_8k over batch size x learning rate,
grm_advi_rwa_size over learning rate.

The same designs, data and tuned settings as ``iwae_grm_8k`` (confirmatory IWAE, 8,000 x 12
x 3, P = 4, R = 5, 1,000 held-out persons) and ``grm_advi_rwa_size`` (factorized GRM, mean-field
ADVI, 9,881 x 22 x 9), changing only the batch size and the learning rate, as a user would.
Per cell: converged flag and stop reason, the final loss slope and its standard error, steps,
epochs, seconds, held-out log-likelihood per person (Laplace importance sampling, 1,000 draws,
common random numbers across cells) and loading RMSE (IWAE) or discrimination RMSE (ADVI).
IWAE cells also get their held-out gap to the best cell with the standard error of the paired
per-person differences (``heldout_gap_to_best``, ``heldout_gap_to_best_se``).

Targets: every converged IWAE cell within 0.005 nats per person of the grid's best held-out
log-likelihood and within 10% of its best loading RMSE; every converged ADVI cell within 10% of
the best discrimination RMSE. A cell that hit max_steps still improving is not converged and is
reported, not counted. ``CONV_GRID_BATCHES``, ``CONV_GRID_LRS`` and ``CONV_GRID_ADVI_LRS``
(comma-separated) restrict the grid; cells run one after another (each writes its figures to
``results/benchmarks/convergence_grid.<part>.partial.json`` as it finishes, so an interrupted run
says which cells it covered). ``CONV_GRID_RESUME=1`` reuses the cells of that file (same rule)
instead of refitting them; ``CONV_GRID_PARTS`` (``iwae``, ``advi`` or both, the default) runs
part of the grid, with its own partial file, so the parts can run side by side and a last run
with ``CONV_GRID_RESUME=1`` assembles them (``CONV_GRID_RESUME=only`` assembles the saved
cells without fitting the missing ones, which are listed in ``cells_not_run``).
``CONV_GRID_STOPPING=relative`` runs the grid with
the old rule.
"""

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ifa_bench import ROOT, loading_metrics, use_compilation_cache

from bayesirt.data import simulate
from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import loglik
from bayesirt.evaluation.recovery import recovery_table
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iwae
from bayesirt.models import mgrm
from bayesirt.models.factorized_grm import Priors
from bayesirt.studies import grm_advi

NOT_RUN: list = []  # cells skipped under CONV_GRID_RESUME=only
HELDOUT: dict = {}  # (batch, lr) -> per-person held-out log-likelihoods of the cells fitted in this run
BATCHES, LRS, ADVI_LRS = (32, 64, 128, 256), (0.003, 0.01, 0.03), (0.01, 0.05, 0.1)
LOGLIK_GAP_MAX, RMSE_RATIO_MAX = 0.005, 1.10
OUT = ROOT / "results" / "benchmarks"
IWAE_PERSONS, ADVI_PERSONS, HELDOUT_DRAWS = 8000, 9881, 1000
IWAE_STEPS = {"max_steps": 6000, "min_steps": 600, "check_every": 100, "window": 300}
ADVI_STEPS: dict = {}  # TrainSettings' defaults
# benchmarks/run.py --smoke: one cell per part, partial files in the smoke folder
SMOKE = {
    "BATCHES": (64,),
    "LRS": (0.01,),
    "ADVI_LRS": (0.05,),
    "IWAE_PERSONS": 400,
    "ADVI_PERSONS": 300,
    "HELDOUT_DRAWS": 50,
    "IWAE_STEPS": {"max_steps": 100, "min_steps": 50, "check_every": 50, "window": 50},
    "ADVI_STEPS": {"max_steps": 100, "min_steps": 50},
    "OUT": OUT / "smoke",
}


def _list(name, default, kind):
    value = os.environ.get(name)
    return tuple(kind(v) for v in value.split(",")) if value else default


def _partial_path(part: str):
    return OUT / f"convergence_grid.{part}.partial.json"


def _save(partial: dict, part: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    _partial_path(part).write_text(json.dumps(partial, indent=2))


def _done(part: str, stopping: str) -> list[dict]:
    """Cells of an earlier run of this part with the same rule (``CONV_GRID_RESUME=1``)."""
    path = _partial_path(part)
    if os.environ.get("CONV_GRID_RESUME") not in ("1", "only") or not path.exists():
        return []
    saved = json.loads(path.read_text())
    return saved.get(part, []) if saved.get("stopping") == stopping else []


def _iwae_cells(stopping: str) -> list[dict]:
    # data, network and training settings of iwae_grm_8k (_ifa_bench.confirmatory_8k), except
    # batch size and learning rate
    n_train = IWAE_PERSONS
    rm, truth = sm.from_preset("bench_p4", 20261122, n_train + n_train // 8)
    y_train, y_hold = rm.responses[:n_train], rm.responses[n_train:]
    st = mgrm.structure(rm.n_categories, 4, sm.q_matrix(rm), positive_loadings=True)
    done = {(c["batch_size"], c["learning_rate"]): c for c in _done("iwae", stopping)}
    cells = []
    for batch in _list("CONV_GRID_BATCHES", BATCHES, int):
        for lr in _list("CONV_GRID_LRS", LRS, float):
            if (batch, lr) in done:
                cells.append(done[(batch, lr)])
                continue
            if os.environ.get("CONV_GRID_RESUME") == "only":
                NOT_RUN.append(f"iwae batch {batch} lr {lr:g}")
                continue
            settings = TrainSettings(
                learning_rate=lr,
                lr_decay_rate=0.5,
                lr_decay_steps=1000,
                min_learning_rate=lr / 10,
                clip_norm=10.0,
                batch_size=batch,
                **IWAE_STEPS,
                rel_tol=5e-4,
                patience=2,
                progress_every=0,
                stopping=stopping,
            )
            cfg = iwae.IWAESettings(n_importance=5, hidden=(100,), learning_rate=lr)
            t0 = time.perf_counter()
            res = iwae.fit(
                jax.random.key(1),
                y_train,
                st,
                dataclasses.replace(cfg, train=settings),
                label=f"iwae_b{batch}_lr{lr:g}",
            )
            seconds = time.perf_counter() - t0
            ll = loglik.laplace_is_loglik(jax.random.key(2), res.params["model"], st, y_hold, n_samples=HELDOUT_DRAWS)
            HELDOUT[batch, lr] = np.asarray(ll, np.float64)
            cells.append(
                {
                    "batch_size": batch,
                    "learning_rate": lr,
                    "converged": res.converged,
                    **_how(res),
                    "steps": res.steps,
                    "epochs": res.steps * batch / n_train,
                    "wall_seconds": res.wall_seconds,
                    "fit_seconds_including_compile": seconds,
                    "heldout_loglik_per_person": float(ll.mean()),
                    **loading_metrics(res.params["model"], st, truth),
                }
            )
            _save({"stopping": stopping, "iwae": cells}, "iwae")
    return cells


def _advi_cells(stopping: str) -> list[dict]:
    rm, truth = simulate.from_preset("rwa", 20261121, ADVI_PERSONS)
    done = {c["learning_rate"]: c for c in _done("advi", stopping)}
    cells = []
    for lr in _list("CONV_GRID_ADVI_LRS", ADVI_LRS, float):
        if lr in done:
            cells.append(done[lr])
            continue
        if os.environ.get("CONV_GRID_RESUME") == "only":
            NOT_RUN.append(f"advi lr {lr:g}")
            continue
        settings = TrainSettings(learning_rate=lr, progress_every=0, stopping=stopping, **ADVI_STEPS)
        t0 = time.perf_counter()
        out = grm_advi.fit(rm, seed=1, settings=settings, priors=Priors(), truth=truth, label=f"advi_lr{lr:g}")
        seconds = time.perf_counter() - t0
        table = recovery_table(out.estimates)
        overall = table[table.scale == "all"].set_index("parameter")
        rec = out.record
        cells.append(
            {
                "learning_rate": lr,
                "converged": rec["converged"],
                "stop_reason": rec["stop_reason"],
                "loss_slope": rec["loss_slope"],
                "loss_slope_se": rec["loss_slope_se"],
                "loss_slope_unit": rec["loss_slope_unit"],
                "max_steps_still_improving": rec["max_steps_still_improving"],
                "gradient_drift": rec["gradient_drift"],
                "gradient_drift_array": rec["gradient_drift_array"],
                "averaged_steps": rec["averaged_steps"],
                "steps": rec["steps"],
                "wall_seconds": rec["timing"]["wall_seconds"],
                "fit_seconds_including_compile": seconds,
                "discrimination_rmse": float(overall.loc["discrimination", "rmse"]),
                "ability_rmse": float(overall.loc["ability", "rmse"]),
            }
        )
        _save({"stopping": stopping, "advi": cells}, "advi")
    return cells


def _how(res) -> dict:
    c = res.convergence
    return {
        "stop_reason": c["stop_reason"],
        "loss_slope": c["slope"],
        "loss_slope_se": c["slope_se"],
        "loss_slope_unit": c["slope_unit"],
        "max_steps_still_improving": c["max_steps_still_improving"],
        "gradient_drift": c.get("gradient_drift"),
        "gradient_drift_array": c.get("gradient_drift_array"),
        "averaged_steps": c.get("averaged_steps", 0),
    }


def _paired_gaps(cells: list[dict]) -> None:
    """Each IWAE cell's held-out gap to the best cell with its standard error, from the paired
    per-person differences (common persons and random numbers): says which differences between
    cells the 1,000 held-out persons can tell apart. Cells reused from a partial file get None."""
    fitted = [c for c in cells if (c["batch_size"], c["learning_rate"]) in HELDOUT]
    if not fitted:
        return
    best = max(fitted, key=lambda c: c["heldout_loglik_per_person"])
    ref = HELDOUT[best["batch_size"], best["learning_rate"]]
    for c in cells:
        own = HELDOUT.get((c["batch_size"], c["learning_rate"]))
        diff = None if own is None else ref - own
        c["heldout_gap_to_best"] = None if diff is None else float(diff.mean())
        c["heldout_gap_to_best_se"] = None if diff is None else float(diff.std(ddof=1) / np.sqrt(diff.size))


def _judge(cells: list[dict], key: str, higher_is_better: bool) -> dict:
    """Gap of every converged cell to the grid's best (over all cells) in ``key``."""
    values = [c[key] for c in cells]
    if not values:
        return {"best": None, "converged_cells": 0, "cells": 0, "worst_converged": None}
    best = max(values) if higher_is_better else min(values)
    conv = [c[key] for c in cells if c["converged"]]
    return {
        "best": best,
        "converged_cells": len(conv),
        "cells": len(cells),
        "worst_converged": (min(conv) if higher_is_better else max(conv)) if conv else None,
    }


def run() -> dict:
    use_compilation_cache()
    stopping = os.environ.get("CONV_GRID_STOPPING", "noise")
    dataclasses.replace(TrainSettings(), stopping=stopping)  # refuses an unknown rule before any fit
    parts = _list("CONV_GRID_PARTS", ("iwae", "advi"), str)
    t0 = time.perf_counter()
    iw = _iwae_cells(stopping) if "iwae" in parts else []
    _paired_gaps(iw)
    ad = _advi_cells(stopping) if "advi" in parts else []
    ll, rmse = _judge(iw, "heldout_loglik_per_person", True), _judge(iw, "loading_rmse", False)
    disc = _judge(ad, "discrimination_rmse", False)
    gap = ll["best"] - ll["worst_converged"] if ll["worst_converged"] is not None else None
    ratio = rmse["worst_converged"] / rmse["best"] if rmse["worst_converged"] is not None else None
    disc_ratio = disc["worst_converged"] / disc["best"] if disc["worst_converged"] is not None else None
    # the other reading of the loading target: against the loading RMSE of the fit with the best
    # held-out log-likelihood (rather than the lowest loading RMSE in the grid)
    top = max(iw, key=lambda c: c["heldout_loglik_per_person"]) if iw else None
    conv_rmse = [c["loading_rmse"] for c in iw if c["converged"]]
    ratio_top = max(conv_rmse) / top["loading_rmse"] if top and conv_rmse else None
    met = {
        "iwae_loglik": gap is not None and gap <= LOGLIK_GAP_MAX,
        "iwae_loading_rmse": ratio is not None and ratio <= RMSE_RATIO_MAX,
        "advi_discrimination_rmse": disc_ratio is not None and disc_ratio <= RMSE_RATIO_MAX,
    }
    return {
        "sizes": {
            "iwae_persons_train": IWAE_PERSONS,
            "iwae_persons_heldout": IWAE_PERSONS // 8,
            "advi_persons": ADVI_PERSONS,
            "iwae_cells": len(iw),
            "advi_cells": len(ad),
        },
        "stopping": stopping,
        "wall_seconds": time.perf_counter() - t0,
        "iwae_grm_8k": iw,
        "grm_advi_rwa_size": ad,
        "best_heldout_loglik_per_person": ll["best"],
        "best_loading_rmse": rmse["best"],
        "best_discrimination_rmse": disc["best"],
        "converged_cells_iwae": ll["converged_cells"],
        "converged_cells_advi": disc["converged_cells"],
        "cells_not_run": NOT_RUN,
        "max_steps_still_improving_cells": sum(c["max_steps_still_improving"] for c in iw + ad),
        "max_loglik_gap_converged": gap,
        "max_rmse_ratio_converged": ratio,
        "max_rmse_ratio_converged_to_best_heldout_fit": ratio_top,
        "max_heldout_gap_in_se_converged": max(
            (
                c["heldout_gap_to_best"] / c["heldout_gap_to_best_se"]
                for c in iw
                if c["converged"] and c.get("heldout_gap_to_best_se")
            ),
            default=None,
        ),
        "max_discrimination_rmse_ratio_converged": disc_ratio,
        "targets": {"loglik_gap_max": LOGLIK_GAP_MAX, "rmse_ratio_max": RMSE_RATIO_MAX},
        "targets_detail": met,
        "targets_met": all(met.values()),
    }
