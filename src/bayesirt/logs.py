"""Logging set-up shared by workflow scripts, benchmarks and the command line."""

from __future__ import annotations

import logging
import os
import sys
import traceback
import warnings

from bayesirt import job_seconds

# Environment switches of a failed job's report (the traceback always goes to the rule's log):
# BAYESIRT_VERBOSE=1         the traceback on stderr too (`make run VERBOSE=1` sets it);
# BAYESIRT_ERROR_SUMMARY=1   nothing on stderr: `make run` prints every failed job's error as
#                            one line when Snakemake stops (workflow/explain_failure.py), so a
#                            job repeating it would show it twice.
VERBOSE = "BAYESIRT_VERBOSE"
ERROR_SUMMARY = "BAYESIRT_ERROR_SUMMARY"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def error_line(exc: BaseException) -> str:
    """An exception as one line: ``<type>: <message>`` (its first line where it has several)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class _OneLineErrors(logging.Formatter):
    """stderr's formatter: a record carrying an exception shows its message without the
    traceback (the log file keeps it), unless BAYESIRT_VERBOSE is set."""

    def format(self, record):
        if record.exc_info and not _env_flag(VERBOSE):
            record = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None})
        return super().format(record)


def quiet_libraries() -> None:
    """Silence start-up chatter that says nothing about the run (no TPU here, ArviZ notices)."""
    logging.getLogger("jax._src.xla_bridge").setLevel(logging.ERROR)
    logging.getLogger("arviz").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def to_file(path) -> logging.Logger:
    """Send the package's log lines to ``path`` (a Snakemake rule's log) and to stderr; the
    script's seconds and JAX's compilation within them go to the log when it ends
    (``job_seconds``)."""
    quiet_libraries()
    fmt = "%(asctime)s %(levelname)s %(message)s"
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    file_handler, stderr_handler = logging.FileHandler(path, mode="w"), logging.StreamHandler()
    file_handler.setFormatter(logging.Formatter(fmt))
    stderr_handler.setFormatter(_OneLineErrors(fmt))
    stderr_handler.bayesirt_stderr = True
    for handler in (file_handler, stderr_handler):
        root.addHandler(handler)
    log = logging.getLogger("bayesirt")
    log_uncaught_exceptions(log)
    job_seconds.start(log)
    return log


def log_uncaught_exceptions(log: logging.Logger) -> None:
    """Write the traceback of an exception that ends the program through ``log``'s handlers,
    so that a failed job's log says why it failed: the rule's log file gets the traceback,
    stderr one line (``failed with <type>: <message>``; the traceback too with BAYESIRT_VERBOSE=1,
    nothing with BAYESIRT_ERROR_SUMMARY=1). Python still exits with status 1; Ctrl-C is left
    to the default handling."""
    if getattr(sys.excepthook, "bayesirt_logs", False):
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        quiet = _env_flag(ERROR_SUMMARY) and not _env_flag(VERBOSE)
        stderr = [h for h in logging.getLogger().handlers if getattr(h, "bayesirt_stderr", False)]
        if quiet:
            for handler in stderr:
                logging.getLogger().removeHandler(handler)
        if not logging.getLogger().handlers and not log.handlers:
            traceback.print_exception(exc_type, exc, tb)  # nowhere to log to: Python's own report
            return
        log.critical("failed with %s", error_line(exc), exc_info=(exc_type, exc, tb))

    hook.bayesirt_logs = True
    sys.excepthook = hook
