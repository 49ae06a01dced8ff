"""The parse-time part of study ``rb_imputation`` (bayesirt.studies.rb_imputation): the names of
the fit conditions a config asks for. Snakemake reads them when it parses the workflow, on every
run and, on a cluster, in every job, so this module imports nothing heavy (no JAX); the study
module re-exports these names."""

from __future__ import annotations

import re

from bayesirt.inference.objective_names import uses_copies


def condition_names(study: dict) -> list[str]:
    """Fit conditions of a config's ``studies.rb_imputation``: the objectives, with
    ``_M<copies>`` for each M of ``n_copies`` where the objective draws imputed copies."""
    out = []
    for objective in study["objectives"]:
        if uses_copies(objective):
            out += [f"{objective}_M{m}" for m in study["n_copies"]]
        else:
            out.append(objective)
    return out


def parse_condition(condition: str) -> tuple[str, int | None]:
    """(objective, M or None) of a condition name such as ``rao_blackwell_M5``."""
    objective, copies = re.fullmatch(r"([a-z_]+?)(?:_M(\d+))?", condition).groups()
    return objective, (int(copies) if copies else None)
