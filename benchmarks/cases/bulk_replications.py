"""Replications in bulk: the paper's normal_p5 design (N 500, batch 32, R 15) fitted as one block of
replications in one job, against one job per replication, through the real workflow.

The workflow's files are copied into a fresh temporary folder, whose config is config/paper.yaml
with its amortized_ifa study cut down to the normal_p5 design at R = 15. The data of every
replication are simulated first (not timed). Then, per method:

* today's path, ``block_size: 1``: one Snakemake job per replication, two at a time
  (``--cores 2``); one job runs first, untimed, so that the others read the compilation cache as
  a long run's jobs do; then ``SAMPLE`` jobs are timed and their wall time scaled to
  ``REPLICATIONS``;
* bulk, ``block_size`` = ``REPLICATIONS``: one job fits them all, with a compilation cache of
  its own that starts empty.

IWAE runs at the paper's settings to convergence. An IWAVB step is mostly arithmetic (about
100 ms per step for a block of 10 on 2 cores), so a paper-size IWAVB block would take hours
here: IWAVB runs ``IWAVB_STEPS`` steps per fit on both paths (min_steps = max_steps) with
``IWAVB_REPLICATIONS`` replications, and the figures are per replication at those steps.

Per path: wall seconds (predicted for ``REPLICATIONS`` on today's path), and per replication the
fitting seconds (its steps; a block's share), the held-out evaluation seconds, and the fixed
cost: everything else in the job's wall time (process start-up, imports, compilation or cache
reads, reading and writing), from Snakemake's benchmark file of each job. The replications fitted
on both paths are compared pairwise (held-out log-likelihood, loading MSE): the same data and
seeds, so differences are the float32 rounding of the vectorized program, amplified along the
optimisation. Set BENCH_KEEP=1 to keep the folder.

The ratio the bulk path is judged by on an accelerator: the block's fitting seconds (all
``REPLICATIONS`` fits, one program) over one fit's fitting seconds alone (a job of today's path),
``bulk_over_one_fit``; the targets on an accelerator are 3 for IWAE and 10 for IWAVB. On a
CPU the steps are arithmetic, so the ratio is near the number of replications and the targets
are not expected to be met there. Every figure names the device the fits ran on (their records').
On a GPU (tools/gpu/run.sh) run it with ``--set IWAVB_REPLICATIONS=100`` and, for a fixed
number of IWAVB steps, ``--set IWAVB_STEPS=N``; ``IWAVB_STEPS=None`` trains IWAVB like IWAE, at
the paper's settings to convergence.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_FILES = ("Snakefile", "config", "workflow", "notebooks", "environment.yml")
DESIGN = "normal_p5"
R_SAMPLES = 15
REPLICATIONS = 100
SAMPLE = 4  # today's path: jobs timed, two at a time, then scaled to REPLICATIONS
IWAVB_REPLICATIONS = 10
IWAVB_SAMPLE = 2
IWAVB_STEPS = 2000  # None: the paper's training, to convergence
N_PERSONS = 500
MAX_STEPS = None  # None: the paper's (config/paper.yaml)
EVAL_SAMPLES = None
SIMULATE_CORES = 2  # the untimed simulation of the data sets (a machine with more cores may use them)
# bulk_over_one_fit at most this on an accelerator (100 replications in one program)
TARGET_RATIO = {"iwae": 3.0, "iwavb": 10.0}
TARGET_REPLICATIONS = 100
SMOKE = {
    "REPLICATIONS": 3,
    "SAMPLE": 2,
    "IWAVB_REPLICATIONS": 2,
    "IWAVB_SAMPLE": 1,
    "IWAVB_STEPS": 20,
    "N_PERSONS": 60,
    "MAX_STEPS": 40,
    "EVAL_SAMPLES": 20,
}


def bench_config(method: str, replications: int, block_size: int, max_steps: int | None) -> dict:
    """config/paper.yaml with only the normal_p5 design of amortized_ifa, at R = 15."""
    cfg = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    study = cfg["studies"]["amortized_ifa"]
    design = copy.deepcopy(study["designs"][DESIGN])
    design.update(importance_samples=[R_SAMPLES], replications=replications, block_size=block_size)
    design["n_persons"] = N_PERSONS
    design["training"] = dict(design["training"], progress_every=0)
    if max_steps is not None:
        design["training"].update(max_steps=max_steps, min_steps=max_steps)
    study = {k: v for k, v in study.items() if k != "designs"}
    if EVAL_SAMPLES is not None:
        study["eval_samples"] = EVAL_SAMPLES
    cfg["studies"] = {"amortized_ifa": {**study, "methods": [method], "designs": {DESIGN: design}}}
    return cfg


def snakemake(folder: Path, env: dict, targets: list[str], cores: int = 2) -> float:
    # --rerun-triggers mtime: the data do not depend on block_size, but the simulation rule's
    # params hold the whole design, so a changed block size would simulate them again
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--workflow-profile", "workflow/profiles/local"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, *targets, "--rerun-triggers", "mtime"], cwd=folder, env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake failed:\n{proc.stderr[-4000:]}")
    return time.perf_counter() - t0


def block_target(method: str, block: int) -> str:
    """The folder of a block job: its output, what Snakemake is asked for."""
    return f"results/amortized_ifa/{DESIGN}/{method}_P5_R{R_SAMPLES}/blocks/block{block}"


def fit_record(method: str, rep: int, block_size: int) -> str:
    """A replication's record, in rep<r>/ of its block's folder (blocks of block_size in order)."""
    return f"{block_target(method, rep // block_size)}/rep{rep}/fit.json"


def job_seconds(folder: Path, method: str) -> list[float]:
    """Wall seconds of the method's fit jobs, from Snakemake's benchmark files."""
    bench = folder / "logs" / "benchmarks" / "amortized_ifa" / DESIGN / f"{method}_P5_R{R_SAMPLES}"
    out = []
    for path in sorted(bench.glob("block*.tsv")):
        with path.open() as f:
            out.append(float(next(csv.DictReader(f, delimiter="\t"))["s"]))
    return out


def records(folder: Path, method: str, reps, block_size: int) -> list[dict]:
    return [json.loads((folder / fit_record(method, r, block_size)).read_text()) for r in reps]


def path_figures(wall: float, jobs: list[float], recs: list[dict], scale: float) -> dict:
    """Wall time (scaled to the replications of the study), and per replication: fitting,
    evaluation and fixed seconds of the jobs' wall time. Fitting is the wall time of each block's
    fit (a block's worker processes fit side by side), evaluation runs after it in the job's
    process, and the fixed cost is the rest of the jobs' wall time."""
    if not jobs:
        raise RuntimeError("no benchmark files of the fit jobs were found")
    fitting = sum(r["timing"]["block_wall_seconds"] / r["block"]["size"] for r in recs)
    evaluation = sum(r["timing"]["eval_seconds"] for r in recs)
    n = len(recs)
    device = recs[0].get("device") or {}
    return {
        "device": f"{device.get('platform', '?')} ({device.get('kind') or device.get('device', '?')})",
        "wall_seconds": round(wall * scale, 1),
        "wall_seconds_measured": round(wall, 1),
        "replications_measured": n,
        "fit_seconds_per_replication": round(fitting / n, 3),
        # the fitting seconds of all the fits measured, and a block's seconds per step
        "fit_seconds_measured": round(fitting, 3),
        "block_step_seconds": block_step_seconds(recs),
        "eval_seconds_per_replication": round(evaluation / n, 3),
        "fixed_seconds_per_replication": round((sum(jobs) - fitting - evaluation) / n, 3),
        "steps_mean": float(np.mean([r["steps"] for r in recs])),
        "steps_max": int(max(r["steps"] for r in recs)),
        "converged": int(sum(r["converged"] for r in recs)),
        "block_memory_mb": round(max(r["block"]["memory_bytes"] for r in recs) / 1e6, 2),
        "fits_per_program": max(r["block"].get("width", 1) for r in recs),
        "processes": max(r["timing"].get("block_processes", 1) for r in recs),
    }


def block_step_seconds(recs: list[dict]) -> float:
    """A block's fitting seconds per step, averaged over the blocks: a block steps until its last
    fit stops, so its steps are the most any of its fits took. On today's path every fit is a
    block of one (its own step time); the bulk path here is one block. This is the figure that
    prices a block's steps (benchmark paper_plan reads it from a GPU run)."""
    blocks: dict[tuple, list[dict]] = {}
    for r in recs:
        # a block is the fits that share a wall time and a size (one per job)
        blocks.setdefault((r["block"]["size"], r["timing"]["block_wall_seconds"]), []).append(r)
    return float(np.mean([wall / max(r["steps"] for r in fits) for (_, wall), fits in blocks.items()]))


def agreement(bulk: list[dict], separate: list[dict]) -> dict:
    """Pairwise differences (bulk - separate) of the replications fitted both ways, against the
    spread of the replications: the same data and seeds, so these are rounding effects."""
    out = {}
    for name, get in (
        ("heldout_loglik", lambda r: r["heldout_loglik"]["independent"]),
        ("loading_mse", lambda r: r["recovery"].get("loading_mse", np.nan)),
    ):
        b, s = np.array([get(r) for r in bulk]), np.array([get(r) for r in separate])
        diff = b - s
        se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
        out[name] = {
            "bulk": b.tolist(),
            "separate": s.tolist(),
            "mean_difference": float(diff.mean()),
            "difference_se": se,
            "spread_between_replications": float(s.std(ddof=1)) if len(s) > 1 else float("nan"),
        }
    return out


def one_method(folder: Path, env: dict, method: str, n_reps: int, sample: int, max_steps) -> dict:
    config = folder / "config" / "config.yaml"

    def write(block_size):
        config.write_text(yaml.safe_dump(bench_config(method, n_reps, block_size, max_steps)))

    # today's path: one job per replication; a first job (untimed) fills the compilation cache
    write(1)
    sep_env = dict(env, JAX_COMPILATION_CACHE_DIR=str(folder / ".jax_cache_separate"))
    snakemake(folder, sep_env, [block_target(method, n_reps - 1)])
    shutil.rmtree(folder / "logs" / "benchmarks", ignore_errors=True)
    wall_sep = snakemake(folder, sep_env, [block_target(method, r) for r in range(sample)])
    separate = records(folder, method, range(sample), 1)
    jobs_sep = job_seconds(folder, method)
    shutil.rmtree(folder / "results" / "amortized_ifa" / DESIGN)
    shutil.rmtree(folder / "logs" / "benchmarks")
    # bulk: one job, its own empty compilation cache
    write(n_reps)
    bulk_env = dict(env, JAX_COMPILATION_CACHE_DIR=str(folder / ".jax_cache_bulk"))
    wall_bulk = snakemake(folder, bulk_env, [block_target(method, 0)])
    bulk = records(folder, method, range(n_reps), n_reps)
    jobs_bulk = job_seconds(folder, method)
    before = path_figures(wall_sep, jobs_sep, separate, n_reps / sample)
    after = path_figures(wall_bulk, jobs_bulk, bulk, 1.0)
    return {
        "replications": n_reps,
        "separate": before,
        "bulk": after,
        "speedup": round(before["wall_seconds"] / after["wall_seconds"], 2),
        # the block's fitting seconds (all n_reps fits) over one fit's alone
        "bulk_over_one_fit": round(after["fit_seconds_measured"] / before["fit_seconds_per_replication"], 2),
        "agreement": agreement(bulk[:sample], separate),
    }


def run() -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bayesirt_bulk_"))
    print(f"working in {folder}", flush=True)
    t0 = time.perf_counter()
    try:
        for name in WORKFLOW_FILES:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / name)
        env = {
            # XLA at its default optimization level, as a long run of the paper config has it
            **os.environ,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
        n_data = max(REPLICATIONS, IWAVB_REPLICATIONS)
        (folder / "config" / "config.yaml").write_text(yaml.safe_dump(bench_config("iwae", n_data, 1, MAX_STEPS)))
        data = [f"data/processed/amortized_ifa/{DESIGN}/rep{r}/responses.parquet" for r in range(n_data)]
        data_env = dict(env, JAX_COMPILATION_CACHE_DIR=str(folder / ".jax_data"))
        simulate_seconds = snakemake(folder, data_env, data, cores=SIMULATE_CORES)
        print(f"simulated {n_data} data sets in {simulate_seconds:.0f} s", flush=True)
        iwae = one_method(folder, env, "iwae", REPLICATIONS, SAMPLE, MAX_STEPS)
        print(json.dumps({"iwae": {k: iwae[k] for k in ("separate", "bulk", "speedup")}}, indent=1), flush=True)
        caps = [s for s in (IWAVB_STEPS, MAX_STEPS) if s is not None]
        iwavb_steps = min(caps) if caps else None  # None: the paper's training
        iwavb = one_method(folder, env, "iwavb", IWAVB_REPLICATIONS, IWAVB_SAMPLE, iwavb_steps)
        return {
            "iwae_speedup": iwae["speedup"],
            "iwae_separate_wall_seconds": iwae["separate"]["wall_seconds"],
            "iwae_bulk_wall_seconds": iwae["bulk"]["wall_seconds"],
            "iwavb_speedup": iwavb["speedup"],
            "iwavb_separate_wall_seconds": iwavb["separate"]["wall_seconds"],
            "iwavb_bulk_wall_seconds": iwavb["bulk"]["wall_seconds"],
            "fixed_seconds_per_replication_before": iwae["separate"]["fixed_seconds_per_replication"],
            "fixed_seconds_per_replication_after": iwae["bulk"]["fixed_seconds_per_replication"],
            "eval_seconds_per_replication_before": iwae["separate"]["eval_seconds_per_replication"],
            "eval_seconds_per_replication_after": iwae["bulk"]["eval_seconds_per_replication"],
            "block_memory_mb": max(iwae["bulk"]["block_memory_mb"], iwavb["bulk"]["block_memory_mb"]),
            "fits_device": iwae["bulk"]["device"],
            "iwae_bulk_over_one_fit": iwae["bulk_over_one_fit"],
            "iwavb_bulk_over_one_fit": iwavb["bulk_over_one_fit"],
            "iwae_block_step_seconds": iwae["bulk"]["block_step_seconds"],
            "iwavb_block_step_seconds": iwavb["bulk"]["block_step_seconds"],
            "targets": {f"{m}_bulk_over_one_fit_max": v for m, v in TARGET_RATIO.items()},
            # the targets are about 100 replications in one program: with fewer, no verdict
            "targets_met": bool(
                iwae["bulk_over_one_fit"] <= TARGET_RATIO["iwae"]
                and iwavb["bulk_over_one_fit"] <= TARGET_RATIO["iwavb"]
            )
            if min(REPLICATIONS, IWAVB_REPLICATIONS) >= TARGET_REPLICATIONS
            else None,
            "iwae": iwae,
            "iwavb": {**iwavb, "steps_per_fit": iwavb_steps or "the paper's training, to convergence"},
            "simulate_seconds": round(simulate_seconds, 1),
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "sizes": {
                "design": DESIGN,
                "n_persons": N_PERSONS,
                "importance_samples": R_SAMPLES,
                "replications": REPLICATIONS,
                "separate_sample": SAMPLE,
                "iwavb_replications": IWAVB_REPLICATIONS,
                "iwavb_steps": IWAVB_STEPS,
                "max_steps": MAX_STEPS,
            },
        }
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
