"""`make run`'s screen: run Snakemake and show its output condensed, a line per finished job.

    python workflow/screen.py [--] snakemake --cores all ...

Snakemake prints a block of eight to twelve lines for every job it starts (its inputs, outputs,
reason, resources), and the jobs log their progress to the screen too: some two thousand lines
for the default config. Everything stays where it was written (Snakemake's own log in
.snakemake/log/, each job's in logs/); the screen gets

- one line per finished job: time, count, rule and wildcards;
- each warning that is expected at demo scale once, marked so, with where to read about it
  (further ones of the same kind are counted, and the count is shown at the end); in a run of
  another config (``--configfile``) the same kinds are shown once each and counted, without the
  demo's reason, which need not be that config's;
- every other line Snakemake or a job prints that is not a job's INFO line: errors, unknown
  warnings, a config error, Snakemake's own messages;
- at the end, how long the run took and where the reports and tables are.

The exit status is Snakemake's. Standard library only. Ctrl-C reaches Snakemake (the same
process group); this program waits for it to finish and passes its status on.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

DOCS = "docs/getting-started.md, section 'Warnings at demo scale'"

# Snakemake's lines that say nothing a reader of the screen needs (its log file keeps them)
NOISE = re.compile(
    r"^(Select jobs to execute\.\.\.|Execute \d+ jobs\.\.\.|Shell command: .*|Building DAG of jobs\.\.\."
    r"|Using shell: .*|Provided cores: \d+|Rules claiming more threads will be scaled down\."
    r"|Conda environments: ignored|Assuming unrestricted shared filesystem usage\.|Elapsed time: .*|)$"
)
TIMESTAMP = re.compile(r"^\[\w{3} \w{3} +\d+ (\d\d:\d\d:\d\d) \d{4}\]$")
JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
JOB_FIELD = re.compile(r"^ {4}(\w+): (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
PROGRESS = re.compile(r"^(\d+) of (\d+) steps \((.*)\) done$")
TOTAL = re.compile(r"^total +(\d+)$")
# a job's own log line (bayesirt.logs): "2026-11-28 07:00:15,487 WARNING message"
JOB_LOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$")
# a Python warning as the warnings module prints it, followed by the line of code that raised it
PY_WARNING = re.compile(r"^\S+\.py:\d+: (\w+): (.*)$")
HEADER_START, HEADER_RULE = "SNAKEMAKE", re.compile(r"^=+$")

# Warnings the default config's small data sets and short runs are expected to raise: a name, a
# pattern of the message, and what it means there. The reports' "Convergence flags" and "Against
# the seed" sections weigh them; the Getting started page says more.
EXPECTED = [
    (
        "PSIS k-hat of a variational fit above 0.7",
        re.compile(r"PSIS k-hat [\d.]+ > "),
        "few persons per item: the fit's sds and interval coverage are not calibrated",
    ),
    (
        "imputation model's Pareto k-hat above 0.7",
        re.compile(r"imputation model check \d+ \(PSIS k-hat\)"),
        "some sub-models' leave-one-out weights are heavy-tailed on a small data set",
    ),
    (
        "Gibbs chains not converged by the record's rule",
        re.compile(r"chains not converged by the record's rule"),
        "short chains at demo scale miss the R-hat and ESS limits",
    ),
    (
        "fit did not converge",
        re.compile(r"did not converge: |did not reach the items' marginal mode"),
        "few steps at demo scale; the fit's record says so",
    ),
    (
        "item discrimination at the positivity bound",
        re.compile(r"sits at the lower bound 0 of the positivity constraint"),
        "small simulated samples leave weakly related items near 0; with your own data, check the item's keying",
    ),
    (
        "item sds left as the approximation's own",
        re.compile(r"item sds left as "),
        "the marginal-mode correction failed on a small data set",
    ),
]


def expected_kind(message: str) -> tuple[str, str] | None:
    for name, pattern, meaning in EXPECTED:
        if pattern.search(message):
            return name, meaning
    return None


def duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def demo_scale(command: list[str]) -> bool:
    """Whether a run is the default config's demo (no ``--configfile``, or only config/config.yaml):
    only there are the ``EXPECTED`` warnings expected; in a run of another config they are a known
    kind, to be read in the fits' records."""
    files, taking = [], False
    for arg in command:
        for part in arg.split():  # make passes Snakemake's options in one ARGS word
            if part in ("--configfile", "--configfiles"):
                taking = True
            elif taking and not part.startswith("-"):
                files.append(part)
            else:
                taking = False
    return all(Path(f).as_posix().endswith("config/config.yaml") for f in files)


