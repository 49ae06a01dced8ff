"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: models < data,
inference, evaluation, imputation < studies; nothing in the library imports Snakemake; no
import circles."""

import os
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import bayesirt
from bayesirt.studies import STUDIES

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


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
    assert c["no import circles"]["type"] == "acyclic_siblings"
    assert c["no import circles"]["ancestors"] == ["bayesirt"]


def lint_toy(tmp_path: Path, modules: dict[str, str]) -> subprocess.CompletedProcess:
    """lint-imports with the library's "no import circles" contract over a toy package ``toy``
    made of ``modules`` (dotted name below toy -> source)."""
    for name, source in {"__init__": "", **modules}.items():
        path = tmp_path / "toy" / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        (path.parent / "__init__.py").touch()
    contract = contracts()["no import circles"]
    config = tmp_path / "toy.toml"
    config.write_text(
        f'[tool.importlinter]\nroot_package = "toy"\n\n[[tool.importlinter.contracts]]\nname = "{contract["name"]}"\n'
        f'type = "{contract["type"]}"\nancestors = ["toy"]\n'
    )
    lint = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run([str(lint), "--config", str(config), "--no-cache"], capture_output=True, text=True, env=env)


def test_the_circle_contract_catches_a_circle_through_a_function_or_a_type_annotation(tmp_path):
    # the contract must see the two ways a circle hid in this package: an import inside a
    # function, and one under TYPE_CHECKING (for an annotation), here one of each, a level apart
    circles = {
        "settings": "def read():\n    from toy.fit import run\n    return run\n",
        "fit": "from toy.settings import read\n\ndef run():\n    return read\n",
        "study.methods": "from toy.study.tables import scored\n",
        "study.tables": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.study.methods import Problem\n"
            "def scored(p: 'Problem'):\n    return p\n"
        ),
    }
    broken = lint_toy(tmp_path / "circles", circles)
    assert broken.returncode != 0, broken.stdout
    assert "No cycles are allowed in toy." in broken.stdout
    assert "No cycles are allowed in toy.study." in broken.stdout
    # the same modules with the shared piece moved into a module both import: kept
    kept = {
        "settings": "def read():\n    return 1\n",
        "fit": "from toy.settings import read\n\ndef run():\n    return read\n",
        "study.problem": "class Problem:\n    pass\n",
        "study.methods": "from toy.study.problem import Problem\nfrom toy.study.tables import scored\n",
        "study.tables": "from toy.study.problem import Problem\n\ndef scored(p: Problem):\n    return p\n",
    }
    fixed = lint_toy(tmp_path / "kept", kept)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "no import circles KEPT" in fixed.stdout


def test_parsing_the_workflow_imports_no_jax():
    # Snakemake parses the workflow on every run and, on a cluster, once more in every job: the
    # modules the rules import at parse time (config checks, conditions, design shapes) must not
    # pull in JAX, TFP or numpyro (about 3 CPU-seconds per parse). Their fitting code lives in
    # separate modules or is imported where it is used.
    rules = ROOT / "workflow" / "rules"
    modules = sorted(
        {
            m
            for path in [*rules.glob("*.smk"), *rules.glob("functions/*.smk")]
            for m in re.findall(r"^from (bayesirt[\w.]*) import (\w+)", path.read_text(), flags=re.M)
        }
    )
    assert len(modules) >= 6, modules
    imports = "; ".join(f"from {package} import {name}" for package, name in modules)
    # the parse-time calls that reach further than the imports: a GRM design's shape
    code = (
        f"import sys; {imports}; from bayesirt.studies.vibo import settings; settings.grm_shape('rwa'); "
        "print(sorted(m for m in ('jax', 'tensorflow_probability', 'numpyro') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", (modules, out)


@pytest.mark.parametrize("study", STUDIES)
def test_a_study_conditions_load_plain_python_and_its_settings_no_jax(study):
    # what Snakemake's parse really loads, package __init__ files included (the import contracts
    # see only the modules' own imports): conditions nothing beyond the standard library,
    # settings (whose checks run at parse time too) no JAX
    heavy = "('jax', 'tensorflow_probability', 'numpyro', 'matplotlib', 'numpy', 'pandas')"
    check = f"print(sorted(m for m in {heavy} if m in sys.modules))"
    code = (
        f"import sys; import bayesirt.studies.{study}.conditions; {check}; "
        f"import bayesirt.studies.{study}.settings; {check}"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]", out
    assert not {"jax", "tensorflow_probability", "numpyro", "matplotlib"} & set(eval(out[1])), out
