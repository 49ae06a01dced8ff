"""Runs of config/test.yaml shared by the workflow test modules: the local run is made once per
session, and the SLURM test (test_slurm_cluster.py) compares its own run against it."""

import pytest

from .runs import run_test_config


@pytest.fixture(scope="session")
def compilation_cache(tmp_path_factory):
    # JAX's persistent compilation cache (a machine setting, not part of the workflow) shared
    # by every run of the test config: later runs reuse the first one's compiled programs, which
    # also checks that a cached program gives the same results bit for bit
    return {"JAX_COMPILATION_CACHE_DIR": str(tmp_path_factory.mktemp("jax_cache"))}


@pytest.fixture(scope="session")
def local_run(tmp_path_factory, compilation_cache):
    return run_test_config(tmp_path_factory.mktemp("run_a"), compilation_cache)
