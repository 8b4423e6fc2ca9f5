"""The table of integrity kinds (evaluation/integrity_kinds.py): every kind the code emits is a row,
every row is emitted somewhere, and the docs (docs/evaluation.md) show the table as generated."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

import swechain_ci
from swechain_ci.evaluation import integrity_kinds
from swechain_ci.evaluation.integrity_kinds import BY_KIND, KINDS

PACKAGE = Path(swechain_ci.__file__).parent


def literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def emitted_in(source: str, records: bool = True) -> set[str]:
    """Kinds a module spells out: the guard's ``self.flag("kind", ...)``, the supervisor's
    ``{"kind": "...", ...}`` records, the scan's ``Rule("kind", ...)``/``FileRule(...)`` rows, and
    ``IntegrityFlag(kind=NAME)`` with NAME a module constant. ``records``: read the dicts too (the
    harness's; elsewhere a dict's "kind" is another thing, a source's or an alert's)."""
    tree = ast.parse(source)
    constants = {
        target.id: value
        for node in tree.body
        if isinstance(node, ast.Assign) and (value := literal(node.value)) is not None
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    kinds: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and records:
            for key, value in zip(node.keys, node.values, strict=True):
                if literal(key) == "kind" and (text := literal(value)):
                    kinds.add(text)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("flag", "Rule", "FileRule") and node.args and (text := literal(node.args[0])):
                kinds.add(text)
            if name == "IntegrityFlag":
                for keyword in node.keywords:
                    if keyword.arg == "kind":
                        text = literal(keyword.value)
                        if text is None and isinstance(keyword.value, ast.Name):
                            text = constants.get(keyword.value.id)
                        if text:
                            kinds.add(text)
    return kinds


def emitted() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "integrity_kinds.py":
            continue
        for kind in emitted_in(path.read_text(), records="harness" in path.parts):
            found.setdefault(kind, str(path.relative_to(PACKAGE)))
    return found


def test_every_emitted_kind_is_a_row():
    missing = {k: where for k, where in emitted().items() if k not in BY_KIND}
    assert missing == {}, "add them to evaluation/integrity_kinds.py, then run scripts/integrity-table"


def test_every_row_is_emitted_somewhere():
    assert sorted(set(BY_KIND) - set(emitted())) == []


def test_the_scan_sees_each_way_a_kind_is_spelled():
    """The check itself can fail: each spelling, in a module of its own, is found."""
    source = (
        'PREV = "from_a_constant"\n'
        'self.flag("from_the_guard", "detail")\n'
        'flags.append({"kind": "from_the_supervisor", "detail": ""})\n'
        'RULES = (Rule("from_a_rule", "what", check),)\n'
        "IntegrityFlag(kind=PREV, detail='')\n"
    )
    assert emitted_in(source) == {"from_a_constant", "from_the_guard", "from_the_supervisor", "from_a_rule"}


def test_kinds_are_unique_and_each_says_what_is_guaranteed():
    assert len(BY_KIND) == len(KINDS)
    assert all(k.handling in ("guaranteed", "detected") and k.meaning and k.raised_by for k in KINDS)


def test_the_docs_show_the_table_as_generated():
    readme = (REPO / "docs" / "evaluation.md").read_text()
    assert integrity_kinds.with_table(readme) == readme, "run scripts/integrity-table"
    assert integrity_kinds.markdown_table() in readme


@pytest.mark.parametrize(
    ("kind", "location", "import_name", "moot"),
    [
        # pytest's chains: its own plugins and hooks, at the lines of whichever release the code is
        ("plugin_registered", "/work/run/src/_pytest/pythonpath.py", "_pytest", True),
        ("hook_registered", "/work/run/src/_pytest/unittest.py:353", "_pytest", True),
        ("test_machinery_replaced", "/work/run/src/_pytest/legacypath.py", "_pytest", True),
        ("hook_registered", "/work/run/_pytest/assertion/rewrite.py:40", "_pytest", True),  # no source folder
        # elsewhere in the tree, above the package, or out of the run: still findings
        ("hook_registered", "/work/run/src/evil.py:3", "_pytest", False),
        ("hook_registered", "/work/run/a/b/_pytest/hook.py:3", "_pytest", False),
        ("hook_registered", "/work/run/src/_pytest/../evil.py:3", "_pytest", False),
        ("hook_registered", "/tmp/_pytest/hook.py:3", "_pytest", False),
        ("plugin_registered", "/work/run/src/_pytest.py", "_pytest", False),
        # a package that is not pytest: its own hooks are a finding as ever
        ("hook_registered", "/work/run/src/toyslug/core.py:3", "toyslug", False),
        # kinds not about the machinery's origin, or no place or package named
        ("builtins_replaced", "/work/run/src/_pytest/compat.py", "_pytest", False),
        ("test_code_altered", "/work/run/src/_pytest/python.py:10", "_pytest", False),
        ("hook_registered", None, "_pytest", False),
        ("hook_registered", "/work/run/src/_pytest/main.py:3", None, False),
    ],
)
def test_which_findings_are_moot_where_the_package_is_pytest(kind, location, import_name, moot):
    assert integrity_kinds.own_runner_finding(kind, location, import_name) is moot


def test_the_docs_say_which_kinds_are_moot_on_pytests_own_package():
    moot = {k.kind for k in KINDS if k.moot_on_the_runner}
    assert moot == {"plugin_registered", "hook_registered", "test_machinery_replaced"}
    rows = {line.split("`")[1]: line for line in integrity_kinds.markdown_table().splitlines()[2:]}
    assert {kind for kind, row in rows.items() if integrity_kinds.RUNNER_NOTE in row} == moot
