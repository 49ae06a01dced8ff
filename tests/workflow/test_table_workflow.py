"""Your own questionnaire in the workflow (source: table): prepared with person ids and row
counts; bad input stops before any fit with one line naming file, line and column, and leaves
no output behind (`make run` ends with that line); a missing file stops the run before any job;
an item keyed the wrong way is named before and after the fit."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow

OUTPUTS = (
    "responses.parquet",
    "responses.json",
    "holdout.parquet",
    "holdout.json",
    "persons.csv",
    "row_counts.csv",
    "item_rest.csv",
)


def snakemake(cwd, *args):
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True)


def setup_run(tmp_path, table_text, **spec):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("Snakefile", "workflow", "environment.yml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, run / name)
    if table_text is not None:
        (run / "survey.csv").write_text(table_text)
    cfg = {
        "seed": 3,
        "studies": {"rb_imputation": {"dataset": "mine", "enabled": False}},
        "datasets": {
            "mine": {
                "source": "table",
                "file": "survey.csv",
                "id_column": "id",
                "items": ["Q1", "Q2", "Q3"],
                "missing_codes": ["", "NA", 9],
                **spec,
            }
        },
    }
    (run / "own.yaml").write_text(yaml.safe_dump(cfg))
    return run


GOOD = (
    "id,Q1,Q2,Q3,age\n"
    + "".join(f"p{i},{1 + i % 4},{1 + (i * 3) % 4},{9 if i % 5 == 0 else 1 + i % 3},{20 + i}\n" for i in range(40))
    + "p40,NA,,9,61\n"
)


def test_table_is_prepared_with_ids_and_row_counts(tmp_path):
    run = setup_run(tmp_path, GOOD, holdout_fraction=0.1, reverse_keyed=["Q2"])
    proc = snakemake(run, "data/processed/mine/responses.parquet", "--cores", "1", "--configfile", "own.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = run / "data/processed/mine"
    schema = yaml.safe_load((ROOT / "workflow/schemas/responses.schema.yaml").read_text())
    for part in ("responses", "holdout"):
        jsonschema.validate(json.loads((out / f"{part}.json").read_text()), schema)
    counts = pd.read_csv(out / "row_counts.csv", keep_default_na=False)
    assert counts["persons"].tolist() == [41, 40, 36] and counts["removed"].tolist() == [0, 1, 4]
    persons = pd.read_csv(out / "persons.csv")
    assert persons.groupby("part").size().to_dict() == {"holdout": 4, "train": 36}
    assert "p40" not in set(persons.person_id)  # answered nothing: dropped and counted
    train = pd.read_parquet(out / "responses.parquet")
    first = persons[(persons.part == "train") & (persons.row == 0)].person_id.item()
    i = int(first[1:])
    assert train.iloc[0].tolist() == [i % 4, 3 - (i * 3) % 4, -1 if i % 5 == 0 else i % 3]  # Q2 re-scored


def test_bad_values_stop_the_prepare_step_and_leave_nothing(tmp_path):
    run = setup_run(tmp_path, GOOD.replace("p7,4,", "p7,6,"), coding={"integers_from": 1, "n_categories": 4})
    proc = snakemake(run, "data/processed/mine/responses.parquet", "--cores", "1", "--configfile", "own.yaml")
    assert proc.returncode != 0
    log = (run / "logs/data/mine.prepare.log").read_text()
    assert re.search(
        r"^\S*DataFormatError: survey.csv: 1 cell\(s\) neither a declared category .* "
        r"first: line 9, column 'Q1': '6'$",
        log,
        flags=re.M,
    ), log
    assert not any((run / "data/processed/mine" / name).exists() for name in OUTPUTS)


def test_missing_file_stops_before_any_job(tmp_path):
    run = setup_run(tmp_path, None)
    proc = snakemake(run, "-n", "data/processed/mine/responses.parquet", "--configfile", "own.yaml")
    assert proc.returncode != 0
    assert (
        proc.stderr.strip().splitlines()[-1] == "own.yaml: survey.csv: file not found (config key 'datasets.mine.file')"
    )
    assert not (run / "data").exists()


def test_make_run_ends_with_the_error_in_one_line(tmp_path):
    # the bad-values case through `make run` (the environment: this interpreter's)
    run = setup_run(tmp_path, GOOD.replace("p7,4,", "p7,6,"), coding={"integers_from": 1, "n_categories": 4})
    shutil.copy(ROOT / "Makefile", run / "Makefile")
    venv = Path(sys.prefix)
    proc = subprocess.run(
        [
            "make",
            "-o",
            str(venv / ".installed"),
            "run",
            f"VENV={venv}",
            "ARGS=data/processed/mine/responses.parquet --configfile own.yaml",
        ],
        cwd=run,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    # make's own closing line ("make: *** ..." or, under an outer make such as `make test`,
    # "make[1]: *** ...") follows ours
    lines = [line for line in proc.stderr.strip().splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert lines[-1] == (
        "error: DataFormatError: survey.csv: 1 cell(s) neither a declared category [1, 2, 3, 4] "
        "nor a missing code ['', '9', 'NA'], first: line 9, column 'Q1': '6' "
        "(rule prepare_table, log logs/data/mine.prepare.log)"
    ), proc.stderr[-3000:]
    screen = proc.stdout + proc.stderr
    assert screen.count("line 9, column 'Q1'") == 1 and "Traceback" not in screen, screen[-3000:]
    # the traceback is kept in the job's log
    assert "Traceback (most recent call last)" in (run / "logs/data/mine.prepare.log").read_text()


def reversed_by_mistake(n=300, seed=5):
    """Five items of one scale from a graded response model; Q3 is written the other way round
    and not declared reverse-keyed."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n)
    rows = ["id,Q1,Q2,Q3,Q4,Q5"]
    for i in range(n):
        codes = [
            int((rng.random(3) < 1 / (1 + np.exp(-1.6 * (theta[i] - np.array([-1.0, 0.0, 1.0]))))).sum())
            for _ in range(5)
        ]
        codes[2] = 3 - codes[2]
        rows.append(f"p{i}," + ",".join(str(c + 1) for c in codes))
    return "\n".join(rows) + "\n"


