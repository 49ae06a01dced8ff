"""XLA's optimization level for a whole process (bayesirt.runtime): when the setting applies."""

import os

import jax.numpy as jnp

from bayesirt import runtime


def test_fast_compilation_keeps_a_level_the_user_named(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    assert runtime.use_fast_compilation() is False
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=3"
    monkeypatch.setenv("XLA_FLAGS", "--foo --xla_backend_optimization_level=1")
    assert runtime.use_fast_compilation() is True


def test_fast_compilation_not_changed_once_the_backend_started(monkeypatch):
    jnp.zeros(1).block_until_ready()
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    assert runtime.use_fast_compilation() is False
    assert os.environ["XLA_FLAGS"] == "--foo"


def test_the_suite_runs_at_a_named_level():
    # tests/conftest.py asks for level 1 before JAX starts, unless XLA_FLAGS already names one
    # (the suite's time depends on it)
    assert runtime.OPTIMIZATION_LEVEL_FLAG in os.environ.get("XLA_FLAGS", "")
