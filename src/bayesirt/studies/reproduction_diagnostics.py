"""A study's diagnostics for its reproduction page: fits run apart from the study's run, made and
written by ``tools/reproduction.py diagnose`` into ``docs/reproduction/data/<study>/diagnostics/``
(a table per part, ``<part>.csv``, and the facts of the runs that made them, ``diagnostics.json``),
and the bookkeeping the pages use to say which run made which table.

Each study names its parts in ``bayesirt.studies.<study>.diagnostics.PARTS`` (a table's name ->
the function of ``(config, n_data_sets)`` that makes it); a long diagnostic can be run a part, or
some designs, at a time, and the later run's tables are merged with the earlier's
(``write_diagnostics``).
"""

from __future__ import annotations

import datetime
import importlib
import json
import shutil
import time
from pathlib import Path

import pandas as pd

from bayesirt.studies.reproduction import DIAGNOSTICS, STUDIES


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def diagnostic_parts(study: str, parts=None) -> dict:
    """The diagnostic tables of ``study`` to make: its ``diagnostics.PARTS`` (name -> function of
    ``(config, n_data_sets)``), cut to ``parts`` where given (an unknown name is an error that
    lists the study's)."""
    if study not in STUDIES:
        raise ValueError(f"no study {study!r}; expected one of {', '.join(STUDIES)}")
    known = getattr(importlib.import_module(f"bayesirt.studies.{study}.diagnostics"), "PARTS", None)
    if not known:
        raise ValueError(f"{study} has no diagnostics")
    unknown = sorted(set(parts or ()) - set(known))
    if unknown:
        raise ValueError(f"{study} diagnostics: unknown part(s) {unknown}; the parts are {', '.join(known)}")
    return {name: known[name] for name in (parts or known)}


def fit_twice(fit_block, reps: list, base, with_steps, figures_of) -> tuple[list, list, int, float]:
    """The doubling check's refit of one block (``reproduction_claims.doubling_check`` reads it):
    ``fit_block(reps, base)`` at the run's settings, then again with twice the steps its longest fit
    took (``with_steps(base, steps)``, no early stop), each fit's figures by ``figures_of`` (a dict
    with ``steps``). Returns (figures at the run's settings, doubled, the doubled steps, seconds
    per fit of both blocks)."""
    t0 = time.perf_counter()
    first = [figures_of(out) for out in fit_block(reps, base)]
    steps = 2 * max(f["steps"] for f in first)
    second = [figures_of(out) for out in fit_block(reps, with_steps(base, steps))]
    return first, second, steps, round((time.perf_counter() - t0) / len(reps), 2)


def doubled_rows(labels: dict, first: list, second: list, figures, seconds: float) -> list[dict]:
    """A row per replication of a refitted block: ``labels``, ``rep``, its ``figures`` at the run's
    settings (every key of ``first``) and doubled (``<figure>_doubled``), and the ``seconds`` per fit."""
    return [
        {**labels, "rep": rep, **a, **{f"{c}_doubled": b[c] for c in figures}, "seconds": seconds}
        for rep, (a, b) in enumerate(zip(first, second, strict=True))
    ]


def diagnose(
    study: str, config: dict, n_data_sets: int, out: Path, facts: dict, parts=None, designs=None, methods=None
) -> Path:
    """Make a study's diagnostic tables (``diagnostic_parts``: all, or only ``parts``), ``config``
    the run's, validated with its defaults, and write them (``write_diagnostics``) to ``out``
    (``docs/reproduction/data/<study>/diagnostics``) with ``facts`` (command, commit, machine),
    the config's seed and the run's start, end and seconds. ``designs``: the designs ``config``
    was cut to (a rerun of some designs' rows); ``methods``: the methods it was cut to (a rerun
    of those methods' rows of those designs). Returns ``out``."""
    chosen = diagnostic_parts(study, parts)
    started, t0 = now(), time.perf_counter()
    tables = {name: make(config, n_data_sets) for name, make in chosen.items()}
    seconds = round(time.perf_counter() - t0, 1)
    run = {**facts, "seed": config["seed"], "started": started, "finished": now(), "seconds": seconds}
    return write_diagnostics(Path(out), tables, run, partial=bool(parts or designs), designs=designs, methods=methods)


def write_diagnostics(out: Path, tables: dict, run: dict, partial: bool = False, designs=None, methods=None) -> Path:
    """Write each table as ``out/<name>.csv`` and the ``run``'s facts as ``diagnostics.json``,
    under ``parts`` for each table (``part_facts``). A ``partial`` run (some parts, or some
    ``designs``) keeps the other tables already in ``out`` with the facts of the runs that made
    them; with ``designs``, a table that has a ``design`` column keeps its rows of the other
    designs too, and its facts list every run its rows come from (``runs``); with ``methods``
    as well, a table that has a ``method`` column keeps those designs' rows of the other methods.
    Returns ``out``."""
    old = out / f"{DIAGNOSTICS}.json"
    record = {**run, "parts": dict.fromkeys(tables, run)}
    if partial and old.is_file():
        kept = json.loads(old.read_text())
        made = kept.pop("parts", None) or {path.stem: kept for path in out.glob("*.csv")}
        for name, table in list(tables.items()):
            before = out / f"{name}.csv"
            if designs and name in made and before.is_file() and "design" in table:
                rows = pd.read_csv(before)
                if "design" in rows:
                    redone = rows.design.isin(designs)
                    by_method = bool(methods) and "method" in rows
                    if by_method:
                        redone &= rows.method.isin(methods)
                    tables[name] = pd.concat([rows[~redone], table], ignore_index=True)
                    # the earlier runs whose rows remain (a run of only the designs, and
                    # methods, redone is gone)
                    runs = [
                        r
                        for r in made[name].get("runs", [made[name]])
                        if not (
                            r.get("designs")
                            and set(r["designs"]) <= set(designs)
                            and (not by_method or (r.get("methods") and set(r["methods"]) <= set(methods)))
                        )
                    ]
                    record["parts"][name] = {"runs": [*runs, run]} if runs else run
        record = {**kept, "parts": {**made, **record["parts"]}}
        for name in tables:
            (out / f"{name}.csv").unlink(missing_ok=True)
    else:
        if out.exists():
            shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    old.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return out


def part_facts(facts: dict, name: str) -> dict:
    """The facts (command, commit, seconds, ...) of the diagnostics run that made table ``name``:
    a partial rerun (``diagnose``'s ``parts``) records its own beside the others'."""
    return {**{k: v for k, v in facts.items() if k != "parts"}, **facts.get("parts", {}).get(name, {})}


def made_by(facts: dict) -> str:
    """How a diagnostic table was made, for its section's opening sentence: the command in code,
    its commit and its minutes (each run's, for a table whose rows several runs made)."""
    if facts.get("runs"):
        return "; ".join(made_by(run) for run in facts["runs"])
    return (
        f"`{facts.get('command', '')}`, commit `{str(facts.get('commit', ''))[:7]}`, "
        f"{facts.get('seconds', 0) / 60:.0f} min"
    )