def test_an_item_keyed_the_wrong_way_is_named_before_and_after_the_fit(tmp_path):
    run = setup_run(
        tmp_path,
        reversed_by_mistake(),
        items=["Q1", "Q2", "Q3", "Q4", "Q5"],
        coding={"integers_from": 1, "n_categories": 4},
    )
    cfg = yaml.safe_load((run / "own.yaml").read_text())
    cfg["studies"]["rb_imputation"] = {"dataset": "mine", "replications": 0}
    cfg["training"] = {"max_steps": 1000, "min_steps": 100}
    cfg["posterior_draws"] = 50
    (run / "own.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(run, "results/rb_imputation/mine/reference/items.csv", "--cores", "1", "--configfile", "own.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    warning = re.compile(
        r"WARNING item 'Q3' \(scale 'all', not declared reverse-keyed\): corrected item-rest "
        r"correlation -0\.\d+ over 300 persons, below 0\.05; .*add it to 'datasets\.mine\.reverse_keyed'"
    )
    log = (run / "logs/data/mine.prepare.log").read_text()
    assert warning.search(log) and warning.search(proc.stderr), log
    assert log.count("WARNING") == 1  # the correctly keyed items are not named
    item_rest = pd.read_csv(run / "data/processed/mine/item_rest.csv")
    assert item_rest.loc[item_rest.flagged, "item"].tolist() == ["Q3"]
    # after the fit: the item's discrimination with the reason to doubt it
    fit_log = (run / "logs/rb_imputation/mine/reference/irt_tables.log").read_text()
    assert re.search(
        r"WARNING results/rb_imputation/mine/reference: item 'Q3' \(scale 'all'\): discrimination "
        r"0\.\d+ .*corrected item-rest correlation in the data is -0\.\d+",
        fit_log,
    ), fit_log
    assert fit_log.count("WARNING") == 1
