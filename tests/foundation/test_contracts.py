"""Contracts are defined once: the models' strictness in models.py only, and the host-harness
contract on the standard library alone (it runs on the chain's Python in the test image)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import swechain_ci
from swechain_ci.evaluation.harness import swechain_contract

PACKAGE = Path(swechain_ci.__file__).parent


def strictness_spelled(source: str) -> list[int]:
    """Lines that define a Strict base or set ``extra=`` on a model config themselves."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name in ("Strict", "StrictTyped"):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ConfigDict":
            lines += [node.lineno for k in node.keywords if k.arg == "extra"]
    return lines


def test_models_take_their_strictness_from_models_py():
    spelled = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "models.py" and (lines := strictness_spelled(path.read_text()))
    }
    assert spelled == {}, "derive from swechain_ci.models.Strict (or StrictTyped) instead"


def test_the_check_catches_a_second_strict_base():
    assert strictness_spelled('class Strict(BaseModel):\n    model_config = ConfigDict(extra="forbid")\n') == [1, 2]
    assert strictness_spelled("class A(Strict):\n    model_config = ConfigDict(frozen=True)\n") == []


def test_the_harness_contract_imports_the_standard_library_only():
    tree = ast.parse(Path(swechain_contract.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}
