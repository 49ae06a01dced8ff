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
