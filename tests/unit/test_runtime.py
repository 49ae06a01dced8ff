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


def test_fast_compilation_turns_the_fusion_emitters_off_on_a_checked_jaxlib_only(monkeypatch):
    monkeypatch.setattr(runtime, "_backend_started", lambda: False)
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.10.2")
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    assert runtime.use_fast_compilation() is True
    level = "--xla_backend_optimization_level=1"
    assert os.environ["XLA_FLAGS"].split() == ["--foo", level, runtime.FUSION_EMITTERS_OFF]
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")  # the user's choice stays
    assert runtime.use_fast_compilation() is True
    assert runtime.FUSION_EMITTERS_OFF not in os.environ["XLA_FLAGS"]
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.11.2")  # unchecked: an unknown flag stops XLA
    monkeypatch.setenv("XLA_FLAGS", "")
    assert runtime.use_fast_compilation() is True
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=1"


def test_the_makefile_exports_the_fast_compilation_flags():
    # the Makefile cannot import runtime, so it repeats FAST_COMPILATION_FLAGS for make run and make test
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert f"export XLA_FLAGS ?= {runtime.FAST_COMPILATION_FLAGS}\n" in makefile
    assert f"TEST_XLA_FLAGS ?= {runtime.FAST_COMPILATION_FLAGS}\n" in makefile


def test_fast_compilation_not_changed_once_the_backend_started(monkeypatch):
    jnp.zeros(1).block_until_ready()
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    assert runtime.use_fast_compilation() is False
    assert os.environ["XLA_FLAGS"] == "--foo"


def test_the_suite_runs_at_a_named_level():
    # tests/conftest.py asks for level 1 before JAX starts, unless XLA_FLAGS already names one
    # (the suite's time depends on it)
    assert runtime.OPTIMIZATION_LEVEL_FLAG in os.environ.get("XLA_FLAGS", "")


def test_reductions_kept_in_xla_for_the_locked_jaxlib():
    # importing bayesirt (tests/conftest.py does, before JAX starts) sets the flag on the jaxlib
    # versions it was checked on, and on no other
    from importlib import metadata

    in_effect = runtime.YNN_REDUCE_OFF in os.environ.get("XLA_FLAGS", "").split()
    assert in_effect == metadata.version("jaxlib").startswith(runtime.YNN_CHECKED)


def test_keep_reductions_leaves_the_users_choice_and_other_versions(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type=+dot")
    assert runtime.keep_reductions_in_xla() is False
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_experimental_ynn_fusion_type=+dot"
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.11.2")
    monkeypatch.setattr(runtime, "_backend_started", lambda: False)
    assert runtime.keep_reductions_in_xla() is False  # an unchecked jaxlib: an unknown flag would stop XLA
    assert os.environ["XLA_FLAGS"] == ""
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.10.2")
    assert runtime.keep_reductions_in_xla() is True
    assert os.environ["XLA_FLAGS"] == runtime.YNN_REDUCE_OFF


def test_keep_reductions_not_changed_once_the_backend_started(monkeypatch):
    jnp.zeros(1).block_until_ready()
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    assert runtime.keep_reductions_in_xla() is False
    assert os.environ["XLA_FLAGS"] == "--foo"


def test_library_reductions_replace_ours_and_survive_a_later_import(monkeypatch):
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.10.2")
    monkeypatch.setattr(runtime, "_backend_started", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", f"--foo {runtime.YNN_REDUCE_OFF}")
    assert runtime.use_library_reductions() is True
    assert os.environ["XLA_FLAGS"] == f"--foo {runtime.YNN_REDUCE_ON}"
    # a chain worker imports bayesirt again: the named default is the user's choice and stays
    assert runtime.keep_reductions_in_xla() is False
    assert os.environ["XLA_FLAGS"] == f"--foo {runtime.YNN_REDUCE_ON}"


def test_one_thread_when_the_process_is_told_to_use_one(monkeypatch):
    # Snakemake sets OMP_NUM_THREADS to a job's threads; a job given one core keeps XLA to its thread
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.10.2")
    monkeypatch.setattr(runtime, "_backend_started", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--foo")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert runtime.follow_thread_limit() is True
    assert os.environ["XLA_FLAGS"] == f"--foo {runtime.ONE_THREAD}"
    assert runtime.follow_thread_limit() is True  # a second import (a worker) adds nothing
    assert os.environ["XLA_FLAGS"] == f"--foo {runtime.ONE_THREAD}"
    for threads in ("2", ""):  # more cores, or no limit: XLA's pool stays
        monkeypatch.setenv("XLA_FLAGS", "")
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        assert runtime.follow_thread_limit() is False
        assert os.environ["XLA_FLAGS"] == ""


def test_one_thread_leaves_the_users_choice_other_versions_and_a_started_backend(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    assert runtime.follow_thread_limit() is False
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(runtime, "_backend_started", lambda: False)
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.11.2")  # unknown flags stop XLA
    assert runtime.follow_thread_limit() is False
    monkeypatch.setattr(runtime.metadata, "version", lambda name: "0.10.2")
    monkeypatch.setattr(runtime, "_backend_started", lambda: True)
    assert runtime.follow_thread_limit() is False
    assert os.environ["XLA_FLAGS"] == ""
