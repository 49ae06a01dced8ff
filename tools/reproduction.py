"""Run a study at its seed's scale, keep what came out, and write its reproduction page.

    python tools/reproduction.py run dcm_bbvi gibbs_2pno --config config/paper.yaml
    python tools/reproduction.py run vibo --config config/paper.yaml config/reproduction/vibo.yaml
    python tools/reproduction.py synthetic-ipip          # before amortized_ifa (its overlay reads it)
    python tools/reproduction.py collect dcm_bbvi --config config/paper.yaml
    python tools/reproduction.py diagnose dcm_bbvi --config config/paper.yaml
    python tools/reproduction.py page                      # every study with collected tables
    python tools/reproduction.py pause                     # stop a running sitting for a while
    python tools/reproduction.py resume

``run`` is ``make run`` on the studies' reports with the given config, at XLA's default
optimization level (a long run is compute, not compilation); run it again after an
interruption and it resumes. Each sitting (start, end, exit status, commit) is kept in
``results/reproduction/sittings.jsonl`` (its end is null while it runs);
``nohup python tools/reproduction.py run ... &`` keeps it going in the background. ``pause``
stops every process of the running sittings (to free the machine for a while) and ``resume``
lets them go on; the sitting records both, and its paused time is not the study's. A job that
was running during a pause has the pause in the times it recorded, so ``collect`` refuses a study
with such jobs and names them: delete their outputs and run again.

``collect`` copies the small tables a study's page reads from ``results/<study>/`` to
``docs/reproduction/data/<study>/`` with the run's facts (``run.json``: command, config, commit,
machine, sittings, wall time up to the study's report, the study's summed job time, and what was left out and why, from
``--left-out``); commit that folder. ``diagnose`` runs a study's diagnostics (fits apart from
the study's run that say whether a figure unlike the seed's is the seed's method's or this
implementation's; the config gives the data sets' seed) into
``docs/reproduction/data/<study>/diagnostics/``; commit it too. ``page`` writes
``docs/reproduction/<study>.md`` and its figures from the committed tables
(``bayesirt.studies.reproduction``), and, run without studies, the index
``docs/reproduction/index.md`` (``bayesirt.studies.reproduction_index``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITTINGS = Path("results/reproduction/sittings.jsonl")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return out.stdout.strip() or "unknown"


def machine() -> str:
    """Processor, cores and memory of this machine, in words."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
        with open("/proc/meminfo") as f:
            kb = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal")))
        memory = f", {kb / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        memory = ""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores{memory}, {platform.system()}, no GPU"


def run_command(studies, configs, first=()) -> list[str]:
    """``make run`` on the studies' reports with the config files (later ones override earlier
    ones key by key, Snakemake's merge); the jobs of the ``first`` studies, or of the ``first``
    files (a path, such as one design's tables), go before the others."""
    targets = " ".join(f"results/reports/{s}.html" for s in studies)
    first = [f if "/" in f else f"results/reports/{f}.html" for f in first]
    prioritize = f" --prioritize {' '.join(first)}" if first else ""
    return ["make", "run", f"ARGS={targets} --configfile {' '.join(configs)}{prioritize}"]


def read_sittings() -> list[dict]:
    path = ROOT / SITTINGS
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.is_file() else []


def write_sittings(sittings: list[dict]) -> None:
    path = ROOT / SITTINGS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(s) + "\n" for s in sittings))


def update_sitting(start: str, argv: str, **fields) -> None:
    """Set ``fields`` on the record of the sitting that started at ``start`` with ``argv``
    (another command, ``pause``, may have changed it since it was written)."""
    sittings = read_sittings()
    for s in sittings:
        if s["start"] == start and s.get("argv") == argv:
            s.update(fields)
    write_sittings(sittings)


