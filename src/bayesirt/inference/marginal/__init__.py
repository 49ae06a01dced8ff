"""Marginal maximum likelihood by quadrature and the Laplace approximations of item posteriors
at the marginal mode (standard errors, EAP abilities, corrected VI sds).

Modules (imported on first use, as ``bayesirt.inference`` explains):

``grm_laplace``
``irt2pl_laplace``
``laplace``
``mml``
``mml_information``
``mml_posterior``
``mml_quadrature``
"""

from __future__ import annotations

import importlib

MODULES = (
    "grm_laplace",
    "irt2pl_laplace",
    "laplace",
    "mml",
    "mml_information",
    "mml_posterior",
    "mml_quadrature",
)

__all__ = list(MODULES)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
