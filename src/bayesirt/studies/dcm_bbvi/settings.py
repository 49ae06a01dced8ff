"""The config of study ``dcm_bbvi``: its checks across keys, and the settings its fits take.

``check(config)`` refuses what the schema cannot express; ``Settings.from_config(config)`` holds
what the fitting jobs read from the validated config (the schema has filled in every default),
as plain values: light enough for parse time, where the rules build it as a job's params. It is
the one settings type of the study: the methods read it (``methods.bbvi_train`` and the functions
beside it turn its values into the library's settings objects), and a variant is
``dataclasses.replace`` of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bayesirt.studies.dcm_bbvi.conditions import STUDY, design_spec
from bayesirt.studies.design_checks import check_hidden_cells, checked_missing


def check(config: dict) -> None:
    """Raise ConfigError naming the offending key: a missingness name that does not parse
    (``design_conditions.parse_missing``, as in every study) or a rate the design's persons x
    items matrix cannot hold (the schema admits MCAR names only)."""
    study = config["studies"].get(STUDY)
    if study is None:
        return
    for name, design in study["designs"].items():
        spec = design_spec(name, design)
        for i, missing in enumerate(design["missing"]):
            key = f"studies.{STUDY}.designs.{name}.missing.{i}"
            _, rate = checked_missing(key, missing)
            check_hidden_cells(key, missing, rate, int(spec["n_persons"]), int(spec["n_items"]))


@dataclass(frozen=True)
class Settings:
    """What every fit of the study takes from the validated config."""

    n_samples: int  # M of BBVI
    variance_repeats: int  # draws of the gradient estimator for its variance (BBVI fits)
    monotone: bool  # MONOTONE_METHODS: monotone coefficients (models.lcdm.monotone_beta)
    bbvi_training: dict  # overrides of methods.BBVI_TRAIN
    collapsed_training: dict  # overrides of methods.COLLAPSED_TRAIN
    nuts: dict  # inference.execution.chains.SamplerSettings fields
    priors: dict  # models.lcdm.Priors
    # replications of a condition fitted together in one job (the named design's ``block_size``;
    # None when no design is named): science config, as float32 rounding differs with the block
    block_size: int | None = None
    # overrides of EM's own settings (``inference.dcm.dcm_em.EMSettings``); no config key sets
    # them (a benchmark turns the standard errors off)
    em: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: dict, design: str | None = None) -> Settings:
        """The settings of the validated ``config``; with ``design``, that design's block size."""
        study = config["studies"][STUDY]
        return cls(
            block_size=None if design is None else study["designs"][design]["block_size"],
            n_samples=study["n_samples"],
            variance_repeats=study["variance_repeats"],
            monotone=study["monotone"],
            bbvi_training=dict(study["bbvi_training"]),
            collapsed_training=dict(study["collapsed_training"]),
            nuts=dict(study["nuts"]),
            priors=dict(study["priors"]),
        )
