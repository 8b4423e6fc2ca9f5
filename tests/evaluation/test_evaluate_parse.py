"""``evaluate.parse`` and its pure helpers: reading a hidden-test run's output and
deciding whether the pytest report can be trusted.

Fixtures are hand-written in the shape pytest-json-report 1.5 and the harness's
``swechain_guard`` plugin produce (checked once against a real run).
"""

from __future__ import annotations

import copy
import json

import pytest

from swechain_ci.evaluation import outcomes
from swechain_ci.evaluation.evaluate import (
    distrust,
    parse,
    stage_status,
    stream_statuses,
)
from swechain_ci.models import FailedImport, Status
from swechain_ci.models import TestRun as HiddenRun

P, F, E = Status.passed, Status.failed, Status.error
S, XF, XP = Status.skipped, Status.xfailed, Status.xpassed

BROKEN_LONGREPR = (
    "ImportError while importing test module '/work/run/tests/test_broken.py'.\n"
    "Traceback:\n"
    "tests/test_broken.py:1: in <module>\n"
    "    import nonexistent_module_zz\n"
    "E   ModuleNotFoundError: No module named 'nonexistent_module_zz'"
)

# A consistent report: 8 tests run (10 collected, 2 deselected), one module fails to collect.
REPORT = {
    "created": 1700000000.0,
    "duration": 0.5,
    "exitcode": 1,
    "root": "/work/run",
    "environment": {},
    "summary": {
        "passed": 1,
        "failed": 1,
        "error": 2,
        "skipped": 2,
        "xfailed": 1,
        "xpassed": 1,
        "total": 8,
        "collected": 10,
        "deselected": 2,
    },
    "collectors": [
        {"nodeid": "", "outcome": "passed", "result": [{"nodeid": "tests", "type": "Dir"}]},
        {"nodeid": "tests/test_broken.py", "outcome": "failed", "result": [], "longrepr": BROKEN_LONGREPR},
        {"nodeid": "tests/test_x.py", "outcome": "passed", "result": []},
    ],
    "tests": [
        {
            "nodeid": "tests/test_x.py::test_pass",
            "lineno": 9,
            "outcome": "passed",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {"duration": 0.001, "outcome": "passed"},
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_fail",
            "lineno": 10,
            "outcome": "failed",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {
                "duration": 0.001,
                "outcome": "failed",
                "crash": {"path": "/work/run/tests/test_x.py", "lineno": 11, "message": "assert 1 == 2"},
                "longrepr": ">   assert 1 == 2\nE   assert 1 == 2\n\ntests/test_x.py:11: AssertionError",
            },
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_setup_err",
            "lineno": 11,
            "outcome": "error",
            "setup": {
                "duration": 0.001,
                "outcome": "failed",
                "crash": {"path": "/work/run/tests/test_x.py", "lineno": 5, "message": "RuntimeError: setup boom"},
                "longrepr": '>       raise RuntimeError("setup boom")\nE       RuntimeError: setup boom',
            },
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_teardown_err",
            "lineno": 12,
            "outcome": "error",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {"duration": 0.001, "outcome": "passed"},
            "teardown": {
                "duration": 0.001,
                "outcome": "failed",
                # no crash entry: the message falls back to the last line of longrepr
                "longrepr": '>       raise RuntimeError("teardown boom")\nE       RuntimeError: teardown boom\n',
            },
        },
        {
            "nodeid": "tests/test_x.py::test_skip",
            "lineno": 13,
            "outcome": "skipped",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {"duration": 0.001, "outcome": "skipped", "longrepr": "('tests/test_x.py', 14, 'Skipped: no')"},
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_skipif",
            "lineno": 15,
            "outcome": "skipped",
            "setup": {"duration": 0.001, "outcome": "skipped", "longrepr": "('tests/test_x.py', 15, 'Skipped: cond')"},
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_xfail",
            "lineno": 17,
            "outcome": "xfailed",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {
                "duration": 0.001,
                "outcome": "skipped",
                "crash": {"path": "/work/run/tests/test_x.py", "lineno": 18, "message": "assert 0"},
            },
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
        {
            "nodeid": "tests/test_x.py::test_xpass",
            "lineno": 19,
            "outcome": "xpassed",
            "setup": {"duration": 0.001, "outcome": "passed"},
            "call": {"duration": 0.001, "outcome": "passed"},
            "teardown": {"duration": 0.001, "outcome": "passed"},
        },
    ],
}

STREAM = [
    {"collector": "tests/test_broken.py", "longrepr": BROKEN_LONGREPR},
    {"nodeid": "tests/test_x.py::test_pass", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_pass", "when": "call", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_pass", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_fail", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_fail", "when": "call", "outcome": "failed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_fail", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_setup_err", "when": "setup", "outcome": "failed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_setup_err", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_teardown_err", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_teardown_err", "when": "call", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_teardown_err", "when": "teardown", "outcome": "failed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_skip", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_skip", "when": "call", "outcome": "skipped", "xfail": False},
    {"nodeid": "tests/test_x.py::test_skip", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_skipif", "when": "setup", "outcome": "skipped", "xfail": False},
    {"nodeid": "tests/test_x.py::test_skipif", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_xfail", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_xfail", "when": "call", "outcome": "skipped", "xfail": True},
    {"nodeid": "tests/test_x.py::test_xfail", "when": "teardown", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_xpass", "when": "setup", "outcome": "passed", "xfail": False},
    {"nodeid": "tests/test_x.py::test_xpass", "when": "call", "outcome": "passed", "xfail": True},
    {"nodeid": "tests/test_x.py::test_xpass", "when": "teardown", "outcome": "passed", "xfail": False},
]

EXPECTED_STATUSES = {
    "tests/test_x.py::test_pass": P,
    "tests/test_x.py::test_fail": F,  # failure in the call
    "tests/test_x.py::test_setup_err": E,  # failure in setup
    "tests/test_x.py::test_teardown_err": E,  # failure in teardown
    "tests/test_x.py::test_skip": S,
    "tests/test_x.py::test_skipif": S,
    "tests/test_x.py::test_xfail": XF,
    "tests/test_x.py::test_xpass": XP,
}

FAILED_IMPORT_LINE = {
    "test_file": "tests/test_x.py",
    "module": "pkg.mod",
    "names": ["Thing"],
    "error": "ImportError: cannot import name 'Thing' from 'pkg.mod'",
}


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


def lines(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def files(*, report=REPORT, stream=STREAM, exit_code=1, timed_out=False, extra=None):
    out = {
        "result.json": dumps({"exit_code": exit_code, "timed_out": timed_out, "duration_s": 12.5}),
        "stream.jsonl": lines(stream),
        "output.log": b"===== 1 failed in 0.5s =====\n",
    }
    if report is not None:
        out["report.json"] = dumps(report)
    out.update(extra or {})
    return out


# --------------------------------------------------------------------------- trusted report


def test_consistent_report_is_trusted_with_correct_statuses():
    run = parse(files(), container_exit=0, host_timed_out=False)
    assert run.execution_error is None
    assert run.statuses == EXPECTED_STATUSES
    assert run.collection_errors == {"tests/test_broken.py": BROKEN_LONGREPR}
    assert run.exit_code == 1
    assert run.timed_out is False
    assert run.collected == 10
    assert run.duration_s == 12.5
    assert run.output_tail == "===== 1 failed in 0.5s =====\n"
    # messages only for failed/error tests
    assert run.error_messages == {
        "tests/test_x.py::test_fail": "assert 1 == 2",
        "tests/test_x.py::test_setup_err": "RuntimeError: setup boom",
        "tests/test_x.py::test_teardown_err": "E       RuntimeError: teardown boom",
    }


def test_trusted_report_resolves_against_new_gold():
    run = parse(files(), container_exit=0, host_timed_out=False)
    new_gold = [
        "tests/test_x.py::test_pass",
        "tests/test_x.py::test_fail",
        "tests/test_broken.py::test_b",
        "tests/test_gone.py::test_g",
    ]
    assert outcomes.resolve(run, new_gold) == {
        "tests/test_x.py::test_pass": P,
        "tests/test_x.py::test_fail": F,
        "tests/test_broken.py::test_b": E,  # under the failed collector
        "tests/test_gone.py::test_g": F,  # no result, no time-out
    }


def test_all_passing_report_with_exit_0_is_trusted():
    report = {
        "exitcode": 0,
        "summary": {"passed": 2, "total": 2, "collected": 2},
        "collectors": [],
        "tests": [
            {
                "nodeid": "t.py::a",
                "outcome": "passed",
                "setup": {"outcome": "passed"},
                "call": {"outcome": "passed"},
                "teardown": {"outcome": "passed"},
            },
            {
                "nodeid": "t.py::b",
                "outcome": "passed",
                "setup": {"outcome": "passed"},
                "call": {"outcome": "passed"},
                "teardown": {"outcome": "passed"},
            },
        ],
    }
    stream = [
        {"nodeid": "t.py::a", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::a", "when": "call", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::a", "when": "teardown", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::b", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::b", "when": "call", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::b", "when": "teardown", "outcome": "passed", "xfail": False},
    ]
    run = parse(files(report=report, stream=stream, exit_code=0), 0, False)
    assert run.execution_error is None
    assert run.statuses == {"t.py::a": P, "t.py::b": P}
    assert run.error_messages == {}
    assert run.collection_errors == {}


def test_nothing_collected_exit_5_is_trusted():
    report = {"exitcode": 5, "summary": {"total": 0, "collected": 0}, "collectors": [], "tests": []}
    run = parse(files(report=report, stream=[], exit_code=5), 0, False)
    assert run.execution_error is None
    assert run.statuses == {}
    # every new-gold test is then missing -> failed
    assert outcomes.resolve(run, ["t.py::a"]) == {"t.py::a": F}


# --------------------------------------------------------------------------- untrusted report


def test_no_report_and_no_timeout_is_an_execution_error():
    run = parse(files(report=None, exit_code=3), container_exit=0, host_timed_out=False)
    assert run.execution_error == "pytest left no report (exit code 3)"
    assert run.statuses == {}
    assert run.timed_out is False
    # even though the stream says test_pass passed, nothing may count as passed
    new_gold = ["tests/test_x.py::test_pass", "tests/test_x.py::test_fail"]
    assert outcomes.resolve(run, new_gold) == {
        "tests/test_x.py::test_pass": E,
        "tests/test_x.py::test_fail": E,
    }


def test_no_result_at_all_mentions_the_container_exit():
    run = parse({}, container_exit=137, host_timed_out=False, logs="killed")
    assert run.execution_error == "the harness left no result; the container exited with 137"
    assert run.output_tail == "killed"  # no output.log: the container logs stand in
    assert outcomes.resolve(run, ["a"]) == {"a": E}


def test_report_that_is_not_json_is_an_execution_error():
    run = parse(files(extra={"report.json": b'{"tests": [{"nodeid": '}), 0, False)
    assert run.execution_error == "the pytest report is not valid JSON"
    assert outcomes.resolve(run, ["tests/test_x.py::test_pass"]) == {"tests/test_x.py::test_pass": E}


def test_exit_0_with_a_failing_test_is_untrusted():
    run = parse(files(exit_code=0), 0, False)
    assert run.execution_error == "the report shows failures but pytest exited 0"
    assert outcomes.resolve(run, ["tests/test_x.py::test_pass"]) == {"tests/test_x.py::test_pass": E}


def test_exit_0_with_only_a_collection_error_is_untrusted():
    report = copy.deepcopy(REPORT)
    report["tests"] = [t for t in report["tests"] if t["nodeid"] == "tests/test_x.py::test_pass"]
    report["summary"] = {"passed": 1, "total": 1, "collected": 1}
    stream = [line for line in STREAM if line.get("nodeid") in (None, "tests/test_x.py::test_pass")]
    run = parse(files(report=report, stream=stream, exit_code=0), 0, False)
    assert run.execution_error == "the report shows failures but pytest exited 0"


def test_exit_1_with_all_passing_is_untrusted():
    report = {
        "summary": {"collected": 1},
        "collectors": [],
        "tests": [
            {
                "nodeid": "t.py::a",
                "outcome": "passed",
                "setup": {"outcome": "passed"},
                "call": {"outcome": "passed"},
                "teardown": {"outcome": "passed"},
            }
        ],
    }
    stream = [
        {"nodeid": "t.py::a", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::a", "when": "call", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::a", "when": "teardown", "outcome": "passed", "xfail": False},
    ]
    run = parse(files(report=report, stream=stream, exit_code=1), 0, False)
    assert run.execution_error == "pytest exited 1 but the report shows no failure"
    assert outcomes.resolve(run, ["t.py::a"]) == {"t.py::a": E}


@pytest.mark.parametrize("code", [2, 3, 4, -9, None])
def test_interrupted_internal_or_usage_error_exit_codes_are_untrusted(code):
    run = parse(files(exit_code=code), 0, False)
    assert run.execution_error == (f"pytest exited with code {code} (interrupted, internal or usage error)")
    # the raw observation is kept, but nothing counts
    assert run.statuses == EXPECTED_STATUSES
    assert outcomes.resolve(run, ["tests/test_x.py::test_pass"]) == {"tests/test_x.py::test_pass": E}


def test_exit_5_with_tests_listed_is_untrusted():
    report = copy.deepcopy(REPORT)
    run = parse(files(report=report, exit_code=5), 0, False)
    assert run.execution_error == "pytest reported no tests collected but the report lists tests"


def test_collected_count_mismatch_is_untrusted():
    report = copy.deepcopy(REPORT)
    report["summary"]["collected"] = 11  # 11 - 2 deselected = 9, but 8 tests are listed
    run = parse(files(report=report), 0, False)
    assert run.execution_error == "the report lists 8 tests but pytest collected 9"


def test_deselected_are_subtracted_before_comparing():
    report = copy.deepcopy(REPORT)
    del report["summary"]["deselected"]  # 10 collected, 0 deselected, 8 listed
    run = parse(files(report=report), 0, False)
    assert run.execution_error == "the report lists 8 tests but pytest collected 10"


def test_report_disagreeing_with_stream_is_untrusted():
    stream = copy.deepcopy(STREAM)
    for line in stream:
        if line.get("nodeid") == "tests/test_x.py::test_pass" and line["when"] == "call":
            line["outcome"] = "failed"  # the harness saw a failure the report calls a pass
    run = parse(files(stream=stream), 0, False)
    assert run.execution_error == "the report disagrees with the harness's own per-test stream"
    assert outcomes.resolve(run, ["tests/test_x.py::test_pass"]) == {"tests/test_x.py::test_pass": E}


def test_report_listing_a_test_the_stream_never_saw_is_untrusted():
    stream = [line for line in STREAM if line.get("nodeid") != "tests/test_x.py::test_xpass"]
    run = parse(files(stream=stream), 0, False)
    assert run.execution_error == "the report disagrees with the harness's own per-test stream"


def test_missing_stream_is_untrusted():
    report_files = files()
    del report_files["stream.jsonl"]
    run = parse(report_files, 0, False)
    assert run.execution_error == "the report disagrees with the harness's own per-test stream"


# --------------------------------------------------------------------------- time-out


def test_timed_out_without_report_takes_statuses_from_the_stream():
    stream = [
        {"collector": "tests/test_broken.py", "longrepr": "boom"},
        {"nodeid": "t.py::done", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::done", "when": "call", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::done", "when": "teardown", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::bad", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::bad", "when": "call", "outcome": "failed", "xfail": False},
        {"nodeid": "t.py::bad", "when": "teardown", "outcome": "passed", "xfail": False},
        # killed during the call: only setup was reported
        {"nodeid": "t.py::hung", "when": "setup", "outcome": "passed", "xfail": False},
    ]
    raw = files(report=None, stream=stream, exit_code=-9, timed_out=True)
    raw["stream.jsonl"] += b'{"nodeid": "t.py::cut", "wh'  # a line cut short by the kill
    run = parse(raw, container_exit=0, host_timed_out=False)
    assert run.execution_error is None
    assert run.timed_out is True
    assert run.statuses == {"t.py::done": P, "t.py::bad": F, "t.py::hung": E}
    assert run.collection_errors == {"tests/test_broken.py": "boom"}
    new_gold = ["t.py::done", "t.py::bad", "t.py::hung", "t.py::never", "tests/test_broken.py::t"]
    assert outcomes.resolve(run, new_gold) == {
        "t.py::done": P,
        "t.py::bad": F,
        "t.py::hung": E,
        "t.py::never": E,  # not reached before the time limit
        "tests/test_broken.py::t": E,
    }


def test_host_timeout_alone_counts_as_timed_out():
    stream = [
        {"nodeid": "t.py::done", "when": "setup", "outcome": "passed", "xfail": False},
        {"nodeid": "t.py::done", "when": "call", "outcome": "passed", "xfail": False},
    ]
    # the host killed the container before the harness could write result.json
    raw = {"stream.jsonl": lines(stream)}
    run = parse(raw, container_exit=None, host_timed_out=True, logs="tail of logs")
    assert run.timed_out is True
    assert run.execution_error is None
    assert run.exit_code is None
    assert run.statuses == {"t.py::done": P}
    assert run.output_tail == "tail of logs"


# --------------------------------------------------------------------------- failed imports


def test_failed_imports_are_parsed_and_deduplicated():
    other = {
        "test_file": "tests/sub/test_y.py",
        "module": ".helpers",
        "names": ["a", "b"],
        "error": "ModuleNotFoundError: No module named 'tests.sub.helpers'",
    }
    raw = lines([FAILED_IMPORT_LINE, other, FAILED_IMPORT_LINE, other]) + b'{"test_file": "tr'
    run = parse(files(extra={"failed_imports.jsonl": raw}), 0, False)
    assert run.failed_imports == [
        FailedImport(
            test_file="tests/test_x.py",
            module="pkg.mod",
            names=["Thing"],
            error="ImportError: cannot import name 'Thing' from 'pkg.mod'",
        ),
        FailedImport(
            test_file="tests/sub/test_y.py",
            module=".helpers",
            names=["a", "b"],
            error="ModuleNotFoundError: No module named 'tests.sub.helpers'",
        ),
    ]
    assert run.execution_error is None  # failed imports alone do not make a report untrusted


def test_failed_imports_kept_when_report_missing():
    raw = files(report=None, exit_code=2, extra={"failed_imports.jsonl": lines([FAILED_IMPORT_LINE])})
    run = parse(raw, 0, False)
    assert run.execution_error == "pytest left no report (exit code 2)"
    assert len(run.failed_imports) == 1
    assert run.failed_imports[0].names == ["Thing"]


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("outcome", "stages", "xfail", "expected"),
    [
        ("passed", {"setup": "passed", "call": "passed", "teardown": "passed"}, False, P),
        ("failed", {"setup": "passed", "call": "failed", "teardown": "passed"}, False, F),
        ("error", {"setup": "failed", "call": None, "teardown": "passed"}, False, E),
        ("error", {"setup": "passed", "call": "passed", "teardown": "failed"}, False, E),
        ("skipped", {"setup": "skipped", "call": None, "teardown": "passed"}, False, S),
        ("xfailed", {"setup": "passed", "call": "skipped", "teardown": "passed"}, False, XF),
        ("xpassed", {"setup": "passed", "call": "passed", "teardown": "passed"}, False, XP),
        # from the stream: no overall outcome, xfail flag instead
        (None, {"setup": "passed", "call": "skipped", "teardown": "passed"}, True, XF),
        (None, {"setup": "passed", "call": "passed", "teardown": "passed"}, True, XP),
        (None, {"setup": "passed", "call": "skipped", "teardown": "passed"}, False, S),
        (None, {"setup": "skipped", "teardown": "passed"}, False, S),
        (None, {"setup": "failed", "teardown": "passed"}, False, E),
        (None, {"setup": "passed", "call": "passed", "teardown": "failed"}, False, E),
        (None, {"setup": "passed", "call": "failed", "teardown": "passed"}, False, F),
        # killed mid-call: setup only
        (None, {"setup": "passed"}, False, E),
    ],
)
def test_stage_status(outcome, stages, xfail, expected):
    assert stage_status(outcome, stages, xfail) is expected


def test_stream_statuses_collects_tests_and_collectors():
    statuses, collection_errors = stream_statuses(STREAM)
    assert statuses == EXPECTED_STATUSES
    assert collection_errors == {"tests/test_broken.py": BROKEN_LONGREPR}


def test_distrust_accepts_a_consistent_run():
    run = HiddenRun(statuses={"a": P, "b": F}, exit_code=1)
    assert distrust(run, {"summary": {"collected": 2}}, {"a": P, "b": F}) is None
