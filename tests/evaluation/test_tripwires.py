"""Tripwires (evaluation/tripwires.py): the mutation table row by row, planting, judging, verifying."""

from __future__ import annotations

import ast
import random
import sys
import types
import unittest
from pathlib import Path

import pytest

from swechain_ci.evaluation import tripwires
from swechain_ci.models import IntegrityFlag, Status, TripwireCandidate
from swechain_ci.models import TestRun as HiddenRun

P, F, E = Status.passed, Status.failed, Status.error

# A stand-in package: what the snippets' tests call.
FAKE = types.ModuleType("fakepkg")
FAKE.double = lambda x: 2 * x
FAKE.name = lambda: "hello-world"


def _fail():
    raise ValueError("no")


FAKE.fail = _fail

HEAD = "import unittest\n\nimport pytest\n\nfrom fakepkg import double, fail, name\n\n\n"
# One snippet per row of MUTATIONS: a test that passes on the package and has exactly that site.
SNIPPETS = {
    "expected_text": 'def test_name():\n    assert name() == "hello-world"\n',
    "expected_number": "def test_double():\n    assert double(2) == 4\n",
    "contained_text": 'def test_name_has_world():\n    assert "world" in name()\n',
    "expected_exception": "def test_fail():\n    with pytest.raises(ValueError):\n        fail()\n",
    "unittest_equal": "class TestDouble(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(2), 4)\n",
}


def test_every_row_of_the_table_has_a_snippet():
    assert [m.name for m in tripwires.MUTATIONS] == list(SNIPPETS)


def run_function(source: str, qualname: str) -> None:
    """Define ``source`` against the fake package and call the test ``qualname``."""
    sys.modules["fakepkg"] = FAKE
    try:
        namespace: dict = {}
        exec(compile(HEAD + source, "<test>", "exec"), namespace)
        owner, _, name = qualname.rpartition(".")
        if owner:
            case = namespace[owner](name)
            getattr(case, name)()
        else:
            namespace[name]()
    finally:
        del sys.modules["fakepkg"]


@pytest.mark.parametrize("rule", list(SNIPPETS))
def test_each_rule_makes_a_copy_that_fails_where_the_original_passes(rule):
    source = HEAD + SNIPPETS[rule]
    found = tripwires.module_candidates(source.encode(), Path("tests/test_x.py"), "fakepkg")
    assert [c.rule for c in found] == [rule]
    candidate = found[0]
    original = "\n".join(source.split("\n")[candidate.first_line - 1 : candidate.last_line])
    assert candidate.text != original
    run_function(SNIPPETS[rule], candidate.qualname)  # the original passes
    copy = candidate.text if "." not in candidate.qualname else SNIPPETS[rule].replace(original.split("\n", 1)[1], "")
    if "." in candidate.qualname:  # a method: the copy goes into its class
        copy = SNIPPETS[rule].split("\n", 1)[0] + "\n" + candidate.text + "\n"
    with pytest.raises((AssertionError, ValueError, unittest.TestCase.failureException)):
        run_function(copy, candidate.qualname)
    # exactly one token changed
    changed = [(a, b) for a, b in zip(original.split("\n"), candidate.text.split("\n"), strict=True) if a != b]
    assert len(changed) == 1


@pytest.mark.parametrize(
    "source",
    [
        "def test_no_package():\n    assert 1 + 1 == 2\n",  # calls nothing of the package
        '@pytest.mark.skip\ndef test_skipped():\n    assert name() == "x"\n',
        '@pytest.mark.xfail\ndef test_expected_to_fail():\n    assert name() == "x"\n',
        "@given(st.integers())\ndef test_property(n):\n    assert double(n) == 2\n",
        "@pytest.mark.parametrize('n', [1, 2, 3, 4, 5])\ndef test_many(n):\n    assert double(n) == 7\n",
        "def test_bools():\n    assert bool(name()) == True\n",  # a flipped bool is what honest slips give
        "def test_names_itself():\n    assert test_names_itself.__name__ == name()\n",
        'def helper_not_a_test():\n    assert name() == "hello-world"\n',
        # An escaped Exit or KeyboardInterrupt ends pytest's session (pytest-8's test_assertion.py).
        "def test_exits():\n    with pytest.raises(outcomes.Exit):\n        fail()\n",
        "def test_exits_too():\n    with pytest.raises(pytest.exit.Exception):\n        fail()\n",
        "def test_interrupted():\n    with pytest.raises(KeyboardInterrupt):\n        fail()\n",
    ],
)
def test_unsuitable_tests_give_no_candidate(source):
    assert tripwires.module_candidates((HEAD + source).encode(), Path("tests/test_x.py"), "fakepkg") == []


