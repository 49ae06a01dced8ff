"""Wrap a benchmark result in the committed-snapshot form of ``docs/performance/*.json``.

    python tools/gpu/snapshot.py results/benchmarks/bulk_replications.json \
        --out "$OUT/gpu_bulk_replications.json"

A snapshot is ``{date, machine, command, lock, result}`` (what ``docs/hooks.py`` renders on the
Performance page). The date, the device and the library versions come from the result itself
(``benchmarks/run.py`` writes them), so a snapshot carried back from another machine says where
and when it was measured. ``docs/performance/gpu_bulk_replications.json`` is the snapshot that
``benchmarks/cases/paper_plan.py`` prices a GPU's steps from.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def machine(result: dict) -> str:
    device = result.get("device") or {}
    name = device.get("kind") or device.get("device", "unknown device")
    return f"{name} ({device.get('platform', '?')}), {result.get('cpu_count', '?')} CPU cores"


def snapshot(result: dict) -> dict:
    versions = result.get("versions") or {}
    jax, jaxlib, python = (versions.get(k, "?") for k in ("jax", "jaxlib", "python"))
    settings = result.get("settings") or {}
    command = ["python", "benchmarks/run.py", *(["--smoke"] if result.get("smoke") else []), result["case"]]
    command += [f"--set {k}={v!r}" for k, v in settings.items()]
    return {
        "date": result.get("date", "unknown"),
        "machine": machine(result),
        "command": " ".join(command) if settings else shlex.join(command),
        "lock": f"JAX {jax} (jaxlib {jaxlib}), Python {python}",
        "result": result,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result", type=Path, help="a benchmark result (results/benchmarks/CASE.json)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.result.is_file():
        sys.exit(f"snapshot: no result at {args.result}")
    args.out.write_text(json.dumps(snapshot(json.loads(args.result.read_text())), indent=1) + "\n")
    print(f"snapshot: {args.result} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
