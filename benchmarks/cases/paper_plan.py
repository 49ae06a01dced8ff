"""What config/paper.yaml costs: its jobs and cluster submissions before and after replications
were fitted in blocks, and its predicted wall time per study on 2 CPU cores, a 16-core node and
one GPU.

Counts. Dry runs of config/paper.yaml: "before" with every block_size set to 1 (one job per
replication, today's path before blocks) and no job groups (every job but the local ones is
one submission, as the SLURM profile submitted them); "after" as configured, with the SLURM
profile's job groups. Submissions are counted the way the dry run prints them: one per job that
is not a local rule, one per group job. ``copy_jobs_after`` counts the jobs of rules named
``*_replication`` (until 2026-11 every replication of a block had one, copying its files out
of the block's folder; the rules after a block job now read that folder): it should be 0.

Snakemake's own cost. Every job costs Snakemake some seconds of its own, in its process, whatever
the job does: choosing it, checking and recording its files, its metadata. Measured here as the
wall seconds per job of a run of OVERHEAD_JOBS no-op local jobs (each writes one byte) beyond a
run of one such job, with Snakemake's default scheduler as the workflow's profiles leave it;
``snakemake_hours_before`` / ``_after`` are the jobs times that figure. A
lower bound for the paper's plan: the measuring workflow's DAG is small, and Snakemake's
scheduling grows with the DAG.

Timings. A probe run: the paper config in a fresh folder with every design cut to 2 replications
(one block of 2), training to PROBE_STEPS steps and samplers to PROBE_SWEEPS warm-up plus draws,
and one condition per design and method of every study fitted (the other conditions of the same
design and method, other missingness levels, numbers of copies or of importance samples, are
priced like it). Real data sets with no copy here are left out (IPIP-FFM); the RWA data come from
the shared folder where the archive is absent. From each probed fit: its fitting seconds per step
(the block's share), its evaluation seconds and the job's fixed seconds (the job's wall time less
fitting and evaluation: process start, imports, compilation or cache reads, reading, writing).

Prediction per fit at the paper's size: fixed (per job, shared by a block's fits) + evaluation +
seconds per step x the paper's max_steps (an upper bound: most fits stop earlier) or x the paper's
sweeps; a probed fit that converged before the probe's cap (EM and MML, which stop within tens
of iterations) at its own steps. Before: one job per fit, steps priced at a block of one; after: the block's fixed cost
shared; on a CPU a fit-step costs about the same alone as in a narrow program (the
``program_width`` case), so the steps are priced alike. Machines: 2 cores runs 2 jobs (or a
block's 2 worker processes) at a time at the measured speed; a 16-core node 8 such pairs at a
time (2 cores each, the measured speed). A GPU is not available here, so its figure is a
prediction under a stated assumption (GPU_STEP_SECONDS per step of a block, launch-latency
bound, whatever the block size, the H100 figure measured for IWAE at the paper's size; fixed and
evaluation seconds as on the CPU) and is marked as such.

Measured GPU steps. Where ``docs/performance/gpu_bulk_replications.json`` exists (the snapshot
that tools/gpu/run.sh brings back from a GPU, with its date and device), the IWAE and IWAVB fits
of the amortized_ifa designs of the measured size (persons and batch, the paper's normal_p5) are
priced with the measured seconds per block step and the measured evaluation seconds; every
other fit keeps the assumption. The result says which: ``gpu_hours_are`` is "predicted" (no
measurement), "partly measured" or "measured", and ``gpu_basis`` says from what, in words.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_FILES = ("Snakefile", "config", "workflow", "notebooks", "environment.yml")
PROBE_STEPS = 300
PROBE_SWEEPS = 100
PROBE = True  # the probe run (the smoke run leaves it out: counts only)
OVERHEAD_JOBS = 100  # no-op jobs of the measurement of Snakemake's own seconds per job
CONFIG = "config/paper.yaml"  # the smoke run counts the test config's jobs instead
GPU_STEP_SECONDS = 0.00031  # assumption: per step of a block on one H100 (IWAVB's measured step time)
# a bulk_replications result measured on a GPU, as a docs/performance snapshot (tools/gpu/run.sh)
GPU_MEASUREMENTS = ROOT / "docs" / "performance" / "gpu_bulk_replications.json"
GPU_PLATFORMS = ("gpu", "cuda", "rocm")
SHARED_RWA = ROOT.parent / "shared" / "data" / "RWAS" / "data.csv"
SMOKE = {"PROBE": False, "CONFIG": "config/test.yaml", "OVERHEAD_JOBS": 2}
# a workflow of no-op jobs run in Snakemake's own process, to time what Snakemake spends per job
NOOP_SNAKEFILE = """
N = int(config["n_jobs"])


