"""The fits a config asks of study ``dcm_bbvi``: its designs, methods and the names of its
missingness conditions.

Snakemake imports this module when it parses the workflow, on every run and, on a cluster, in
every job: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.studies.design_conditions import parse_missing, split_blocks

# seed 002's notebook runs (``seed_methods``), named here so that the conditions load without JAX
SEED_METHODS = ("bbvi_seed", "bbvi_beta_truth_seed", "bbvi_pi_truth_seed")

STUDY = "dcm_bbvi"
# bbvi_seed*: seed 002's runs as its notebook writes them (``seed``)
METHODS = ("em", "bbvi", "bbvi_cv", "collapsed_vi", "nuts", "bbvi_seed", "bbvi_beta_truth_seed", "bbvi_pi_truth_seed")
MONOTONE_METHODS = ("em", "bbvi", "bbvi_cv", "collapsed_vi")  # the methods that honour ``monotone``
SEED_ACCURACY = 0.967  # the seed's reported overall classification accuracy

# Designs (the config's design names): ``seed`` (1,000 persons, 30 items, 2 attributes, the
# generator of the seeds README) and ``larger`` (2,000 persons, 20 items measuring 1-2 of 4
# attributes; intercepts U(-3, -0.1), main effects U(1, 5); interactions U(-min main effect, 2),
# so every item stays monotone in each attribute).
DESIGNS = {
    "seed": {
        "n_persons": 1000,
        "n_items": 30,
        "n_attributes": 2,
        "q_rows": "uniform",
        "intercept": (-1.15, -1.05),
        "main_single": (2.9, 3.1),
        "main_multi": (1.45, 1.55),
        "interaction": (0.45, 0.55),
    },
    "larger": {
        "n_persons": 2000,
        "n_items": 20,
        "n_attributes": 4,
        "q_rows": "one_or_two",
        "intercept": (-3.0, -0.1),
        "main_single": (1.0, 5.0),
        "main_multi": (1.0, 5.0),
        "interaction": (None, 2.0),
    },
}


@dataclass(frozen=True)
class Condition:
    design: str
    missing: str  # "mcar0", "mcar20": percent of cells hidden completely at random
    method: str
    rep: int

    @property
    def folder(self) -> str:
        """The fit's name; its files lie in ``rep<r>/`` of its block's folder (``block_folder``)."""
        return f"results/{STUDY}/{self.design}/{self.missing}/{self.method}/rep{self.rep}"

    def block_folder(self, block: int) -> str:
        """The folder of block ``block`` of the fit's condition (the fits of one job, each in
        ``rep<r>/``)."""
        return f"results/{STUDY}/{self.design}/{self.missing}/{self.method}/blocks/block{block}"

    @property
    def fields(self) -> dict:
        """The fit record's fields that name the condition."""
        return {
            "design": self.design,
            "condition": f"{self.missing}/{self.method}",
            "replication": self.rep,
            "dataset": f"{STUDY}_{self.design}_{self.missing}",
        }


def missing_rate(label: str) -> float:
    """The share of cells an ``mcar<percent>`` condition hides (``design_conditions.parse_missing``)."""
    kind, rate = parse_missing(label)
    if kind != "mcar":
        raise ValueError(f"dcm_bbvi: missingness {label!r} is not MCAR (mcar<percent>)")
    return rate


def conditions(config: dict) -> list[Condition]:
    """Every fit the validated config asks for. NUTS runs only on the designs listed under
    ``nuts_designs``, the seed's runs (``SEED_METHODS``) only on those under ``seed_method_designs``."""
    study = config["studies"].get(STUDY)  # a config may leave the study out
    if not study or not study["enabled"]:
        return []
    fits = []
    for name, design in study["designs"].items():
        for missing in design["missing"]:
            for rep in range(design["replications"]):
                for method in study["methods"]:
                    if method == "nuts" and name not in study["nuts_designs"]:
                        continue
                    if method in SEED_METHODS and name not in study["seed_method_designs"]:
                        continue
                    fits.append(Condition(name, missing, method, rep))
    return fits


def condition_blocks(config: dict, cond: Condition) -> list[list[int]]:
    """The replications of ``cond``'s condition (any missingness and method of a design: all fit
    the same replications) in blocks of the design's ``block_size``, in order (one block when it
    exceeds them)."""
    design = config["studies"][STUDY]["designs"][cond.design]
    return split_blocks(range(design["replications"]), design["block_size"])


def design_spec(name: str, design: dict) -> dict:
    """The generator of a named design (``DESIGNS``) with the config's sizes."""
    if name not in DESIGNS:
        raise ValueError(f"dcm_bbvi: design {name!r}; expected one of {', '.join(DESIGNS)}")
    spec = dict(DESIGNS[name])
    for key in ("n_persons", "n_items"):
        if key in design:  # no default: the design's own size
            spec[key] = design[key]
    return spec
