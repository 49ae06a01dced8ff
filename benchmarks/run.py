"""Benchmark runner.

    python benchmarks/run.py --list                  list the cases
    python benchmarks/run.py CASE [CASE ...]         run cases; each writes results/benchmarks/CASE.json
    python benchmarks/run.py --smoke CASE [...]      run cases at a tiny size (seconds each); each
                                                     writes results/benchmarks/smoke/CASE.json
    python benchmarks/run.py --smoke --all           every case at its tiny size (the tests run them all,
                                                     the longest few under the slow marker)
    python benchmarks/run.py CASE --set NAME=VALUE   run a case with one of its module-level size
                                                     constants changed (repeatable; the value is a
                                                     Python literal: 100, None, "x")

A case is a module ``benchmarks/cases/<name>.py`` with a docstring (its one-line summary is
what --list shows) and a function ``run() -> dict`` returning the case's own figures; it
should include ``sizes`` (a dict), ``wall_seconds`` and, where something compiles,
``compile_seconds`` and ``steps``. The runner adds the case name, library versions, CPU
count and the total time of the case, prints the result and writes it.

Smoke runs (``--smoke``) check that a case runs end to end and reports its figures, nothing
about speed. Every case declares a dict ``SMOKE`` of tiny values for its own module-level size
constants (persons, items, steps, chains, replications, designs); the runner sets them on the
module before calling ``run``, and calls ``run(smoke=True)`` where ``run`` takes ``smoke`` (for
what a constant cannot say: data that a fresh clone lacks, a dry run instead of a workflow).
A case without ``SMOKE`` fails the smoke run, and so does a ``SMOKE`` key the module does not
define. Smoke results carry ``"smoke": true`` and go to ``results/benchmarks/smoke/``, never
over a real result. With several cases, a failing case is reported and the others still run;
the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "cases"
OUT = ROOT / "results" / "benchmarks"
SMOKE_OUT = OUT / "smoke"


def available() -> dict[str, Path]:
    return {p.stem: p for p in sorted(CASES.glob("*.py")) if not p.stem.startswith("_")}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"benchmark_case_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary(path: Path) -> str:
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    # the first paragraph, which may be wrapped over several lines
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc.strip() else ""


def cpu_seconds() -> float:
    """User + system seconds of this process and its finished children."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def shrink(name: str, module) -> dict:
    """Set the case's ``SMOKE`` values on its module; returns them. Refuses a case without
    ``SMOKE`` and a key that is not one of the module's names (a typo would leave a full size)."""
    smoke = getattr(module, "SMOKE", None)
    if not isinstance(smoke, dict) or not smoke:
        raise RuntimeError(
            f"benchmark case {name} has no SMOKE dict of tiny sizes, so it cannot smoke-run; "
            f"add one (see benchmarks/run.py)"
        )
    unknown = [k for k in smoke if not hasattr(module, k)]
    if unknown:
        raise RuntimeError(f"benchmark case {name}: SMOKE names {', '.join(unknown)}, which the module does not define")
    for key, value in smoke.items():
        setattr(module, key, value)
    return smoke


def parse_settings(pairs: list[str]) -> dict:
    """``NAME=VALUE`` pairs of ``--set`` as a dict; a value is read as a Python literal (a number,
    None, a quoted string, a list), so that ``MAX_STEPS=None`` means None, not the word."""
    import ast

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise ValueError(f"--set {pair!r}: expected NAME=VALUE, e.g. REPLICATIONS=100")
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError) as err:
            raise ValueError(f"--set {pair!r}: the value is not a Python literal ({err})") from None
    return out


def apply_settings(name: str, module, settings: dict) -> None:
    """Set ``settings`` on the case's module, after its smoke sizes; a name the module does not
    define is refused (a typo would leave the case at its own size unnoticed)."""
    unknown = [k for k in settings if not hasattr(module, k)]
    if unknown:
        raise RuntimeError(f"benchmark case {name}: --set names {', '.join(unknown)}, which the module does not define")
    for key, value in settings.items():
        setattr(module, key, value)


