"""workflow/explain_failure.py: one line per failed job from Snakemake's log of the run."""

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("explain_failure", ROOT / "workflow" / "explain_failure.py")
explain_failure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(explain_failure)

RUN_LOG = """Building DAG of jobs...
Error in rule prepare_table:
    message: None
    jobid: 3
    log: logs/data/mine.prepare.log (check log file(s) for error details)
Error in rule fit_x:
    jobid: 4
    log: logs/fit.log, logs/fit2.log (check log file(s) for error details)
Error in rule report:
    jobid: 5
Error in rule prepare_table:
    message: None
    jobid: 3
    log: logs/data/mine.prepare.log (check log file(s) for error details)
WorkflowError:
At least one job did not complete successfully.
"""


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_one_line_per_failed_job(tmp_path):
    write(tmp_path / ".snakemake/log/2026-01-01T000000.snakemake.log", RUN_LOG)
    write(
        tmp_path / "logs/data/mine.prepare.log",
        "2026 INFO started\n2026 CRITICAL failed with DataFormatError: survey.csv: line 9\nTraceback (most recent "
        'call last):\n  File "x", line 1\nbayesirt.io.DataFormatError: survey.csv: line 9\n',
    )
    write(
        tmp_path / "logs/fit.log",
        'Traceback (most recent call last):\n  File "y", line 2, in f\n    g()\njax.errors.SomeError: out of memory\n',
    )
    assert explain_failure.explain(tmp_path) == [
        "error: DataFormatError: survey.csv: line 9 (rule prepare_table, log logs/data/mine.prepare.log)",
        "error: SomeError: out of memory (rule fit_x, log logs/fit.log)",
        "error: rule report failed; see Snakemake's message above",
    ]


def test_nothing_from_an_earlier_run(tmp_path):
    log = tmp_path / ".snakemake/log/old.snakemake.log"
    write(log, RUN_LOG)
    os.utime(log, (1000, 1000))
    assert explain_failure.explain(tmp_path, since=2000) == []
    assert explain_failure.explain(tmp_path / "nowhere") == []
