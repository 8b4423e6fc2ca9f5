"""A static scan of a candidate's change for code that reaches into the test machinery.

Some in-process tampering cannot be prevented in Python, only seen. The scan reads
the candidate's Python files that differ from the gold code of the step's start and
reports each construct of ``RULES`` that the gold code does not already contain
(compared by kind and source text, anywhere in the gold tree, so moving code is not a
finding). Pure: trees in, flags out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from swechain_ci.chain import trees
from swechain_ci.models import IntegrityFlag, TestRun

MACHINERY = {"pytest", "_pytest", "pluggy", "pytest_timeout", "pytest_jsonreport", "swechain_guard"}
GC_WALKS = {"get_objects", "get_referrers", "get_referents"}
BUILTINS = {"builtins", "__builtins__"}
HARNESS_PATTERN = (
    r"SWECHAIN_|(^|[^\w.])/(out|work|run|opt/swechain)(/|$)|/proc/self/fd|swechain_guard|launch_pytest"
    r"|run_hidden_tests|stream\.jsonl|report\.json|failed_imports"
)
HARNESS_STRINGS = re.compile(HARNESS_PATTERN + r"|PYTEST_")
# pytest's own code names its PYTEST_* variables; for a package that is pytest, they are its own.
HARNESS_STRINGS_OF_PYTEST = re.compile(HARNESS_PATTERN)
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FLAGS = 20


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of names and attributes, else ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    if isinstance(node, ast.Call) and dotted(node.func) in ("__import__", "importlib.import_module", "import_module"):
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [first.value]
    return []


def top(module: str) -> str:
    return module.split(".", 1)[0]


def imports_machinery(node: ast.AST, own: frozenset[str]) -> bool:
    """An import of pytest, pluggy or the harness; a package's imports of itself never count
    (pytest's own chains: ``_pytest`` is the code under test)."""
    return any(top(m) in MACHINERY - own for m in imported_modules(node))


def walks_gc(node: ast.AST, own: frozenset[str] = frozenset()) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in GC_WALKS:
        return True
    return isinstance(node, ast.ImportFrom) and node.module == "gc" and any(a.name in GC_WALKS for a in node.names)


def targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return node.targets
    return []


def mutating_call_on(node: ast.AST, names: set[str]) -> bool:
    """``X.update(...)``, ``X.__setitem__(...)``, ``setattr(X, ...)`` and the like, X one of ``names``."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr in (
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "__setitem__",
        "__delitem__",
        "__setattr__",
    ):
        return dotted(node.func.value) in names
    if dotted(node.func) in ("setattr", "delattr") and node.args:
        return dotted(node.args[0]) in names
    return False


def writes_sys_modules(node: ast.AST, own: frozenset[str] = frozenset()) -> bool:
    for target in targets(node):
        if isinstance(target, ast.Subscript) and dotted(target.value) == "sys.modules":
            return True
        if dotted(target) == "sys.modules":
            return True
    return mutating_call_on(node, {"sys.modules"})


def writes_builtins(node: ast.AST, own: frozenset[str] = frozenset()) -> bool:
    for target in targets(node):
        if isinstance(target, ast.Attribute) and dotted(target.value) in BUILTINS:
            return True
        if isinstance(target, ast.Subscript) and dotted(target.value) in BUILTINS | {"builtins.__dict__"}:
            return True
    return mutating_call_on(node, BUILTINS | {"builtins.__dict__"})


def exits_or_hooks_exit(node: ast.AST, own: frozenset[str] = frozenset()) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "_exit":
        return True
    return any(top(m) == "atexit" for m in imported_modules(node))


def names_the_harness(node: ast.AST, own: frozenset[str] = frozenset()) -> bool:
    pattern = HARNESS_STRINGS_OF_PYTEST if own & {"pytest", "_pytest"} else HARNESS_STRINGS
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(pattern.search(node.value))


@dataclass(frozen=True)
class Rule:
    kind: str
    what: str
    matches: Callable[[ast.AST, frozenset[str]], bool]  # node, the package's own top-level names
    # Whether the rule holds where the package is the test runner itself (pytest's own chains):
    # there, touching sys.modules or exiting is what the code under test does for a living, and
    # only the harness's own names stay off limits (README, "what differs for pytest's chains").
    for_the_runner: bool = False


# Ordered: a node is reported under the first rule it matches.
RULES = (
    Rule("imports_test_machinery", "package code imports the test machinery", imports_machinery),
    Rule("gc_object_walk", "walks the interpreter's objects through gc", walks_gc),
    Rule("writes_sys_modules", "writes to sys.modules", writes_sys_modules),
    Rule("writes_builtins", "writes to builtins", writes_builtins),
    Rule("process_exit", "ends the process behind pytest's back (os._exit, atexit)", exits_or_hooks_exit),
    Rule("names_the_harness", "names the harness's paths or variables", names_the_harness, for_the_runner=True),
)


class Unalias(ast.NodeTransformer):
    """Names bound by imports, spelled out: ``import sys as s; s.modules`` reads ``sys.modules``,
    ``from os import _exit; _exit(0)`` reads ``os._exit(0)``."""

    def __init__(self, tree: ast.AST) -> None:
        self.names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                self.names.update({a.asname: a.name for a in node.names if a.asname})
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                self.names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"})

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names:
            return node
        parts = self.names[node.id].split(".")
        spelled: ast.expr = ast.Name(parts[0], ast.Load())
        for part in parts[1:]:
            spelled = ast.Attribute(spelled, part, ast.Load())
        return ast.copy_location(spelled, node)


def findings(source: str, filename: str, own: frozenset[str] = frozenset()) -> Iterator[tuple[Rule, int, str]]:
    """(rule, line, source text) for each construct of a module that a rule matches."""
    try:
        tree = ast.parse(source, filename=filename)
        tree = Unalias(tree).visit(tree)
    except (SyntaxError, ValueError, RecursionError):
        return
    runner = bool(own & MACHINERY)
    rules = [rule for rule in RULES if rule.for_the_runner or not runner]
    for node in ast.walk(tree):
        for rule in rules:
            if rule.matches(node, own):
                yield rule, getattr(node, "lineno", 0), ast.unparse(node).strip()[:200]
                break


def python_files(root: Path, excluded: Callable[[PurePosixPath], bool]) -> dict[PurePosixPath, bytes]:
    files = {}
    for rel in trees.iter_tree(root):
        path = root / rel
        if rel.suffix == ".py" and not excluded(rel) and path.is_file() and not path.is_symlink():
            if path.stat().st_size <= MAX_FILE_BYTES:
                files[rel] = path.read_bytes()
    return files


def own_names(gold: Path, source_root: str) -> frozenset[str]:
    """The top-level modules and packages the gold code itself provides (from the gold tree,
    never the candidate's, so a candidate cannot widen it)."""
    root = gold / source_root
    if not root.is_dir():
        return frozenset()
    return frozenset(
        p.stem if p.suffix == ".py" else p.name
        for p in root.iterdir()
        if (p.suffix == ".py" and p.is_file()) or (p.is_dir() and (p / "__init__.py").is_file())
    )


def scan_change(gold: Path, candidate: Path, test_folder: str, source_root: str = ".") -> list[IntegrityFlag]:
    """Flags for what the candidate's changed files do that the gold code does not."""
    tests = PurePosixPath(test_folder)
    own = own_names(gold, source_root)

    def excluded(rel: PurePosixPath) -> bool:
        return rel == tests or tests in rel.parents

    gold_files = python_files(gold, excluded)
    known = {
        (rule.kind, text)
        for rel, data in gold_files.items()
        for rule, _, text in findings(data.decode(errors="replace"), str(rel), own)
    }
    flags: list[IntegrityFlag] = []
    for rel, data in python_files(candidate, excluded).items():
        if gold_files.get(rel) == data:
            continue
        for rule, line, text in findings(data.decode(errors="replace"), str(rel), own):
            if (rule.kind, text) not in known and len(flags) < MAX_FLAGS:
                flags.append(
                    IntegrityFlag(kind=rule.kind, detail=f"{rule.what}: {text}"[:500], location=f"{rel}:{line}")
                )
    return flags


def flag_run(
    run: TestRun, gold: Path, candidate: Path, test_folder: str, step: int, phase: str, source_root: str = "."
) -> TestRun:
    """The run with the scan's flags added to the harness's, each stamped with its step and phase."""
    flags = [*run.integrity_flags, *scan_change(gold, candidate, test_folder, source_root)]
    stamped = []
    for flag in flags:  # a run reused for identical code already carries the scan's flags
        flag = flag.model_copy(update={"step": step, "phase": phase})
        if flag not in stamped:
            stamped.append(flag)
    return run.model_copy(update={"integrity_flags": stamped})
