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
            raise ConfigError(f"config key '{'.'.join(path + unknown[:1])}': unknown key"
                              + (f"; allowed here: {', '.join(allowed)}" if allowed else ""))
        raise ConfigError(f"config key '{'.'.join(path) or '(top level)'}': {error.message}")
    for study, spec in config.get("studies", {}).items():
        if "dataset" in spec and spec["dataset"] not in config["datasets"]:
            raise ConfigError(f"config key 'studies.{study}.dataset': '{spec['dataset']}' is not "
                              f"one of the data sets {sorted(config['datasets'])}")
    for name, design in config.get("studies", {}).get("amortized_ifa", {}).get("designs", {}).items():
        where = f"config key 'studies.amortized_ifa.designs.{name}"
        ds = design.get("dataset")
        if ds is not None and "preset" in design:
            raise ConfigError(f"{where}': give either preset (simulated data) or dataset (real data), not both")
        spec = config["datasets"].get(ds, {})
        held_out = spec.get("source") == "ipip_ffm" or (spec.get("source") == "table"
                                                        and spec.get("holdout_fraction", 0) > 0)
        if ds is not None and not held_out:
            raise ConfigError(f"{where}.dataset': '{ds}' is not a data set with held-out persons "
                              f"(source ipip_ffm, or table with holdout_fraction > 0) among {sorted(config['datasets'])}")
        if ds is not None and design.get("analysis", "confirmatory") == "confirmatory" and "n_factors" not in design:
            raise ConfigError(f"{where}.n_factors': a confirmatory fit of a real data set needs n_factors")