@pytest.mark.parametrize(
    "source",
    [
        # a failure at the site would skip the pop: the next test would see the pushed state
        'def test_pushed():\n    STATE.append(1)\n    assert name() == "hello-world"\n    STATE.pop()\n',
        'def test_in_with():\n    with open("f"):\n        assert name() == "hello-world"\n        STATE.pop()\n',
        'def test_in_loop():\n    for _ in range(2):\n        assert name() == "hello-world"\n',
        'def test_in_try():\n    try:\n        assert name() == "hello-world"\n    finally:\n        STATE.pop()\n',
        "def test_raises_then_more():\n    with pytest.raises(ValueError):\n        fail()\n    STATE.pop()\n",
        'def test_defines():\n    def inner():\n        assert name() == "hello-world"\n',
    ],
)
def test_only_a_site_where_the_test_ends_is_mutated(source):
    # A copy fails at its site; whatever would have run after it (a context popped, a setting
    # put back) would leak into the next test and cost an honest candidate that test.
    assert tripwires.module_candidates((HEAD + source).encode(), Path("tests/test_x.py"), "fakepkg") == []


@pytest.mark.parametrize(
    "source",
    [
        'def test_setup_first():\n    STATE.append(1)\n    assert name() == "hello-world"\n',
        'def test_last_in_with():\n    with open("f"):\n        STATE.pop()\n        assert name() == "hello-world"\n',
        'def test_branch():\n    if STATE:\n        STATE.pop()\n    else:\n        assert name() == "hello-world"\n',
        "def test_raises_last():\n    STATE.pop()\n    with pytest.raises(ValueError):\n        fail()\n",
    ],
)
def test_a_site_in_the_last_statement_run_is_mutated(source):
    found = tripwires.module_candidates((HEAD + source).encode(), Path("tests/test_x.py"), "fakepkg")
    assert len(found) == 1


def test_candidates_are_deterministic():
    source = (HEAD + SNIPPETS["expected_text"] + "\n\n" + SNIPPETS["expected_number"]).encode()
    first = tripwires.module_candidates(source, Path("tests/test_x.py"), "fakepkg")
    assert first == tripwires.module_candidates(source, Path("tests/test_x.py"), "fakepkg")


# ------------------------------------------------------------------------------------ planting

MODULE = '''"""Tests."""

import pytest

from fakepkg import double, name

ONE = 1


def test_name_is_slug():
    assert name() == "hello-world"


@pytest.mark.parametrize("n", [ONE, 2])
def test_double_small(n):
    assert double(n) == 2 * n
    assert double(2) == 4


class TestThings:
    def test_double_two(self):
        assert double(2) == 4

    def test_name_words(self):
        assert "world" in name()
'''


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_things.py").write_text(MODULE)
    (tmp_path / "tests" / "test_other.py").write_text("def test_other_thing():\n    assert True\n")
    return tmp_path


def test_planting_keeps_the_module_and_adds_copies_under_plausible_new_names(hidden):
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    assert {c.qualname for c in pool} == {
        "test_name_is_slug",
        "test_double_small",
        "TestThings.test_double_two",
        "TestThings.test_name_words",
    }
    planting = tripwires.plant(hidden, "tests", pool, random.Random(7))
    text = planting.files["tests/test_things.py"]
    ast.parse(text)
    assert len(planting.planted) == 4  # one per original test while there are fewer than k
    words = {
        w
        for line in MODULE.split("\n")
        if "def test_" in line
        for w in line.split("def test_")[1].split("(")[0].split("_")
    }
    existing = {"test_name_is_slug", "test_double_small", "test_double_two", "test_name_words", "test_other_thing"}
    for planted in planting.planted:
        assert planted.name.startswith("test_") and planted.name not in existing
        assert set(planted.name.split("_")[1:]) <= words
        assert f"def {planted.name}(" in text
    # every original line is still there, in order
    remaining = iter(text.split("\n"))
    assert all(any(line == other for other in remaining) for line in MODULE.split("\n"))
    # a copy of the parametrized test comes after ONE, which its decorator needs
    copy = next(p for p in planting.planted if p.origin.endswith("::test_double_small"))
    assert text.index(f"def {copy.name}(") > text.index("ONE = 1")
    # a method's copy stays in its class
    method = next(p for p in planting.planted if p.origin.endswith("TestThings::test_double_two"))
    tree = ast.parse(text)
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert method.name in {f.name for f in klass.body if isinstance(f, ast.FunctionDef)}


