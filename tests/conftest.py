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
