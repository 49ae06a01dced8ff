"""The repository's configs as the workflow's jobs see them (validated, defaults filled in), for the
cases that build a study's settings as a job builds them (not a case itself: the leading
underscore hides it from benchmarks/run.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def validated(config: dict | str = "config.yaml") -> dict:
    """``config/<config>`` (a file name) or a copy of a config dict, validated against the
    workflow's schema with every default filled in, as Snakemake fills them for the rules."""
    from snakemake.utils import validate  # the workflow's own (the library keeps clear of Snakemake)

    if isinstance(config, str):
        config = yaml.safe_load((ROOT / "config" / config).read_text())
    else:
        config = copy.deepcopy(config)
    validate(config, str(SCHEMA), set_default=True)
    return config
