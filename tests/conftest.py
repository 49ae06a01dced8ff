import logging
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite is bound by compilation (hundreds of small programs, each run for a second or
# less), which XLA's LLVM level 1 shortens (bayesirt.runtime), and `make test` level 0 further
# (its TEST_XLA_FLAGS: a level already in XLA_FLAGS is kept). Set before any test starts JAX;
# the workflow tests' Snakemake runs inherit it. Every test holds results to a tolerance, or
# compares runs made under the same flags.
from bayesirt import runtime  # noqa: E402  (imports no JAX)

runtime.use_fast_compilation()
logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)


@pytest.fixture
def x64():
    """Run a test in float64 (finite-difference checks need it)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test` runs two processes), every test that reads the session's
    run of the test config (tests/workflow/conftest.py: local_run) goes to one process, so that
    the run is made once; its group is named for xdist's loadgroup scheduling (which reads the
    mark after this hook)."""
    for item in items:
        if "local_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("test_config_run"))
