"""Run some designs of a study to their tables, and collect them the way the reproduction pages read them.

    python tools/gpu/study_tables.py amortized_ifa --designs normal_p5 mixture_p1 \
        --config config/paper.yaml --out collected --cores 8

``tools/reproduction.py run`` goes through ``make run``, which sets up a virtual environment
from the lock: a machine without network cannot. This calls Snakemake directly (the interpreter
running it, so the offline install's packages) on the tables the study's page reads for the named
designs (``<study>/<design>/fits.csv``, ...: the study's ``TABLES`` in its reproduction module),
not on its report, then copies them with ``bayesirt.studies.reproduction.collect`` into
``OUT/<study>/`` with a ``run.json`` of the run's facts: command, config, commit, the machine with
its GPU, start, end, wall time and the summed wall time of the study's jobs. That folder has the
layout of ``docs/reproduction/data/<study>/`` for these designs only; merge it there by design
(the study's other designs keep their own run) before ``tools/reproduction.py page``. Only the
named designs are collected, whatever else ``results/<study>/`` holds.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def targets(study: str, designs: list[str]) -> list[str]:
    """The table files of the study's page that belong to the designs: every ``*`` name for each
    design, and a name under a design's folder (``ipip/scree.csv``) when that design is run,
    except the optional ones, which a design may not write."""
    from bayesirt.studies import reproduction

    module = reproduction.study_module(study)
    optional = getattr(module, "OPTIONAL", set())
    out = []
    for name in module.TABLES:
        if name.startswith("*/"):
            out += [f"results/{study}/{design}/{name[2:]}" for design in designs]
        elif name.split("/", 1)[0] in designs and name not in optional:
            out.append(f"results/{study}/{name}")
    return out


def machine() -> str:
    """The JAX devices (the GPU's model), the CPU cores and the system, in words."""
    import jax

    kinds = sorted({getattr(d, "device_kind", str(d)) for d in jax.devices()})
    count = len(jax.devices())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    device = f"{count} x {', '.join(kinds)}" if count > 1 else ", ".join(kinds)
    return f"{device} ({jax.default_backend()}, JAX {jax.__version__}), {cores} CPU cores, {platform.system()}"


def commit() -> str:
    """The commit the tree was copied from: ``BAYESIRT_COMMIT`` where the copy has no git
    history, else git's answer, else unknown."""
    if os.environ.get("BAYESIRT_COMMIT"):
        return os.environ["BAYESIRT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def job_seconds(study: str) -> float:
    """The study's jobs' wall time, summed, from Snakemake's benchmark files."""
    total = 0.0
    for folder in (ROOT / "logs" / "benchmarks" / study, ROOT / "logs" / "benchmarks" / "data" / study):
        for tsv in sorted(folder.rglob("*.tsv")) if folder.is_dir() else []:
            lines = tsv.read_text().splitlines()
            if len(lines) > 1:
                total += float(lines[1].split("\t")[0])
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study")
    parser.add_argument("--designs", nargs="+", required=True)
    parser.add_argument("--config", nargs="+", default=["config/paper.yaml"], help="config files, later ones override")
    parser.add_argument("--out", type=Path, required=True, help="the collected tables go to OUT/<study>/")
    parser.add_argument("--cores", default="all", help="Snakemake's --cores (default all)")
    parser.add_argument("--note", default="", help="a sentence about the run for its page")
    args = parser.parse_args(argv)
    from bayesirt.studies import reproduction

    files = targets(args.study, args.designs)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--workflow-profile"]
    # --nolock: the device script runs one study after another in this folder, and one cut off by
    # its time limit must not leave a lock that stops the next
    cmd += ["workflow/profiles/local", "--nolock", *files, "--configfile", *args.config]
    print(f"study_tables: {shlex.join(cmd)}", flush=True)
    start, t0 = now(), time.time()
    status = subprocess.run(cmd, cwd=ROOT).returncode
    end = now()
    if status != 0:
        print(f"study_tables: Snakemake failed (exit {status}); nothing collected", file=sys.stderr)
        return status
    # the commands as words, without this machine's paths (the interpreter, the output folder)
    argv_line = shlex.join(
        ["python", "tools/gpu/study_tables.py", args.study, "--designs", *args.designs, "--config", *args.config]
        + ["--cores", str(args.cores)]
    )
    config = " ".join(args.config)
    sitting = {
        "studies": [args.study],
        "config": config,
        "argv": argv_line,
        "command": shlex.join(["python", *cmd[1:]]),
    }
    sitting.update(commit=commit(), start=start, end=end, returncode=status)
    run_facts = {
        "command": argv_line,
        "config": config,
        "designs": args.designs,
        "commit": sitting["commit"],
        "machine": machine(),
        "sittings": [sitting],
        "started": start,
        "finished": end,
        "elapsed_seconds": round(time.time() - t0, 1),
        "job_seconds": job_seconds(args.study),
        "shared_with": [],
        "left_out": [],
        "note": args.note,
    }
    # collect reads every design folder under the results it is given: give it these designs only
    # (an earlier run's designs have their own run facts)
    with tempfile.TemporaryDirectory() as tmp:
        for design in args.designs:
            (Path(tmp) / design).symlink_to(ROOT / "results" / args.study / design)
        out = reproduction.collect(args.study, Path(tmp), args.out / args.study, run_facts)
    print(f"study_tables: {args.study} ({', '.join(args.designs)}) -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
