"""Logging set-up shared by workflow scripts, benchmarks and the command line."""

from __future__ import annotations

import logging
import os
import sys
import warnings


def quiet_libraries() -> None:
    """Silence start-up chatter that says nothing about the run (no TPU here, ArviZ notices)."""
    logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)
    logging.getLogger("arviz").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def to_file(path) -> logging.Logger:
    """Send the package's log lines to ``path`` (a Snakemake rule's log) and to stderr."""
    quiet_libraries()
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in (logging.FileHandler(path, mode="w"), logging.StreamHandler()):
        handler.setFormatter(fmt)
        root.addHandler(handler)
    log = logging.getLogger("bayesirt")
    log_uncaught_exceptions(log)
    return log


def log_uncaught_exceptions(log: logging.Logger) -> None:
    """Write the traceback of an exception that ends the program through ``log``'s handlers
    (a rule's log file and stderr), so that a failed job's log says why it failed. Python still
    exits with status 1; Ctrl-C is left to the default handling."""
    if getattr(sys.excepthook, "bayesirt_logs", False):
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        log.critical("failed with %s: %s", exc_type.__name__, exc, exc_info=(exc_type, exc, tb))

    hook.bayesirt_logs = True
    sys.excepthook = hook
