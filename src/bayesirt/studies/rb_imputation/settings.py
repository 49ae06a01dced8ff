"""The config of study ``rb_imputation``: its checks across keys, and the settings its fits take.

``check(config)`` refuses what the schema cannot express; ``Settings.from_config(config)`` holds
what the fitting jobs read from the validated config (the schema has filled in every default),
as plain values: light enough for parse time, where the rules build it as a job's params. It is
the study's one settings type: the methods read it (``methods.train_settings`` and the functions
beside it turn its values into the library's settings objects), and a variant is
``dataclasses.replace`` of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bayesirt.config import ConfigError
from bayesirt.studies.design_checks import checked_missing
from bayesirt.studies.rb_imputation.conditions import STUDY, missing_designs


def check(config: dict) -> None:
    """Raise ConfigError naming the offending key: a missingness name that does not parse
    (``mcar150``, ``mar0``), or a rate of 0% on a simulated data set, which leaves nothing to
    impute."""
    study = config["studies"].get(STUDY)
    if study is None:
        return
    key = f"studies.{STUDY}.missing"
    for missing in missing_designs(study):
        check_missing(key, missing, study, config)
    seed = study.get("seed_dataset")
    if seed is not None and seed not in config["datasets"]:
        known = sorted(config["datasets"])
        raise ConfigError(f"config key 'studies.{STUDY}.seed_dataset': '{seed}' is not one of the data sets {known}")
    if seed is not None and seed == study["dataset"]:
        raise ConfigError(f"config key 'studies.{STUDY}.seed_dataset': '{seed}' is the study's dataset already")


def check_missing(key: str, missing: str, study: dict, config: dict) -> None:
    _, rate = checked_missing(key, missing)
    source = config["datasets"][study["dataset"]]["source"]
    if rate == 0 and source == "simulate" and study["enabled"] and study["replications"] > 0:
        raise ConfigError(
            f"config key '{key}': '{missing}' — the data set '{study['dataset']}' is simulated without "
            "missing responses, so a rate of 0% leaves nothing to impute; give a rate above 0, or "
            "replications: 0 for the complete-data reference fit only"
        )


@dataclass(frozen=True)
class Settings:
    """What the study's fits take from the validated config; the objectives, M values,
    missingness and imputation model's settings are what ``methods.run_replication`` chains in
    one process (the workflow's jobs take them from their conditions)."""

    training: dict  # the config's training (TrainSettings fields, and n_draws of the reference fit)
    priors: dict  # the config's priors (models.factorized_grm.Priors)
    posterior_draws: int  # draws of the fitted surrogate for estimates and posterior.nc
    n_dimensions: int  # abilities per scale (> 1: the mixture GRM)
    block_size: int  # replications of a condition fitted together (inference.execution.bulk)
    objectives: tuple  # the imputation objectives fitted
    n_copies: tuple  # M values of the objectives that draw copies
    missing: tuple  # missingness designs (names such as mcar15)
    stacking: dict  # the imputation model's settings (imputation.stacking.StackingSettings)

    @classmethod
    def from_config(cls, config: dict) -> Settings:
        study = config["studies"][STUDY]
        return cls(
            training=dict(config["training"]),
            priors=dict(config["priors"]),
            posterior_draws=config["posterior_draws"],
            n_dimensions=study["n_dimensions"],
            block_size=study["block_size"],
            objectives=tuple(study["objectives"]),
            n_copies=tuple(study["n_copies"]),
            missing=tuple(missing_designs(study)),
            stacking=dict(study["stacking"]),
        )
