"""Markov-chain samplers: the 2PNO data-augmentation Gibbs sampler and its sweep, the Gaussian-
mixture Gibbs kernel, numpyro NUTS on a log-density, the chain driver and posterior summaries.

Modules (imported on first use, as ``bayesirt.inference`` explains):

``gibbs``
``gibbs_expansion``
``gibbs_mixture``
``gibbs_sweep``
``nuts``
``posterior_summary``
``sampling``
``sampling_blocks``
``truncnormal``
``unrolled_threefry``
"""

from __future__ import annotations

import importlib

MODULES = (
    "gibbs",
    "gibbs_expansion",
    "gibbs_mixture",
    "gibbs_sweep",
    "nuts",
    "posterior_summary",
    "sampling",
    "sampling_blocks",
    "truncnormal",
    "unrolled_threefry",
)

__all__ = list(MODULES)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