def test_each_evaluation_plants_differently(hidden):
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    plantings = [tripwires.plant(hidden, "tests", pool, tripwires.fresh_rng()) for _ in range(8)]
    assert len({p.files["tests/test_things.py"] for p in plantings}) > 1


def test_at_most_k_are_planted_spread_over_modules(hidden, tmp_path):
    for n in range(3):
        body = "\n\n".join(f'def test_case_{n}_{i}():\n    assert name() == "hello-world"\n' for i in range(10))
        (hidden / "tests" / f"test_more_{n}.py").write_text(HEAD + body)
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    planting = tripwires.plant(hidden, "tests", pool, random.Random(1), count=8)
    assert len(planting.planted) == 8
    per_module = {m: sum(p.test_file == m for p in planting.planted) for m in planting.files}
    assert len(per_module) == 4 and max(per_module.values()) - min(per_module.values()) <= 1


def test_line_numbers_map_back_to_the_original(hidden):
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    planting = tripwires.plant(hidden, "tests", pool, random.Random(3))
    planted_lines = planting.files["tests/test_things.py"].split("\n")
    original_lines = MODULE.split("\n")
    copies = {p.name for p in planting.planted}
    mismatched = []
    for number, line in enumerate(planted_lines, start=1):
        original = original_lines[planting.original_line("tests/test_things.py", number) - 1]
        if line.strip() and not line.strip().startswith("def ") and original.strip() != line.strip():
            mismatched.append(line)
    # a line of a copy maps to its original's line: only the changed token differs
    assert len(mismatched) == len(copies)


# ------------------------------------------------------------------------------------ judging


def planted_run(hidden: Path, statuses_of_copies: Status) -> tuple[tripwires.Planting, HiddenRun]:
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    planting = tripwires.plant(hidden, "tests", pool, random.Random(5))
    copy = next(p for p in planting.planted if p.origin.endswith("::test_name_is_slug"))
    statuses = {"tests/test_things.py::test_name_is_slug": P, "tests/test_other.py::test_other_thing": P}
    statuses |= {f"{p.test_file}::{p.name}": statuses_of_copies for p in planting.planted}
    lines_of_copy = planting.files["tests/test_things.py"].split("\n").index(f"def {copy.name}():") + 1
    output = (
        "collected 6 items\n\ntests/test_things.py .FFFF\ntests/test_other.py .\n\n"
        "=================================== FAILURES ===================================\n"
        f"_______________________________ {copy.name} ________________________________\n"
        f"tests/test_things.py:{lines_of_copy + 1}: in {copy.name}\n"
        '    assert name() == "hellp-world"\n'
        "========================= 4 failed, 2 passed in 0.10s ==========================\n"
    )
    run = HiddenRun(
        statuses=statuses,
        error_messages={f"{p.test_file}::{p.name}": f"AssertionError in {p.name}" for p in planting.planted},
        collected=len(statuses),
        exit_code=1,
        output_tail=output,
        integrity_flags=[IntegrityFlag(kind="test_code_altered", detail=f"{copy.name} odd", location="x")],
    )
    return planting, run


def test_a_run_whose_tripwires_fail_loses_every_trace_of_them(hidden):
    planting, run = planted_run(hidden, F)
    judged = tripwires.judge(run, planting)
    assert judged.execution_error is None
    assert set(judged.statuses) == {"tests/test_things.py::test_name_is_slug", "tests/test_other.py::test_other_thing"}
    assert judged.collected == 2 and judged.error_messages == {}
    stored = judged.model_dump_json()
    for planted in planting.planted:
        assert planted.name not in stored
    assert "hellp" not in judged.output_tail and "FAILURES" not in judged.output_tail
    assert "collected 2 items" in judged.output_tail
    assert tripwires.pytest_rule("2 passed in 0.10s") in judged.output_tail
    assert "test_name_is_slug odd" in judged.integrity_flags[0].detail  # the original's name, not the copy's


