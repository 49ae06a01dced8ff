"""A job's seconds (bayesirt.job_seconds): the union of JAX's compilation spans, and the line a
workflow script's log gets when it ends."""

import os
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
    script = """
import sys
import jax, jax.numpy as jnp
from bayesirt import logs
logs.to_file(sys.argv[1]).info("fitting")
jax.jit(lambda x: jnp.tanh(x) @ x.T)(jnp.ones((64, 64))).block_until_ready()
"""
    # a compilation cache of its own (the suite's may hold the program): empty, then filled
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    runs = []
    for name in ("cold.log", "warm.log"):
        run = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / name)], capture_output=True, text=True, check=True, env=env
        )
        assert "job seconds" not in run.stderr  # for the benchmark's eyes, not the screen's
        lines = (tmp_path / name).read_text().splitlines()
        assert "fitting" in lines[0] and job_seconds.parse(lines[0]) is None
        runs.append(job_seconds.parse(lines[-1]))
    cold, warm = runs
    assert 0 < cold["compile"] <= cold["script"] and 0 < cold["trace"] <= cold["script"]
    assert cold["cache_hits"] == 0 and warm["cache_hits"] >= 1  # the second run reads the first's program
