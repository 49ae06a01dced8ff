"""After a failed run (`make run`): one line per failed job, the last thing on the screen.

    error: <ExceptionType>: <message> (rule <rule>, log <path>)

Reads Snakemake's own log of the run (the newest .snakemake/log/*.snakemake.log, written no
earlier than --since, the run's start in seconds since the epoch), finds every "Error in rule"
block and its log file, and quotes the error that the job's script wrote there (bayesirt.logs
writes "CRITICAL failed with <type>: <message>" before the traceback). Prints nothing where
Snakemake stopped before running any job (a config error is already its last line). Standard
library only; always exits 0 (the Makefile keeps Snakemake's status).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

FAILED_JOB = re.compile(r"^Error in rule (\S+?):\n((?:[ \t]+.*\n?)*)", re.M)
LOG_LINE = re.compile(r"^[ \t]+log: (.*?)(?: \(check log file\(s\) for error details\))?$", re.M)
OUR_ERROR = re.compile(r" CRITICAL failed with (.+)$")
# the last line of a Python traceback: "package.module.SomeError: message" (or just the type)
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))(?::\s*(.*))?$")


def newest_run_log(workdir: Path, since: float) -> Path | None:
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs and logs[-1].stat().st_mtime >= since else None


def job_error(log: Path) -> str | None:
    """The error a failed job's log ends with, as one line (None where it holds none)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        found = OUR_ERROR.search(line)
        if found:
            return found.group(1).strip()
    # another program's traceback: its last unindented line after "Traceback"
    start = max(
        (i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")), default=None
    )
    if start is not None:
        for line in lines[start + 1 :]:
            found = EXCEPTION_LINE.match(line)
            if found:
                kind = found.group(1).rsplit(".", 1)[-1]
                return f"{kind}: {found.group(2)}" if found.group(2) else kind
    return None


def failed_jobs(run_log_text: str) -> list[tuple[str, list[str]]]:
    """(rule, log files) of every failed job, in the order Snakemake reported them, once each."""
    jobs = []
    for block in FAILED_JOB.finditer(run_log_text):
        logs = LOG_LINE.search(block.group(2))
        entry = (block.group(1), [p.strip() for p in logs.group(1).split(",")] if logs else [])
        if entry not in jobs:
            jobs.append(entry)
    return jobs


def explain(workdir: Path, since: float = 0.0) -> list[str]:
    run_log = newest_run_log(workdir, since)
    if run_log is None:
        return []
    lines = []
    for rule, logs in failed_jobs(run_log.read_text(errors="replace")):
        message = next((m for m in (job_error(workdir / p) for p in logs) if m), None)
        if message is not None:
            lines.append(f"error: {message} (rule {rule}, log {logs[0]})")
        else:
            lines.append(
                f"error: rule {rule} failed; see Snakemake's message above"
                + (f" and the log {logs[0]}" if logs else "")
            )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", type=float, default=0.0, help="the run's start (seconds since the epoch)")
    parser.add_argument("--directory", type=Path, default=Path.cwd(), help="the run's working directory")
    args = parser.parse_args(argv)
    try:
        lines = explain(args.directory, args.since)
    except Exception as err:  # never hide Snakemake's own report behind a failure of this summary
        lines = [f"(explain_failure.py could not read the run's log: {err})"]
    for line in lines:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
