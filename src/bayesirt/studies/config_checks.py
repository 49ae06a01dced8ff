"""Checks of a study config that the JSON schema cannot express, run when the workflow is
parsed so that a value known to be invalid stops the run before any job, with a one-line
message naming the key.

The schema already checks types, ranges (replication counts, prior scales, fractions) and
unknown keys. Here: the shape of a VIBO design (n_items for a binary model, a preset for
the GRM; or a dataset of the config and no simulation keys), the missingness names
(``mcar150``, ``mar0``), missingness that a design's size cannot hold (injection keeps one
response of every person and item). Each check calls the parser the studies use at run time,
so the two cannot disagree. The study packages check their own keys (``<study>.settings.check``,
called by their rules files): rb_imputation, dcm_bbvi.

Call ``check(config)`` after the schema has filled in the defaults.
"""

from __future__ import annotations

from bayesirt.config import ConfigError
from bayesirt.data import simulate
from bayesirt.studies import vibo
from bayesirt.studies.design_conditions import max_hidden_cells, parse_missing


def check(config: dict) -> None:
    """Raise ConfigError naming the first offending key; return None when all is well."""
    studies = config.get("studies", {})
    if "vibo" in studies:
        _check_vibo(studies["vibo"], config.get("datasets", {}))
    if "gibbs_2pno" in studies:
        _check_gibbs_2pno(studies["gibbs_2pno"])


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


def _check_vibo(study: dict, datasets: dict) -> None:
    score = study.get("score_fraction", 0.15)
    heldout = study.get("heldout_fraction", 0.2)
    for name, design in study.get("designs", {}).items():
        key = f"studies.vibo.designs.{name}"
        if "dataset" in design:
            _check_vibo_dataset(key, design, datasets)
            for i, missing in enumerate(design.get("missing", [])):  # the size is known once the data are read
                _missing(f"{key}.missing.{i}", missing)
            continue
        _check_vibo_shape(key, design)
        n, j = vibo.design_shape(design)
        n_hold = max(int(round(heldout * n)), 1)  # as vibo.simulate_condition draws them
        for i, missing in enumerate(design.get("missing", [])):
            key = f"studies.vibo.designs.{name}.missing.{i}"
            _, rate = _missing(key, missing)
            # the scored cells are hidden on top of the design's missingness
            _fits(key, missing, rate + score * (1 - rate), n, j, f"the training data with score_fraction {score}")
            _fits(key, missing, rate, n_hold, j, f"the {n_hold} held-out persons")


# real data sets whose items are known to have more than two categories (a 2pl cannot fit them)
POLYTOMOUS_SOURCES = ("rwa", "ipip_ffm")


def _check_vibo_dataset(key: str, design: dict, datasets: dict) -> None:
    """A design that fits a prepared data set names one of the config's data sets and no
    simulation key; a 2pl design does not name a questionnaire with more than two categories."""
    name = design["dataset"]
    if name not in datasets:
        raise ConfigError(f"config key '{key}.dataset': '{name}' is not one of the data sets {sorted(datasets)}")
    for sim in ("preset", "n_persons", "n_items"):
        if sim in design:
            raise ConfigError(f"config key '{key}.{sim}': a design that names a dataset ('{name}') takes its "
                              f"persons and items from it; leave {sim} out (or leave dataset out to simulate)")
    model, source = design.get("model", "2pl"), datasets[name].get("source")
    if model == "2pl" and source in POLYTOMOUS_SOURCES:
        raise ConfigError(f"config key '{key}.model': the data set '{name}' (source {source}) has items with more "
                          f"than two categories; fit it with model: grm")


def _check_vibo_shape(key: str, design: dict) -> None:
    """A 2pl design gives n_items and no preset; a grm design a preset and no n_items."""
    model = design.get("model", "2pl")
    if model == "grm":
        if "preset" not in design:
            raise ConfigError(f"config key '{key}.preset': a grm design needs the questionnaire preset it is "
                              f"shaped like (one of {sorted(simulate.PRESETS)})")
        if "n_items" in design:
            j, c = vibo.grm_shape(design["preset"])
            raise ConfigError(f"config key '{key}.n_items': a grm design takes its items from its preset "
                              f"'{design['preset']}' ({j} items, {c} categories); leave n_items out")
    else:
        if "preset" in design:
            raise ConfigError(f"config key '{key}.preset': only a grm design has a preset; this design's model "
                              f"is {model} (give n_items, or model: grm)")
        if "n_items" not in design:
            raise ConfigError(f"config key '{key}.n_items': a {model} design needs its number of items")


def _check_gibbs_2pno(study: dict) -> None:
    for name, design in study.get("designs", {}).items():
        for i, missing in enumerate(design.get("missing", [])):
            key = f"studies.gibbs_2pno.designs.{name}.missing.{i}"
            _, rate = _missing(key, missing)
            if "dataset" not in design:  # a real data set's size is known only once it is read
                _fits(key, missing, rate, int(design["n_persons"]), int(design["n_items"]), "the design")

