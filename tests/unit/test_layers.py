"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: models < data,
inference, evaluation, imputation < studies; nothing in the library imports Snakemake."""

import pkgutil
import tomllib
from pathlib import Path

from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

import bayesirt

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def contracts() -> dict:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def test_import_contracts_are_kept():
    # prints every contract as KEPT or BROKEN, with the offending import chains
    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True) == EXIT_STATUS_SUCCESS


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
