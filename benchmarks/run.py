"""Benchmark runner.

    python benchmarks/run.py --list          list the cases
    python benchmarks/run.py CASE [CASE ...] run cases; each writes results/benchmarks/CASE.json

A case is a module ``benchmarks/cases/<name>.py`` with a docstring (its one-line summary is
what --list shows) and a function ``run() -> dict`` returning the case's own figures; it
should include ``sizes`` (a dict), ``wall_seconds`` and, where something compiles,
``compile_seconds`` and ``steps``. The runner adds the case name, library versions, CPU
count and the total time of the case, prints the result and writes it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "cases"
OUT = ROOT / "results" / "benchmarks"


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
    return doc.strip().splitlines()[0] if doc.strip() else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names (see --list)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    cases = available()
    if args.list or not args.cases:
        for name, path in cases.items():
            print(f"{name:28s} {summary(path)}")
        return 0
    unknown = [c for c in args.cases if c not in cases]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(cases)}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.path.insert(0, str(ROOT / "src"))
    from bayesirt import io
    from bayesirt.logs import quiet_libraries

    quiet_libraries()
    OUT.mkdir(parents=True, exist_ok=True)
    modules = {name: load(name, cases[name]) for name in args.cases}
    for name, module in modules.items():
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        figures = module.run()
        result = {"case": name, **figures, "case_seconds": time.perf_counter() - t0,
                  "cpu_count": os.cpu_count(), "versions": io.library_versions(),
                  "device": io.device_info()}
        text = json.dumps(result, indent=2, default=io._json_default)
        print(text, flush=True)
        io.write_json(result, OUT / f"{name}.json")
        print(f"wrote {OUT.relative_to(ROOT) / (name + '.json')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
