"""Reproduction pages: what a study gave at its seed's scale, beside what the seed reported.

A page is built in two steps, so that a finished run is never lost (``results/`` is not kept
in git, and a later sitting may be on a fresh machine):

``collect``  the small tables a study's page reads (its module's ``TABLES``), taken from the
             run's ``results/<study>/``, and the facts of the run (command, config, commit,
             machine, sittings and wall time) -> ``docs/reproduction/data/<study>/``, committed;
``render``   those tables -> ``docs/reproduction/<study>.md`` and its figures (PNG) beside it.

Each study says what its seed claimed in ``bayesirt.studies.<study>.reproduction``:
``TITLE``, ``INTRO``, ``TABLES`` (file name or pattern under ``results/<study>`` -> the columns
kept, or None for all of them; those in ``OPTIONAL`` may be absent from a run),
``claims(tables) -> list[Claim]``, ``design_table(tables)`` (what ran) and
``figures(tables, folder) -> list[(file, caption)]``.
A study may also have diagnostics: fits run apart from the study's run to say whether a figure
that differs from the seed's comes from the seed's method or from this implementation
(``bayesirt.studies.<study>.diagnostics.PARTS``, made and written by ``reproduction_diagnostics``
into ``docs/reproduction/data/<study>/diagnostics/``, which a later collect keeps; the study's
reproduction module may name the workflow's files they read, ``diagnostic_inputs(config,
n_data_sets, parts)``, and shows them with ``diagnostics_section(tables, facts)``).
The page is never typed by hand: ``tools/reproduction.py`` runs both steps.
"""

from __future__ import annotations

import importlib
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.studies.reproduction_claims import (  # noqa: F401 (the studies' pages import them from here)
    VERDICTS,
    Claim,
    clean,
    from_verdict,
    mean_interval,
    method_cell,
    page_sentence,
    rests_on,
    seed_source,
    source_cell,
    tolerance_verdict,
)
from bayesirt.studies.seed_numbers import section as seed_numbers_section

STUDIES = ("rb_imputation", "amortized_ifa", "vibo", "gibbs_2pno", "dcm_bbvi")
PAGES = Path("docs/reproduction")  # relative to the repository: the pages, and
DATA = PAGES / "data"  # the collected tables each page is written from (``DATA/<study>``)
RUN_FILE = "run.json"
DIAGNOSTICS = "diagnostics"  # a study's diagnostic tables and their facts (diagnostics.json)
# committed beside a study's collected tables but written by hand or by the diagnostics, not by
# the run: a new collect keeps them
KEPT = ("seed_settings.yaml", "seed_numbers.yaml", DIAGNOSTICS)


def study_module(study: str):
    """The module that states a study's claims (``bayesirt.studies.<study>.reproduction``)."""
    if study not in STUDIES:
        raise ValueError(f"no study {study!r}; expected one of {', '.join(STUDIES)}")
    return importlib.import_module(f"bayesirt.studies.{study}.reproduction")


# ---- numbers over replications ------------------------------------------------------------------


def describe(values, digits: int = 3, unit: str = "replications") -> str:
    """``"0.962 [0.958, 0.966] (40 replications)"``: the mean and its 95% interval."""
    mean, low, high, n = mean_interval(values)
    if n == 0:
        return "not run"
    text = f"{mean:.{digits}f}"
    if np.isfinite(low):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return f"{text} ({n} {unit.removesuffix('s') if n == 1 else unit})"


def short(values, digits: int = 3) -> str:
    """``"0.962 [0.958, 0.966]"``: the mean and its 95% interval (``describe`` without the count),
    for a table cell; an empty cell where there are no values."""
    mean, low, high, n = mean_interval(values)
    if n == 0:
        return ""
    return f"{mean:.{digits}f}" + (f" [{low:.{digits}f}, {high:.{digits}f}]" if np.isfinite(low) else "")


