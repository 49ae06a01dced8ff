"""Two benchmark result folders side by side (e.g. the same cases under two lock files).

    python benchmarks/compare.py OLD_DIR NEW_DIR [--keys wall_seconds compile_seconds ...]

Prints a Markdown table with one row per case and figure: the old and the new value and their
ratio new / old, for every top-level number the two results share (or the keys named). Times
are lower-is-better; the ratio of any other figure is shown for reading, not judged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# top-level numbers that are settings or counts, not measurements
SKIP = {"cpu_count", "steps", "epochs", "learning_rate", "warmup_steps", "heldout_loglik_draws"}


def numbers(result: dict) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in result.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in SKIP
    }


def rows(old_dir: Path, new_dir: Path, keys: list[str] | None) -> list[tuple]:
    out = []
    for new_path in sorted(new_dir.glob("*.json")):
        old_path = old_dir / new_path.name
        if not old_path.exists():
            continue
        old, new = numbers(json.loads(old_path.read_text())), numbers(json.loads(new_path.read_text()))
        for key in keys or sorted(set(old) & set(new)):
            if key in old and key in new:
                ratio = new[key] / old[key] if old[key] else float("nan")
                out.append((new_path.stem, key, old[key], new[key], ratio))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--keys", nargs="*", help="only these top-level figures")
    args = parser.parse_args(argv)
    table = rows(args.old, args.new, args.keys)
    if not table:
        print(f"no case has results in both {args.old} and {args.new}", file=sys.stderr)
        return 1
    print("| case | figure | old | new | new / old |\n|---|---|---|---|---|")
    for case, key, old, new, ratio in table:
        print(f"| {case} | {key} | {old:.4g} | {new:.4g} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
