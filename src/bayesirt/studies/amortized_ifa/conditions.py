"""The fits a config asks for in the amortized_ifa study (standard library only: Snakemake calls
these when it parses the workflow).

Confirmatory designs fit every method and number R of importance samples to every replication
(a new data set each); exploratory designs fit replication 0 at every P of the scree and, at
``repeat_factors``, the further replications (new seeds, same data).
"""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt import block_plan
from bayesirt.data.mgrm_presets import PRESETS
from bayesirt.studies.design_conditions import split_blocks

STUDY = "amortized_ifa"
# the keys of a design that its simulated data depend on (``data.simulate_design`` reads these
# alone): the simulation job's rerun trigger, so that a change of methods, training or
# importance samples refits without resimulating
SIMULATION_KEYS = ("preset", "n_persons", "simulate")
METHODS = ("iwae", "iwavb")  # the default methods; the seed-as-written ones are iwae_seed, iwavb_seed
# the item parameters of a fit's estimates, scored against the truth, and the columns that key
# an estimate (here, beside the fits, so that the study's tables need not import the methods)
ITEM_PARAMETERS = ("loading", "intercept", "factor_corr")
KEYS = ["parameter", "item", "person", "factor", "factor2", "category"]


@dataclass(frozen=True)
class Condition:
    """One fit of the study: design, method, number of factors P, importance samples R, replication."""

    design: str
    method: str
    n_factors: int
    n_importance: int
    rep: int

    @property
    def condition(self) -> str:
        return condition_name(self.method, self.n_factors, self.n_importance)

    @property
    def folder(self) -> str:
        """The fit's name; its files lie in ``rep<r>/`` of its block's folder (``block_folder``)."""
        return f"results/{STUDY}/{self.design}/{self.condition}/rep{self.rep}"

    def block_folder(self, block: int) -> str:
        """The folder of block ``block`` of the fit's condition (the fits of a job, each in
        ``rep<r>/``)."""
        return f"results/{STUDY}/{self.design}/{self.condition}/blocks/block{block}"


def design_latent(design: dict) -> str:
    """The latent distribution a design simulates: its ``simulate`` override, else its preset's
    (``normal`` for a preset without one, and for a data set)."""
    return (design.get("simulate") or {}).get("latent") or PRESETS.get(design.get("preset"), {}).get("latent", "normal")


def simulated_designs(config: dict, latent: str | None = None) -> list[str]:
    """The validated config's confirmatory designs of simulated data (a truth with abilities),
    those of one ``latent`` distribution where given."""
    designs = config["studies"][STUDY]["designs"]
    return [
        name
        for name, d in designs.items()
        if d["analysis"] == "confirmatory" and "dataset" not in d and latent in (None, design_latent(d))
    ]


def condition_name(method: str, n_factors: int, n_importance: int) -> str:
    return f"{method}_P{n_factors}_R{n_importance}"


def conditions(config: dict) -> list[Condition]:
    """Every fit the validated config asks for, design by design (none when the study is absent
    or disabled), by the design's own ``methods`` where it names them, else the study's."""
    if STUDY not in config["studies"] or not config["studies"][STUDY]["enabled"]:
        return []
    study = config["studies"][STUDY]
    return [
        spec
        for name, design in study["designs"].items()
        for spec in design_fits(name, design, design.get("methods", study["methods"]))
    ]


def design_fits(name: str, design: dict, methods=METHODS) -> list[Condition]:
    """Every fit of a design (see the module docstring for what is fitted)."""
    specs = []
    reps = range(design["replications"])
    for method in methods:
        for r in design["importance_samples"]:
            if design["analysis"] == "confirmatory":
                p = design_factors(design)
                specs += [Condition(name, method, p, r, rep) for rep in reps]
            else:
                scree = sorted(set(design["factors"]) | {design["repeat_factors"]})
                specs += [Condition(name, method, p, r, 0) for p in scree]
                specs += [Condition(name, method, design["repeat_factors"], r, rep) for rep in reps if rep > 0]
    return specs


def design_factors(design: dict) -> int:
    """P of a confirmatory design: the preset's, or the number of scales of a real data set."""
    if "preset" in design:
        return int(PRESETS[design["preset"]]["n_factors"])
    return int(design["n_factors"])


def condition_blocks(config: dict, spec: Condition) -> list[list[int]]:
    """The replications of ``spec``'s condition (its design, method, P and R) in blocks of the
    design's ``block_size``, in order (one block when it exceeds them)."""
    design = config["studies"][STUDY]["designs"][spec.design]
    reps = sorted(
        f.rep
        for f in design_fits(spec.design, design, (spec.method,))
        if (f.n_factors, f.n_importance) == (spec.n_factors, spec.n_importance)
    )
    return split_blocks(reps, design["block_size"])


def run_folder(config: dict, spec: Condition) -> str:
    """The folder of one of the run's fits: ``rep<r>/`` in the folder of the block that holds it."""
    block = next(b for b, reps in enumerate(condition_blocks(config, spec)) if spec.rep in reps)
    return f"{spec.block_folder(block)}/rep{spec.rep}"


def block_processes(design: dict, n_reps: int) -> int:
    """Cores a block of ``n_reps`` replications can use: one per group of the design's
    ``fits_per_program`` (``"auto"``: a CPU's width, ``block_plan.cpu_program_width``)."""
    width = design["fits_per_program"]
    width = block_plan.cpu_program_width(n_reps) if width == "auto" else width
    return -(-n_reps // width)


def data_replication(design: dict, rep: int) -> int:
    """Confirmatory designs draw new data per replication; exploratory ones refit one data set."""
    return rep if design["analysis"] == "confirmatory" else 0
