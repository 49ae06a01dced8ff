"""Process-wide choices for XLA's CPU backend, made before JAX starts its backend.

XLA reads ``XLA_FLAGS`` once, when the first computation starts the backend, so these choices
belong to a whole process: a script or benchmark that wants one calls the function before it
computes anything.

``use_classic_cpu_runtime()``: jaxlib 0.6 runs CPU programs on XLA's "thunk" runtime by default.
For the data-augmentation Gibbs sampler (a ``lax.scan`` of sweeps, each a handful of elementwise
passes over the N x J cells with logs, square roots and ``erfc``) the earlier runtime, which
compiles a loop body into one native function, is 2.2-3x faster on this project's CPUs
(``gibbs_2pno_1k30``: 15.8 against 35 ns per response per sweep, one chain, 2 cores) and gives
the same draws bit for bit (``tests/unit/test_runtime.py``). It is not a global default: in
jaxlib 0.6.2 the earlier runtime crashed (segmentation fault) on the IWAE evaluation path and
was no faster for the training driver, so only processes that run nothing but the Gibbs
samplers ask for it (the Gibbs fitting jobs and benchmark cases). Set
``BAYESIRT_CPU_RUNTIME=default`` to keep the default runtime everywhere.

``use_fast_compilation()``: XLA's CPU backend optimizes with LLVM at level 2 by default. At
level 1 it compiles the Gibbs samplers' programs 1.6-3x faster (a sweep scanned 300 times:
3.3 s against 6.5 s; ``gibbs_2pno_1k30``, four chains: 6.4 s against 18.8 s; the IWAE training
program of ``iwae_grm_8k``: no faster) and runs programs up to 18% slower
(``gibbs_2pno_1k30``, one chain: 6.7 s against 5.7 s of sampling). Runs made of many programs
that compile for seconds and run for seconds finish sooner: the test config's workflow run,
6 min 14 s against 4 min 11 s; the default workflow, 600 s against 660 s. Long runs (the
paper's config, benchmarks timing a sampler) should keep level 2. Results move only in the
last bits of float32 (largest difference in 12,000 Gibbs draws: 1.2e-6), so a run is
reproduced bit for bit only under the same level, which each fit record's
``device.xla_flags`` shows.
"""

from __future__ import annotations

import logging
import os
from importlib import metadata

log = logging.getLogger(__name__)

CLASSIC_CPU_FLAG = "--xla_cpu_use_thunk_runtime=false"
OPTIMIZATION_LEVEL_FLAG = "--xla_backend_optimization_level"
# What `make run` and `make test` export (the Makefile cannot import this, so it repeats it)
FAST_COMPILATION_FLAGS = f"{OPTIMIZATION_LEVEL_FLAG}=1"
OPT_OUT = "BAYESIRT_CPU_RUNTIME"


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge  # no public API says whether the backend has started

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return True  # cannot tell: assume it has, and change nothing


def classic_cpu_runtime_available() -> bool:
    """The flag exists only in jaxlib before 0.7 (the earlier runtime was removed later; an
    unknown flag in ``XLA_FLAGS`` stops XLA)."""
    try:
        major, minor = (int(x) for x in metadata.version("jaxlib").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) < (0, 7)


def use_classic_cpu_runtime() -> bool:
    """Ask for XLA's earlier CPU runtime in this process (see the module docstring); returns
    whether the flag is in effect. Does nothing, and says why in the log, when the user opted
    out, when jaxlib has no such runtime, or when JAX's backend has already started."""
    flags = os.environ.get("XLA_FLAGS", "")
    if CLASSIC_CPU_FLAG in flags:
        return True
    if os.environ.get(OPT_OUT, "").lower() == "default":
        log.info("%s=default: keeping XLA's default CPU runtime", OPT_OUT)
        return False
    if not classic_cpu_runtime_available():
        return False
    if _backend_started():
        log.warning("JAX's backend already started; XLA's CPU runtime can no longer be changed in this process")
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {CLASSIC_CPU_FLAG}".strip()
    return True


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
