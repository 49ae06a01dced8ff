"""Every number a seed reports, on its study's reproduction page beside the run's.

Each study keeps a committed list, ``docs/reproduction/data/<study>/seed_numbers.yaml``, of the
numbers its seed document reports about what it ran and found: its results (tables, text, and a
figure's values where the text states them as numbers) and the facts of its experiment's data
(sizes, shares missing). The settings of the seed's methods are not repeated here: they have
their own list, ``seed_settings.yaml``, checked against the pipeline's config.

An entry of the list::

    - id: overall_accuracy                  # unique within the study
      section: "1.1 Naive Black Box, Learn full model"
      quote: "# Overall classification accuracy"   # a few words of the seed, verbatim
      value: 0.967                          # a number, a list of numbers, or {name: number}
      unit: "%"                             # optional, shown after the value as the seed writes it
      ours: overall_accuracy                # a figure of bayesirt.studies.<study>.seed_numbers
      # or, instead of ours:
      # not_comparable: why no figure of the run can stand beside it, and what rerun would give one

A study's figures (``FIGURES`` in ``bayesirt.studies.<study>.seed_numbers``) map a figure's name
to a function of the page's tables returning ``Ours``: the run's number with its 95% interval
over replications, or no number and the reason (the tables lack the rows it needs).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import yaml

FILE = "seed_numbers.yaml"
HEADING = "## Every number the seed reports"
NOT_COMPARABLE = "not comparable"
LONG = 4  # a value of more numbers than this is shown to four significant digits, to keep its cell short


@dataclass(frozen=True)
class Ours:
    """The run's figure beside one seed number.

    Attributes
    ----------
    value : str or None
        The run's number, with its 95% interval over replications where it has one; None when
        the run has no number to set beside the seed's.
    note : str
        What the figure is (method, design, how it was computed), or why there is none.
    """

    value: str | None
    note: str

    def __post_init__(self):
        if self.value is None and not self.note.strip():
            raise ValueError("a seed number without a figure of ours needs the reason")
        if self.value is not None and not self.value.strip():
            raise ValueError("an empty figure: give None and the reason instead")


@dataclass(frozen=True)
class Row:
    """One row of the page's table: a seed number and the run's figure (or the reason for none)."""

    id: str
    section: str
    quote: str
    seed: str
    ours: str
    note: str

    @property
    def comparable(self) -> bool:
        return self.ours != NOT_COMPARABLE


def figures_of(study: str) -> dict[str, Callable[[dict], Ours]]:
    """A study's figures (``FIGURES`` of ``bayesirt.studies.<study>.seed_numbers``); none where the
    study has no such module (every number of its seed is then marked not comparable)."""
    name = f"bayesirt.studies.{study}.seed_numbers"
    if importlib.util.find_spec(name) is None:
        return {}
    return importlib.import_module(name).FIGURES


def numeric(value) -> bool:
    """Whether a seed value is a number, a (nested) list of numbers or a mapping of names to them."""
    if isinstance(value, bool):
        return False
    if isinstance(value, Real):
        return True
    if isinstance(value, list):
        return bool(value) and all(numeric(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(isinstance(k, str) and numeric(v) for k, v in value.items())
    return False


def validate(table: dict, study: str, figures: dict) -> list[dict]:
    """The entries of a study's list, after checking their shape; raises ``ValueError`` on the
    first fault (a missing field, a repeated id, a value that is not numbers, a figure the study
    does not define, both or neither of ``ours`` and ``not_comparable``)."""
    if table.get("study") != study:
        raise ValueError(f"{FILE} of {study} names study {table.get('study')!r}")
    if not str(table.get("seed", "")).strip():
        raise ValueError(f"{FILE} of {study} names no seed document")
    entries = table.get("numbers") or []
    if not entries:
        raise ValueError(f"{FILE} of {study} lists no numbers")
    seen = set()
    for entry in entries:
        missing = {"id", "section", "quote", "value"} - set(entry)
        if missing:
            raise ValueError(f"{study}: entry {entry.get('id', entry)!r} lacks {sorted(missing)}")
        if entry["id"] in seen:
            raise ValueError(f"{study}: id {entry['id']!r} appears twice")
        seen.add(entry["id"])
        if not str(entry["section"]).strip() or not str(entry["quote"]).strip():
            raise ValueError(f"{study}: {entry['id']} needs its section and a quote")
        if not numeric(entry["value"]):
            raise ValueError(f"{study}: {entry['id']}'s value {entry['value']!r} is not a number or numbers")
        if ("ours" in entry) == ("not_comparable" in entry):
            raise ValueError(f"{study}: {entry['id']} needs exactly one of 'ours' and 'not_comparable'")
        if "ours" in entry and entry["ours"] not in figures:
            raise ValueError(f"{study}: {entry['id']} names figure {entry['ours']!r}, which the study does not define")
        if "not_comparable" in entry and not str(entry["not_comparable"]).strip():
            raise ValueError(f"{study}: {entry['id']} is not comparable without a reason")
    return entries


def load(study: str, data: Path) -> tuple[dict, list[dict]]:
    """A study's list (``data/seed_numbers.yaml``, ``data`` being its collected tables' folder):
    the file's header and its checked entries."""
    table = yaml.safe_load((Path(data) / FILE).read_text())
    return table, validate(table, study, figures_of(study))


