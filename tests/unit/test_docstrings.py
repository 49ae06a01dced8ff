"""The public API of the model and inference layers documents itself in one style (numpy
docstrings, as the API reference renders them): every public module-level function has a
docstring with a Parameters section when it takes arguments and a Returns (or Yields) section
when it returns something. Read from the source (no import), so the check is instant."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("models", "inference")
MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / "src" / "bayesirt" / pkg).rglob("*.py"))


def missing_sections(path: Path) -> list[str]:
    problems = []
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        doc = ast.get_docstring(node) or ""
        arguments = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg != "self"]
        if node.args.vararg or node.args.kwarg:
            arguments.append(node.args.vararg or node.args.kwarg)
        returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
        if not doc:
            problems.append(f"{node.name}: no docstring")
            continue
        if arguments and "Parameters\n----------" not in doc:
            problems.append(f"{node.name}: no Parameters section")
        if not returns_none and "Returns\n-------" not in doc and "Yields\n------" not in doc:
            problems.append(f"{node.name}: no Returns section (annotate -> None if it returns nothing)")
    return problems


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT / "src" / "bayesirt")))
def test_public_functions_have_numpy_docstrings(path):
    assert missing_sections(path) == []
