"""The two config checks on missingness that several studies' ``settings.check`` make: a name
that parses, and a rate the design's matrix can hold (messages name the config key)."""

from __future__ import annotations

from bayesirt.config import ConfigError
from bayesirt.studies.design_conditions import max_hidden_cells, parse_missing


def checked_missing(key: str, value: str) -> tuple[str, float]:
    """``parse_missing(value)``, its error as a ``ConfigError`` naming the config ``key``."""
    try:
        return parse_missing(value)
    except ValueError as e:
        raise ConfigError(f"config key '{key}': {e}") from None


def check_hidden_cells(key: str, value, rate: float, n_persons: int, n_items: int, what: str = "the design") -> None:
    """Refuse (naming ``key``) a missingness ``rate`` that a persons x items matrix cannot hold
    (``max_hidden_cells``, a necessary bound); ``what`` names the matrix in the message."""
    need, most = round(rate * n_persons * n_items), max_hidden_cells(n_persons, n_items)
    if need > most:
        raise ConfigError(
            f"config key '{key}': {value!r} — hiding {need} of the {n_persons * n_items} cells of {what} "
            f"({n_persons} persons x {n_items} items) is impossible: one response of every person and item is "
            f"kept, so at most {most} ({100 * most / (n_persons * n_items):.0f}%) can be hidden"
        )
