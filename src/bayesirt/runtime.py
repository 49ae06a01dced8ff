"""Process-wide choices for XLA's CPU backend, made before JAX starts its backend.

XLA reads ``XLA_FLAGS`` once, when the first computation starts the backend, so these choices
belong to a whole process: a script or test session that wants one calls the function before
it computes anything.

``use_fast_compilation()``: XLA's CPU backend optimizes with LLVM at level 2 by default. At
level 1 it compiles programs faster and runs some of them slower (figures for the locked JAX
on the performance notes of the benchmark results). Runs made of many programs that compile
for seconds and run for seconds (the test suite, the default config's demo-scale workflow)
finish sooner at level 1; long runs (the paper's config, benchmarks timing a sampler) keep
level 2. Results move only in the last bits of float32, so a run is reproduced bit for bit
only under the same level, which each fit record's ``device.xla_flags`` shows.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

OPTIMIZATION_LEVEL_FLAG = "--xla_backend_optimization_level"
# What `make run` and `make test` export (the Makefile cannot import this, so it repeats it)
FAST_COMPILATION_FLAGS = f"{OPTIMIZATION_LEVEL_FLAG}=1"


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge  # no public API says whether the backend has started

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return True  # cannot tell: assume it has, and change nothing


def use_fast_compilation(level: int = 1) -> bool:
    """Ask XLA to optimize CPU programs at LLVM level ``level`` in this process and in the
    processes it starts (see the module docstring); returns whether that level is in effect. A
    level already named in ``XLA_FLAGS`` is left as it is (the user's choice wins)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if OPTIMIZATION_LEVEL_FLAG in flags:
        return f"{OPTIMIZATION_LEVEL_FLAG}={level}" in flags.split()
    if _backend_started():
        log.warning("JAX's backend already started; XLA's optimization level can no longer be changed in this process")
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {OPTIMIZATION_LEVEL_FLAG}={level}".strip()
    return True
