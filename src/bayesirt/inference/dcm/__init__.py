"""The LCDM's methods: black-box VI (score-function gradients, control variates, step-size
schedules, PSIS), collapsed VI and NUTS with the profiles summed out, and EM.

Modules (imported on first use, as ``bayesirt.inference`` explains):

``bbvi``
``bbvi_family``
``bbvi_gradients``
``bbvi_psis``
``bbvi_schedule``
``bbvi_seed``
``bbvi_settings``
``collapsed_nuts``
``collapsed_vi``
``dcm_em``
"""

from __future__ import annotations

import importlib

MODULES = (
    "bbvi",
    "bbvi_family",
    "bbvi_gradients",
    "bbvi_psis",
    "bbvi_schedule",
    "bbvi_seed",
    "bbvi_settings",
    "collapsed_nuts",
    "collapsed_vi",
    "dcm_em",
)

__all__ = list(MODULES)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
