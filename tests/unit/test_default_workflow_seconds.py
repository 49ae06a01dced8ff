"""The default workflow case's account of where the jobs' seconds go (benchmarks/cases/
default_workflow.py, ``where_seconds_go``) on a made-up run folder whose answer is known."""

import importlib.util
import json
from pathlib import Path

import pytest

CASE = Path(__file__).resolve().parents[2] / "benchmarks" / "cases" / "default_workflow.py"
spec = importlib.util.spec_from_file_location("default_workflow_case", CASE)
case = importlib.util.module_from_spec(spec)
spec.loader.exec_module(case)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_jobs_seconds_split_into_start_up_compilation_fitting_and_the_rest(tmp_path):
    line = '2026-11-28 18:00:00,000 INFO job seconds {"script": 20.0, "compile": 6.0, "trace": 2.0, "cache_hits": 3}'
    write(tmp_path / "logs/vibo/d/mcar20/mml/block0.log", f"2026-11-28 17:59:00,000 INFO fitting\n{line}\n")
    write(tmp_path / "logs/reports/vibo.log", "a notebook's log: no job seconds line\n")
    # a block of two fits shares its wall time (counted once); a fit outside a block its own
    for rep in (0, 1):
        timing = {"wall_seconds": 2.0, "block_wall_seconds": 4.0}
        write(tmp_path / f"results/vibo/d/mcar20/mml/blocks/block0/rep{rep}/fit.json", json.dumps({"timing": timing}))
    jobs = [{"job": "vibo/d/mcar20/mml/block0", "seconds": 23.0}, {"job": "reports/vibo", "seconds": 7.0}]
    out = case.where_seconds_go(tmp_path, jobs)
    vibo = out["by_group"]["vibo"]
    assert vibo["start_up"] == pytest.approx(3.0) and vibo["compilation"] == pytest.approx(8.0)
    assert vibo["fitting"] == pytest.approx(4.0) and vibo["rest"] == pytest.approx(8.0)
    assert out["by_group"]["reports"]["notebook"] == pytest.approx(7.0)
    assert out["total"]["compilation"] + out["total"]["fitting"] == pytest.approx(12.0)
