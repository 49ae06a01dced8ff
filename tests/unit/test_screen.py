"""workflow/screen.py, `make run`'s screen: Snakemake's output condensed to a line per finished
job, each warning expected at demo scale once, and where the reports are at the end."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("screen", ROOT / "workflow" / "screen.py")
screen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(screen)

# an excerpt of a real run's output (Snakemake 9 with the local profile, and two jobs' logs)
SNAKEMAKE = """\
Using workflow specific profile workflow/profiles/local for setting default command line arguments.
Assuming unrestricted shared filesystem usage.

SNAKEMAKE
=========
  Date: 2026-11-28 06:59:18
  Snakemake version: 9.27.1

Building DAG of jobs...
Provided cores: 2
Job stats:
job                        count
-----------------------  -------
fit_vibo                       1
all                            1
total                          2

Select jobs to execute...
Execute 1 jobs...

[Sat Nov 28 07:00:22 2026]
localrule fit_vibo:
    input: data/processed/vibo/tiny/mcar20/rep0/responses.parquet
    output: results/vibo/tiny/mcar20/mfvi/blocks/block0
    log: logs/vibo/tiny/mcar20/mfvi/block0.log
    jobid: 72
    reason: Missing output files: results/vibo/tiny/mcar20/mfvi/blocks/block0
    wildcards: design=tiny, missing=mcar20, method=mfvi, block=0
    resources: tmpdir=/tmp, mem_mb=4000
Shell command: None
2026-11-28 07:00:41,696 INFO tiny/mcar20/mfvi reps 0-0: 1 fits
2026-11-28 07:01:23,634 WARNING results/vibo/tiny/mcar20/mfvi/rep0: PSIS k-hat 5.13 > 0.7: the approximation is far
2026-11-28 07:01:34,852 WARNING results/vibo/tiny/mcar20/mfvi/rep1: PSIS k-hat 4.40 > 0.7: the approximation is far
2026-11-28 07:01:35,000 WARNING something nobody expected
src/bayesirt/imputation/checks.py:42: ImputationModelWarning: imputation model check 5 (PSIS k-hat): k-hat >= 0.7
  checks = validate_imputation_model(model)
[Sat Nov 28 07:01:40 2026]
Finished jobid: 72 (Rule: fit_vibo)
1 of 2 steps (50%) done
Select jobs to execute...
[Sat Nov 28 07:01:41 2026]
Finished jobid: 0 (Rule: all)
2 of 2 steps (100%) done
Complete log(s): .snakemake/log/2026-11-28T065918.snakemake.log
"""


def condensed(text):
    out = []
    s = screen.Screen(out.append)
    for line in text.splitlines(keepends=True):
        s.feed(line)
    return out, s


def test_a_line_per_job_and_each_expected_warning_once():
    out, s = condensed(SNAKEMAKE)
    assert out[:3] == [
        "Using workflow specific profile workflow/profiles/local for setting default command line arguments.",
        "2 jobs to run; a line for each as it finishes (the full log: .snakemake/log/)",
        "warning (expected at demo scale: few persons per item: the fit's sds and interval coverage are not "
        "calibrated; more in docs/getting-started.md, section 'Warnings at demo scale'): "
        "results/vibo/tiny/mcar20/mfvi/rep0: PSIS k-hat 5.13 > 0.7: the approximation is far",
    ]
    # an unknown warning in full; the Python warning repeating a logged one is not shown again
    assert out[3] == "2026-11-28 07:01:35,000 WARNING something nobody expected"
    assert out[4:] == [
        "[07:01:40] 1/2 fit_vibo (design=tiny, missing=mcar20, method=mfvi, block=0)",
        "[07:01:41] 2/2 all",
        "Complete log(s): .snakemake/log/2026-11-28T065918.snakemake.log",
    ]
    assert not any("Shell command" in line or "INFO" in line for line in out)
    summary = s.summary(485.0, 0, ["results/reports/vibo.html"])
    assert "  2 x PSIS k-hat of a variational fit above 0.7 (the first shown above)" in summary
    # the Python warning is the copy of a job's WARNING line (bayesirt.imputation.checks): not counted
    assert not any("imputation" in line for line in summary)
    assert summary[-3:] == [
        "Done: 2 of 2 jobs run in 8 min 5 s.",
        "Reports (open in a browser): results/reports/vibo.html",
        "Tables and figures: results/<study>/; each job's log: logs/",
    ]


def test_a_run_of_another_config_does_not_call_its_warnings_expected():
    assert screen.demo_scale(["snakemake", "--cores", "all", "results/reports/vibo.html"])
    assert screen.demo_scale(["snakemake", "--configfile", "config/config.yaml"])
    assert not screen.demo_scale(["snakemake", "--cores", "all", "--configfile config/paper.yaml x.html"])
    assert not screen.demo_scale(["snakemake", "--configfile", "config/paper.yaml", "config/reproduction/vibo.yaml"])
    out = []
    s = screen.Screen(out.append, demo=False)
    for line in SNAKEMAKE.splitlines(keepends=True):
        s.feed(line)
    # the demo's reason (few persons per item) is not given for a paper-scale fit
    assert out[2].startswith("warning (a kind the demo config raises by its size; read the fit's record)")
    assert "few persons per item" not in out[2]
    assert "Warnings of kinds expected at demo scale only; read the fits' records" in s.summary(1.0, 0, [])[1]


def test_a_run_with_nothing_to_do_still_says_where_the_reports_are():
    nothing = "Nothing to be done (all requested files are present and up to date)."
    out, s = condensed(f"Building DAG of jobs...\n{nothing}\n")
    assert out == [nothing]
    assert s.summary(3.0, 0, ["results/reports/vibo.html"])[1:] == [
        "Done in 3 s: nothing to run, every output is up to date.",
        "Reports (open in a browser): results/reports/vibo.html",
        "Tables and figures: results/<study>/; each job's log: logs/",
    ]


def test_the_reports_named_are_those_the_run_wrote(tmp_path):
    for name, mtime in (("vibo.html", 1000.0), ("gibbs_2pno.html", 2000.0)):
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (mtime, mtime))
    # a run that started at 1500 s wrote gibbs_2pno's report; vibo's is an earlier run's
    assert screen.run_reports(tmp_path, 1500.0) == [str(tmp_path / "gibbs_2pno.html")]
    # a run that wrote none (nothing to do) names every report there
    assert screen.run_reports(tmp_path, 3000.0) == [str(tmp_path / n) for n in ("gibbs_2pno.html", "vibo.html")]


def test_errors_pass_through_and_the_status_is_the_command_s(tmp_path):
    out, _ = condensed("Error in rule fit_vibo:\n    message: boom\n    log: logs/x.log\n")
    assert out == ["Error in rule fit_vibo:", "    message: boom", "    log: logs/x.log"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "workflow" / "screen.py"), sys.executable, "-c", "print('hello'); exit(3)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3
    assert proc.stdout.splitlines()[0] == "hello" and "with status 3" in proc.stdout.splitlines()[-1]
