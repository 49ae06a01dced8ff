"""Logging set-up shared by workflow scripts, benchmarks and the command line."""

from __future__ import annotations

import logging
import os
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
    return logging.getLogger("bayesirt")
