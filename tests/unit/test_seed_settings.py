"""Each study's seed methods run with the settings their seed states.

A study's table of seed settings, ``docs/reproduction/data/<study>/seed_settings.yaml``, lists
for every ``*_seed`` method the settings the seed document gives, each with the seed's section
and a short quote. A setting names where the pipeline keeps it: a dotted key of the validated
``config/paper.yaml`` (``config: studies.gibbs_2pno.gibbs_seed.expand``) or a module attribute
(``python: bayesirt.studies.dcm_bbvi.seed_methods:SEED_SWEEPS``, with dots after the colon for
attributes of attributes). The test reads the value from there and compares it with the table,
so a setting that drifts from the seed fails here, and a ``*_seed`` method the config schema
offers without a table entry fails too.
"""

from __future__ import annotations

import functools
import importlib
import math
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TABLES = sorted((ROOT / "docs" / "reproduction" / "data").glob("*/seed_settings.yaml"))
SEEDS = ROOT.parent / "shared" / "seeds"


@functools.cache
def paper_config() -> dict:
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


def lookup(entry: dict, config: dict):
    """The value the pipeline uses for one setting of the table."""
    if "config" in entry:
        value = config
        for part in entry["config"].split("."):
            if not isinstance(value, dict) or part not in value:
                raise KeyError(f"config key '{entry['config']}' is not in the validated paper config")
            value = value[part]
        return value
    module, _, attrs = entry["python"].partition(":")
    value = importlib.import_module(module)
    for part in attrs.split("."):
        value = getattr(value, part)
    return value


def same(found, expected) -> bool:
    if isinstance(expected, float) or isinstance(found, float):
        return isinstance(found, (int, float)) and math.isclose(float(found), float(expected), rel_tol=1e-9)
    if isinstance(expected, list):
        return isinstance(found, (list, tuple)) and len(found) == len(expected) and all(map(same, found, expected))
    return found == expected


def schema_seed_methods(study: str) -> set[str]:
    """The ``*_seed`` names the schema's method list of the study offers."""
    schema = yaml.safe_load(SCHEMA.read_text())
    block = schema["$defs"].get(study, {})
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum" and isinstance(value, list):
                    found.update(v for v in value if isinstance(v, str) and v.endswith("_seed"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(block)
    return found


def entries():
    for path in TABLES:
        table = yaml.safe_load(path.read_text())
        for method, spec in table["methods"].items():
            for entry in spec["settings"]:
                yield pytest.param(path.parent.name, method, entry, id=f"{path.parent.name}-{method}-{entry['name']}")


def test_tables_exist():
    assert TABLES, "no seed_settings.yaml under docs/reproduction/data/"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.parent.name)
def test_table_shape(path):
    table = yaml.safe_load(path.read_text())
    assert set(table) >= {"study", "seed", "methods"}
    assert table["study"] == path.parent.name
    if SEEDS.is_dir():  # the seed documents sit beside the checkout in development and CI
        assert (SEEDS / table["seed"]).is_file(), table["seed"]
    for method, spec in table["methods"].items():
        assert method.endswith("_seed"), method
        assert spec["settings"], method
        for entry in spec["settings"]:
            assert {"name", "value", "section", "quote"} <= set(entry), entry
            assert ("config" in entry) != ("python" in entry), entry
            assert entry["quote"].strip() and entry["section"].strip(), entry


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.parent.name)
def test_every_seed_method_has_a_table(path):
    table = yaml.safe_load(path.read_text())
    offered = schema_seed_methods(table["study"])
    assert offered <= set(table["methods"]), sorted(offered - set(table["methods"]))


@pytest.mark.parametrize(("study", "method", "entry"), list(entries()))
def test_setting_equals_seed(study, method, entry):
    found = lookup(entry, paper_config())
    assert same(found, entry["value"]), (
        f"{study}.{method}: {entry['name']} is {found!r}, the seed states {entry['value']!r} ({entry['section']})"
    )
