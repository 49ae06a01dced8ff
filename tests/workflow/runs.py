"""Helpers shared by the workflow tests: run Snakemake in a copy of the workflow, and compare
the results of two runs of the same config."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Finished runs of (part of) config/test.yaml made this session besides the local run
# (conftest.local_run), with the same compilation cache, each with the studies it ran (None: all):
# the SLURM test's run of two studies, when the machine can start a cluster. test_workflow's
# rerun test compares the local run with the first of them, on its studies, instead of making a
# run of its own.
OTHER_RUNS: list[tuple[Path, tuple[str, ...] | None]] = []


def snakemake(*args, cwd=ROOT, check=True, env=None):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def workflow_copy(dest: Path) -> Path:
    """The files a run needs, in a fresh folder, so runs do not touch the repository's results."""
    for name in ("Snakefile", "config", "workflow", "notebooks", "environment.yml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    return dest


def run_test_config(folder: Path, env=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    workflow_copy(folder)
    snakemake("--cores", "2", "--configfile", "config/test.yaml", cwd=folder, env=env)
    return folder


def _of_studies(rel: Path, studies) -> bool:
    """Whether a run's file belongs to one of ``studies``: data/processed/<study>/...,
    results/<study>/... or results/reports/<study>.*"""
    return any(study in rel.parts or (rel.parts[1] == "reports" and rel.stem == study) for study in studies)


def assert_same_results(a: Path, b: Path, studies=None) -> int:
    """Every data and result file of run `a` is in run `b` with the same content, bit for bit,
    except what records time: timings tables, the `timing` field of the JSON records, and the
    executed report notebooks (run timestamps); with ``studies``, the files of those studies
    only (a run of part of the config beside a run of all of it). Returns the number of files
    compared."""

    def listing(run):
        files = [p.relative_to(run) for folder in ("results", "data") for p in (run / folder).rglob("*") if p.is_file()]
        return sorted(rel for rel in files if studies is None or _of_studies(rel, studies))

    files = listing(a)
    assert len(files) >= 10 and files == listing(b), set(files) ^ set(listing(b))
    compared = 0
    for rel in files:
        if rel.parts[1] == "reports" or rel.name.startswith("timings"):  # run timestamps, wall times
            continue
        if rel.suffix == ".json":  # fit and imputation records: all but the timing field
            strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "timing"}
            assert strip(a / rel) == strip(b / rel), rel
        else:
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
        compared += 1
    return compared


# what a report cell shows of a figure, a table or a sentence (its HTML keeps these)
SHOWN = ("image/png", "text/html", "text/markdown", "text/plain")
# a table cell pandas cut short (display.max_colwidth): text ending in "..." or "…"
CUT_CELL = re.compile(r"<td>[^<]*(?:\.\.\.|…)</td>")


def empty_sections(notebook: Path) -> list[str]:
    """The headings of an executed report's sections (a Markdown cell with a ``#`` heading and
    the cells up to the next one) that hold code but show nothing: no figure, table or text
    (papermill's parameters cells aside)."""
    empty, heading, code, shown = [], None, False, False
    for cell in [*json.loads(notebook.read_text())["cells"], {"cell_type": "markdown", "source": "# end"}]:
        source = "".join(cell.get("source", ""))
        titles = re.findall(r"^#+ (.+)$", source, flags=re.M) if cell["cell_type"] == "markdown" else []
        if titles:
            if heading is not None and code and not shown:
                empty.append(heading)
            heading, code, shown = titles[-1], False, False
        elif cell["cell_type"] == "code" and not {"parameters", "injected-parameters"} & set(
            cell.get("metadata", {}).get("tags", [])
        ):
            code = True
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", "")) if out.get("output_type") == "stream" else ""
                shown = shown or text.strip() != "" or any(out.get("data", {}).get(k) for k in SHOWN)
    return empty


def tables_fit_the_page(html: str) -> list[str]:
    """What keeps a report's tables from fitting its page: a missing overflow style (a wide
    table must scroll inside the page, bayesirt.studies.report_display) or a cell cut short."""
    problems = []
    # nbconvert's own style has "overflow-x: auto" for other elements: look for the tables' rule
    if "display: block; max-width: 100%; overflow-x: auto;" not in html:
        problems.append("no overflow style for wide tables")
    problems += [f"a cell cut short: {m}" for m in CUT_CELL.findall(html)[:3]]
    return problems
