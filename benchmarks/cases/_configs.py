"""The default config as the workflow's jobs see it (validated, defaults filled in), for the cases
that build a study's settings as a job builds them (not a case itself: the leading underscore
hides it from benchmarks/run.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def validated() -> dict:
    """``config/config.yaml`` with the schema's defaults filled in (Snakemake's validation)."""
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    return config
