import logging
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)


@pytest.fixture
def x64():
    """Run a test in float64 (finite-difference checks need it)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def pytest_collection_modifyitems(config, items):
    # Under pytest-xdist (`make test` runs two workers), every workflow test goes to one worker:
    # they share the session's run of config/test.yaml (tests/workflow/conftest.py), which a
    # second worker would otherwise make again. The unit and statistical tests, mostly
    # single-threaded compilation, run beside them on the other worker.
    workflow = ROOT / "tests" / "workflow"
    for item in items:
        if workflow in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("workflow"))
