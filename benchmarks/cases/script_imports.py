"""Start-up of the workflow's jobs: each workflow script's imports, timed in a fresh interpreter.

Before a job's first line runs, Python starts, Snakemake hands the job over and the script
imports what it uses; the default workflow's ``job_seconds_by_kind`` counts that as start-up, one
per job. This case runs the top-level imports of every script in ``workflow/scripts/`` (the
statements a job executes before its own code) in a fresh interpreter, ``ROUNDS`` times, and
reports each script's median seconds, their sum (``import_seconds_sum``), and which heavy
libraries the imports load (ArviZ, scipy.stats, numpyro, matplotlib's pyplot, JAX), the ones a
module should import where it uses them. To compare two trees, run the case in a checkout of
each, one after the other in one sitting (the figures move with the machine's load).
"""

from __future__ import annotations

import ast
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 3
SCRIPTS = None  # every script of workflow/scripts/; or a tuple of file names
SMOKE = {"ROUNDS": 1, "SCRIPTS": ("irt_tables.py",)}
HEAVY = ("arviz", "scipy.stats", "numpyro", "matplotlib.pyplot", "jax")
PROBE = """import sys, time, json
t = time.perf_counter()
{imports}
print(json.dumps([time.perf_counter() - t, [m for m in {heavy!r} if m in sys.modules]]))
"""


def imports_of(path: Path) -> str:
    """The script's top-level import statements, in order."""
    tree = ast.parse(path.read_text())
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def timed(code: str) -> tuple[float, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    seconds, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    return float(seconds), heavy


def run() -> dict:
    t0 = time.perf_counter()
    paths = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    if SCRIPTS is not None:
        paths = [p for p in paths if p.name in SCRIPTS]
    times: dict[str, list[float]] = {p.name: [] for p in paths}
    heavy: dict[str, list[str]] = {}
    for _ in range(ROUNDS):  # rounds outside scripts, so that a burst of load spreads over all of them
        for path in paths:
            seconds, loaded = timed(PROBE.format(imports=imports_of(path), heavy=HEAVY))
            times[path.name].append(seconds)
            heavy[path.name] = loaded
    medians = {name: round(statistics.median(v), 3) for name, v in times.items()}
    return {
        "sizes": {"scripts": len(paths), "rounds": ROUNDS},
        "import_seconds_sum": round(sum(medians.values()), 2),
        "load_average": round(os.getloadavg()[0], 2),
        "scripts": {name: {"seconds": medians[name], "loads": heavy[name]} for name in medians},
        "wall_seconds": round(time.perf_counter() - t0, 1),
    }
