"""Checks of a study config that the JSON schema cannot express, run when the workflow is
parsed so that a value known to be invalid stops the run before any job, with a one-line
message naming the key.

The schema already checks types, ranges (replication counts, prior scales, fractions) and
unknown keys. Here: the missingness names (``mcar150``, ``mar0``), missingness that a design's
size cannot hold (injection keeps one response of every person and item), DCM rates that do
not name a distinct whole-percent condition, and a simulated data set with nothing to impute.
Each check calls the parser the studies use at run time, so the two cannot disagree.

Call ``check(config)`` after the schema has filled in the defaults. The vibo study checks its
own block (``bayesirt.studies.vibo.settings.check``, called by its rules).
"""

from __future__ import annotations

from bayesirt.config import ConfigError
from bayesirt.studies import dcm_conditions
from bayesirt.studies.design_conditions import max_hidden_cells, parse_missing


def check(config: dict) -> None:
    """Raise ConfigError naming the first offending key; return None when all is well."""
    studies = config.get("studies", {})
    if "rb_imputation" in studies:
        _check_rb_imputation(studies["rb_imputation"], config.get("datasets", {}))
    if "dcm_bbvi" in studies:
        _check_dcm_bbvi(studies["dcm_bbvi"])


def _missing(key: str, value: str) -> tuple[str, float]:
    try:
        return parse_missing(value)
    except ValueError as e:
        raise ConfigError(f"config key '{key}': {e}") from None


def _fits(key: str, value, rate: float, n_persons: int, n_items: int, what: str) -> None:
    """The design's persons x items matrix can hold ``rate`` hidden cells (a necessary bound)."""
    need, most = round(rate * n_persons * n_items), max_hidden_cells(n_persons, n_items)
    if need > most:
        raise ConfigError(
            f"config key '{key}': {value!r} — hiding {need} of the {n_persons * n_items} cells of {what} "
            f"({n_persons} persons x {n_items} items) is impossible: one response of every person and item is "
            f"kept, so at most {most} ({100 * most / (n_persons * n_items):.0f}%) can be hidden")


def _check_rb_imputation(study: dict, datasets: dict) -> None:
    key = "studies.rb_imputation.missing"
    _, rate = _missing(key, study.get("missing", "mcar15"))
    source = datasets.get(study.get("dataset"), {}).get("source")
    if rate == 0 and source == "simulate" and study.get("enabled", True) and study.get("replications", 0) > 0:
        raise ConfigError(
            f"config key '{key}': '{study['missing']}' — the data set '{study['dataset']}' is simulated without "
            "missing responses, so a rate of 0% leaves nothing to impute; give a rate above 0, or "
            "replications: 0 for the complete-data reference fit only")




def _check_dcm_bbvi(study: dict) -> None:
    for name, design in study.get("designs", {}).items():
        spec = dcm_conditions.design_spec(name, design)
        labels = {}
        for i, rate in enumerate(design.get("missing", [0.0, 0.2])):
            key = f"studies.dcm_bbvi.designs.{name}.missing.{i}"
            label = dcm_conditions.missing_label(rate)
            # conditions are named and stored by whole percent (mcar20): another rate would be
            # fitted under a name that says something else
            if abs(100 * float(rate) - round(100 * float(rate))) > 1e-9:
                raise ConfigError(f"config key '{key}': {rate} — DCM missingness rates are whole percents "
                                  f"(the condition is named {label}); write e.g. {round(float(rate), 2)}")
            if label in labels:
                raise ConfigError(f"config key '{key}': {rate} repeats the condition {label} "
                                  f"(missing.{labels[label]})")
            labels[label] = i
            _fits(key, rate, float(rate), int(spec["n_persons"]), int(spec["n_items"]), "the design")
