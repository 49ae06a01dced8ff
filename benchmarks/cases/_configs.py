"""The repository's configs as the workflow's jobs see them (validated, defaults filled in), for the
cases that build a study's settings as a job builds them (not a case itself: the leading
underscore hides it from benchmarks/run.py)."""

from __future__ import annotations

from pathlib import Path

from bayesirt.config import with_defaults

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(config: dict | str = "config.yaml") -> dict:
    """``config/<config>`` (a file name) or a config dict, validated with its defaults filled in."""
    return with_defaults(ROOT / "config" / config if isinstance(config, str) else config, SCHEMA)
