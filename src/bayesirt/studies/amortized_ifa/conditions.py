"""The fits a config asks for in the amortized_ifa study (plain Python: Snakemake calls these
at parse time)."""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.data.simulate_mgrm import PRESETS

STUDY = "amortized_ifa"
METHOD_NAMES = ("iwae", "iwavb")


@dataclass(frozen=True)
class FitSpec:
    """One fit of the study: design, method, number of factors P, importance samples R, replication."""

    design: str
    method: str
    n_factors: int
    n_importance: int
    rep: int

    @property
    def condition(self) -> str:
        return condition_name(self.method, self.n_factors, self.n_importance)


def condition_name(method: str, n_factors: int, n_importance: int) -> str:
    return f"{method}_P{n_factors}_R{n_importance}"


def design_fits(name: str, design: dict, methods=METHOD_NAMES) -> list[FitSpec]:
    """Every fit of a design (see the module docstring for what is fitted)."""
    specs = []
    reps = range(design["replications"])
    for method in methods:
        for r in design["importance_samples"]:
            if design["analysis"] == "confirmatory":
                p = design_factors(design)
                specs += [FitSpec(name, method, p, r, rep) for rep in reps]
            else:
                scree = sorted(set(design["factors"]) | {design["repeat_factors"]})
                specs += [FitSpec(name, method, p, r, 0) for p in scree]
                specs += [FitSpec(name, method, design["repeat_factors"], r, rep) for rep in reps if rep > 0]
    return specs


def design_factors(design: dict) -> int:
    """P of a confirmatory design: the preset's, or the number of scales of a real data set."""
    if "preset" in design:

        return int(PRESETS[design["preset"]]["n_factors"])
    return int(design["n_factors"])


def data_replication(design: dict, rep: int) -> int:
    """Confirmatory designs draw new data per replication; exploratory ones refit one data set."""
    return rep if design["analysis"] == "confirmatory" else 0


