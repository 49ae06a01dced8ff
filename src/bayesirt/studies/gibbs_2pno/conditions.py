"""The fits a config asks for in the gibbs_2pno study, and the names the study uses (standard
library only: Snakemake imports this module when it parses the workflow).

A 2PNO condition is (design, missingness, method, replication); its name is
``results/gibbs_2pno/<design>/<missing>/<method>/rep<r>``. The replications of one (design,
missingness, method) are fitted in blocks of the design's ``block_size`` (one job each,
``condition_blocks``), in ``results/gibbs_2pno/<design>/<missing>/<method>/blocks/block<b>``,
each fit's files in ``rep<r>/`` there.
The mixture example is one more fit, ``results/gibbs_2pno/mixture/fit``, made wherever the
study is on and ``mixture.enabled``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.studies.design_conditions import DesignCondition, parse_missing, split_blocks

STUDY = "gibbs_2pno"
# the 2PNO methods a design is fitted with (the config's ``methods``), and the mixture's sampler
METHODS = ("gibbs", "gibbs_omit", "gibbs_seed", "nuts")  # gibbs_seed: seed 001's plain sampler
MIXTURE_METHOD = "gibbs_mixture"
# the parameters of the 2PNO estimates, items' first
ITEM_PARAMETERS = ("discrimination", "difficulty")
PARAMETERS = ITEM_PARAMETERS + ("ability",)


class Condition(DesignCondition):
    """One 2PNO fit of the study."""

    study = STUDY


@dataclass(frozen=True)
class MixtureCondition:
    """The one fit of seed 001's two-component mixture example."""

    method: str = MIXTURE_METHOD

    @property
    def folder(self) -> str:
        return f"results/{STUDY}/mixture/fit"


def study_config(config: dict) -> dict | None:
    """The study's section of the validated config; None where the config leaves it out or
    switches it off."""
    study = config["studies"].get(STUDY)  # an optional section: no default, absent means off
    return study if study and study["enabled"] else None


def designs(config: dict) -> dict:
    """The designs of the study by name ({} where the study is off)."""
    study = study_config(config)
    return study["designs"] if study else {}


def mixture_on(config: dict) -> bool:
    study = study_config(config)
    return bool(study and study["mixture"]["enabled"])


def condition_methods(design: dict, missing: str, methods) -> list[str]:
    """The methods fitted to one condition: NUTS only where the design asks for it, the
    omitted-cells Gibbs sampler only where cells are missing (otherwise it is ``gibbs``)."""
    rate = parse_missing(missing)[1]
    # real data carry their own missing cells, so both treatments of them are fitted
    has_missing = rate > 0 or "dataset" in design
    return [m for m in methods if (m != "nuts" or design["nuts"]) and (m != "gibbs_omit" or has_missing)]


def design_conditions(config: dict, design: str | None = None) -> list[Condition]:
    """The 2PNO fits of the config (of one design if named): designs x missingness x methods x
    replications, in the config's order."""
    study = study_config(config)
    if not study:
        return []
    out = []
    for name, spec in study["designs"].items():
        if design is not None and name != design:
            continue
        for missing in spec["missing"]:
            for method in condition_methods(spec, missing, study["methods"]):
                out += [Condition(name, missing, method, rep) for rep in range(int(spec["replications"]))]
    return out


def conditions(config: dict) -> list[Condition | MixtureCondition]:
    """Every fit the whole validated config asks of the study: its 2PNO fits, then the mixture
    example's (plain Python, cheap: Snakemake calls it at parse time)."""
    return design_conditions(config) + ([MixtureCondition()] if mixture_on(config) else [])


def condition_blocks(config: dict, cond: Condition) -> list[list[int]]:
    """The replications of ``cond``'s design, missingness and method in blocks of the design's
    ``block_size``, in order (one block when it exceeds them); ``config``: the validated config."""
    design = config["studies"][STUDY]["designs"][cond.design]
    return split_blocks(range(int(design["replications"])), design["block_size"])
