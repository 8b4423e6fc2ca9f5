"""Per-test outcomes of a run over the new-gold tests (SEMANTICS.md, "Test outcomes")."""

from __future__ import annotations

import pytest

from swechain_ci.evaluation.outcomes import has_execution_error, is_under, resolve
from swechain_ci.models import FailedImport, Status
from swechain_ci.models import TestRun as HiddenRun

P, F, E = Status.passed, Status.failed, Status.error
S, XF, XP = Status.skipped, Status.xfailed, Status.xpassed


# --------------------------------------------------------------------------- is_under


@pytest.mark.parametrize(
    ("test_id", "collector", "expected"),
    [
        # module
        ("tests/test_a.py::test_1", "tests/test_a.py", True),
        ("tests/test_a.py::TestX::test_1", "tests/test_a.py", True),
        # the prefix trap: test_ab.py is not under test_a.py
        ("tests/test_ab.py::test_1", "tests/test_a.py", False),
        # class
        ("tests/test_a.py::TestX::test_1", "tests/test_a.py::TestX", True),
        ("tests/test_a.py::TestXY::test_1", "tests/test_a.py::TestX", False),
        ("tests/test_a.py::test_1", "tests/test_a.py::TestX", False),
        # directory, with and without trailing slash
        ("tests/sub/test_b.py::test_1", "tests/sub", True),
        ("tests/sub/deeper/test_c.py::test_1", "tests/sub", True),
        ("tests/sub/test_b.py::test_1", "tests/sub/", True),
        ("tests/subway/test_b.py::test_1", "tests/sub", False),
        ("tests/sub_test.py::test_1", "tests/sub", False),
        # the session / rootdir collectors cover everything
        ("tests/test_a.py::test_1", "", True),
        ("tests/test_a.py::test_1", ".", True),
        # a node is under itself
        ("tests/test_a.py::test_1", "tests/test_a.py::test_1", True),
        # a parametrised sibling with the same prefix is not under a plain test
        ("tests/test_a.py::test_1[x]", "tests/test_a.py::test_1", False),
        # an unrelated module elsewhere
        ("other/test_a.py::test_1", "tests/test_a.py", False),
    ],
)
def test_is_under(test_id, collector, expected):
    assert is_under(test_id, collector) is expected


# --------------------------------------------------------------------------- resolve

NEW_GOLD = [
    "tests/test_a.py::test_1",
    "tests/test_a.py::TestX::test_2",
    "tests/test_ab.py::test_3",
    "tests/sub/test_b.py::test_4",
    "tests/test_c.py::test_5",
]


def test_reported_statuses_are_kept():
    statuses = {
        "tests/test_a.py::test_1": P,
        "tests/test_a.py::TestX::test_2": F,
        "tests/test_ab.py::test_3": E,
        "tests/sub/test_b.py::test_4": S,
        "tests/test_c.py::test_5": XF,
        "tests/not_in_gold.py::test_6": XP,
    }
    assert resolve(HiddenRun(statuses=statuses), NEW_GOLD) == {
        "tests/test_a.py::test_1": P,
        "tests/test_a.py::TestX::test_2": F,
        "tests/test_ab.py::test_3": E,
        "tests/sub/test_b.py::test_4": S,
        "tests/test_c.py::test_5": XF,
        # a reported test outside new gold is not part of the map
    }


def test_module_collection_error_is_error_for_tests_under_it_only():
    run = HiddenRun(
        statuses={"tests/test_ab.py::test_3": P, "tests/sub/test_b.py::test_4": P, "tests/test_c.py::test_5": P},
        collection_errors={"tests/test_a.py": "ImportError: boom"},
    )
    assert resolve(run, NEW_GOLD) == {
        "tests/test_a.py::test_1": E,  # module failed to collect
        "tests/test_a.py::TestX::test_2": E,  # inside that module's class
        "tests/test_ab.py::test_3": P,  # prefix trap: not under tests/test_a.py
        "tests/sub/test_b.py::test_4": P,
        "tests/test_c.py::test_5": P,
    }


def test_module_collection_error_does_not_reach_a_prefix_sibling_without_result():
    # test_ab.py has no result: it is missing (failed), not a collection error
    run = HiddenRun(statuses={}, collection_errors={"tests/test_a.py": "boom"})
    out = resolve(run, ["tests/test_a.py::test_1", "tests/test_ab.py::test_3"])
    assert out == {"tests/test_a.py::test_1": E, "tests/test_ab.py::test_3": F}


