"""The table of integrity kinds (evaluation/integrity_kinds.py): every kind the code emits is a row,
every row is emitted somewhere, and the docs (docs/evaluation.md) show the table as generated."""

from __future__ import annotations

import ast
from pathlib import Path

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
