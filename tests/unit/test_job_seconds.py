"""A job's seconds (bayesirt.job_seconds): the union of JAX's compilation spans, and the line a
workflow script's log gets when it ends."""

import subprocess
import sys

import pytest

from bayesirt import job_seconds


@pytest.mark.parametrize(
    "spans, seconds",
    [
        ([], 0.0),
        ([(0.0, 1.0), (2.0, 3.5)], 2.5),  # apart: the sum
        ([(0.0, 4.0), (1.0, 2.0)], 4.0),  # a program traced inside another's trace: once
        ([(3.0, 5.0), (0.0, 4.0)], 5.0),  # overlapping, in any order
    ],
)
def test_spans_are_counted_once_where_they_overlap(spans, seconds):
    assert job_seconds.covered(spans) == pytest.approx(seconds)


def test_a_script_logs_its_seconds_and_its_compilation_when_it_ends(tmp_path):
    log = tmp_path / "job.log"
    script = f"""
import jax, jax.numpy as jnp
from bayesirt import logs
logs.to_file({str(log)!r}).info("fitting")
jax.jit(lambda x: jnp.tanh(x) @ x.T)(jnp.ones((64, 64))).block_until_ready()
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "job seconds" not in run.stderr  # for the benchmark's eyes, not the screen's
    lines = log.read_text().splitlines()
    figures = job_seconds.parse(lines[-1])
    assert "fitting" in lines[0] and figures is not None
    assert 0 < figures["compile"] <= figures["script"] and 0 < figures["trace"] <= figures["script"]
    assert figures["cache_hits"] == 0 and job_seconds.parse(lines[0]) is None
