"""Where a workflow job's seconds go: its script's wall time, and the part of it JAX spent
tracing, lowering and compiling programs (all of them: fitting, evaluation, checks).

``logs.to_file`` (the first call of every workflow script) starts the count; when the script
ends, one line goes to the rule's log::

    job seconds {"script": 21.8, "compile": 9.7, "trace": 3.1, "cache_hits": 4}

``script`` runs from that first call to the end (the imports before it, Python's start and
Snakemake's own bookkeeping for the job are the rest of the job's wall time, which Snakemake's
benchmark file gives); ``compile`` is XLA's backend compilation (or, for a program found in the
persistent compilation cache, reading it), ``trace`` JAX's tracing and lowering to XLA, which a
program pays at each first call in a process, cached or not; ``cache_hits`` counts the programs
read from the persistent compilation cache. The default workflow's benchmark case
(``benchmarks/run.py default_workflow``) adds these lines up by study. JAX's own monitoring
events give the spans (``jax.monitoring``); a program traced inside another's trace lies inside
the outer span, so each kind counts the union of its spans, not their sum. Nothing is counted
for a script that never imports JAX.
"""

from __future__ import annotations

import atexit
import json
import logging
import sys
import time

PREFIX = "job seconds "
# JAX's event names (jax._src.dispatch and jax._src.compiler): stable since JAX 0.4
COMPILE_EVENTS = ("/jax/core/compile/backend_compile_duration",)
TRACE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration")
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"

_spans: dict[str, list[tuple[float, float]]] = {"compile": [], "trace": []}
_totals = {"cache_hits": 0}
_state = {"started": None, "listening": False}


def _on_span(event: str, start: float, end: float, **_) -> None:
    if event in COMPILE_EVENTS:
        _spans["compile"].append((start, end))
    elif event in TRACE_EVENTS:
        _spans["trace"].append((start, end))


def covered(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``(start, end)`` spans (nested or overlapping ones once)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _on_event(event: str, **_) -> None:
    if event == CACHE_HIT_EVENT:
        _totals["cache_hits"] += 1


def _listen() -> bool:
    """Register the listeners once, where JAX is imported (a script without JAX compiles nothing)."""
    if _state["listening"] or "jax" not in sys.modules:
        return _state["listening"]
    from jax import monitoring

    monitoring.register_event_time_span_listener(_on_span)
    monitoring.register_event_listener(_on_event)
    _state["listening"] = True
    return True


def start(log: logging.Logger) -> None:
    """Count from now, and write the job's line to the log files among ``log``'s handlers when
    the program ends (not to the screen: it is for the benchmark, not for the reader)."""
    if _state["started"] is not None:
        return
    _state["started"] = time.perf_counter()
    _listen()
    atexit.register(_write, log)


def _write(log: logging.Logger) -> None:
    record = log.makeRecord(log.name, logging.INFO, __file__, 0, "%s%s", (PREFIX, json.dumps(summary())), None)
    for handler in [*log.handlers, *logging.getLogger().handlers]:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def summary() -> dict:
    """The seconds so far: the script's, and JAX's compilation and tracing within them."""
    listening = _listen()  # a script that imported JAX after starting the count: from then on
    started = _state["started"]
    out = {"script": round(0.0 if started is None else time.perf_counter() - started, 2)}
    if listening:
        out |= {kind: round(covered(spans), 2) for kind, spans in _spans.items()}
        out["cache_hits"] = _totals["cache_hits"]
    return out


def parse(line: str) -> dict | None:
    """The figures of a ``job seconds`` log line, or None for any other line."""
    at = line.find(PREFIX + "{")  # the words alone, in another line, are not the line
    return json.loads(line[at + len(PREFIX) :]) if at >= 0 else None