def seed_text(value, digits: int | None = None) -> str:
    """A seed value as the page shows it: numbers as the seed wrote them (long lists to four
    significant digits), lists in brackets, mappings as ``name value``."""
    if digits is None and isinstance(value, (list, dict)) and count(value) > LONG:
        digits = 4
    if isinstance(value, dict):
        return ", ".join(f"{k} {seed_text(v, digits)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(seed_text(v, digits) for v in value) + "]"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}g}" if digits else repr(float(value))


def count(value) -> int:
    """How many numbers a seed value holds."""
    if isinstance(value, dict):
        return sum(count(v) for v in value.values())
    if isinstance(value, list):
        return sum(count(v) for v in value)
    return 1


def rows(study: str, tables: dict, data: Path) -> list[Row]:
    """The page's rows: each seed number beside the run's figure, or marked not comparable."""
    _, entries = load(study, data)
    figures = figures_of(study)
    out = []
    for entry in entries:
        if "ours" in entry:
            ours = figures[entry["ours"]](tables)
        else:
            ours = Ours(None, str(entry["not_comparable"]))
        out.append(
            Row(
                id=str(entry["id"]),
                section=str(entry["section"]),
                quote=" ".join(str(entry["quote"]).split()),
                seed=seed_text(entry["value"]) + str(entry.get("unit", "")),
                ours=NOT_COMPARABLE if ours.value is None else ours.value,
                note=ours.note,
            )
        )
    return out


def cell(text) -> str:
    """One Markdown table cell: no line breaks; pipes escaped, and brackets, so that a quote such as
    ``x[a][b]`` is not read as a link."""
    text = " ".join(str(text).split())
    for c in "|[]":
        text = text.replace(c, "\\" + c)
    return text


def section(study: str, tables: dict, data: Path) -> str:
    """The page's section "Every number the seed reports": a table id | section | seed | ours |
    note, and the count of numbers set beside ours and of those not comparable. Empty where the
    study keeps no list."""
    if not (Path(data) / FILE).is_file():
        return ""
    table, _ = load(study, data)
    found = rows(study, tables, data)
    beside = sum(r.comparable for r in found)
    lines = [
        HEADING,
        "",
        f"Every number seed `{table['seed']}` reports about what it ran and found (its results, and the facts "
        "of its experiment's data), each with the seed's section and a few of its words, from "
        f"`docs/reproduction/data/{study}/{FILE}`: beside the run's figure (with its 95% interval over "
        "replications where there are several), or marked not comparable with the reason. The settings of "
        "the seed's methods are checked apart (`seed_settings.yaml`).",
        "",
        f"**{len(found)} number{'s' if len(found) != 1 else ''}: {beside} beside ours, "
        f"{len(found) - beside} not comparable.**",
        "",
        "| id | section | seed | ours | note |",
        "|---|---|---|---|---|",
        *(
            f"| `{r.id}` | {cell(r.section)}: “{cell(r.quote)}” | {cell(r.seed)} | {cell(r.ours)} | {cell(r.note)} |"
            for r in found
        ),
        "",
    ]
    return "\n".join(lines)
