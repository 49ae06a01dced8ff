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
"""

from __future__ import annotations

import logging
import os
from importlib import metadata

log = logging.getLogger(__name__)

CLASSIC_CPU_FLAG = "--xla_cpu_use_thunk_runtime=false"
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
