"""Tripwires: planted tests that must fail, so that forged results show (README, "Tripwires").

No check inside the test process can be trusted to watch the code it runs. A tripwire needs
none: it is a mutated copy of a hidden test that calls the package, with the expected value
or exception changed, so that the target's own code fails it. The oracle builds a pool of
such copies per step and keeps only those that fail on new gold and do not pass on old gold
(``verified``). Each evaluation of a candidate then plants ``TRIPWIRES_PER_EVALUATION`` of
them, chosen afresh from a secret the container never sees, under names drawn from their
module's own test names, at places among the module's tests. A tripwire that passes means
the results were not the tests' own: the run is void (``judge``). Tests that fail on new gold
in every baseline run and on old gold are tripwires too (``natural``).

Nothing of a tripwire survives in what is stored except the flag naming one that passed:
``judge`` removes their results and rewrites every text of the run (names, line numbers,
pytest's failure sections and counts) as if they had never been there.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import random
import re
import secrets
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain
from swechain_ci.models import BROKEN, IntegrityFlag, Status, StepOracle, TestRun, TripwireCandidate

TRIPWIRE = "tripwire"
# Planted per evaluation, spread over the step's test modules (README: a forger that makes a
# fraction f of failing tests pass, unable to tell tripwires apart, passes none with (1-f)^12).
TRIPWIRES_PER_EVALUATION = 12
# The oracle's pool: mutations per test, per module and per step (each is verified on gold).
POOL_PER_TEST = 2
POOL_PER_MODULE = 12
POOL_PER_STEP = 96
# A parametrized test is copied only with few parameter sets: a tripwire must be cheap.
MAX_PARAMETERS = 4
# Decorators that make a copy useless (skipped, expected to fail) or slow (hypothesis).
UNSUITABLE_DECORATORS = {"skip", "skipif", "xfail", "given", "settings", "example", "flaky"}
# Exception types a test is made to expect instead of its own: ones no honest slip raises.
STAND_IN_EXCEPTIONS = ("OverflowError", "FileNotFoundError", "IsADirectoryError", "ProcessLookupError")
PASSING = {Status.passed, Status.xpassed}


# -- mutations ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """One token of a test replaced: a single-line span in UTF-8 byte columns, as ast gives them."""

    line: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    sites: Callable[[ast.AST, list[bytes], random.Random], Edit | None]


def token(node: ast.AST, lines: list[bytes]) -> str | None:
    if node.lineno != node.end_lineno:  # type: ignore[attr-defined]
        return None
    return lines[node.lineno - 1][node.col_offset : node.end_col_offset].decode(errors="replace")  # type: ignore[attr-defined]


def edit_of(node: ast.AST, text: str) -> Edit:
    return Edit(node.lineno, node.col_offset, node.end_col_offset, text)  # type: ignore[attr-defined]


def changed_text(node: ast.AST, lines: list[bytes], rng: random.Random) -> Edit | None:
    """A str or bytes literal with one letter or digit changed to another of its kind."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
        return None
    literal = token(node, lines)
    if literal is None:
        return None
    positions = [i for i, c in enumerate(literal) if c.isascii() and c.isalnum() and literal[i - 1 : i] != "\\"]
    rng.shuffle(positions)
    for i in positions:
        alphabet = next(a for a in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if literal[i] in a)
        new = literal[:i] + rng.choice([c for c in alphabet if c != literal[i]]) + literal[i + 1 :]
        try:
            value = ast.literal_eval(new)
        except (ValueError, SyntaxError):
            continue
        if type(value) is type(node.value) and value != node.value and len(value) == len(node.value):
            return edit_of(node, new)
    return None


def changed_number(node: ast.AST, lines: list[bytes], rng: random.Random) -> Edit | None:
    if not isinstance(node, ast.Constant) or token(node, lines) is None:
        return None
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float):  # True + 2 is not a boolean
        return None
    return edit_of(node, repr(value + rng.randint(2, 9)))


def compared_constant(node: ast.AST) -> ast.AST | None:
    """The constant side of ``assert <expr> == <constant>`` (either way round)."""
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
        return None
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Constant) and not isinstance(left, ast.Constant):
        return right
    if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
        return left
    return None


