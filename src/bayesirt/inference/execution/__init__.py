"""Running fits: the training driver (optimisation loop, minibatches, Adam), its stopping rules,
and blocks of fits or chains as one compiled program, in worker processes.

Modules (imported on first use, as ``bayesirt.inference`` explains):

``bulk``
``bulk_processes``
``checkpoints``
``chain_blocks``
``chain_processes``
``chains``
``stopping``
``training``
``training_chunks``
``worker_processes``
"""

from __future__ import annotations

import importlib

MODULES = (
    "bulk",
    "bulk_processes",
    "checkpoints",
    "chain_blocks",
    "chain_processes",
    "chains",
    "stopping",
    "training",
    "training_chunks",
    "worker_processes",
)

__all__ = list(MODULES)


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
