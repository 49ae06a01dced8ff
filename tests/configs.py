"""The repository's configs as the workflow's jobs see them (validated, defaults filled in), for
tests that build a study's settings the way a job builds them."""

from __future__ import annotations

from pathlib import Path

from bayesirt.config import with_defaults

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(config: dict | str = "config.yaml") -> dict:
    """``config/<config>`` (a file name) or a config dict, validated with its defaults filled in."""
    return with_defaults(ROOT / "config" / config if isinstance(config, str) else config, SCHEMA)