def unittest_constant(node: ast.AST) -> ast.AST | None:
    """The constant argument of ``self.assertEqual(<expr>, <constant>)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in ("assertEqual", "assertEquals") or len(node.args) < 2:
        return None
    constants = [a for a in node.args[:2] if isinstance(a, ast.Constant)]
    return constants[0] if len(constants) == 1 else None


def expected_text(node, lines, rng):
    constant = compared_constant(node)
    return changed_text(constant, lines, rng) if constant is not None else None


def expected_number(node, lines, rng):
    constant = compared_constant(node)
    if constant is None or isinstance(constant.value, bool):  # type: ignore[attr-defined]
        return None
    return changed_number(constant, lines, rng)


def contained_text(node, lines, rng):
    """``assert "<text>" in <expr>``."""
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
        return None
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.In) or isinstance(test.comparators[0], ast.Constant):
        return None
    return changed_text(test.left, lines, rng)


def raised_type(node: ast.AST) -> ast.AST | None:
    """E in ``pytest.raises(E, ...)`` or ``self.assertRaises(E, ...)``, where E is a plain name or attribute."""
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("raises", "assertRaises"):
        return None
    expected = node.args[0]
    return expected if isinstance(expected, (ast.Name, ast.Attribute)) else None


# What pytest lets end the whole session when a test raises it (pytest.exit's Exit, KeyboardInterrupt):
# a copy expecting another type would let it escape and stop the run, every later test unrun.
SESSION_ENDING = {"Exit", "KeyboardInterrupt", "exit.Exception", "BaseException"}


def expected_exception(node, lines, rng):
    expected = raised_type(node)
    if expected is None or token(expected, lines) is None:
        return None
    if any(ast.unparse(expected) == name or ast.unparse(expected).endswith("." + name) for name in SESSION_ENDING):
        return None
    choices = [e for e in STAND_IN_EXCEPTIONS if e != token(expected, lines)]
    return edit_of(expected, rng.choice(choices))


def unittest_equal(node, lines, rng):
    constant = unittest_constant(node)
    if constant is None or isinstance(constant.value, bool):  # type: ignore[attr-defined]
        return None
    return changed_text(constant, lines, rng) or changed_number(constant, lines, rng)


# The rules, in the order a site is tried; one site yields at most one edit (the first rule's).
MUTATIONS: tuple[Mutation, ...] = (
    Mutation("expected_text", "assert <call> == 'text': one letter or digit of the text changed", expected_text),
    Mutation("expected_number", "assert <call> == 3: the number moved by 2 to 9", expected_number),
    Mutation("contained_text", "assert 'text' in <call>: one letter or digit of the text changed", contained_text),
    Mutation("expected_exception", "pytest.raises(E): another exception type expected", expected_exception),
    Mutation("unittest_equal", "self.assertEqual(<call>, constant): the constant changed", unittest_equal),
)


# -- the pool (oracle time) -----------------------------------------------------------------


def test_modules(hidden: Path, test_folder: str) -> list[PurePosixPath]:
    root = hidden / test_folder
    found = {p for pattern in ("test_*.py", "*_test.py") for p in root.rglob(pattern)} if root.is_dir() else set()
    return sorted(PurePosixPath(p.relative_to(hidden).as_posix()) for p in found if p.is_file())


def package_names(tree: ast.Module, import_name: str) -> set[str]:
    """Names the module binds to the package or to things imported from it."""
    top = import_name.split(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == top:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == top:
            names |= {alias.asname or alias.name for alias in node.names if alias.name != "*"}
    return names


def decorator_name(node: ast.AST) -> str:
    while isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def suitable(function: ast.FunctionDef, package: set[str]) -> bool:
    """A plain test that calls the package, cheap to copy, and whose copy would run."""
    if not function.name.startswith("test"):
        return False
    parametrized = 0
    for decorator in function.decorator_list:
        name = decorator_name(decorator)
        if name in UNSUITABLE_DECORATORS:
            return False
        if name == "parametrize":
            values = decorator.args[1] if isinstance(decorator, ast.Call) and len(decorator.args) > 1 else None
            if not isinstance(values, (ast.List, ast.Tuple)) or len(values.elts) > MAX_PARAMETERS or parametrized:
                return False
            parametrized += 1
    body = ast.Module(body=function.body, type_ignores=[])
    used = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
    # A copy under another name must not depend on its own name.
    return bool(used & package) and function.name not in used


def test_functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    yield f"{node.name}.{member.name}", member


def final_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a test can end on, where a failure skips nothing after it: the body's last
    statement, and into its ``with`` body and ``if`` branches. A copy that fails earlier would
    skip the rest of the test (a ``ctx.pop()``, a setting put back) and leak its state into the
    next test: an honest candidate would lose a test to the tripwire beside it."""
    if not body:
        return
    last = body[-1]
    yield last
    if isinstance(last, ast.With | ast.AsyncWith):
        yield from final_statements(last.body)
    elif isinstance(last, ast.If):
        yield from final_statements(last.body)
        yield from final_statements(last.orelse)


