"""The fits a config asks for in the vibo study: designs x missingness x methods x
replications. Standard library only: Snakemake imports this module when it parses the
workflow."""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.studies.design_conditions import DesignCondition, parse_missing, split_blocks

STUDY = "vibo"
METHODS = ("vibo_one_prior", "vibo_prior_per_missing", "vibo_seed", "vibo_average_seed", "mfvi", "mml", "nuts")
# VIBO's two treatments of a missing response (``inference.variational.vibo.VIBOSettings.missing``), with
# this project's settings: the study's comparison of the two (tables, figures)
VIBO_VARIANTS = {"vibo_one_prior": "one_prior", "vibo_prior_per_missing": "prior_per_missing"}
# seed 004's VIBO with the settings it states (``seed_methods``), and the averaging encoder it compares
# that with
SEED_METHODS = ("vibo_seed", "vibo_average_seed")


@dataclass(frozen=True)
class Condition(DesignCondition):
    """One fit of the study: design, missingness (e.g. ``mcar20``), method, replication."""

    study = STUDY


def study_config(config: dict) -> dict | None:
    """The ``studies.vibo`` block of a whole config (None where the config has none)."""
    return config["studies"].get(STUDY)


def designs(config: dict) -> dict:
    """The enabled designs of an enabled study, by name ({} where the study is off or absent).
    A design with ``enabled: false`` is left out: a config merged over another cannot delete a
    design, only switch it off."""
    study = study_config(config)
    if not (study and study["enabled"]):
        return {}
    return {name: d for name, d in study["designs"].items() if d.get("enabled", True)}


def has_truth(design: dict) -> bool:
    """A simulated design has a truth to recover; a design that names a ``dataset`` has none."""
    return "dataset" not in design


def design_methods(design: dict, methods) -> list[str]:
    """The study's methods for a design; NUTS only where the design asks for it."""
    return [m for m in methods if m != "nuts" or design["nuts"]]


def conditions(config: dict) -> list[Condition]:
    """Every fit the whole validated ``config`` asks of the study: designs x missingness x
    methods x replications (cheap: Snakemake calls it at parse time)."""
    study = study_config(config)
    out = []
    for name, design in designs(config).items():
        for missing in design["missing"]:
            parse_missing(missing)
            for method in design_methods(design, study["methods"]):
                out += [Condition(name, missing, method, rep) for rep in range(design["replications"])]
    return out


def condition_blocks(config: dict, cond: Condition) -> list[list[int]]:
    """The replications of ``cond``'s condition (every condition of a design has the same) in
    blocks of the design's ``block_size``, in order (one block when it exceeds them)."""
    design = config["studies"][STUDY]["designs"][cond.design]
    return split_blocks(range(design["replications"]), design["block_size"])
