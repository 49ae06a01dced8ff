"""What the simulation studies share: one fit's condition (design, missingness, method,
replication) with its result and block folders, the blocks their replications are fitted in, and
the missingness names of their configs (standard library only: the studies' ``conditions`` use it
when the workflow is parsed).

Blocks: every study's ``conditions`` module gives ``condition_blocks(config, fit)``, the
replications of ``fit``'s condition (all but the replication) cut into the blocks its jobs fit,
in order (``split_blocks``); a fit made in a block lies in ``rep<r>/`` of its block's folder
(``fit_folder``). The workflow reads blocks through these two alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class DesignCondition:
    """One fit of a study; a study subclasses it and names itself in ``study``."""

    study: ClassVar[str] = ""
    design: str
    missing: str  # kind and percent of all cells hidden by the design, e.g. mcar20
    method: str
    rep: int

    @property
    def path(self) -> str:
        return f"results/{self.study}/{self.design}/{self.missing}/{self.method}/rep{self.rep}"

    @property
    def folder(self) -> str:
        """The fit's name, ``results/<study>/<design>/<missing>/<method>/rep<r>``; its files lie in
        ``rep<r>/`` of its block's folder (``block_folder``)."""
        return self.path

    def block_folder(self, block: int) -> str:
        """The folder of block ``block`` of the fit's condition (design, missingness, method):
        the fits of one job, ``results/<study>/<design>/<missing>/<method>/blocks/block<b>``."""
        return f"results/{self.study}/{self.design}/{self.missing}/{self.method}/blocks/block{block}"


def split_blocks(reps, size: int) -> list[list[int]]:
    """Replications ``reps`` in blocks of ``size``, in order (one block when ``size`` exceeds
    them): the fits of one block job each."""
    reps, size = list(reps), int(size)
    return [reps[i : i + size] for i in range(0, len(reps), size)]


def block_number(conditions, config: dict, fit) -> int:
    """The number of the block that fits ``fit`` (a condition of the study whose ``conditions``
    module is given, with its ``rep``)."""
    return next(b for b, reps in enumerate(conditions.condition_blocks(config, fit)) if fit.rep in reps)


def fit_folder(conditions, config: dict, fit) -> str:
    """Where a fit made in a block lies: ``rep<r>/`` in the folder of its block
    (``fit.block_folder``), for the study whose ``conditions`` module is given."""
    return f"{fit.block_folder(block_number(conditions, config, fit))}/rep{fit.rep}"


def parse_missing(missing: str) -> tuple[str, float]:
    """``mcar20`` -> ("mcar", 0.2). The rate must be in [0, 100) percent, and 0 only with
    ``mcar``: ``mar0`` or ``mnar0`` would name a mechanism that hides nothing, a second name
    for the complete-data condition ``mcar0``."""
    m = re.fullmatch(r"(mcar|mar|mnar)(\d+(?:\.\d+)?)", str(missing))
    if not m:
        raise ValueError(f"'{missing}' is not <mcar|mar|mnar><percent>, e.g. mcar20")
    kind, percent = m.group(1), float(m.group(2))
    check_rate(f"'{missing}'", percent)
    if percent == 0 and kind != "mcar":
        raise ValueError(
            f"'{missing}' — a rate of 0% hides nothing, so the kind '{kind}' has no effect; "
            "write mcar0 for the condition without hidden responses"
        )
    return kind, percent / 100.0


def check_rate(spelled: str, percent: float) -> None:
    """The one limit of a missingness rate, whichever way a config spells it (a name such as
    ``mcar150`` or a fraction such as ``1.5``): at least 0% and below 100% of the cells, with the
    same message for both. ``spelled`` is the value as the config wrote it."""
    if not 0 <= percent < 100:
        raise ValueError(f"{spelled} — the rate {percent:g}% is outside [0, 100)")


def max_hidden_cells(n_persons: int, n_items: int) -> int:
    """An upper bound on the cells injection can hide in a complete persons x items matrix:
    it keeps one response of every person and of every item (``data.missingness.inject``), at
    least max(persons, items) cells."""
    return n_persons * n_items - max(n_persons, n_items)
