"""The default workflow (config/config.yaml, `make run`'s command) from a clean folder with a cold
JAX compilation cache: wall time, jobs, the five slowest.

The workflow's files (Snakefile, config/, workflow/, notebooks/, environment.yml) are copied
into a fresh temporary folder and run there, with a fresh, empty compilation cache, so the
repository's own results/, logs/ and .jax_cache/ are neither used nor touched. The folder is
deleted afterwards (set BENCH_KEEP=1 to keep it; its path is printed).

Per job: wall seconds and peak memory from the benchmark file Snakemake writes beside each job's
log (logs/benchmarks/...). Not its CPU time: Snakemake samples that every 0.5 s for the first 15 s
of a job and every 30 s after, so a job of 15-45 s reports about 15 s whatever it used. The
run's CPU seconds (user + system of Snakemake and all its jobs, from the operating system) are
the figure to compare on a busy machine, wall seconds the one a user waits for. Where the jobs'
seconds go (``job_seconds_by_kind``, by study and in total): start-up, JAX's compilation and
tracing (each job's ``job seconds`` log line, ``bayesirt.job_seconds``), fitting (the fit
records) and the rest (evaluation, model checks, tables, figures, writing).

The run goes through `make run`'s screen (workflow/screen.py), so the case also counts the lines
a user sees (``screen_lines``) and prints the screen's last lines. The Performance page's
sentence on `make run` is written from this case's committed result
(docs/performance/default_workflow.json), so its figures are measured, never typed.

BENCH_CONFIG=config/test.yaml runs another config the same way (e.g. to check this case quickly).
BENCH_CORES=1 runs the jobs one at a time: each program is then compiled once, by the first job
that needs it, and every later job reads it from the cache, so the compilation seconds are the
least a cold cache costs (two jobs started side by side may both compile a program).
"""

from __future__ import annotations

import csv
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bayesirt import job_seconds, runtime

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_FILES = ("Snakefile", "config", "workflow", "notebooks", "environment.yml")
CONFIG = "config/config.yaml"  # the default of BENCH_CONFIG
DRY_RUN = False
# benchmarks/run.py --smoke: a Snakemake dry run (-n) of the test config in the same fresh folder
# (tests/workflow runs that config in full)
SMOKE = {"CONFIG": "config/test.yaml", "DRY_RUN": True}


def job_times(folder: Path) -> list[dict]:
    """One row per job from Snakemake's benchmark files: name (the log path), wall and CPU seconds."""
    rows = []
    bench = folder / "logs" / "benchmarks"
    for path in sorted(bench.rglob("*.tsv")):
        with path.open() as f:
            rec = next(csv.DictReader(f, delimiter="\t"))
        rows.append(
            {
                "job": str(path.relative_to(bench).with_suffix("")),
                "seconds": float(rec["s"]),
                "max_rss_mb": float(rec["max_rss"]),
            }
        )
    return rows


def fit_seconds(folder: Path) -> dict:
    """Seconds the fits' records give for fitting (compilation apart), by study: a block's
    (``block_wall_seconds``, shared by its fits) once, a fit outside a block its own."""
    out: dict[str, float] = {}
    blocks: set = set()
    for path in sorted((folder / "results").rglob("fit.json")):
        timing = json.loads(path.read_text()).get("timing") or {}
        study = path.relative_to(folder / "results").parts[0]
        if "block_wall_seconds" in timing:
            if path.parent.parent in blocks:
                continue
            blocks.add(path.parent.parent)
            seconds = timing["block_wall_seconds"]
        else:
            seconds = timing.get("wall_seconds", 0.0)
        out[study] = out.get(study, 0.0) + seconds
    return out


def where_seconds_go(folder: Path, jobs: list[dict]) -> dict:
    """The jobs' wall seconds by kind and by group (a study, "data", "reports"): start-up (Python,
    imports and Snakemake's bookkeeping for the job: its wall time less its script's), JAX's
    compilation and tracing (``bayesirt.job_seconds``, every program of the job), fitting (the
    fit records' seconds, compilation apart but for a method that does not time it apart, such
    as MML) and the rest (evaluation, model checks, tables, figures,
    writing). A job without a ``job seconds`` line in its log (a report notebook) counts whole
    under ``notebook``. ``floor_seconds``: compilation and fitting spread perfectly over the
    machine's cores, the least wall time they need whatever the rest costs."""
    kinds = ("start_up", "compilation", "fitting", "rest", "notebook")
    out: dict[str, dict] = {}
    for job in jobs:
        group = job["job"].split("/")[0]
        row = out.setdefault(group, dict.fromkeys(kinds, 0.0))
        log = folder / "logs" / f"{job['job']}.log"
        lines = log.read_text().splitlines() if log.exists() else []
        figures = next((f for f in map(job_seconds.parse, reversed(lines)) if f), None)
        if figures is None:
            row["notebook"] += job["seconds"]
            continue
        row["start_up"] += max(job["seconds"] - figures["script"], 0.0)
        compilation = figures.get("compile", 0.0) + figures.get("trace", 0.0)
        row["compilation"] += compilation
        row["rest"] += figures["script"] - compilation
    for group, seconds in fit_seconds(folder).items():
        row = out.setdefault(group, dict.fromkeys(kinds, 0.0))
        row["fitting"] += seconds
        row["rest"] -= seconds
    total = {k: sum(r[k] for r in out.values()) for k in kinds}
    return {
        "total": {k: round(v, 1) for k, v in total.items()},
        # the least wall time compilation and fitting alone need, spread perfectly over the cores
        "floor_seconds": round((total["compilation"] + total["fitting"]) / (os.cpu_count() or 1), 1),
        "by_group": {g: {k: round(v, 1) for k, v in r.items()} for g, r in sorted(out.items())},
    }


