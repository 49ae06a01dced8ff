"""Variational methods and what they share: ADVI, the factorized GRM by ADVI, VIBO and per-
person MFVI, IWAE and IWAVB, their networks, the imputation-aware objectives and PSIS.

Modules (imported on first use, as ``bayesirt.inference`` explains):

``advi``
``grm_advi``
``iw_bound``
``iwae``
``iwavb``
``iwavb_networks``
``mfvi``
``missing_cell_layout``
``missing_cells``
``missing_log_lik``
``networks``
``objectives``
``psis``
``seed_encoder``
``seed_training``
``vibo``
``vibo_average``
``vibo_encoder``
``vibo_items``
``vibo_objective``
``vibo_programs``
"""

from __future__ import annotations

import importlib

MODULES = (
    "advi",
    "grm_advi",
    "iw_bound",
    "iwae",
    "iwavb",
    "iwavb_networks",
    "mfvi",
    "missing_cell_layout",
    "missing_cells",
    "missing_log_lik",
    "networks",
    "objectives",
    "psis",
    "seed_encoder",
    "seed_training",
    "vibo",
    "vibo_average",
    "vibo_encoder",
    "vibo_items",
    "vibo_objective",
    "vibo_programs",
)

__all__ = list(MODULES)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
