"""What hidden test modules import from the package, read from their source on the host.

The harness records which imports failed, but the test process is not trusted to say which
succeeded; the test files themselves say what was asked for. ``prev`` sabotage (a prev that
no longer exports names its own step's tests imported) is judged from these
(scoring/integrity.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from swechain_ci.models import PackageImport


def module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes that run when the module is imported: not inside functions or lambdas."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        pending += list(ast.iter_child_nodes(node))


def imports_of(source: bytes, test_file: str, import_name: str) -> list[PackageImport]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    top = import_name.split(".")[0]
    found = []
    for node in module_level(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == top:
            names = [a.name for a in node.names if a.name != "*"]
            found.append(PackageImport(test_file=test_file, module=node.module or "", names=names))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == top:
                    found.append(PackageImport(test_file=test_file, module=alias.name, names=[]))
    return found


def package_imports(hidden: Path, test_folder: str, import_name: str) -> list[PackageImport]:
    """Every import of the package in the hidden test modules and conftest files, with the test
    file named as the harness names it (relative to the test folder's parent)."""
    root = hidden / test_folder
    if not root.is_dir():
        return []
    parent = PurePosixPath(test_folder).parent
    found: list[PackageImport] = []
    for path in sorted(root.rglob("*.py")):
        rel = PurePosixPath(path.relative_to(hidden).as_posix())
        if not path.is_file() or not (
            rel.name.startswith("test") or rel.name.endswith("_test.py") or rel.name == "conftest.py"
        ):
            continue
        found += imports_of(path.read_bytes(), str(rel.relative_to(parent)), import_name)
    return found