rule all:
    input:
        expand("out/{i}.txt", i=range(N)),
    localrule: True


rule noop:
    output:
        "out/{i}.txt",
    localrule: True
    run:
        with open(output[0], "w") as f:
            f.write("x")
"""


def paper_config() -> dict:
    return yaml.safe_load((ROOT / CONFIG).read_text())


def walk(node, fn, path=()):
    """Call fn(dict, path) on every dict of a config, depth first."""
    if isinstance(node, dict):
        fn(node, path)
        for k, v in node.items():
            walk(v, fn, (*path, k))
    elif isinstance(node, list):
        for v in node:
            walk(v, fn, path)


def with_block_size(cfg: dict, size: int) -> dict:
    """Every block_size set to ``size``: a design's, or a study's where its designs have none
    (rb_imputation), wherever the schema has the key."""
    from bayesirt.config import ConfigError, check

    cfg = copy.deepcopy(cfg)
    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    for study in cfg["studies"].values():
        for holders in ([*(study.get("designs") or {}).values()], [study]):
            if not holders:
                continue
            before = [copy.deepcopy(h) for h in holders]
            for h in holders:
                h["block_size"] = size
            try:
                check(cfg, schema)
                break
            except ConfigError as err:
                if "block_size" not in str(err):
                    raise
                for h, b in zip(holders, before, strict=True):
                    h.clear()
                    h.update(b)
    return cfg


def dry_run(folder: Path, profile: str) -> dict:
    cmd = [sys.executable, "-m", "snakemake", "-n", "--workflow-profile", profile]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dry run failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout + proc.stderr
    table = out.split("Job stats:", 1)[-1]
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)}
    total = counts.pop("total")
    local = sum(n for rule, n in counts.items() if rule in local_rules(folder)) + counts.get("all", 0)
    groups = len(re.findall(r"\] Group job \w+", out))
    in_groups = len(re.findall(r"^    rule \w+:$", out, flags=re.M))
    return {
        "jobs": total,
        "jobs_by_rule": counts,
        "local_jobs": local,
        "group_jobs": groups,
        "jobs_in_groups": in_groups,
        "submissions": total - local - in_groups + groups,
    }


def local_rules(folder: Path) -> set[str]:
    """Rules that run in Snakemake's own process (``localrule: True`` in the rule files)."""
    names = set()
    for path in (folder / "workflow" / "rules").glob("*.smk"):
        names |= set(re.findall(r"^rule (\w+):\n(?:    .*\n|\n)*?    localrule: True", path.read_text(), flags=re.M))
    return names


def snakemake_seconds_per_job(folder: Path) -> float:
    """Snakemake's own wall seconds per job: a run of OVERHEAD_JOBS no-op local jobs less a run
    of one, over the difference in jobs (see the module docstring)."""
    folder.mkdir()
    (folder / "Snakefile").write_text(NOOP_SNAKEFILE)

    def wall(n: int) -> float:
        shutil.rmtree(folder / "out", ignore_errors=True)
        cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--config", f"n_jobs={n}", "--quiet"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the no-op run failed:\n{proc.stderr[-3000:]}")
        return time.perf_counter() - t0

    return max(wall(OVERHEAD_JOBS) - wall(1), 0.0) / (OVERHEAD_JOBS - 1)


def copy_jobs(plan: dict) -> int:
    """Jobs of rules that copy a block's files into a replication's folder (``*_replication``)."""
    return sum(n for rule, n in plan["jobs_by_rule"].items() if rule.endswith("_replication"))


def counts(folder: Path) -> dict:
    config = folder / "config" / "config.yaml"
    config.write_text(yaml.safe_dump(with_block_size(paper_config(), 1)))
    before = dry_run(folder, "workflow/profiles/local")  # no groups before
    config.write_text(yaml.safe_dump(paper_config()))
    after = dry_run(folder, "workflow/profiles/slurm")
    return {"before": before, "after": after}


