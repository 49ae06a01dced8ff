"""The reproduction index (``docs/reproduction/index.md``): one table, a row per study, from the
same committed tables as the pages (``bayesirt.studies.reproduction``), then a line per study
on what holds and what does not, then how the pages are made (``PROSE``, committed beside the
tables). Nothing in the table is typed by hand: ``tools/reproduction.py page`` writes it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bayesirt.studies import reproduction
from bayesirt.studies.reproduction_claims import PROJECT, VERDICTS, Claim

PROSE = "index_prose.md"  # the index's text after its table, in the data folder
COUNTS = " / ".join(VERDICTS)
METHOD_COLUMNS = ("method", "objective")  # rb_imputation names its fits' objectives, not methods


def methods_of(tables: dict[str, pd.DataFrame]) -> list[str]:
    """Every method (or objective) that any of a run's tables names, in order of appearance."""
    names = {}
    for key, table in tables.items():
        if key.startswith(f"{reproduction.DIAGNOSTICS}/"):  # fits apart from the run
            continue
        for column in METHOD_COLUMNS:
            if column in table:
                names |= dict.fromkeys(str(m) for m in table[column].dropna())
                break
    return list(names)


def what_ran(design: pd.DataFrame, methods: list[str]) -> str:
    """``"4 conditions (2 designs) x 20 replications; the seed's methods: none; ours: `em`, `bbvi`"``:
    a condition is a row of the page's design table (a design and its missingness)."""
    column = next((c for c in design.columns if c.startswith("replications")), None)
    reps = sorted({int(r) for r in design[column]}) if column else []
    span = "?" if not reps else str(reps[0]) if len(reps) == 1 else f"{reps[0]} to {reps[-1]}"
    seed = [m for m in methods if m.endswith("_seed")]
    ours = [m for m in methods if not m.endswith("_seed")]
    return (
        f"{len(design)} condition{'s' if len(design) != 1 else ''} ({design.iloc[:, 0].nunique()} "
        f"design{'s' if design.iloc[:, 0].nunique() != 1 else ''}) x {span} replications; the seed's methods: "
        f"{', '.join(f'`{m}`' for m in seed) or 'none'}; ours: {', '.join(f'`{m}`' for m in ours) or 'none'}"
    )


def counts(claims: list[Claim], source: str) -> str:
    """The four verdicts' counts of one source's claims: ``"3 / 0 / 9 / 4"``."""
    return " / ".join(str(n) for n in reproduction.tally(claims, source).values())


def listing(claims: list[Claim], most: int = 2) -> str:
    texts = [c.claim for c in claims]
    shown = "; ".join(texts[:most])
    return shown + (f"; and {len(texts) - most} more" if len(texts) > most else "")


def summary_line(study: str, claims: list[Claim]) -> str:
    """What holds and what does not: the seed's claims by verdict, then this project's."""
    parts = []
    for source, whose in (("seed", "The seed's"), (PROJECT, "This project's")):
        mine = [c for c in claims if c.source == source]
        by = {v: [c for c in mine if c.verdict == v] for v in VERDICTS}
        held = f"holds: {listing(by['supported'])}" if by["supported"] else "nothing holds decisively"
        broken = f"contradicted: {listing(by['contradicted'])}" if by["contradicted"] else "nothing contradicted"
        capped = [c for c in by["inconclusive"] if c.fits_met]
        alone = {v: sum(c.numbers_say == v for c in capped) for v in ("supported", "contradicted")}
        said = " and ".join(f"{n} {v}" for v, n in alone.items() if n)
        open_ = f"{len(by['inconclusive'])} inconclusive" + (
            f" ({len(capped)} of them on fits that did not all meet their stopping rule"
            + (f"; on their numbers alone {said}" if said else "")
            + ")"
            if capped
            else ""
        )
        claims_word = "claim" if len(mine) == 1 else "claims"
        parts.append(
            f"{whose} {len(mine)} {claims_word}: {held}; {broken}; {open_}; {len(by['not comparable'])} not comparable."
        )
    return f"- **[{study}]({study}.md)**: " + " ".join(parts)


def study_row(study: str, data: Path) -> tuple[dict, str]:
    """A study's row of the index table and its summary line."""
    module = reproduction.study_module(study)
    tables, _ = reproduction.read_tables(study, Path(data) / study)
    claims = module.claims(tables)
    seed = module.TITLE.split("(", 1)[1].split(")", 1)[0] if "(" in module.TITLE else ""
    row = {
        "study": f"[{study}]({study}.md)",
        "seed": f"{seed}: {module.TITLE.split('): ', 1)[-1]}",
        "what ran": what_ran(module.design_table(tables), methods_of(tables)),
        f"the seed's claims ({COUNTS})": counts(claims, "seed"),
        f"this project's claims ({COUNTS})": counts(claims, PROJECT),
    }
    return row, summary_line(study, claims)


def index_page(data: Path, studies) -> str:
    rows, lines = zip(*(study_row(s, data) for s in studies)) if studies else ((), ())
    prose = Path(data) / PROSE
    return "\n".join(
        [
            "# Reproduction at the seeds' scale",
            "",
            "<!-- Written by tools/reproduction.py from docs/reproduction/data/; edit the generator or "
            f"data/{PROSE}, not this page. -->",
            "",
            *reproduction.markdown_table(pd.DataFrame(list(rows))),
            "",
            "What holds and what does not:",
            "",
            *lines,
            "",
            prose.read_text().strip() if prose.is_file() else "",
            "",
        ]
    )


def write_index(data: Path, pages: Path, studies) -> Path:
    """Write ``pages/index.md`` for ``studies`` from the collected tables in ``data``."""
    path = Path(pages) / "index.md"
    path.write_text(index_page(data, list(studies)).rstrip() + "\n")
    return path