def test_a_tripwire_that_passes_voids_the_run(hidden):
    planting, run = planted_run(hidden, P)
    judged = tripwires.judge(run, planting)
    assert judged.execution_error and "tripwire" in judged.execution_error
    flag = judged.integrity_flags[-1]
    assert flag.kind == tripwires.TRIPWIRE and "a copy of tests/test_things.py::" in flag.detail
    assert not any(p.name in judged.model_dump_json(exclude={"integrity_flags"}) for p in planting.planted)


def test_a_natural_tripwire_that_passes_voids_the_run(hidden):
    planting = tripwires.Planting(natural=["tests/test_other.py::test_other_thing"])
    judged = tripwires.judge(HiddenRun(statuses={"tests/test_other.py::test_other_thing": P}, exit_code=0), planting)
    assert judged.execution_error and judged.integrity_flags[-1].kind == tripwires.TRIPWIRE
    failing = tripwires.judge(HiddenRun(statuses={"tests/test_other.py::test_other_thing": F}, exit_code=1), planting)
    assert failing.execution_error is None and failing.integrity_flags == []


# ------------------------------------------------------------------------------------ verifying


def test_only_copies_failing_on_new_gold_and_not_passing_on_old_gold_are_kept(hidden):
    pool = tripwires.pool(hidden, "tests", "fakepkg")
    planting = tripwires.plant(hidden, "tests", pool, random.Random(0), count=None, canonical_names=True)
    by_origin = {p.origin.split("::")[-1]: p for p in planting.planted}
    real = {"tests/test_things.py::test_name_is_slug": P}
    new = dict(real)
    old = {}
    for origin, planted in by_origin.items():
        node = f"{planted.test_file}::{planted.name}"
        new[node] = P if origin == "test_name_words" else F  # still passes on new gold: never a tripwire
        old[node] = P if origin == "test_double_two" else F  # passes on old gold: the noop would trip it
    kept = tripwires.verified(planting, [HiddenRun(statuses=new)], HiddenRun(statuses=old), real, pool)
    assert {c.qualname for c in kept} == {"test_name_is_slug", "test_double_small"}
    disturbed = tripwires.verified(
        planting,
        [HiddenRun(statuses={**new, "tests/test_things.py::test_name_is_slug": F})],
        HiddenRun(statuses=old),
        real,
        pool,
    )
    assert disturbed == []  # planting changed a real test's outcome in that module: none of its copies


def test_natural_tripwires_fail_in_every_new_gold_run_and_on_old_gold():
    runs = [HiddenRun(statuses={"a": F, "b": F, "c": F, "d": E}), HiddenRun(statuses={"a": F, "b": P, "c": F, "d": E})]
    assert tripwires.natural_tripwires(runs, {"a": F, "b": F, "c": P, "d": E}) == ["a"]
    # attrs' TestAssoc::test_unknown fails on 23.1.0 and 23.2.0 only: the noop's 21.3.0 code passes it
    assert tripwires.natural_tripwires(runs, {"a": F, "c": P}, passed_somewhere=frozenset({"a"})) == []


def test_candidate_model_round_trips():
    candidate = TripwireCandidate(
        test_file="t.py", qualname="test_x", rule="expected_text", first_line=1, last_line=2, text="x"
    )
    assert TripwireCandidate.model_validate_json(candidate.model_dump_json()) == candidate


def test_progress_lines_lose_the_tripwires_characters():
    order = ["tests/test_a.py::test_one", "tests/test_a.py::test_copy", "tests/test_b.py::test_two"]
    text = (
        "tests/test_a.py .F                                                      [ 66%]\n"
        "tests/test_b.py .                                                       [100%]"
    )
    rewritten = tripwires.without_progress(text, {"tests/test_a.py::test_copy"}, order)
    assert rewritten == (
        "tests/test_a.py .                                                       [ 50%]\n"
        "tests/test_b.py .                                                       [100%]"
    )
    assert [len(line) for line in rewritten.split("\n")] == [len(line) for line in text.split("\n")]
    # lines that cannot be matched test by test are left as they are
    assert tripwires.without_progress(text, {"tests/test_a.py::test_copy"}, order[:1]) == text
