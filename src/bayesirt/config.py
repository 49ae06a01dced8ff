"""Config checks with one-line messages that name the offending key."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    pass


def check(config: dict, schema_path) -> None:
    """Raise ConfigError naming the first offending key (as a dotted path) and what was expected."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        # the deepest error of the first failing branch says most about what is wrong
        error = jsonschema.exceptions.best_match(errors)
        path = [str(p) for p in error.absolute_path]
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            unknown = sorted(set(error.instance) - set(allowed))
            raise ConfigError(
                f"config key '{'.'.join(path + unknown[:1])}': unknown key"
                + (f"; allowed here: {', '.join(allowed)}" if allowed else "")
            )
        raise ConfigError(f"config key '{'.'.join(path) or '(top level)'}': {error.message}")
    for study, spec in config.get("studies", {}).items():
        if "dataset" in spec and spec["dataset"] not in config["datasets"]:
            raise ConfigError(
                f"config key 'studies.{study}.dataset': '{spec['dataset']}' is not "
                f"one of the data sets {sorted(config['datasets'])}"
            )


def with_defaults(config: dict | str | Path, schema_path) -> dict:
    """A copy of ``config`` (a dict, or a YAML file's path) validated against the schema at
    ``schema_path`` with every default filled in, as Snakemake fills them for the workflow's
    rules (``snakemake.utils.validate(..., set_default=True)``): what a job sees.

    For callers outside the workflow (benchmarks, tests, tools), which build a study's settings
    (``studies.<name>.settings.Settings.from_config``) from it: the defaults live in the schema
    only.
    """
    import copy

    from snakemake.utils import validate

    config = yaml.safe_load(Path(config).read_text()) if isinstance(config, (str, Path)) else copy.deepcopy(config)
    validate(config, str(schema_path), set_default=True)
    return config
