"""A failed workflow script (bayesirt.logs.to_file): the rule's log keeps the traceback, stderr
gets one line (the traceback with BAYESIRT_VERBOSE=1, nothing with BAYESIRT_ERROR_SUMMARY=1)."""

import os
import subprocess
import sys

import pytest

from bayesirt.logs import error_line

SCRIPT = """
import sys
from bayesirt import logs
log = logs.to_file(sys.argv[1])
log.info("started")
raise ValueError("survey.csv: line 9, column 'Q1': '6'\\nsecond line")
"""


def failing_script(tmp_path, **env):
    log = tmp_path / "job.log"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)],
        capture_output=True,
        text=True,
        env={
            k: v
            for k, v in {**os.environ, **env}.items()
            if k not in ("BAYESIRT_VERBOSE", "BAYESIRT_ERROR_SUMMARY") or k in env
        },
    )
    assert proc.returncode == 1
    return proc.stderr, log.read_text()


def test_stderr_gets_one_line_and_the_log_the_traceback(tmp_path):
    stderr, log = failing_script(tmp_path)
    lines = [line for line in stderr.splitlines() if "CRITICAL" in line or "Traceback" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "CRITICAL failed with ValueError: survey.csv: line 9, column 'Q1': '6'"
    )
    assert "Traceback" not in stderr and stderr.count("survey.csv") == 1
    assert "Traceback (most recent call last)" in log and "second line" in log
    lines = log.splitlines()  # the traceback, then the job's seconds (bayesirt.job_seconds)
    assert "ValueError: survey.csv: line 9" in lines[-3] and lines[-1].split(" INFO ")[1].startswith("job seconds")


@pytest.mark.parametrize(
    "env, traceback, message",
    [
        ({"BAYESIRT_VERBOSE": "1"}, True, True),
        ({"BAYESIRT_ERROR_SUMMARY": "1"}, False, False),
        ({"BAYESIRT_VERBOSE": "0"}, False, True),
    ],
)
def test_switches(tmp_path, env, traceback, message):
    stderr, log = failing_script(tmp_path, **env)
    assert ("Traceback (most recent call last)" in stderr) == traceback, stderr
    assert ("survey.csv" in stderr) == message, stderr
    assert "Traceback (most recent call last)" in log


def test_error_line():
    assert error_line(KeyError("x")) == "KeyError: 'x'"
    assert error_line(ValueError("a\nb")) == "ValueError: a"
    assert error_line(RuntimeError()) == "RuntimeError"
