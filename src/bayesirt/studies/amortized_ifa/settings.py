"""The amortized_ifa section of a validated config: its checks across keys (``check``) and the
settings the fitting code reads (``Settings.from_config``), built once.

The schema (``workflow/schemas/config.schema.yaml``, ``amortized_ifa`` and ``ifa_*``) checks
types, ranges and unknown keys and holds every default; after validation each key with a
default is present, so the settings read keys and never supply defaults of their own. Standard
library only (and ``bayesirt.config``): the workflow calls ``check`` when it parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bayesirt.config import ConfigError
from bayesirt.studies.amortized_ifa.conditions import STUDY, design_latent


def check(config: dict) -> None:
    """Raise ConfigError naming the first offending key of the study's designs: a design gives
    a preset or a data set, not both; its data set has held-out persons; a confirmatory fit of a
    data set gives its number of factors."""
    if STUDY not in config["studies"]:
        return
    datasets = config["datasets"]
    for name, design in config["studies"][STUDY]["designs"].items():
        where = f"config key 'studies.{STUDY}.designs.{name}"
        if "dataset" not in design:
            continue
        ds = design["dataset"]
        if "preset" in design:
            raise ConfigError(f"{where}': give either preset (simulated data) or dataset (real data), not both")
        if not (ds in datasets and _holds_out_persons(datasets[ds])):
            raise ConfigError(
                f"{where}.dataset': '{ds}' is not a data set with held-out persons "
                f"(source ipip_ffm, or table with holdout_fraction > 0) among {sorted(datasets)}"
            )
        if design["analysis"] == "confirmatory" and "n_factors" not in design:
            raise ConfigError(f"{where}.n_factors': a confirmatory fit of a real data set needs n_factors")


def _holds_out_persons(dataset: dict) -> bool:
    """A prepared data set with held-out persons: IPIP-FFM, or a table with a holdout fraction."""
    return dataset["source"] == "ipip_ffm" or (dataset["source"] == "table" and dataset["holdout_fraction"] > 0)


def _values(section: dict) -> dict:
    """A config section as keyword arguments (lists become tuples, so that settings are frozen)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}


@dataclass(frozen=True)
class Training:
    """A design's ``training`` (schema ``ifa_training``): the driver's settings
    (``inference.execution.training.TrainSettings``) but the learning rates, which are the methods' own;
    the decay floor is ``lr_floor`` times a method's rate."""

    lr_decay_rate: float
    lr_decay_steps: int
    lr_floor: float
    clip_norm: float
    batch_size: int | None
    max_steps: int
    min_steps: int
    check_every: int
    window: int
    rel_tol: float
    patience: int
    stopping: str
    window_epochs: int
    confidence: float
    drift_max: float
    average_tail: bool
    progress_every: int


@dataclass(frozen=True)
class IWAE:
    """A design's ``iwae`` (schema ``ifa_iwae``): keywords of ``inference.variational.iwae.IWAESettings``."""

    hidden: tuple[int, ...]
    learning_rate: float
    weight_decay: float
    dreg: bool
    full_covariance: bool


@dataclass(frozen=True)
class IWAVB:
    """A design's ``iwavb`` (schema ``ifa_iwavb``): keywords of ``inference.variational.iwavb.IWAVBSettings``."""

    encoder_hidden: int
    noise_hidden: tuple[int, ...]
    discriminator_hidden: tuple[int, ...]
    n_contrast: int | None
    learning_rate: float
    discriminator_learning_rate: float
    weight_decay: float
    gauge_weight: float


@dataclass(frozen=True)
class SeedTraining:
    """A design's ``seed_training`` (schema ``ifa_seed_training``): seed 003's optimiser and
    stopping rule for ``iwae_seed`` and ``iwavb_seed`` (``studies.amortized_ifa.seed_methods``)."""

    weight_decay: float
    max_ratio: float
    half_cycle: int
    batch_size: int
    window: int
    patience: int
    max_steps: int
    progress_every: int