def run_case(name: str, module, smoke: bool, settings: dict | None = None) -> dict:
    if smoke:
        shrink(name, module)
    apply_settings(name, module, settings or {})
    if smoke and "smoke" in inspect.signature(module.run).parameters:
        return module.run(smoke=True)
    return module.run()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (see --list)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="run at a tiny size into results/benchmarks/smoke/ (checks that cases run, not speed)",
    )
    parser.add_argument("--all", action="store_true", help="every case (with --smoke)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change one of the cases' module-level constants (repeatable), e.g. REPLICATIONS=100",
    )
    args = parser.parse_args(argv)
    try:
        settings = parse_settings(args.set)
    except ValueError as err:
        parser.error(str(err))
    cases = available()
    if args.all and not args.smoke:
        parser.error("--all runs every case at its smoke size only; name the cases to run at full size")
    if args.all and args.cases:
        parser.error("--all and case names together")
    if args.list or not (args.cases or args.all):
        for name, path in cases.items():
            print(f"{name:28s} {summary(path)}")
        return 0
    names = list(cases) if args.all else args.cases
    unknown = [c for c in names if c not in cases]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(cases)}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.path.insert(0, str(ROOT / "src"))
    from bayesirt import io
    from bayesirt.logs import quiet_libraries

    quiet_libraries()
    out = SMOKE_OUT if args.smoke else OUT
    out.mkdir(parents=True, exist_ok=True)
    if not args.smoke:
        modules = {name: load(name, cases[name]) for name in names}
        for name, module in modules.items():
            print(f"== {name}", flush=True)
            t0 = time.perf_counter()
            figures = run_case(name, module, smoke=False, settings=settings)
            result = {
                "case": name,
                **figures,
                **({"settings": settings} if settings else {}),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "case_seconds": time.perf_counter() - t0,
                "cpu_count": os.cpu_count(),
                "versions": io.library_versions(),
                "device": io.device_info(),
            }
            text = json.dumps(result, indent=2, default=io._json_default)
            print(text, flush=True)
            io.write_json(result, out / f"{name}.json")
            print(f"wrote {out.relative_to(ROOT) / (name + '.json')}", flush=True)
        return 0

    # smoke: every case runs (a failure is reported, the next case still runs); the exit status
    # says whether all of them did
    failed, seconds, cpu = {}, {}, {}
    for name in names:
        print(f"== {name} (smoke)", flush=True)
        (out / f"{name}.json").unlink(missing_ok=True)  # no stale result passes for this run's
        t0, c0 = time.perf_counter(), cpu_seconds()
        try:
            module = load(name, cases[name])
            figures = run_case(name, module, smoke=True, settings=settings)
        except Exception as err:
            traceback.print_exc()
            failed[name] = f"{type(err).__name__}: {err}"
            continue
        seconds[name], cpu[name] = time.perf_counter() - t0, cpu_seconds() - c0
        result = {
            "case": name,
            "smoke": True,
            **figures,
            **({"settings": settings} if settings else {}),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "case_seconds": seconds[name],
            "case_cpu_seconds": cpu[name],
            "smoke_sizes": {
                k: v if isinstance(v, (int, float, str, list, tuple)) else repr(v) for k, v in module.SMOKE.items()
            },
            "cpu_count": os.cpu_count(),
            "versions": io.library_versions(),
            "device": io.device_info(),
        }
        io.write_json(result, out / f"{name}.json")
        print(f"wrote {out.relative_to(ROOT) / (name + '.json')} ({seconds[name]:.1f} s)", flush=True)
    # CPU seconds (this process and its children) say more than wall seconds on a shared machine
    print(f"smoke run, seconds per case (wall, CPU); load average now {os.getloadavg()[0]:.1f}:", flush=True)
    for name in names:
        print(f"  {name:28s} {'FAILED' if name in failed else f'{seconds[name]:6.1f} {cpu[name]:6.1f}'}", flush=True)
    print(f"  {'total':28s} {sum(seconds.values()):6.1f} {sum(cpu.values()):6.1f}", flush=True)
    if failed:
        print(f"{len(failed)} of {len(names)} benchmark case(s) failed the smoke run:", file=sys.stderr)
        for name, why in failed.items():
            print(f"  {name}: {why.splitlines()[0] if why else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
