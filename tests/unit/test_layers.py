"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: models < data,
inference, evaluation, imputation < studies; nothing in the library imports Snakemake."""

import pkgutil
import tomllib
from pathlib import Path

import subprocess
import sys

import bayesirt

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def contracts() -> dict:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def test_import_contracts_are_kept():
    # In a subprocess: import-linter configures logging with dictConfig, which would disable
    # the loggers of every test run after it in this process.
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--config", str(PYPROJECT), "--no-cache"], capture_output=True, text=True)
    # prints every contract as KEPT or BROKEN, with the offending import chains
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_every_module_but_studies_is_kept_out_of_studies():
    # a new top-level module must be added to the contract, or it could import studies unseen
    top = {f"bayesirt.{m.name}" for m in pkgutil.iter_modules(bayesirt.__path__)}
    sources = set(contracts()["only studies import studies"]["source_modules"])
    assert sources == top - {"bayesirt.studies"}


def test_the_contracts_named_in_the_readme_exist():
    c = contracts()
    assert c["nothing in the library imports Snakemake"]["forbidden_modules"] == ["snakemake"]
    assert "bayesirt.data" in c["inference and evaluation take arrays, never files"]["forbidden_modules"]
    assert c["models < data, inference, evaluation, imputation < studies"]["layers"][-1] == "bayesirt.models"