def test_class_collection_error():
    run = HiddenRun(
        statuses={"tests/test_a.py::test_1": P},
        collection_errors={"tests/test_a.py::TestX": "fixture error"},
    )
    out = resolve(run, ["tests/test_a.py::test_1", "tests/test_a.py::TestX::test_2", "tests/test_a.py::TestXY::t"])
    assert out == {
        "tests/test_a.py::test_1": P,
        "tests/test_a.py::TestX::test_2": E,
        "tests/test_a.py::TestXY::t": F,  # not under TestX; no result -> failed
    }


def test_directory_collection_error():
    run = HiddenRun(
        statuses={"tests/test_a.py::test_1": P},
        collection_errors={"tests/sub": "conftest error"},
    )
    out = resolve(run, ["tests/test_a.py::test_1", "tests/sub/test_b.py::test_4", "tests/subway/test_d.py::t"])
    assert out == {
        "tests/test_a.py::test_1": P,
        "tests/sub/test_b.py::test_4": E,
        "tests/subway/test_d.py::t": F,  # prefix trap for directories
    }


def test_missing_tests_are_failed():
    run = HiddenRun(statuses={"tests/test_a.py::test_1": P}, timed_out=False)
    out = resolve(run, ["tests/test_a.py::test_1", "tests/test_c.py::test_5"])
    assert out == {"tests/test_a.py::test_1": P, "tests/test_c.py::test_5": F}


def test_missing_tests_are_error_when_the_run_timed_out():
    run = HiddenRun(statuses={"tests/test_a.py::test_1": P, "tests/test_a.py::TestX::test_2": F}, timed_out=True)
    out = resolve(run, ["tests/test_a.py::test_1", "tests/test_a.py::TestX::test_2", "tests/test_c.py::test_5"])
    # reported tests keep their status; the one never reached is error
    assert out == {
        "tests/test_a.py::test_1": P,
        "tests/test_a.py::TestX::test_2": F,
        "tests/test_c.py::test_5": E,
    }


def test_execution_error_makes_every_test_error_even_if_reported_passed():
    run = HiddenRun(
        statuses={t: P for t in NEW_GOLD},
        execution_error="pytest exited with code 2",
    )
    assert resolve(run, NEW_GOLD) == {t: E for t in NEW_GOLD}


def test_resolve_of_empty_new_gold_is_empty():
    assert resolve(HiddenRun(statuses={"x": P}), []) == {}


# --------------------------------------------------------------------------- has_execution_error


def test_collection_error_triggers_fix():
    run = HiddenRun(statuses={"a": P}, collection_errors={"tests/test_a.py": "boom"})
    assert has_execution_error(run, {"a": P}) is True


def test_failed_import_triggers_fix():
    run = HiddenRun(
        statuses={"a": P, "b": F},
        failed_imports=[FailedImport(test_file="tests/test_a.py", module="pkg", names=["X"], error="ImportError")],
    )
    assert has_execution_error(run, {"a": P, "b": F}) is True


def test_a_test_with_status_error_triggers_fix():
    run = HiddenRun(statuses={"a": P, "b": E})
    assert has_execution_error(run, {"a": P, "b": E}) is True


def test_timeout_induced_error_triggers_fix():
    # nothing is an error in the raw statuses; the missing test becomes error by timeout
    run = HiddenRun(statuses={"a": P, "b": F}, timed_out=True)
    outcomes = resolve(run, ["a", "b", "c"])
    assert outcomes == {"a": P, "b": F, "c": E}
    assert has_execution_error(run, outcomes) is True


def test_untrusted_run_triggers_fix():
    run = HiddenRun(statuses={"a": P}, execution_error="pytest left no report")
    assert has_execution_error(run, {"a": E}) is True


def test_plain_assertion_failures_do_not_trigger_fix():
    run = HiddenRun(statuses={"a": P, "b": F, "c": F, "d": S, "e": XF, "f": XP})
    outcomes = resolve(run, ["a", "b", "c", "d", "e", "f", "missing"])
    # "missing" without a time-out is failed, not error
    assert outcomes["missing"] == F
    assert has_execution_error(run, outcomes) is False


def test_nothing_wrong_does_not_trigger_fix():
    assert has_execution_error(HiddenRun(statuses={"a": P}), {"a": P}) is False