def probe_config() -> dict:
    cfg = paper_config()

    def shrink(d, path):
        if "max_steps" in d:
            d["max_steps"] = PROBE_STEPS
            d["min_steps"] = min(d.get("min_steps", PROBE_STEPS), PROBE_STEPS)
            if "progress_every" in d:
                d["progress_every"] = 0
        if "n_warmup" in d and "n_samples" in d:
            d["n_warmup"], d["n_samples"] = PROBE_SWEEPS // 2, PROBE_SWEEPS // 2
            if "chunk" in d:
                d["chunk"] = PROBE_SWEEPS // 2
        if "replications" in d:
            d["replications"] = min(d["replications"], 2)

    walk(cfg["studies"], shrink)
    if not (ROOT / "data" / "raw" / "rwa_real").exists() and SHARED_RWA.is_file():
        cfg["datasets"]["rwa_real"]["url"] = str(SHARED_RWA)
    cfg["studies"]["amortized_ifa"]["designs"].pop("ipip", None)  # no IPIP-FFM data here
    cfg["datasets"].pop("ipip_ffm", None)
    return cfg


def validated(cfg: dict) -> dict:
    from snakemake.utils import validate

    cfg = copy.deepcopy(cfg)
    validate(cfg, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    return cfg


def fit_files(spec) -> tuple[str, str]:
    """(what Snakemake is asked for, the folder of the fit's files) of replication 0 of a
    condition (or a fit made alone): a block's fits lie in rep<r>/ of the block job's folder,
    and replication 0 is in block 0."""
    if getattr(spec, "rep", None) is None or not hasattr(spec, "block_folder"):
        return f"{spec.folder}/fit.json", spec.folder
    block = spec.block_folder(0)
    return block, f"{block}/rep{spec.rep}"


def probe_targets(cfg: dict) -> list[tuple[str, str, str, str, str]]:
    """(study, design, method, target, fit folder): the first fit of every design and method,
    what Snakemake makes for it (``fit_files``) and where its files lie."""
    import importlib

    from bayesirt.studies import STUDIES

    seen, out = set(), []
    for study in STUDIES:
        for spec in importlib.import_module(f"bayesirt.studies.{study}.conditions").conditions(cfg):
            design = getattr(spec, "design", None) or getattr(spec, "dataset", "")
            key = (study, design, spec.method)
            if key not in seen and getattr(spec, "rep", 0) in (0, None):
                seen.add(key)
                out.append((*key, *fit_files(spec)))
    return out


def paper_steps(paper: dict, study: str, design: str, method: str) -> int:
    """Steps (or sweeps) of a fit at the paper's settings: max_steps, or warm-up plus draws."""
    s = paper["studies"][study]
    d = (s.get("designs") or {}).get(design, {})
    for section in (method, "sampler", "nuts" if "nuts" in method else "gibbs"):
        for where in (d, s):
            if isinstance(where.get(section), dict) and "n_samples" in where[section]:
                return int(where[section]["n_warmup"] + where[section]["n_samples"])
    for where in (d, s):
        for key in ("training", "bbvi_training"):
            if isinstance(where.get(key), dict) and "max_steps" in where[key]:
                return int(where[key]["max_steps"])
    return int(paper["training"]["max_steps"])


def probe(folder: Path, env: dict) -> dict:
    cfg = probe_config()
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    targets = probe_targets(validated(cfg))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--keep-going", "--workflow-profile"]
    cmd += ["workflow/profiles/local", *dict.fromkeys(t[3] for t in targets)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    fits, failed = [], []
    for study, design, method, _, fit_folder in targets:
        path = folder / fit_folder / "fit.json"
        if not path.is_file():
            failed.append(f"{study}/{design}/{method}")
            continue
        rec = json.loads(path.read_text())
        timing = rec.get("timing") or {}
        block = rec.get("block") or {}
        fits.append(
            {
                "study": study,
                "design": design,
                "method": method,
                "steps": int(rec.get("steps") or 1),
                "converged": bool(rec.get("converged")),
                "fit_seconds": float(timing.get("wall_seconds", 0.0)),
                "eval_seconds": float(timing.get("eval_seconds", 0.0)),
                "block_size": int(block.get("size", 1)),
            }
        )
    fit_jobs = []  # wall seconds of the fitting jobs, from Snakemake's benchmark files
    bench = folder / "logs" / "benchmarks"
    for path in bench.rglob("*.tsv"):
        rel = str(path.relative_to(bench))
        if not rel.startswith(("data", "reports")) and not rel.endswith("tables.tsv"):
            with path.open() as f:
                fit_jobs.append(float(next(csv.DictReader(f, delimiter="\t"))["s"]))
    jobs, n_jobs = sum(fit_jobs), len(fit_jobs)
    fixed = max(jobs - sum(f["fit_seconds"] * f["block_size"] + f["eval_seconds"] for f in fits), 0.0)
    return {
        "wall_seconds": round(wall, 1),
        "fits": fits,
        "failed": failed,
        "fixed_seconds_per_job": round(fixed / max(n_jobs, 1), 2),
        "snakemake_tail": proc.stderr[-1500:] if proc.returncode else "",
    }


def gpu_measurements(path: Path | None = None) -> dict | None:
    """The GPU's measured costs from a bulk_replications snapshot: per method, seconds per step of
    a block and evaluation seconds per fit, with the design, date and machine they were measured
    on. None without a snapshot, or for one whose fits did not run on a GPU."""
    path = GPU_MEASUREMENTS if path is None else path
    if not path.is_file():
        return None
    snap = json.loads(path.read_text())
    result = snap["result"]
    if not str(result.get("fits_device", "")).startswith(GPU_PLATFORMS):
        return None
    return {
        "date": snap["date"],
        "machine": snap["machine"],
        "design": result["sizes"]["design"],
        "n_persons": result["sizes"]["n_persons"],
        "step_seconds": {m: float(result[f"{m}_block_step_seconds"]) for m in ("iwae", "iwavb")},
        "block": {m: int(result[m]["replications"]) for m in ("iwae", "iwavb")},
        "eval_seconds": {m: float(result[m]["bulk"]["eval_seconds_per_replication"]) for m in ("iwae", "iwavb")},
    }


def measured_on_gpu(measured: dict | None, paper: dict, study: str, design: str, method: str) -> bool:
    """Whether a fit's GPU steps are priced from the measurement: the measured method, in an
    amortized_ifa design with the measured design's persons and batch size."""
    if measured is None or study != "amortized_ifa" or method not in measured["step_seconds"]:
        return False
    designs = paper["studies"]["amortized_ifa"]["designs"]
    ref, this = designs.get(measured["design"], {}), designs.get(design, {})

    def size(d):
        return d.get("n_persons"), (d.get("training") or {}).get("batch_size")

    return this.get("n_persons") == measured["n_persons"] and size(this) == size(ref)


def gpu_basis(measured: dict | None, n_measured: int, n_priced: int) -> tuple[str, str]:
    """Whether the GPU hours are predicted, partly measured or measured, and from what, in words."""
    assumed = f"{GPU_STEP_SECONDS * 1e3:.2f} ms per step of a block (an assumption, not measured here)"
    if measured is None or n_measured == 0:
        where = "no GPU measurement" if measured is None else "the GPU measurement fits none of the fits"
        return (
            "predicted",
            f"predicted: {where}; every step priced at {assumed}, evaluation and fixed costs as on this CPU",
        )
    steps = ", ".join(
        f"{m.upper()} {v * 1e3:.3f} ms per step of a block of {measured['block'][m]}"
        for m, v in measured["step_seconds"].items()
    )
    basis = (
        f"measured on {measured['machine']} on {measured['date']} ({steps}; evaluation as measured there) "
        f"for {n_measured} of {n_priced} fits"
    )
    if n_measured < n_priced:
        return "partly measured", f"partly measured: {basis}; the other fits' steps at {assumed}"
    return "measured", f"{basis}; fixed costs as on this CPU"


def predict(probe_figures: dict, measured: dict | None = None) -> dict:
    """Predicted hours per study and machine, before and after (see the module docstring)."""
    paper = validated(paper_config())
    fixed = probe_figures["fixed_seconds_per_job"]
    import importlib

    from bayesirt.studies import STUDIES

    priced = {(f["study"], f["design"], f["method"]): f for f in probe_figures["fits"]}
    out = {}
    for study in STUDIES:
        specs = importlib.import_module(f"bayesirt.studies.{study}.conditions").conditions(paper)
        cpu_before = cpu_after = gpu_after = 0.0
        n_fits = unpriced = gpu_measured = 0
        for spec in specs:
            design = getattr(spec, "design", None) or getattr(spec, "dataset", "")
            f = priced.get((study, design, spec.method))
            n_fits += 1
            if f is None:
                unpriced += 1
                continue
            # a probed fit that converged inside the probe's cap (EM, MML, the rb fits on their
            # real data) is priced at its own steps; one stopped by the cap at the paper's
            # max_steps or sweeps, an upper bound
            steps = f["steps"] if f.get("converged") else paper_steps(paper, study, design, spec.method)
            per_step = f["fit_seconds"] / max(f["steps"], 1)
            block = int((paper["studies"][study].get("designs") or {}).get(design, {}).get("block_size", 1))
            # a probed fit's share of its block's step is what it costs alone on a CPU (an IWAE
            # fit-step costs the same alone and in a program of 2 to 8: benchmark program_width)
            cpu_before += fixed + f["eval_seconds"] + per_step * steps
            cpu_after += fixed / block + f["eval_seconds"] + per_step * steps
            if measured_on_gpu(measured, paper, study, design, spec.method):
                gpu_measured += 1
                gpu_step, gpu_eval = measured["step_seconds"][spec.method], measured["eval_seconds"][spec.method]
            else:
                gpu_step, gpu_eval = GPU_STEP_SECONDS, f["eval_seconds"]
            gpu_after += fixed / block + gpu_eval + gpu_step * steps / block
        out[study] = {
            "fits": n_fits,
            "fits_not_priced": unpriced,
            "fits_gpu_measured": gpu_measured,
            "hours_2_cores_before": round(cpu_before / 2 / 3600, 1),
            "hours_2_cores_after": round(cpu_after / 2 / 3600, 1),
            "hours_16_cores_before": round(cpu_before / 8 / 3600, 1),
            "hours_16_cores_after": round(cpu_after / 8 / 3600, 1),
            "hours_gpu_after": round(gpu_after / 3600, 1),
        }
    return out


def run() -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bayesirt_paper_plan_"))
    print(f"working in {folder}", flush=True)
    t0 = time.perf_counter()
    try:
        for name in WORKFLOW_FILES:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / name)
        plan = counts(folder)
        per_job = snakemake_seconds_per_job(folder / "noop")
        result = {
            "jobs_before": plan["before"]["jobs"],
            "jobs_after": plan["after"]["jobs"],
            "copy_jobs_after": copy_jobs(plan["after"]),
            "submissions_before": plan["before"]["submissions"],
            "submissions_after": plan["after"]["submissions"],
            "snakemake_seconds_per_job": round(per_job, 3),
            "snakemake_hours_before": round(plan["before"]["jobs"] * per_job / 3600, 2),
            "snakemake_hours_after": round(plan["after"]["jobs"] * per_job / 3600, 2),
            "counts": plan,
        }
        print(json.dumps({k: v for k, v in result.items() if k != "counts"}), flush=True)
        if PROBE:
            env = {
                # XLA at its default optimization level, as a long run of the paper config has it
                **os.environ,
                "JAX_COMPILATION_CACHE_DIR": str(folder / ".jax_cache"),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
            }
            figures = probe(folder, env)
            measured = gpu_measurements()
            studies = predict(figures, measured)
            total = {
                k: round(sum(s[k] for s in studies.values()), 1) for k in next(iter(studies.values())) if "hours" in k
            }
            n_priced = sum(s["fits"] - s["fits_not_priced"] for s in studies.values())
            are, basis = gpu_basis(measured, sum(s["fits_gpu_measured"] for s in studies.values()), n_priced)
            print(f"one GPU: {total['hours_gpu_after']} h, {basis}", flush=True)
            result.update(
                {
                    "predicted_hours_2_cores_before": total["hours_2_cores_before"],
                    "predicted_hours_2_cores_after": total["hours_2_cores_after"],
                    "predicted_hours_16_cores_before": total["hours_16_cores_before"],
                    "predicted_hours_16_cores_after": total["hours_16_cores_after"],
                    "hours_gpu_after": total["hours_gpu_after"],
                    "gpu_hours_are": are,
                    "gpu_basis": basis,
                    "gpu_measurements": measured,
                    "studies": studies,
                    "probe": figures,
                }
            )
        result["wall_seconds"] = round(time.perf_counter() - t0, 1)
        result["sizes"] = {
            "config": CONFIG,
            "probe_steps": PROBE_STEPS,
            "probe_sweeps": PROBE_SWEEPS,
            "probe": PROBE,
            "overhead_jobs": OVERHEAD_JOBS,
        }
        return result
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
