"""The parse-time part of study ``dcm_bbvi`` (bayesirt.studies.dcm_bbvi): its designs, the fits a
config asks for, and the names of their conditions. Snakemake reads these when it parses the
workflow, on every run and, on a cluster, in every job, so this module imports nothing heavy
(no JAX): the fitting side stays in ``dcm_bbvi``, which re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass

STUDY = "dcm_bbvi"
METHODS = ("em", "bbvi", "bbvi_cv", "collapsed_vi", "nuts")
MONOTONE_METHODS = ("em", "bbvi", "bbvi_cv", "collapsed_vi")  # the methods that honour ``monotone``
SEED_ACCURACY = 0.967  # the seed's reported overall classification accuracy

DESIGNS = {
    "seed": {"n_persons": 1000, "n_items": 30, "n_attributes": 2, "q_rows": "uniform",
             "intercept": (-1.15, -1.05), "main_single": (2.9, 3.1), "main_multi": (1.45, 1.55),
             "interaction": (0.45, 0.55)},
    "larger": {"n_persons": 2000, "n_items": 20, "n_attributes": 4, "q_rows": "one_or_two",
               "intercept": (-3.0, -0.1), "main_single": (1.0, 5.0), "main_multi": (1.0, 5.0),
               "interaction": (None, 2.0)},
}


@dataclass(frozen=True)
class FitSpec:
    design: str
    missing: str  # "mcar0", "mcar20": percent of cells hidden completely at random
    method: str
    rep: int

    @property
    def folder(self) -> str:
        return f"results/{STUDY}/{self.design}/{self.missing}/{self.method}/rep{self.rep}"


def missing_label(rate: float) -> str:
    return f"mcar{round(100 * float(rate)):d}"


def missing_rate(label: str) -> float:
    if not label.startswith("mcar"):
        raise ValueError(f"dcm_bbvi: missingness {label!r} is not of the form mcar<percent>")
    return float(label[4:]) / 100


def conditions(study_config: dict) -> list[FitSpec]:
    """Every fit a config asks for (cheap: called when the workflow is parsed). NUTS runs only
    on the designs listed under ``nuts_designs``."""
    if not study_config or not study_config.get("enabled", True):
        return []
    fits = []
    for name, design in study_config.get("designs", {}).items():
        for rate in design.get("missing", [0.0, 0.2]):
            for rep in range(design.get("replications", 1)):
                for method in study_config.get("methods", METHODS[:4]):
                    if method == "nuts" and name not in study_config.get("nuts_designs", ["seed"]):
                        continue
                    fits.append(FitSpec(name, missing_label(rate), method, rep))
    return fits


def design_spec(name: str, design: dict) -> dict:
    """The generator of a named design (``DESIGNS``) with the config's sizes."""
    generator = design.get("generator", name)
    if generator not in DESIGNS:
        raise ValueError(f"dcm_bbvi: design {name!r} has generator {generator!r}; expected one of {', '.join(DESIGNS)}")
    spec = dict(DESIGNS[generator])
    for key in ("n_persons", "n_items"):
        if key in design:
            spec[key] = design[key]
    return spec
