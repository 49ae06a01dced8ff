import logging
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite is bound by compilation (hundreds of small programs, each run for a second or
# less), which XLA's LLVM level 1 shortens (bayesirt.runtime; a level already in XLA_FLAGS, such
# as `make test`'s TEST_XLA_FLAGS, is kept). Set before any test starts JAX;
# the workflow tests' Snakemake runs inherit it. Every test holds results to a tolerance, or
# compares runs made under the same flags.
from bayesirt import runtime  # noqa: E402  (imports no JAX)

runtime.use_fast_compilation()
logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)


@pytest.fixture(scope="session")
def schema():
    """``schema(name)``: a validator of the workflow's ``workflow/schemas/<name>.schema.yaml``,
    built once per session. ``jsonschema.validate`` checks the schema itself on every call
    (about 9 ms against 0.03 ms for a built validator's call), which over the thousands of rows
    of a run's estimates tables cost the schema tests more than a minute."""
    import functools

    import jsonschema
    import yaml

    @functools.cache
    def validator(name: str):
        spec = yaml.safe_load((ROOT / "workflow" / "schemas" / f"{name}.schema.yaml").read_text())
        cls = jsonschema.validators.validator_for(spec)
        cls.check_schema(spec)
        return cls(spec)

    return validator


@pytest.fixture
def x64():
    """Run a test in float64 (finite-difference checks need it)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


# Under pytest-xdist (`make test`: two processes, `--dist loadscope`), the tests of these files
# read the session's run of the test config (tests/workflow/conftest.py: local_run) and go to one
# process together, so that the run is made once; the long tests start first, so that no process
# ends with one of them alone.
TEST_CONFIG_RUN_FILES = (
    "tests/workflow/test_resume.py",
    "tests/workflow/test_slurm_cluster.py",
    "tests/workflow/test_workflow.py",
)
LONG_TESTS = (
    "tests/workflow/test_benchmarks.py::test_every_benchmark_case_smoke_runs",
    "tests/workflow/test_benchmarks.py::test_the_long_benchmark_cases_smoke_run",
    "tests/workflow/test_wheelhouse.py::test_install_from_a_wheelhouse_with_no_index",
)


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown to a run without xdist
def pytest_xdist_make_scope(nodeid: str) -> str | None:
    """``--dist loadscope`` groups tests by module; the files of the test-config run form one
    group, so that one process makes that run (a session fixture is per process)."""
    return "test-config-run" if _file(nodeid) in TEST_CONFIG_RUN_FILES else None


def pytest_collection_modifyitems(config, items):
    """The test-config run's tests first, then the long tests, then the rest in their order
    (xdist hands out the largest group first, then single tests in this order)."""
    for item in items:
        if "local_run" in item.fixturenames and _file(item.nodeid) not in TEST_CONFIG_RUN_FILES:
            raise pytest.UsageError(f"{item.nodeid} reads local_run: add its file to TEST_CONFIG_RUN_FILES")
    items.sort(
        key=lambda item: 0 if _file(item.nodeid) in TEST_CONFIG_RUN_FILES else 1 if item.nodeid in LONG_TESTS else 2
    )


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent when xdist is not loaded
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadscope` with one scope for the files of TEST_CONFIG_RUN_FILES and one per test
    elsewhere. xdist's own `loadgroup` cannot do it under pytest 9.2: it renames items by
    assigning `item._nodeid`, which pytest 9 no longer reads."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TestConfigRunScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "test_config_run" if _file(nodeid) in TEST_CONFIG_RUN_FILES else nodeid

    return TestConfigRunScheduling(config, log)