@dataclass(frozen=True)
class IWAESeed:
    """A design's ``iwae_seed`` (schema ``ifa_iwae_seed``)."""

    hidden: tuple[int, ...]
    learning_rate: float


@dataclass(frozen=True)
class IWAVBSeed:
    """A design's ``iwavb_seed`` (schema ``ifa_iwavb_seed``)."""

    encoder_hidden: int
    discriminator_hidden: tuple[int, ...]
    learning_rate: float
    discriminator_learning_rate: float


@dataclass(frozen=True)
class Design:
    """One design (schema ``ifa_design``): simulated (``preset``, ``n_persons``, the preset's
    ``simulate`` overrides as pairs) or a prepared ``dataset``; confirmatory (``n_factors`` of a
    data set) or exploratory (``factors`` of the scree, ``repeat_factors``); and the methods'
    and training settings; ``block_size`` replications of a condition are fitted together
    (``inference.execution.bulk``), ``fits_per_program`` of them stepped by one program (``"auto"``:
    ``program_width``)."""

    name: str
    analysis: str
    importance_samples: tuple[int, ...]
    replications: int
    factors: tuple[int, ...]
    repeat_factors: int
    block_size: int
    fits_per_program: int | str
    training: Training
    iwae: IWAE
    iwavb: IWAVB
    seed_training: SeedTraining
    iwae_seed: IWAESeed
    iwavb_seed: IWAVBSeed
    simulate: tuple[tuple[str, Any], ...]
    preset: str | None = None
    n_persons: int | None = None
    dataset: str | None = None
    n_factors: int | None = None

    @property
    def latent(self) -> str:
        """The latent distribution it simulates: its ``simulate`` override, else its preset's
        (``normal`` for a preset without one, and for a data set)."""
        return design_latent({"simulate": dict(self.simulate), "preset": self.preset})

    @classmethod
    def from_config(cls, name: str, design: dict) -> Design:
        """From a validated design (``studies.amortized_ifa.designs.<name>``)."""
        return cls(
            name=name,
            analysis=design["analysis"],
            importance_samples=tuple(design["importance_samples"]),
            replications=design["replications"],
            factors=tuple(design["factors"]),
            repeat_factors=design["repeat_factors"],
            block_size=design["block_size"],
            fits_per_program=design["fits_per_program"],
            training=Training(**_values(design["training"])),
            iwae=IWAE(**_values(design["iwae"])),
            iwavb=IWAVB(**_values(design["iwavb"])),
            seed_training=SeedTraining(**_values(design["seed_training"])),
            iwae_seed=IWAESeed(**_values(design["iwae_seed"])),
            iwavb_seed=IWAVBSeed(**_values(design["iwavb_seed"])),
            simulate=tuple(design["simulate"].items()),
            # optional keys without a default: a design is simulated or reads a data set
            **{k: design[k] for k in ("preset", "n_persons", "dataset", "n_factors") if k in design},
        )


@dataclass(frozen=True)
class Evaluation:
    """How fits are evaluated: held-out persons simulated on top of ``n_persons`` (as a fraction
    of it; real data sets bring their own), importance samples per held-out person for the
    log-likelihood, and draws from each person's q(z | x) for the ability means and sds."""

    heldout_fraction: float
    eval_samples: int
    posterior_draws: int


@dataclass(frozen=True)
class Settings:
    """The study's settings: methods, evaluation and designs (in config order)."""

    enabled: bool
    methods: tuple[str, ...]
    evaluation: Evaluation
    designs: tuple[Design, ...]

    @classmethod
    def from_config(cls, config: dict) -> Settings:
        """From the whole validated config (which has the study)."""
        study = config["studies"][STUDY]
        return cls(
            enabled=study["enabled"],
            methods=tuple(study["methods"]),
            evaluation=Evaluation(
                heldout_fraction=study["heldout_fraction"],
                eval_samples=study["eval_samples"],
                posterior_draws=study["posterior_draws"],
            ),
            designs=tuple(Design.from_config(n, d) for n, d in study["designs"].items()),
        )

    def design(self, name: str) -> Design:
        return next(d for d in self.designs if d.name == name)