def own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """A statement's nodes without those of the statements it holds (a ``with``'s items, an
    ``if``'s test); nothing of a loop, a ``try`` or a definition, whose failure would skip what
    follows in them (or that does not run at all)."""
    if isinstance(statement, ast.With | ast.AsyncWith):
        for item in statement.items:
            yield from ast.walk(item)
    elif isinstance(statement, ast.If):
        yield from ast.walk(statement.test)
    elif isinstance(statement, ast.Assert | ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return):
        yield from ast.walk(statement)


def first_line(node: ast.FunctionDef | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def apply(lines: list[bytes], first: int, last: int, edit: Edit) -> str:
    copied = list(lines[first - 1 : last])
    at = edit.line - first
    copied[at] = copied[at][: edit.start] + edit.text.encode() + copied[at][edit.end :]
    return b"\n".join(copied).decode()


def module_candidates(source: bytes, rel: PurePosixPath, import_name: str) -> list[TripwireCandidate]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.split(b"\n")
    package = package_names(tree, import_name)
    found: list[TripwireCandidate] = []
    for qualname, function in test_functions(tree):
        if not suitable(function, package):
            continue
        rng = random.Random(hashlib.sha256(f"{rel}::{qualname}".encode()).digest())
        edits: list[tuple[str, Edit]] = []
        for node in (n for statement in final_statements(function.body) for n in own_nodes(statement)):
            for mutation in MUTATIONS:
                if (made := mutation.sites(node, lines, rng)) is not None:
                    edits.append((mutation.name, made))
                    break
        first, last = first_line(function), function.end_lineno or function.lineno
        for rule, made in rng.sample(edits, min(POOL_PER_TEST, len(edits))):
            text = apply(lines, first, last, made)
            found.append(
                TripwireCandidate(
                    test_file=str(rel), qualname=qualname, rule=rule, first_line=first, last_line=last, text=text
                )
            )
    rng = random.Random(hashlib.sha256(str(rel).encode()).digest())
    return sorted(rng.sample(found, min(POOL_PER_MODULE, len(found))), key=lambda c: (c.first_line, c.rule))


def pool(hidden: Path, test_folder: str, import_name: str) -> list[TripwireCandidate]:
    """Every tripwire candidate of a version's hidden tests (deterministic: the oracle verifies them)."""
    found = [
        c
        for rel in test_modules(hidden, test_folder)
        for c in module_candidates((hidden / rel).read_bytes(), rel, import_name)
    ]
    rng = random.Random(hashlib.sha256(b"pool").digest())
    chosen = rng.sample(found, min(POOL_PER_STEP, len(found)))
    return sorted(chosen, key=lambda c: (c.test_file, c.first_line, c.rule))


# -- planting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planted:
    name: str  # the copy's function name in this evaluation
    origin: str  # the original's node id, e.g. tests/test_x.py::TestA::test_y
    rule: str
    test_file: str
    key: str  # which candidate: the digest of its text


def candidate_key(candidate: TripwireCandidate) -> str:
    return hashlib.sha256(f"{candidate.test_file}\0{candidate.qualname}\0{candidate.text}".encode()).hexdigest()


@dataclass(frozen=True)
class Insert:
    after: int  # an original line number: the block comes right after it
    lines: int  # how many lines the block (with its blank lines) takes
    origin_first: int  # the original's first line (a line inside the copy maps to the original's)
    lead: int  # blank lines before the copy's own text


@dataclass
class Planting:
    """The modules of one evaluation with their tripwires, and how to take them out again."""

    files: dict[str, str] = field(default_factory=dict)
    planted: list[Planted] = field(default_factory=list)
    inserts: dict[str, list[Insert]] = field(default_factory=dict)
    natural: list[str] = field(default_factory=list)

    @property
    def names(self) -> dict[str, Planted]:
        return {p.name: p for p in self.planted}

    def original_line(self, test_file: str, line: int) -> int:
        shift = 0
        for insert in sorted(self.inserts.get(test_file, []), key=lambda i: i.after):
            start = insert.after + shift  # the block's lines are start+1 .. start+lines
            if line <= start:
                break
            if line <= start + insert.lines:
                return insert.origin_first + max(0, line - start - insert.lead - 1)
            shift += insert.lines
        return line - shift


def bindings(statement: ast.stmt) -> set[str]:
    """Names a statement binds at its level (module or class body)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def needed_at_definition(function: ast.FunctionDef) -> set[str]:
    """Names a ``def`` evaluates when it runs: its decorators and default values."""
    parts: list[ast.expr | None] = [*function.decorator_list, *function.args.defaults, *function.args.kw_defaults]
    return {n.id for part in parts if part is not None for n in ast.walk(part) if isinstance(n, ast.Name)}


def places(body: list[ast.stmt], needed: set[str], known: set[str]) -> list[int]:
    """Lines after which a copy can go in ``body``: after a def or class, or before the first
    one, where every name its definition needs is already bound."""
    bound = set(known) | set(dir(builtins))
    found = []
    defs = [i for i, s in enumerate(body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    for index, statement in enumerate(body):
        bound |= bindings(statement)
        before_first = defs and index + 1 == defs[0]
        if (index in defs or before_first) and needed <= bound:
            found.append(statement.end_lineno or statement.lineno)
    return found


def vocabulary(tree: ast.Module) -> list[str]:
    words = {w for qualname, _ in test_functions(tree) for w in qualname.split(".")[-1].split("_")[1:] if w}
    return sorted(words)


def new_name(origin: str, words: list[str], taken: set[str], rng: random.Random) -> str:
    """A name like the module's own: the original's first word(s), then words of its other tests."""
    own = origin.split("_")[1:] or ["case"]
    for _ in range(50):
        head = own[: rng.randint(1, min(2, len(own)))]
        others = [w for w in words if w not in head]
        tail = rng.sample(others, min(len(others), rng.randint(1, 2)))
        name = "_".join(["test", *head, *tail])
        if name not in taken and name != origin:
            return name
    return "_".join(["test", *own, secrets.choice(words or ["case"]), str(rng.randint(2, 9))])


def suite_test_names(hidden: Path, test_folder: str) -> set[str]:
    pattern = re.compile(rb"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
    return {
        m.decode() for rel in test_modules(hidden, test_folder) for m in pattern.findall((hidden / rel).read_bytes())
    }


def plant(
    hidden: Path,
    test_folder: str,
    candidates: list[TripwireCandidate],
    rng: random.Random,
    count: int | None = TRIPWIRES_PER_EVALUATION,
    natural: list[str] | None = None,
    canonical_names: bool = False,
) -> Planting:
    """``count`` candidates (all with None), spread over modules round-robin, each at a random
    valid place of its module or class under a plausible new name. ``canonical_names`` (the
    oracle's verification) names copies ``test_tripwire_<n>`` and keeps every candidate."""
    by_module: dict[str, list[TripwireCandidate]] = {}
    for candidate in candidates:
        by_module.setdefault(candidate.test_file, []).append(candidate)
    modules = sorted(by_module)
    rng.shuffle(modules)
    for listed in by_module.values():
        rng.shuffle(listed)
    chosen: list[TripwireCandidate] = []
    origins: set[tuple[str, str]] = set()
    wanted = len(candidates) if count is None else count
    while len(chosen) < wanted and any(by_module.values()):
        for module in modules:
            while by_module[module] and len(chosen) < wanted:
                candidate = by_module[module].pop()
                if count is None or (candidate.test_file, candidate.qualname) not in origins:
                    origins.add((candidate.test_file, candidate.qualname))
                    chosen.append(candidate)
                    break
    planting = Planting(natural=list(natural or []))
    taken = suite_test_names(hidden, test_folder)
    for module in sorted({c.test_file for c in chosen}):
        planted_text = plant_module(
            hidden, module, [c for c in chosen if c.test_file == module], rng, taken, planting, canonical_names
        )
        if planted_text is not None:
            planting.files[module] = planted_text
    return planting


def plant_module(
    hidden: Path,
    module: str,
    chosen: list[TripwireCandidate],
    rng: random.Random,
    taken: set[str],
    planting: Planting,
    canonical_names: bool,
) -> str | None:
    source = (hidden / module).read_bytes()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    try:
        lines = source.decode().split("\n")
    except UnicodeDecodeError:
        return None
    functions = dict(test_functions(tree))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    words = vocabulary(tree)
    module_bound_before = lambda line: {  # noqa: E731 - names bound at module level before ``line``
        name for s in tree.body if (s.end_lineno or s.lineno) < line for name in bindings(s)
    }
    inserts: list[tuple[Insert, list[str], Planted]] = []
    used_places: set[int] = set()
    for candidate in chosen:
        function = functions.get(candidate.qualname)
        if function is None or first_line(function) != candidate.first_line:
            continue  # the hidden file is not the one the oracle saw
        owner, _, base = candidate.qualname.rpartition(".")
        needed = needed_at_definition(function)
        if owner:
            klass = classes[owner]
            options = places(klass.body, needed, module_bound_before(klass.lineno))
            separator = 1
        else:
            options = places(tree.body, needed, set())
            separator = 2
        options = [p for p in options if p not in used_places] or options
        if not options:
            continue
        after = rng.choice(options)
        used_places.add(after)
        name = f"test_tripwire_{len(taken)}" if canonical_names else new_name(base, words, taken, rng)
        taken.add(name)
        text = rename(candidate.text, base, name, function.lineno - candidate.first_line)
        block = [""] * separator + text.split("\n")
        origin = f"{module}::{candidate.qualname.replace('.', '::')}"
        inserts.append(
            (
                Insert(after=after, lines=len(block), origin_first=candidate.first_line, lead=separator),
                block,
                Planted(name=name, origin=origin, rule=candidate.rule, test_file=module, key=candidate_key(candidate)),
            )
        )
    if not inserts:
        return None
    for insert, block, _ in sorted(inserts, key=lambda i: i[0].after, reverse=True):
        lines[insert.after : insert.after] = block
    planted_source = "\n".join(lines)
    try:
        ast.parse(planted_source)
    except SyntaxError:
        return None
    planting.inserts[module] = [i for i, _, _ in inserts]
    planting.planted += [p for _, _, p in inserts]
    return planted_source


def rename(text: str, old: str, new: str, def_offset: int) -> str:
    lines = text.split("\n")
    lines[def_offset] = re.sub(rf"\bdef\s+{re.escape(old)}\b", f"def {new}", lines[def_offset], count=1)
    return "\n".join(lines)


def fresh_rng() -> random.Random:
    """A generator seeded from the host's secret randomness; the seed is never stored or sent."""
    return random.Random(secrets.token_bytes(32))


def for_step(chain: Chain, step: StepOracle) -> Planting:
    """The tripwires of one evaluation of a candidate at ``step``: chosen, named and placed afresh."""
    hidden = sources.materialize(chain, step.next_version).hidden
    return plant(hidden, chain.config.test_folder, step.tripwires, fresh_rng(), natural=step.natural_tripwires)


# -- judging (after the run) ----------------------------------------------------------------


def function_name(nodeid: str) -> str:
    return nodeid.split("::")[-1].split("[")[0]


SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
COLLECTED = re.compile(r"\bcollected (\d+) items?\b")


def scrub(text: str, planting: Planting, planted_statuses: dict[str, Status], order: list[str] | None = None) -> str:
    """``text`` (pytest's output, a traceback, a message) as if no tripwire had been planted;
    ``order``, every test in the order it ran, lets pytest's progress lines lose theirs too."""
    if not text or not planting.planted:
        return text
    names = planting.names
    name_pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
    kept, dropping = [], False
    for line in text.split("\n"):
        header = SECTION.match(line)
        if header:
            dropping = bool(name_pattern.search(header.group(1)))
        elif line.startswith("="):
            dropping = False
        if not dropping:
            kept.append(line)
    text = "\n".join(kept)
    text = name_pattern.sub(lambda m: function_name(names[m.group(1)].origin), text)
    for test_file in planting.inserts:
        where = re.compile(rf"((?:\S*/)?{re.escape(test_file)}:)(\d+)")

        def original(match: re.Match[str], planted_in: str = test_file) -> str:
            return match.group(1) + str(planting.original_line(planted_in, int(match.group(2))))

        text = where.sub(original, text)
    text = uncounted(text, planted_statuses)
    return without_progress(text, set(planted_statuses), order) if order else text


PROGRESS = re.compile(r"^(\S+\.py) ([.FEsxX]+)\s+\[\s*\d+%\]$")


def without_progress(text: str, planted: set[str], order: list[str]) -> str:
    """pytest's progress lines (one character per test, then the share done) without the
    tripwires' characters, when every line can be matched to its file's tests; else as they are."""
    lines = text.split("\n")
    found = [(i, m) for i, line in enumerate(lines) if (m := PROGRESS.match(line))]
    by_file: dict[str, list[str]] = {}
    for test in order:
        by_file.setdefault(test.split("::")[0], []).append(test)
    if not found or any(len(m.group(2)) != len(by_file.get(m.group(1), [])) for _, m in found):
        return text
    total = sum(1 for t in order if t not in planted)
    done = 0
    for index, match in found:
        tests = by_file[match.group(1)]
        kept = "".join(c for c, t in zip(match.group(2), tests, strict=True) if t not in planted)
        done += len(kept)
        left, right = f"{match.group(1)} {kept}", f"[{done * 100 // max(total, 1):3d}%]"
        width = len(lines[index])  # the terminal's, as pytest filled it
        lines[index] = left + " " * max(width - len(left) - len(right), 1) + right
    return "\n".join(lines)


def pytest_rule(title: str, width: int = 80) -> str:
    """A title between ``=`` rules, exactly as pytest's terminal writer centres it."""
    fill = "=" * max((width - len(title) - 2) // 2, 1)
    line = f"{fill} {title} {fill}"
    return line + "=" if len(line) + 1 <= width else line


def uncounted(text: str, planted_statuses: dict[str, Status]) -> str:
    """pytest's "collected N items" and its summary line without the tripwires' share, and its
    FAILURES heading gone when only tripwires had failed."""
    if not planted_statuses:
        return text
    by_word = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
    for status in planted_statuses.values():
        by_word[status.value] += 1

    def word(counted: str) -> str:
        return "error" if counted.startswith("error") else counted

    def summary_line(line: str) -> str:
        if not (line.startswith("=") and COUNT.search(line)):
            return COLLECTED.sub(lambda m: f"collected {int(m.group(1)) - len(planted_statuses)} items", line)
        title = line.strip("= ")
        title = COUNT.sub(lambda m: f"{int(m.group(1)) - by_word[word(m.group(2))]} {m.group(2)}", title)
        title = re.sub(r"\b0 (passed|failed|errors?|skipped|xfailed|xpassed)(, )?", "", title).replace(", in ", " in ")
        return pytest_rule(title, max(len(line), 80))

    lines = [summary_line(line) for line in text.split("\n")]
    for index, line in enumerate(lines):
        following = next((n for n in lines[index + 1 :] if n.strip()), "")
        if line.startswith("=") and " FAILURES " in line and not SECTION.match(following):
            del lines[index]
            break
    return "\n".join(lines)


def judge(run: TestRun, planting: Planting) -> TestRun:
    """The run without its tripwires; void (every test an error, a ``tripwire`` flag, no Fix)
    if one passed."""
    names = planting.names
    planted = {t: s for t, s in run.statuses.items() if function_name(t) in names}
    tripped = [t for t, s in planted.items() if s in PASSING]
    tripped += [t for t in planting.natural if run.statuses.get(t) in PASSING]

    def clean(text: str) -> str:
        return scrub(text, planting, planted, list(run.statuses))

    flags = [
        f.model_copy(update={"detail": clean(f.detail)[:500], "location": clean(f.location) if f.location else None})
        for f in run.integrity_flags
    ]
    execution_error = clean(run.execution_error) if run.execution_error else None
    if tripped and not run.execution_error:
        shown = []
        for test in tripped[:5]:
            if function_name(test) in names:
                planted_test = names[function_name(test)]
                shown.append(f"{test} (a copy of {planted_test.origin}, {planted_test.rule})")
            else:
                shown.append(f"{test} (fails on new and old gold)")
        detail = f"{len(tripped)} planted test(s) that the target's own code fails passed: " + "; ".join(shown)
        flags.append(IntegrityFlag(kind=TRIPWIRE, detail=detail[:500], location=tripped[0].split("::")[0]))
        execution_error = "a tripwire passed: the run's results are not the tests' own (integrity flag tripwire)"
    return run.model_copy(
        update={
            "statuses": {t: s for t, s in run.statuses.items() if t not in planted},
            "error_messages": {t: clean(m) for t, m in run.error_messages.items() if t not in planted},
            "collection_errors": {c: clean(e) for c, e in run.collection_errors.items()},
            "failed_imports": [i.model_copy(update={"error": clean(i.error)}) for i in run.failed_imports],
            "collected": None if run.collected is None else run.collected - len(planted),
            "output_tail": clean(run.output_tail),
            "integrity_flags": flags,
            "execution_error": execution_error,
        }
    )


# -- the oracle's verification --------------------------------------------------------------


def verified(
    planting: Planting,
    new_gold_runs: list[TestRun],
    old_gold_run: TestRun,
    new_gold: dict[str, Status],
    candidates: list[TripwireCandidate],
) -> list[TripwireCandidate]:
    """The candidates whose copies failed in every new-gold run with the whole pool planted and
    passed in none of the old-gold one, from modules whose own tests kept their new-gold status."""
    by_name = {p.name: p for p in planting.planted}
    disturbed = {
        t.split("::")[0]
        for run in new_gold_runs
        for t, s in run.statuses.items()
        if function_name(t) not in by_name and t in new_gold and new_gold[t] != s
    }
    ok: dict[str, bool] = {}
    for run in new_gold_runs:
        if run.execution_error:
            return []
        for test, status in run.statuses.items():
            if (name := function_name(test)) in by_name:
                ok[name] = ok.get(name, True) and status == Status.failed
    for test, status in old_gold_run.statuses.items():
        if (name := function_name(test)) in by_name and status in PASSING:
            ok[name] = False
    keys = {p.key: ok.get(p.name, False) for p in planting.planted}
    return [c for c in candidates if c.test_file not in disturbed and keys.get(candidate_key(c), False)]


def natural_tripwires(
    new_gold_runs: list[TestRun], old_gold: dict[str, Status], passed_somewhere: frozenset[str] = frozenset()
) -> list[str]:
    """Tests that fail (not error, not skip) in every new-gold run and do not pass on old gold, and
    that no version's own suite passes (``passed_somewhere``): honest code, an older version's
    among them, could pass those."""
    if not new_gold_runs:
        return []
    tests = set(new_gold_runs[0].statuses) - passed_somewhere
    return sorted(
        t
        for t in tests
        if all(r.statuses.get(t) == Status.failed for r in new_gold_runs) and old_gold.get(t, Status.failed) in BROKEN
    )
