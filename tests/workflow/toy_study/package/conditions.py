"""The toy study's fits: every design x method x replication, in blocks of ``block_size``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from bayesirt.studies.design_conditions import DesignCondition, split_blocks

STUDY = "toy"
METHODS = ("mean", "median")


@dataclass(frozen=True)
class Condition(DesignCondition):
    study: ClassVar[str] = STUDY


def study_config(config: dict) -> dict | None:
    section = config["studies"].get(STUDY)
    return section if section and section["enabled"] else None


def conditions(config: dict) -> list[Condition]:
    section = study_config(config)
    if section is None:
        return []
    return [
        Condition(design, "mcar0", method, rep)
        for design in section["designs"]
        for method in METHODS
        for rep in range(section["replications"])
    ]


def condition_blocks(config: dict, fit: Condition) -> list[list[int]]:
    section = study_config(config)
    return split_blocks(range(section["replications"]), section["block_size"])
