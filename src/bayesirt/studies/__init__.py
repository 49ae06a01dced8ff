"""Studies: the only layer that knows configs and result folders.

One package per study, all of one shape (``bayesirt.studies.base`` says what each module
holds): ``conditions`` (the fits a config asks for; standard library only, read when Snakemake
parses the workflow), ``settings`` (the study's config checks and settings), ``data``,
``methods`` (a registry of one function per method, each returning a ``base.MethodResult``),
``tables`` and ``figures``.

Beside the packages: ``base`` (the shape and the result type), ``design_conditions`` (the
missingness names the simulation studies share), ``grm_advi`` (a response matrix fitted by
the factorized GRM, as the rb_imputation study and the IRT-table workflow use it) and
``fit_tables`` (that workflow's tables).

This module imports nothing heavy: ``check_config`` is called when the workflow is parsed.
"""

from __future__ import annotations

import importlib

STUDIES = ("rb_imputation", "amortized_ifa", "vibo", "gibbs_2pno", "dcm_bbvi")


def check_config(config: dict) -> None:
    """Every study's checks across config keys (``<study>.settings.check``), on a config the
    schema has validated and filled with its defaults; raises ``config.ConfigError`` naming the
    first offending key."""
    for name in STUDIES:
        importlib.import_module(f"bayesirt.studies.{name}.settings").check(config)