def run_env() -> dict:
    """The environment of a run's jobs: XLA's default level, and this checkout's own ``src`` first
    on the path, so that a clone made for a run fits with its own code even where it shares
    another checkout's environment (whose editable install points at that checkout's ``src``)."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "XLA_FLAGS": "", "PYTHONPATH": path, **checkpoint_env()}


def checkpoint_env() -> dict:
    """Checkpoints of the runs' and diagnostics' block fits, kept when a block has finished
    (``inference.execution.checkpoints``): a run cut off resumes its blocks, and a diagnostic
    that refits a block with a larger step cap continues the run's fits from their last step."""
    folder = os.environ.get("BAYESIRT_CHECKPOINT_DIR") or str(ROOT / ".fit_checkpoints")
    return {"BAYESIRT_CHECKPOINT_DIR": folder, "BAYESIRT_CHECKPOINT_KEEP": "1"}


def run(args) -> int:
    command = run_command(args.studies, args.config, args.first)
    sitting = {
        "studies": args.studies,
        "config": " ".join(args.config),
        "argv": shlex.join(["python", "tools/reproduction.py", *sys.argv[1:]]),
        "command": shlex.join(command),
        "commit": commit(),
    }
    sitting["start"] = now()
    print(f"reproduction: {sitting['command']} (XLA_FLAGS= , XLA's default level)", flush=True)
    # its own process group, so that ``pause`` and ``resume`` reach every process of the run
    proc = subprocess.Popen(command, cwd=ROOT, env=run_env(), start_new_session=True)
    write_sittings([*read_sittings(), {**sitting, "process_group": proc.pid, "end": None}])

    def forward(signum, frame):  # Ctrl-C or a kill of this process reaches the run's group
        os.killpg(proc.pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    status = proc.wait()
    update_sitting(sitting["start"], sitting["argv"], end=now(), returncode=status)
    return status


def running_sittings(sittings: list[dict]) -> list[dict]:
    """The open sittings whose process group is alive on this machine."""
    alive = []
    for s in sittings:
        if s.get("end") is None and s.get("process_group"):
            try:
                os.killpg(s["process_group"], 0)
            except (ProcessLookupError, PermissionError):
                continue
            alive.append(s)
    return alive


def pause(args) -> int:
    sittings = read_sittings()
    running = running_sittings(sittings)
    if not running:
        print("pause: no sitting is running")
        return 1
    for s in running:
        if s.get("pauses") and s["pauses"][-1][1] is None:
            print(f"pause: {s['argv']} is paused already (since {s['pauses'][-1][0]})")
            continue
        os.killpg(s["process_group"], signal.SIGSTOP)
        s.setdefault("pauses", []).append([now(), None])
        print(f"pause: {s['argv']} paused; `python tools/reproduction.py resume` lets it go on")
    write_sittings(sittings)
    return 0


def resume(args) -> int:
    sittings = read_sittings()
    running = [s for s in running_sittings(sittings) if s.get("pauses") and s["pauses"][-1][1] is None]
    if not running:
        print("resume: no sitting is paused")
        return 1
    for s in running:
        os.killpg(s["process_group"], signal.SIGCONT)
        s["pauses"][-1][1] = now()
        s["paused_seconds"] = sum(seconds(a, b) for a, b in s["pauses"])
        print(f"resume: {s['argv']} goes on after {seconds(*s['pauses'][-1]):.0f} s")
    write_sittings(sittings)
    return 0


def paused_jobs(study: str, sittings: list[dict]) -> list[str]:
    """The study's jobs that were running while one of ``sittings`` was paused, by their
    Snakemake benchmark files (a job ran from the file's time less its seconds to the file's
    time): the times such a job recorded include the pause."""
    stamp = datetime.datetime.fromisoformat
    pauses = [
        (stamp(a.replace("Z", "+00:00")).timestamp(), stamp((b or now()).replace("Z", "+00:00")).timestamp())
        for s in sittings
        for a, b in s.get("pauses", [])
    ]
    hit = []
    base = ROOT / "logs" / "benchmarks"
    for folder in (base / study, base / "data" / study):
        for tsv in sorted(folder.rglob("*.tsv")) if folder.is_dir() and pauses else []:
            lines = tsv.read_text().splitlines()
            if len(lines) < 2:
                continue
            end = tsv.stat().st_mtime
            start = end - float(lines[1].split("\t")[0])
            if any(a < end and start < b for a, b in pauses):
                hit.append(str(tsv.relative_to(ROOT)))
    return hit


def seconds(start: str, end: str) -> float:
    parse = datetime.datetime.fromisoformat
    return (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds()


def job_seconds(study: str) -> float:
    """The wall time of the study's jobs, summed (Snakemake's benchmark files under logs/)."""
    total = 0.0
    base = ROOT / "logs" / "benchmarks"
    for folder in (base / study, base / "data" / study):
        for tsv in folder.rglob("*.tsv") if folder.is_dir() else []:
            lines = tsv.read_text().splitlines()
            if len(lines) > 1:
                total += float(lines[1].split("\t")[0])
    return total


def resumed_blocks(study: str) -> list[str]:
    """The study's block jobs that resumed from a checkpoint (a fit record's
    ``timing.block_resumed_at_step`` above 0): Snakemake's benchmark of such a job, which
    ``job_seconds`` sums, covers its last sitting only."""
    blocks = set()
    for record in (ROOT / "results" / study).rglob("fit.json"):
        timing = json.loads(record.read_text()).get("timing") or {}
        if timing.get("block_resumed_at_step"):
            block = next((p for p in record.parents if p.parent.name == "blocks"), record.parent)
            blocks.add(str(block.relative_to(ROOT / "results" / study)))
    return sorted(blocks)


def collect(args) -> int:
    from bayesirt.studies import reproduction

    path = ROOT / SITTINGS
    sittings = [json.loads(ln) for ln in path.read_text().splitlines()] if path.is_file() else []
    closed = [s for s in sittings if s.get("end")]
    # an open record whose sitting was also written closed (by a runner that did not update it)
    sittings = [
        s
        for s in sittings
        if s.get("end")
        or not any(c.get("argv") == s.get("argv") and abs(seconds(s["start"], c["start"])) < 300 for c in closed)
    ]
    config = " ".join(args.config)
    report = ROOT / "results" / "reports" / f"{args.study}.html"
    if args.without_report:  # a run stopped before its report: it ended with its last sitting
        done = max((s["end"] for s in sittings if s.get("end") and args.study in s["studies"]), default=now())
    elif not report.is_file():
        sys.exit(
            f"collect: {args.study} has no report yet ({report.relative_to(ROOT)}); has its run finished? "
            "(--without-report collects the tables a stopped run finished, its left-out parts named)"
        )
    else:
        # the study finished when its report was written; sittings it shared with other studies
        # count only up to then
        done = datetime.datetime.fromtimestamp(report.stat().st_mtime, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    mine = [s for s in sittings if args.study in s["studies"] and s["config"] == config and s["start"] <= done]
    if not mine:
        sys.exit(f"collect: no sitting of {args.study} with {config} in {SITTINGS}; run it first")
    mine = [{**s, "end": min(s["end"] or done, done)} for s in mine]
    paused = paused_jobs(args.study, mine)
    if paused:
        sys.exit(
            f"collect: {len(paused)} job(s) of {args.study} ran while a sitting was paused, so the times they "
            f"recorded include the pause; delete their outputs (the benchmark file names each job) and run again: "
            + ", ".join(paused)
        )
    run_facts = {
        "command": mine[-1].get("argv")
        or f"python tools/reproduction.py run {' '.join(mine[-1]['studies'])} --config {config}",
        "make": mine[-1]["command"],
        "config": config,
        "commit": mine[-1]["commit"],
        "machine": machine(),
        "sittings": mine,
        "started": mine[0]["start"],
        "finished": mine[-1]["end"],
        # a sitting paused by hand (SIGSTOP, to free the cores for something else) records the
        # paused time; it is not the study's
        "elapsed_seconds": sum(seconds(s["start"], s["end"]) - s.get("paused_seconds", 0) for s in mine),
        "job_seconds": job_seconds(args.study),
        "resumed_blocks": resumed_blocks(args.study),
        "shared_with": sorted({o for s in mine for o in s["studies"]} - {args.study}),
        "left_out": args.left_out,
        "note": args.note,
    }
    data = ROOT / reproduction.DATA / args.study
    out = reproduction.collect(args.study, ROOT / "results" / args.study, data, run_facts)
    print(f"collect: {args.study} -> {out.relative_to(ROOT)}")
    return 0


def load_config(paths) -> dict:
    """The config files merged as Snakemake merges them (later ones key by key over earlier ones),
    validated against the workflow's schema with its defaults filled in: what a job's rules see."""
    import yaml
    from snakemake.utils import update_config, validate

    config = {}
    for path in paths:
        update_config(config, yaml.safe_load((ROOT / path).read_text()))
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    return config


def only_some(config: dict, study: str, key: str, names) -> dict:
    """``config`` with the study's ``key`` (its ``designs`` or ``methods``) cut to ``names`` (all
    where None): a diagnostic run on some of the run's designs or methods, each with the run's
    seeds and settings (they follow its name, not its place in the config)."""
    if not names:
        return config
    known = config["studies"][study].get(key, [])
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"diagnose: {study} has no {key} {', '.join(unknown)}; it has {', '.join(known)}")
    kept = {n: known[n] for n in known if n in names} if isinstance(known, dict) else [n for n in known if n in names]
    return {**config, "studies": {**config["studies"], study: {**config["studies"][study], key: kept}}}


def diagnose(args) -> int:
    from bayesirt.studies import reproduction, reproduction_diagnostics

    if args.methods and not args.designs:
        raise SystemExit("diagnose: --methods needs --designs (the designs whose rows the run replaces)")
    config = only_some(load_config(args.config), args.study, "designs", args.designs)
    config = only_some(config, args.study, "methods", args.methods)
    try:  # an unknown study or part stops here, before the workflow builds the run's files
        reproduction_diagnostics.diagnostic_parts(args.study, args.parts)
    except ValueError as error:
        raise SystemExit(f"diagnose: {error}") from None
    module = reproduction.study_module(args.study)
    # a study whose diagnostics read the run's files (``diagnostic_inputs``) has them built (or
    # found up to date) by the workflow first, with the same config
    files = module.diagnostic_inputs(config, args.data_sets, args.parts) if hasattr(module, "diagnostic_inputs") else []
    if files:
        command = ["make", "run", f"ARGS={' '.join(files)} --configfile {' '.join(args.config)}"]
        print(f"diagnose: {shlex.join(command)}", flush=True)
        status = subprocess.run(command, cwd=ROOT, env=run_env()).returncode
        if status:
            return status
    facts = {
        "command": shlex.join(["python", "tools/reproduction.py", *sys.argv[1:]]),
        "config": " ".join(args.config),
        "commit": commit(),
        "machine": machine(),
        "data_sets": args.data_sets,
        **({"designs": args.designs} if args.designs else {}),
        **({"methods": args.methods} if args.methods else {}),
    }
    out = ROOT / reproduction.DATA / args.study / reproduction.DIAGNOSTICS
    os.chdir(ROOT)  # the run's files are named relative to the repository
    # the run's checkpoint folder, whose kept final states a refit with a larger cap continues;
    # the diagnostics' blocks are kept too, so a diagnose cut off redoes no finished block
    os.environ.update(checkpoint_env())
    reproduction_diagnostics.diagnose(
        args.study, config, args.data_sets, out, facts, parts=args.parts, designs=args.designs, methods=args.methods
    )
    print(f"diagnose: {args.study} -> {out.relative_to(ROOT)}")
    return 0


SYNTHETIC_IPIP = Path("data/raw/ipip_ffm_synthetic/data-final.csv")


def synthetic_ipip(args) -> int:
    """The full-size synthetic IPIP-FFM file (the real one cannot be downloaded everywhere) at
    ``SYNTHETIC_IPIP``, where ``config/reproduction/amortized_ifa.yaml`` points the data set."""
    from bayesirt.data import ipip_synthetic

    path = ROOT / SYNTHETIC_IPIP
    if path.is_file() and not args.force:
        print(f"synthetic-ipip: {SYNTHETIC_IPIP} is there (--force writes it again)")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    info = ipip_synthetic.write_synthetic_raw(path, args.rows, seed=args.seed, null_rows=args.null_rows)
    (path.parent / "synthetic.json").write_text(json.dumps({**info, "seed": args.seed}, indent=2, default=str) + "\n")
    print(f"synthetic-ipip: {args.rows} rows -> {SYNTHETIC_IPIP}")
    return 0


def page(args) -> int:
    from bayesirt.studies import reproduction, reproduction_index

    data, pages = Path(args.data or ROOT / reproduction.DATA), Path(args.pages or ROOT / reproduction.PAGES)
    studies = args.studies or [s for s in reproduction.STUDIES if (data / s / reproduction.RUN_FILE).is_file()]
    for study in studies:
        written = reproduction.render(study, data / study, pages)
        print(f"page: {written}")
    if not args.studies:  # the index counts every study's claims: written with all of them
        print(f"page: {reproduction_index.write_index(data, pages, studies)}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("run", help="run the studies' reports with a config (resumes)")
    p.add_argument("studies", nargs="+")
    p.add_argument("--config", nargs="+", default=["config/paper.yaml"], help="config files, later ones override")
    p.add_argument("--first", nargs="+", default=[], help="studies whose jobs go first, or files (one design's tables)")
    p.set_defaults(step_function=run)
    p = sub.add_parser("pause", help="stop the running sittings for a while (resume lets them go on)")
    p.set_defaults(step_function=pause)
    p = sub.add_parser("resume", help="let the paused sittings go on")
    p.set_defaults(step_function=resume)

    p = sub.add_parser("collect", help="keep a finished study's tables and run facts under docs/")
    p.add_argument("study")
    p.add_argument("--config", nargs="+", default=["config/paper.yaml"], help="as given to run")
    p.add_argument("--left-out", action="append", default=[], help="what the run left out, and why (repeatable)")
    p.add_argument("--note", default="", help="a sentence about the run for its page")
    p.add_argument(
        "--without-report",
        action="store_true",
        help="collect a run stopped before its report (the tables of the parts it finished); name what it "
        "left out with --left-out",
    )
    p.set_defaults(step_function=collect)
    p = sub.add_parser("diagnose", help="run a study's diagnostics into docs/reproduction/data/<study>/diagnostics/")
    p.add_argument("study")
    p.add_argument(
        "--config",
        nargs="+",
        default=["config/paper.yaml"],
        help="the run's config files (its seeds, designs, settings)",
    )
    p.add_argument("--data-sets", type=int, default=20, help="how many of the study's data sets")
    p.add_argument(
        "--parts",
        nargs="+",
        help="only these of the study's diagnostic tables (its diagnostics module's PARTS; default all)",
    )
    p.add_argument("--designs", nargs="+", help="only these of the run's designs (default all)")
    p.add_argument(
        "--methods",
        nargs="+",
        help="only these of the run's methods (with --designs: their rows of those designs are replaced)",
    )
    p.set_defaults(step_function=diagnose)
    p = sub.add_parser("synthetic-ipip", help="write the full-size synthetic IPIP-FFM file for amortized_ifa")
    p.add_argument("--rows", type=int, default=1_015_000)
    p.add_argument("--seed", type=int, default=20181108)
    p.add_argument("--null-rows", type=int, default=1800)
    p.add_argument("--force", action="store_true")
    p.set_defaults(step_function=synthetic_ipip)
    p = sub.add_parser("page", help="write the reproduction pages from the collected tables")
    p.add_argument("studies", nargs="*")
    p.add_argument("--data", help="the collected tables (default docs/reproduction/data)")
    p.add_argument("--pages", help="where the pages go (default docs/reproduction)")
    p.set_defaults(step_function=page)
    args = parser.parse_args(argv)
    return args.step_function(args)


if __name__ == "__main__":
    sys.exit(main())
