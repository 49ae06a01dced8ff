"""What the simulation studies over designs share: one fit's condition (design, missingness,
method, replication) with its result folder, and the missingness names of their configs."""

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


def parse_missing(missing: str) -> tuple[str, float]:
    """``mcar20`` -> ("mcar", 0.2)."""
    m = re.fullmatch(r"(mcar|mar|mnar)(\d+(?:\.\d+)?)", missing)
    if not m:
        raise ValueError(f"missingness '{missing}' is not <mcar|mar|mnar><percent>, e.g. mcar20")
    return m.group(1), float(m.group(2)) / 100.0