class Screen:
    """Condenses Snakemake's merged output, a line at a time (``feed``), into ``write``; ``demo``:
    whether the run is the default config's (``demo_scale``), which says how a known warning reads."""

    def __init__(self, write=print, demo: bool = True):
        self.write = write
        self.demo = demo
        self.jobs: dict[str, str] = {}  # jobid -> "rule (wildcards)"
        self.in_job = self.in_header = self.in_stats = self.skip_code_line = False
        self.job_id = self.job_rule = self.job_wildcards = ""
        self.clock = ""
        self.finished = ""
        self.total = 0
        self.done = 0
        self.counts: dict[str, int] = {}

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if self.skip_code_line:  # the source line under a Python warning
            self.skip_code_line = False
            if line.startswith("  "):
                return
        if self.in_stats:  # Snakemake's table of jobs per rule: its total is enough
            if m := TOTAL.match(line):
                self.in_stats, self.total = False, int(m.group(1))
                self.write(f"{self.total} jobs to run; a line for each as it finishes (the full log: .snakemake/log/)")
            return
        if self.in_header:  # Snakemake's banner: date, host, versions, paths
            if line.startswith("  ") or HEADER_RULE.match(line):
                return
            self.in_header = False
        if self.in_job:
            field = JOB_FIELD.match(line)
            if field:
                key, value = field.groups()
                self.job_id = value if key == "jobid" else self.job_id
                self.job_wildcards = value if key == "wildcards" else self.job_wildcards
                return
            self.in_job = False
            self.jobs[self.job_id] = self.job_rule + (f" ({self.job_wildcards})" if self.job_wildcards else "")
        if line == HEADER_START:
            self.in_header = True
            return
        if m := TIMESTAMP.match(line):
            self.clock = m.group(1)
            return
        if m := JOB_HEADER.match(line):
            self.in_job, self.job_rule, self.job_id, self.job_wildcards = True, m.group(1), "", ""
            return
        if line == "Job stats:":
            self.in_stats = True
            return
        if m := FINISHED.match(line):
            self.finished = self.jobs.get(m.group(1), m.group(2))
            return
        if m := PROGRESS.match(line):
            self.done = int(m.group(1))
            self.write(f"[{self.clock}] {m.group(1)}/{m.group(2)} {self.finished}")
            return
        if m := JOB_LOG.match(line):
            level, message = m.groups()
            if level in ("DEBUG", "INFO"):
                return
            if level == "WARNING":
                self.warning(message, line)
                return
        elif m := PY_WARNING.match(line):
            if expected_kind(m.group(2)):  # the same message is in the job's log as a WARNING line
                self.skip_code_line = True
                return
        if NOISE.match(line):
            return
        self.write(line)

    def warning(self, message: str, line: str) -> None:
        kind = expected_kind(message)
        if kind is None:
            self.write(line)
            return
        name, meaning = kind
        self.counts[name] = self.counts.get(name, 0) + 1
        if self.counts[name] == 1:
            if self.demo:
                self.write(f"warning (expected at demo scale: {meaning}; more in {DOCS}): {message}")
            else:  # the demo's reason (its small size) need not be this config's: no reason given
                self.write(f"warning (a kind the demo config raises by its size; read the fit's record): {message}")

    def summary(self, seconds: float, status: int, reports: list[str]) -> list[str]:
        lines = [""]
        if self.counts:
            what = (
                "expected at demo scale"
                if self.demo
                else "of kinds expected at demo scale only; read the fits' records"
            )
            lines.append(f"Warnings {what} (read more: {DOCS}):")
            lines += [f"  {n} x {name} (the first shown above)" for name, n in self.counts.items()]
        if status != 0:
            lines.append(f"Stopped after {duration(seconds)} with status {status} ({self.done} jobs finished).")
            return lines
        if self.total:
            lines.append(f"Done: {self.done} of {self.total} jobs run in {duration(seconds)}.")
        else:
            lines.append(f"Done in {duration(seconds)}: nothing to run, every output is up to date.")
        if reports:
            lines.append("Reports (open in a browser): " + ", ".join(reports))
            lines.append("Tables and figures: results/<study>/; each job's log: logs/")
        return lines


def run_reports(folder: Path, since: float) -> list[str]:
    """The reports a run wrote (modified since it started), not those an earlier run of another
    study left in ``folder``; all of them when the run wrote none (nothing to run: every report
    there is up to date)."""
    every = sorted(folder.glob("*.html"))
    written = [p for p in every if p.stat().st_mtime >= since]
    return [str(p) for p in written or every]


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(__doc__)
        return 2
    start = time.time()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    # Ctrl-C goes to the whole process group: Snakemake stops its jobs and exits; keep reading
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    screen = Screen(lambda text: print(text, flush=True), demo=demo_scale(command))
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            screen.feed(line)
        except Exception as err:  # never hide Snakemake's output behind a fault of this filter
            print(f"(workflow/screen.py: {err}) {line}", end="", flush=True)
    status = proc.wait()
    reports = run_reports(Path("results/reports"), start)
    for text in screen.summary(time.time() - start, status, reports):
        print(text, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
