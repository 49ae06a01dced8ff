"""The vibo study's config: the checks across keys that the schema cannot express (``check``,
run when the workflow is parsed), the shape of a design, and the settings of its data and fits,
built once from the validated config (``Settings``). Light enough for parse time: no JAX
(``data.simulate`` brings numpy and pandas for its presets, nothing more).

Defaults live in ``workflow/schemas/config.schema.yaml`` only: after validation every key with
a default is present, and is read plainly here."""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.config import ConfigError
from bayesirt.data.grm_presets import PRESETS
from bayesirt.studies.design_checks import check_hidden_cells, checked_missing
from bayesirt.studies.vibo.conditions import STUDY, study_config

MODELS = ("2pl", "grm")
# real data sets whose items are known to have more than two categories (a 2pl cannot fit them)
POLYTOMOUS_SOURCES = ("rwa", "ipip_ffm")


# ------------------------------------------------------------------------------ design shape


def design_model(design: dict) -> str:
    model = design["model"]
    if model not in MODELS:
        raise ValueError(f"vibo model '{model}' is not known; expected one of {list(MODELS)}")
    return model


def grm_shape(preset: str) -> tuple[int, int]:
    """(items, categories) of a GRM design's questionnaire preset (``data.grm_presets.PRESETS``)."""
    if preset not in PRESETS:
        raise ValueError(f"simulation preset '{preset}' is not known; expected one of {sorted(PRESETS)}")
    p = PRESETS[preset]
    return int(sum(p["items_per_scale"])), int(p["n_categories"])


def design_shape(design: dict) -> tuple[int, int]:
    """(training persons, items) of a design: a binary design gives ``n_items``, a GRM design
    takes its items from its ``preset``."""
    if design_model(design) == "grm":
        return int(design["n_persons"]), grm_shape(design["preset"])[0]
    return int(design["n_persons"]), int(design["n_items"])


def heldout_persons(n_persons: int, heldout_fraction: float) -> int:
    """The new persons simulated on top of a simulated design's ``n_persons``."""
    return max(int(round(heldout_fraction * n_persons)), 1)


# ---------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """What the study's data and fits read from its config block (validated, defaults filled),
    built once (``from_config``, or ``from_study`` from the block itself, as the workflow's fit
    rule passes it). The method blocks are kept as the config gives them: a fit record writes
    its method's block as its settings."""

    designs: dict  # name -> design (model, n_persons, n_items or preset, or dataset, ...)
    score_fraction: float
    heldout_fraction: float
    eval_samples: int  # importance samples per new person (held-out log-likelihood)
    posterior_draws: int  # joint draws for the posterior predictive of the scored cells
    priors: dict  # models.irt2pl.ItemPriors
    training: dict  # inference.execution.training.TrainSettings, but the learning rate (a method's own)
    vibo: dict  # hidden, learning_rate
    mfvi: dict  # learning_rate
    nuts: dict  # n_chains, n_warmup, n_samples

    @classmethod
    def from_study(cls, study: dict) -> Settings:
        return cls(
            designs=study["designs"],
            score_fraction=float(study["score_fraction"]),
            heldout_fraction=float(study["heldout_fraction"]),
            eval_samples=int(study["eval_samples"]),
            posterior_draws=int(study["posterior_draws"]),
            priors=study["priors"],
            training=study["training"],
            vibo=study["vibo"],
            mfvi=study["mfvi"],
            nuts=study["nuts"],
        )

    @classmethod
    def from_config(cls, config: dict) -> Settings:
        return cls.from_study(config["studies"][STUDY])

    def design(self, name: str) -> dict:
        return self.designs[name]

    def block_size(self, name: str) -> int:
        """Replications of a condition of design ``name`` fitted together in one job (science
        config: a VIBO or mean-field VI fit's record keeps its block's size)."""
        return int(self.designs[name]["block_size"])


# ------------------------------------------------------------------------------------ checks


def check(config: dict) -> None:
    """Raise ConfigError naming the first offending key of the study's block; None when all is
    well (or the config has no such block). Call it after the schema has filled in the defaults.

    Checked: the shape of a design (n_items for a binary model, a preset for the GRM; or a data
    set of the config and no simulation keys), its missingness names (``mcar150``, ``mar0``) and
    missingness that the design's size cannot hold (injection keeps one response of every person
    and item; the scored cells are hidden on top)."""
    study = study_config(config)
    if study is None:
        return
    datasets = config["datasets"]
    score, heldout = study["score_fraction"], study["heldout_fraction"]
    for name, design in study["designs"].items():
        key = f"studies.vibo.designs.{name}"
        if "dataset" in design:
            _check_dataset(key, design, datasets)
            for i, missing in enumerate(design["missing"]):  # the size is known once the data are read
                checked_missing(f"{key}.missing.{i}", missing)
            continue
        _check_shape(key, design)
        n, j = design_shape(design)
        n_hold = heldout_persons(n, heldout)  # as data.simulate_condition draws them
        for i, missing in enumerate(design["missing"]):
            key = f"studies.vibo.designs.{name}.missing.{i}"
            _, rate = checked_missing(key, missing)
            # the scored cells are hidden on top of the design's missingness (none at 0%: data.hide_cells)
            hidden = rate + score * (1 - rate) if rate > 0 else 0.0
            check_hidden_cells(key, missing, hidden, n, j, f"the training data with score_fraction {score}")
            check_hidden_cells(key, missing, rate, n_hold, j, f"the {n_hold} held-out persons")


def _check_dataset(key: str, design: dict, datasets: dict) -> None:
    """A design that fits a prepared data set names one of the config's data sets and no
    simulation key; a 2pl design does not name a questionnaire with more than two categories."""
    name = design["dataset"]
    if name not in datasets:
        raise ConfigError(f"config key '{key}.dataset': '{name}' is not one of the data sets {sorted(datasets)}")
    for sim in ("preset", "n_persons", "n_items"):
        if sim in design:
            raise ConfigError(
                f"config key '{key}.{sim}': a design that names a dataset ('{name}') takes its "
                f"persons and items from it; leave {sim} out (or leave dataset out to simulate)"
            )
    model, source = design["model"], datasets[name]["source"]
    if model == "2pl" and source in POLYTOMOUS_SOURCES:
        raise ConfigError(
            f"config key '{key}.model': the data set '{name}' (source {source}) has items with more "
            f"than two categories; fit it with model: grm"
        )


def _check_shape(key: str, design: dict) -> None:
    """A 2pl design gives n_items and no preset; a grm design a preset and no n_items."""
    model = design["model"]
    if model == "grm":
        if "preset" not in design:
            raise ConfigError(
                f"config key '{key}.preset': a grm design needs the questionnaire preset it is "
                f"shaped like (one of {sorted(PRESETS)})"
            )
        if "n_items" in design:
            j, c = grm_shape(design["preset"])
            raise ConfigError(
                f"config key '{key}.n_items': a grm design takes its items from its preset "
                f"'{design['preset']}' ({j} items, {c} categories); leave n_items out"
            )
    else:
        if "preset" in design:
            raise ConfigError(
                f"config key '{key}.preset': only a grm design has a preset; this design's model "
                f"is {model} (give n_items, or model: grm)"
            )
        if "n_items" not in design:
            raise ConfigError(f"config key '{key}.n_items': a {model} design needs its number of items")