def spread(values, digits: int = 3) -> str:
    """``"5-95%: 0.942 to 0.984"``: where the middle 90% of per-replication values lie."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return "no values"
    lo, hi = np.quantile(x, [0.05, 0.95])
    return f"5-95%: {lo:.{digits}f} to {hi:.{digits}f}"


# ---- collect ------------------------------------------------------------------------------------


def table_files(study: str, folder: Path) -> dict[str, list[Path]]:
    """The files of each of a study's ``TABLES`` under ``folder``; a name with ``*`` (e.g.
    ``*/fits.csv``, one per design folder) matches several."""
    module, folder = study_module(study), Path(folder)
    return {name: sorted(folder.glob(name)) for name in module.TABLES}


def collect(study: str, results: Path, out: Path, run: dict) -> Path:
    """Copy the tables a study's page reads from ``results`` (the run's ``results/<study>``) to
    ``out`` (``docs/reproduction/data/<study>``), keeping the columns its module names, and
    write the run's facts (``run``) beside them as ``run.json``. What an earlier collect wrote
    goes first; the lists written by hand beside it (``KEPT``: the seed's settings and numbers)
    stay. Returns ``out``."""
    module, results, out = study_module(study), Path(results), Path(out)
    files = table_files(study, results)
    optional = getattr(module, "OPTIONAL", set())
    absent = [name for name, paths in files.items() if not paths and name not in optional]
    if absent:
        raise FileNotFoundError(f"{study}: the run has no {results / absent[0]}; has it finished?")
    for old in out.iterdir() if out.exists() else ():
        if old.name not in KEPT:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    for name, paths in files.items():
        columns = module.TABLES[name]
        for path in paths:
            table = pd.read_csv(path)
            if columns is not None:
                table = table[[c for c in columns if c in table.columns]]
            target = out / path.relative_to(results)
            target.parent.mkdir(parents=True, exist_ok=True)
            table.to_csv(target, index=False)
    (out / RUN_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")
    return out


def read_tables(study: str, data: Path) -> tuple[dict[str, pd.DataFrame], dict]:
    """The collected tables of a study (``load_tables``) and its run facts (``run.json``)."""
    return load_tables(study, data), json.loads((Path(data) / RUN_FILE).read_text())


def load_tables(study: str, data: Path) -> dict[str, pd.DataFrame]:
    """The tables a study's page reads, keyed by file name without ``.csv``, from ``data``: the
    collected copy, or the run's own ``results/<study>`` (the same layout). The files of a name
    with ``*`` are stacked, each with columns named by the module's ``WILDCARDS[name]`` (default
    ``("design",)``) holding the folder names the pattern's leading parts matched, where the table
    has no such column."""
    module, tables = study_module(study), {}
    for name, paths in table_files(study, data).items():
        key = Path(name).stem
        if not paths:  # an optional table the run did not write (``OPTIONAL``)
            tables[key] = pd.DataFrame(columns=module.TABLES[name] or [])
            continue
        if "*" not in name:
            tables[key] = pd.read_csv(paths[0])
            continue
        parts = []
        names = getattr(module, "WILDCARDS", {}).get(name, ("design",))
        for path in paths:
            table = pd.read_csv(path)
            for position, column in reversed(list(enumerate(names))):
                if column not in table.columns:
                    table.insert(0, column, path.relative_to(data).parts[position])
            parts.append(table)
        tables[key] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    # the diagnostics' tables (where they were run), which a module's claims may read
    for path in sorted((Path(data) / DIAGNOSTICS).glob("*.csv")):
        tables[f"{DIAGNOSTICS}/{path.stem}"] = pd.read_csv(path)
    return tables


def diagnostics_section(study: str, data: Path) -> str:
    """The page's section of a study's diagnostics, from ``data/diagnostics/`` (empty where the
    study has none or they were not run)."""
    module, folder = study_module(study), Path(data) / DIAGNOSTICS
    if not hasattr(module, "diagnostics_section") or not (folder / f"{DIAGNOSTICS}.json").is_file():
        return ""
    tables = {path.stem: pd.read_csv(path) for path in sorted(folder.glob("*.csv"))}
    return module.diagnostics_section(tables, json.loads((folder / f"{DIAGNOSTICS}.json").read_text()))


def claims_of(study: str, results: Path) -> pd.DataFrame:
    """The seed's claims judged on a run's own tables (``results/<study>``), as a table: what a
    study's report shows, the same rows as its reproduction page."""
    return claims_table(study_module(study).claims(load_tables(study, results)))


# ---- render -------------------------------------------------------------------------------------