def dry_run_figures(config: str, cmd: list, wall: float, output: str) -> dict:
    """What a dry run says: its jobs per rule (Snakemake's job stats table), and its time."""
    table = output.split("Job stats:", 1)[-1]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M))
    total = int(counts.pop("total", 0))
    if not total:
        raise RuntimeError(f"the dry run listed no jobs:\n{output[-4000:]}")
    return {
        "config": config,
        "command": " ".join(["snakemake", *cmd[3:]]),
        "dry_run": True,
        "wall_seconds": round(wall, 1),
        "n_jobs": total,
        "jobs_by_rule": {k: int(v) for k, v in counts.items()},
        "sizes": {"config": config},
    }


def minutes_seconds(seconds: float) -> str:
    """``"8 min 5 s"``: a wall time as the Performance page says it."""
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s"


def run() -> dict:
    config = os.environ.get("BENCH_CONFIG", CONFIG)
    cores = os.environ.get("BENCH_CORES", "all")
    folder = Path(tempfile.mkdtemp(prefix="bayesirt_default_workflow_"))
    print(f"running {config} in {folder}", flush=True)
    try:
        for name in WORKFLOW_FILES:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / name)
        # the same machine settings as `make run`, with a cache of its own that starts empty
        # (and the Makefile's XLA optimization level unless XLA_FLAGS is set)
        # importing bayesirt has put its own XLA_FLAGS into os.environ: the level goes beside them
        flags = os.environ.get("XLA_FLAGS", "")
        if runtime.OPTIMIZATION_LEVEL_FLAG not in flags:
            flags = f"{flags} {runtime.FAST_COMPILATION_FLAGS}".strip()
        env = {
            **os.environ,
            "XLA_FLAGS": flags,
            "JAX_COMPILATION_CACHE_DIR": str(folder / ".jax_cache"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
        # a real run goes through `make run`'s screen; a dry run's job table is Snakemake's own
        screen = [] if DRY_RUN else [sys.executable, str(folder / "workflow" / "screen.py")]
        cmd = [
            *screen,
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            cores,
            "--workflow-profile",
            "workflow/profiles/local",
            "--configfile",
            config,
            *(["--dry-run"] if DRY_RUN else []),
        ]
        load_before = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"the workflow failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
        snakemake_cmd = cmd[len(screen) :]
        if DRY_RUN:
            return dry_run_figures(config, snakemake_cmd, wall, proc.stdout + proc.stderr)
        lines = proc.stdout.splitlines()
        print("the screen's last 15 lines:", *lines[-15:], sep="\n", flush=True)
        # the screen's line per finished job: "[07:00:22] 15/102 rule (wildcards)"
        done = re.findall(r"^\[[\d:]+\] (\d+)/(\d+) ", proc.stdout, flags=re.M)
        jobs = job_times(folder)
        slowest = sorted(jobs, key=lambda r: -r["seconds"])[:5]
        # jobs grouped by the first folder of their log: a study, "data" or "reports"
        by_group: dict[str, dict] = {}
        for r in jobs:
            group = r["job"].split("/")[0]
            agg = by_group.setdefault(group, {"jobs": 0, "seconds": 0.0})
            agg["jobs"] += 1
            agg["seconds"] += r["seconds"]
        return {
            "config": config,
            "command": " ".join(["snakemake", *snakemake_cmd[3:]]),
            "wall_seconds": round(wall, 1),
            "wall_time": minutes_seconds(wall),
            "screen_lines": len(lines),
            # 1-minute load average at the start and the end: wall time means something only
            # on an otherwise idle machine (load about 0 before, about the cores during)
            "load_before": round(load_before, 1),
            "load_after": round(os.getloadavg()[0], 1),
            # user + system seconds of Snakemake and every job it ran (less sensitive to other
            # load on the machine than wall time)
            "cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
            "n_jobs": int(done[-1][1]) if done else len(jobs),
            "cpu_count": os.cpu_count(),
            "cores": cores,
            "xla_flags": env["XLA_FLAGS"],
            "slowest_jobs": [{"job": r["job"], "seconds": r["seconds"]} for r in slowest],
            "jobs_seconds_sum": round(sum(r["seconds"] for r in jobs), 1),
            "by_group": {k: {**v, "seconds": round(v["seconds"], 1)} for k, v in sorted(by_group.items())},
            # the jobs' seconds by kind: start-up, compilation, fitting, the rest
            "job_seconds_by_kind": where_seconds_go(folder, jobs),
            "jobs": jobs,
            "sizes": {"config": config},
        }
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
