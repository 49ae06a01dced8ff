"""Process-wide choices for XLA's CPU backend, made before JAX starts its backend.

XLA reads ``XLA_FLAGS`` once, when the first computation starts the backend, so these choices
belong to a whole process: a script or test session that wants one calls the function before
it computes anything.

``use_fast_compilation()``: XLA's CPU backend optimizes with LLVM at level 2 by default. At
level 1 it compiles programs faster and runs some of them slower (figures for the locked JAX
on the performance notes of the benchmark results). With it go XLA's older loop emitters in
place of its fusion emitters (``FUSION_EMITTERS_OFF``, on the jaxlib versions it was checked
on): they compile a third faster and run the fits about a quarter slower. Runs made of many programs that compile
for seconds and run for seconds (the test suite, the default config's demo-scale workflow)
finish sooner at level 1; long runs (the paper's config, benchmarks timing a sampler) keep
level 2. Results move only in the last bits of float32, so a run is reproduced bit for bit
only under the same level, which each fit record's ``device.xla_flags`` shows.

``keep_reductions_in_xla()`` (called when ``bayesirt`` is imported): jaxlib 0.10's CPU backend
hands reductions to the YNNPACK library by default, and for this project's reductions over a
leading axis (importance samples, imputation copies, Monte Carlo draws) that is several times
slower than XLA's own loops (the Performance page of the documentation has the figures). The
flag that keeps them in XLA is experimental and an unknown flag stops XLA, so it is set
only for the jaxlib versions it was checked on (``YNN_CHECKED``), only before JAX's backend
starts, and never when ``XLA_FLAGS`` already names it. Like the optimization level, it moves
results in the last float32 bits and is recorded in ``device.xla_flags``. The Gibbs samplers
are the exception: their sums over persons run faster in YNNPACK, so their processes call
``use_library_reductions()``.

``follow_thread_limit()`` (called when ``bayesirt`` is imported): XLA's CPU backend runs a
program's larger operations on a pool of threads, one per core, whatever else runs on the
machine. A workflow job is given its cores by Snakemake, which says how many in
``OMP_NUM_THREADS`` (the variable numpy's BLAS and OpenMP follow); where that is one, XLA's pool
would compete with the jobs beside it for the cores they were given (the Performance page has
what that cost the default config's run). So a process told to use one thread runs XLA's
operations on its own thread (``--xla_cpu_multi_thread_eigen=false``; not when ``XLA_FLAGS``
already names it, and only on the jaxlib versions it was checked on). A job given more cores (a
block in worker processes pinned to one core each) and a process outside the workflow keep
XLA's pool. Results move in the last float32 bits at most, and the flag is in
``device.xla_flags``.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib import metadata

log = logging.getLogger(__name__)

OPTIMIZATION_LEVEL_FLAG = "--xla_backend_optimization_level"
FUSION_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters"
FUSION_EMITTERS_OFF = f"{FUSION_EMITTERS_FLAG}=false"
FUSION_CHECKED = ("0.10.",)  # jaxlib version prefixes where the flag exists and was measured
# What `make run` and `make test` export (the Makefile cannot import this, so it repeats it)
FAST_COMPILATION_FLAGS = f"{OPTIMIZATION_LEVEL_FLAG}=1 {FUSION_EMITTERS_OFF}"
YNN_FUSION_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
YNN_REDUCE_OFF = f"{YNN_FUSION_FLAG}=-reduce"
YNN_REDUCE_ON = f"{YNN_FUSION_FLAG}=+reduce"  # XLA's default, named so that later imports keep it
YNN_CHECKED = ("0.10.",)  # jaxlib version prefixes where the flag exists and was measured
EIGEN_THREADS_FLAG = "--xla_cpu_multi_thread_eigen"
ONE_THREAD = f"{EIGEN_THREADS_FLAG}=false"
EIGEN_CHECKED = ("0.10.",)  # jaxlib version prefixes where the flag was checked and measured
THREAD_LIMIT = "OMP_NUM_THREADS"  # set by Snakemake to a job's threads (and by schedulers, users)


def _backend_started() -> bool:
    if "jax" not in sys.modules:
        return False  # nothing can have started it (and importing JAX here would cost a second)
    try:
        from jax._src import xla_bridge  # no public API says whether the backend has started

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return True  # cannot tell: assume it has, and change nothing


def use_fast_compilation(level: int = 1) -> bool:
    """Ask XLA to optimize CPU programs at LLVM level ``level``, with its older loop emitters on
    a checked jaxlib, in this process and in the processes it starts (see the module
    docstring); returns whether that level is in effect. A level already named in ``XLA_FLAGS``
    is left as it is, and so are the emitters (the user's choice wins)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if OPTIMIZATION_LEVEL_FLAG in flags:
        return f"{OPTIMIZATION_LEVEL_FLAG}={level}" in flags.split()
    if _backend_started():
        log.warning("JAX's backend already started; XLA's optimization level can no longer be changed in this process")
        return False
    flags = f"{flags} {OPTIMIZATION_LEVEL_FLAG}={level}"
    if FUSION_EMITTERS_FLAG not in flags and _flag_settable(FUSION_CHECKED):
        flags = f"{flags} {FUSION_EMITTERS_OFF}"
    os.environ["XLA_FLAGS"] = flags.strip()
    return True


def _flag_settable(checked: tuple[str, ...]) -> bool:
    """An experimental flag may be set: a jaxlib of ``checked`` (an unknown flag stops XLA),
    backend not started."""
    try:
        version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return False
    return version.startswith(checked) and not _backend_started()


def _ynn_flag_settable() -> bool:
    return _flag_settable(YNN_CHECKED)


def keep_reductions_in_xla() -> bool:
    """Keep reductions in XLA's own code rather than YNNPACK (see the module docstring); returns
    whether the flag is in effect. Does nothing on other jaxlib versions, once the backend has
    started, or when ``XLA_FLAGS`` already names the YNN fusion types (the user's choice wins)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if YNN_FUSION_FLAG in flags:
        return YNN_REDUCE_OFF in flags.split()
    if not _ynn_flag_settable():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {YNN_REDUCE_OFF}".strip()
    return True


def use_library_reductions() -> bool:
    """Leave reductions to YNNPACK, XLA's default, in this process and the processes it starts
    (the Gibbs samplers' choice; see the module docstring). Names the default in ``XLA_FLAGS``
    so that importing bayesirt again (in a chain worker) keeps it. Returns whether it is in
    effect; does nothing on unchecked jaxlib versions or once the backend has started."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    if YNN_REDUCE_ON in flags:
        return True
    if not _ynn_flag_settable():
        return False
    kept = [f for f in flags if not f.startswith(YNN_FUSION_FLAG)]
    os.environ["XLA_FLAGS"] = " ".join([*kept, YNN_REDUCE_ON])
    return True


def follow_thread_limit() -> bool:
    """Run XLA's CPU operations on the calling thread when ``OMP_NUM_THREADS`` is 1 (see the
    module docstring); returns whether that is in effect. Leaves ``XLA_FLAGS`` as it is when it
    already names the setting (the user's choice wins), on unchecked jaxlib versions, and once
    the backend has started."""
    flags = os.environ.get("XLA_FLAGS", "")
    if EIGEN_THREADS_FLAG in flags:
        return ONE_THREAD in flags.split()
    if os.environ.get(THREAD_LIMIT, "").strip() != "1" or not _flag_settable(EIGEN_CHECKED):
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {ONE_THREAD}".strip()
    return True