def cell(text) -> str:
    """One Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def hours(seconds) -> str:
    if seconds is None or not np.isfinite(seconds):
        return "unknown"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def run_section(run: dict) -> str:
    sittings = run.get("sittings", [])
    commits = list(dict.fromkeys(s["commit"] for s in sittings if s.get("commit")))
    resumed = run.get("resumed_blocks", [])  # Snakemake's benchmark of a resumed job: its last sitting
    lines = [
        "## The run",
        "",
        "| | |",
        "|---|---|",
        f"| command | `{cell(run.get('command', 'unknown'))}` |",
        f"| config | `{cell(run.get('config', 'unknown'))}` |",
        f"| commit | `{cell(run.get('commit', 'unknown'))}`"
        + (f" (the sittings ran at {', '.join(f'`{c[:7]}`' for c in commits)})" if len(commits) > 1 else "")
        + " |",
        f"| machine | {cell(run.get('machine', 'unknown'))} |",
        f"| sittings | {len(sittings)}, from {cell(run.get('started', '?'))} to {cell(run.get('finished', '?'))} |",
        f"| wall time | {hours(run.get('elapsed_seconds'))} over the sittings (shared with: "
        f"{cell(', '.join(run.get('shared_with', [])) or 'no other study')}) |",
        f"| job time | {hours(run.get('job_seconds'))}: the wall time of the study's jobs, summed"
        + (
            f" ({len(resumed)} block job(s) resumed from a checkpoint count their last sitting only: "
            f"{cell(', '.join(f'`{r}`' for r in resumed))})"
            if resumed
            else ""
        )
        + " |",
        "",
    ]
    if run.get("note"):
        lines += [run["note"], ""]
    return "\n".join(lines)


def markdown_table(table: pd.DataFrame) -> list[str]:
    """A table's Markdown lines: its header, rule and one line per row."""
    head = "| " + " | ".join(cell(c) for c in table.columns) + " |"
    rule = "|" + "---|" * len(table.columns)
    return [head, rule, *("| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False))]


def design_section(design_table: pd.DataFrame) -> str:
    """What ran: one row per design and condition, with its replications."""
    return "\n".join(["## What ran", "", *markdown_table(design_table), ""])


def claims_section(claims: list[Claim]) -> str:
    lines = [
        "## Claims",
        "",
        "| claim | source | method | seed | ours | verdict | why |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {cell(c.claim)} | {cell(source_cell(c))} | {cell(method_cell(c))} | {cell(c.seed)} | {cell(c.ours)} "
            f"| **{c.verdict}** | {cell(c.why)} |"
            for c in claims
        ),
        "",
    ]
    return "\n".join(lines)


def tally(claims: list[Claim], source: str | None = None) -> dict[str, int]:
    """How many claims (of one ``source``: "seed" or "this project"; None: all) got each verdict."""
    chosen = [c.verdict for c in claims if source is None or c.source == source]
    return {v: chosen.count(v) for v in VERDICTS}


def tally_sentence(claims: list[Claim]) -> str:
    seed = sum(c.source == "seed" for c in claims)
    counts = ", ".join(f"{n} {v}" for v, n in tally(claims).items())
    return f"**{len(claims)} claims ({seed} of the seed's, {len(claims) - seed} of this project's): {counts}.**"


def render(study: str, data: Path, pages: Path) -> Path:
    """Write ``pages/<study>.md`` and its figures (``pages/<study>/*.png``) from the collected
    tables in ``data``. Returns the page's path."""
    module = study_module(study)
    tables, run = read_tables(study, data)
    folder = Path(pages) / study
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    claims = module.claims(tables)
    figures = module.figures(tables, folder)
    parts = [
        f"# {module.TITLE}",
        "",
        "<!-- Written by tools/reproduction.py from docs/reproduction/data/"
        f"{study}/; edit the generator, not this page. -->",
        "",
        module.INTRO,
        "",
        tally_sentence(claims),
        "",
        claims_section(claims),
        seed_numbers_section(study, tables, data),  # every number the seed reports, beside ours
        # where a figure differs from the seed's: the paper's method or this implementation? (if run)
        *[text for text in (diagnostics_section(study, data),) if text],
        design_section(module.design_table(tables)),
        # a study's own tables beside its claims (optional: ``sections(tables) -> list[str]``)
        *(module.sections(tables) if hasattr(module, "sections") else []),
        run_section(run),
    ]
    if figures:
        parts += ["## Figures", ""]
        for name, caption in figures:
            parts += [f"![{cell(caption)}]({study}/{name})", "", caption, ""]
    if run.get("left_out"):
        parts += ["## Left out", "", *[f"- {item}" for item in run["left_out"]], ""]
    page = Path(pages) / f"{study}.md"
    page.write_text("\n".join(parts).rstrip() + "\n")
    return page


def claims_table(claims: list[Claim]) -> pd.DataFrame:
    """The claims as a table (for tests and notebooks), with each claim's source."""
    return pd.DataFrame([{**asdict(c), "source": c.source} for c in claims])
