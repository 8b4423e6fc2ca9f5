"""The error report given to the agent for its one Fix attempt (SEMANTICS.md, protocol 4)."""

from __future__ import annotations

import pytest

from swechain_ci.models import FailedImport, PackageImport, Status
from swechain_ci.models import TestRun as HiddenRun
from swechain_ci.scoring.fix_report import FRAME_BYTES, LEAK_BUDGET, build_report, error_messages, normalise

P, F, E = Status.passed, Status.failed, Status.error

# the fixed preamble; build_report ends every section with a blank line, so a
# report with sections is HEADER + "\n" + sections
HEADER = (
    "# Hidden-test check: execution errors\n"
    "\n"
    "Your change was checked against hidden tests, which hit execution-level errors.\n"
    "Fix them. This is your only fix attempt.\n"
)


# --------------------------------------------------------------------------- normalise


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<pkg.Foo object at 0x7f3a2b1c9d90>", "<pkg.Foo object at 0x…>"),
        ("<Foo at 0xDEADBEEF> and <Bar at 0x1>", "<Foo at 0x…> and <Bar at 0x…>"),
        ("FileNotFoundError: '/tmp/pytest-of-u/pytest-3/test_x0/data.json'", "FileNotFoundError: '<tmp>'"),
        ('File "/tmp/abc/mod.py", line 12, in f', 'File "<tmp>", line N, in f'),
        ("src/pkg/mod.py:45: ValueError", "src/pkg/mod.py:N: ValueError"),
        ("  padded message  \n", "padded message"),
        ("no numbers here", "no numbers here"),
    ],
)
def test_normalise(raw, expected):
    assert normalise(raw) == expected


def test_messages_differing_only_in_address_tmp_path_and_line_deduplicate():
    run = HiddenRun(
        statuses={"t.py::a": E, "t.py::b": E, "t.py::c": E},
        error_messages={
            "t.py::a": 'TypeError: <Foo at 0x7f00aa> in File "/tmp/pytest-1/x.py", line 3',
            "t.py::b": 'TypeError: <Foo at 0x7f11bb> in File "/tmp/pytest-2/x.py", line 40',
            "t.py::c": "TypeError: something else at pkg/core.py:7",
        },
    )
    assert error_messages(run) == [
        'TypeError: <Foo at 0x…> in File "<tmp>", line N',
        "TypeError: something else at pkg/core.py:N",
    ]


def test_tmp_path_with_py_line_suffix_deduplicates():
    run = HiddenRun(
        statuses={"t.py::a": E, "t.py::b": E},
        error_messages={
            "t.py::a": "/tmp/pytest-of-u/pytest-1/test_a0/helper.py:12: in load",
            "t.py::b": "/tmp/pytest-of-u/pytest-2/test_a0/helper.py:99: in load",
        },
    )
    # same message once temp path and line number are normalised
    assert len(error_messages(run)) == 1


def test_at_most_twenty_distinct_messages_in_order():
    statuses = {f"t.py::t{i}": E for i in range(25)}
    messages = {f"t.py::t{i}": f"ValueError: case {chr(ord('a') + i)}" for i in range(25)}
    run = HiddenRun(statuses=statuses, error_messages=messages)
    got = error_messages(run)
    # letters a..t are the first 20 (a=0 ... t=19)
    assert got == [f"ValueError: case {c}" for c in "abcdefghijklmnopqrst"]
    report = build_report(run)
    assert "ValueError: case t" in report
    assert "ValueError: case u" not in report  # the 21st distinct message


def test_twenty_distinct_counted_after_deduplication():
    # 30 error tests but each message appears 3 times: 10 distinct messages, all kept
    statuses = {f"t.py::t{i}": E for i in range(30)}
    messages = {f"t.py::t{i}": f"KeyError: k{i % 10} at 0x{i:04x}" for i in range(30)}
    got = error_messages(HiddenRun(statuses=statuses, error_messages=messages))
    assert got == [f"KeyError: k{j} at 0x…" for j in range(10)]


def test_only_error_status_tests_contribute_messages():
    run = HiddenRun(
        statuses={"t.py::f": F, "t.py::e": E, "t.py::p": P, "t.py::empty": E},
        error_messages={"t.py::f": "assert 1 == 2", "t.py::e": "RuntimeError: boom", "t.py::empty": "  "},
    )
    # failed is an assertion failure; an empty message is dropped
    assert error_messages(run) == ["RuntimeError: boom"]


def test_assertion_only_run_contributes_nothing():
    run = HiddenRun(
        statuses={"t.py::a": F, "t.py::b": F, "t.py::c": P},
        error_messages={"t.py::a": "assert 1 == 2", "t.py::b": "AssertionError: nope"},
        exit_code=1,
    )
    assert error_messages(run) == []
    assert build_report(run) == HEADER


def test_collection_error_output_keeps_its_last_2000_characters():
    output = "HEAD" + "x" * 3000 + "TAIL"
    run = HiddenRun(collection_errors={"tests/test_a.py": output})
    report = build_report(run)
    # last 2000 characters: 1996 x's then TAIL
    expected = HEADER + "\n## Collection errors (tail)\n\n```\n" + "x" * 1996 + "TAIL\n```\n"
    assert report == expected
    assert "HEAD" not in report


def test_several_collection_errors_are_joined_before_truncating():
    run = HiddenRun(
        collection_errors={
            "tests/test_a.py": "A" * 1500,
            "tests/test_b.py": "B" * 1000,
        }
    )
    report = build_report(run)
    # joined: 1500 A + "\n" + 1000 B = 2501 chars; the tail keeps 999 A, the newline, 1000 B
    assert "```\n" + "A" * 999 + "\n" + "B" * 1000 + "\n```" in report
    assert "A" * 1000 not in report


def test_failed_imports_are_listed_once():
    imp = FailedImport(
        test_file="tests/test_a.py",
        module="pkg.mod",
        names=["A", "B"],
        error="ImportError: cannot import name 'A' from 'pkg.mod' (/tmp/v/pkg/mod.py)",
    )
    other = FailedImport(
        test_file="tests/test_b.py",
        module="pkg.mod",
        names=["A", "B"],
        error="ImportError: cannot import name 'A' from 'pkg.mod' (/tmp/w/pkg/mod.py)",
    )
    run = HiddenRun(failed_imports=[imp, other])
    report = build_report(run)
    # the two differ only in temp path and test file: one line after normalisation
    assert report.startswith(HEADER + "\n## Failed imports in test modules\n\n")
    bullets = [line for line in report.splitlines() if line.startswith("- ")]
    assert len(bullets) == 1
    # (the exact rendering of the path's end is not pinned: the /tmp pattern also eats the ')')
    assert bullets[0].startswith(
        "- `from pkg.mod import A, B`: ImportError: cannot import name 'A' from 'pkg.mod' (<tmp>"
    )
    assert "/tmp/" not in report


def test_distinct_failed_imports_are_all_listed():
    run = HiddenRun(
        failed_imports=[
            FailedImport(test_file="tests/test_a.py", module="pkg", names=["X"], error="ImportError: no X"),
            FailedImport(
                test_file="tests/test_a.py", module=".helpers", names=["y"], error="ModuleNotFoundError: no helpers"
            ),
        ]
    )
    assert build_report(run) == HEADER + (
        "\n## Failed imports in test modules\n\n"
        "- `from pkg import X`: ImportError: no X\n"
        "- `from .helpers import y`: ModuleNotFoundError: no helpers\n"
    )


def test_report_carries_messages_but_no_node_ids():
    ids = ["tests/test_core.py::TestThing::test_alpha", "tests/test_core.py::test_beta[param-1]"]
    run = HiddenRun(
        statuses={ids[0]: E, ids[1]: E, "tests/test_core.py::test_gamma": P},
        error_messages={
            ids[0]: "AttributeError: 'Thing' has no attribute 'grow'",
            ids[1]: "TypeError: f() missing 1 required argument",
        },
    )
    report = build_report(run)
    assert report == HEADER + (
        "\n## Error messages\n\n"
        "- AttributeError: 'Thing' has no attribute 'grow'\n"
        "- TypeError: f() missing 1 required argument\n"
    )
    for node_id in [*ids, "tests/test_core.py::test_gamma"]:
        assert node_id not in report
    assert "test_alpha" not in report and "test_beta" not in report


def test_timed_out_section():
    run = HiddenRun(timed_out=True, statuses={"t.py::a": E}, error_messages={"t.py::a": "Timeout"})
    assert build_report(run) == HEADER + (
        "\n## Time limit\n\nThe test run did not finish within its time limit.\n\n## Error messages\n\n- Timeout\n"
    )


def test_execution_error_section_with_output_tail():
    run = HiddenRun(
        execution_error="pytest exited with code 3 (interrupted, internal or usage error)",
        output_tail='INTERNALERROR> File "/tmp/q/x.py", line 9\n',
    )
    assert build_report(run) == HEADER + (
        "\n## The test run itself failed\n\n"
        "pytest exited with code 3 (interrupted, internal or usage error)\n\n"
        '```\nINTERNALERROR> File "<tmp>", line N\n```\n'
    )


def test_execution_error_report_carries_no_pass_counts():
    run = HiddenRun(
        execution_error="the report disagrees with the harness's own per-test stream",
        output_tail=(
            "E   RuntimeError: boom\n=================== 2 failed, 41 passed, 1 error in 3.21s ===================\n"
        ),
    )
    report = build_report(run)
    assert "41 passed" not in report


def test_every_part_of_the_report_is_bounded_so_no_test_file_rides_along():
    """A hidden test file's text in any field the run carries never reaches the agent whole."""
    leaked = "SECRET_TEST_SOURCE " * 2000
    run = HiddenRun(
        statuses={f"tests/t.py::t{i}": E for i in range(30)},
        error_messages={f"tests/t.py::t{i}": f"{i} {leaked}" for i in range(30)},
        collection_errors={"tests/a.py": leaked, "tests/b.py": leaked + "x"},
        failed_imports=[
            FailedImport(test_file="tests/t.py", module=f"m{i}{leaked}", names=[leaked], error=leaked)
            for i in range(100)
        ],
        execution_error=leaked,
        output_tail=leaked,
    )
    report = build_report(run)
    lines = report.splitlines()
    assert max(len(line) for line in lines) <= 2000
    assert len(report.encode()) <= LEAK_BUDGET + FRAME_BYTES
    assert report.count("SECRET_TEST_SOURCE") < LEAK_BUDGET / len("SECRET_TEST_SOURCE ")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U", False),  # base32
        ("c2VjcmV0IHRlc3Qgc291cmNlIGNvZGU9", False),  # base64
        ("9f86d081884c7d659a2feaa0c55ad015", False),  # hex
        ("InvalidSignatureError", True),  # an identifier
        ("AAAAAAAAAAAAAAAAAAAAAAAA", True),  # no digit: not data
        ("test_unique_slug_skips_taken_counters", True),  # snake case splits into short runs
        ("Python311Compatibility", True),  # low entropy mixed case word
    ],
)
def test_encoded_runs_are_replaced_words_are_kept(text, kept):
    assert (normalise(f"ValueError: {text}") == f"ValueError: {text}") is kept


def test_failed_imports_the_hidden_files_do_not_make_are_left_out():
    made = [PackageImport(test_file="tests/test_a.py", module="pkg", names=["X", "Y"])]
    run = HiddenRun(
        failed_imports=[
            FailedImport(test_file="tests/test_a.py", module="pkg", names=["X"], error="ImportError: no X"),
            FailedImport(test_file="tests/test_a.py", module="pkg", names=["SMUGGLED"], error="ImportError: no"),
            FailedImport(test_file="tests/test_b.py", module="pkg", names=["X"], error="ImportError: no X"),
        ]
    )
    report = build_report(run, made)
    assert "`from pkg import X`" in report
    assert "SMUGGLED" not in report
    assert sum(line.startswith("- `from") for line in report.splitlines()) == 1


def test_the_budget_is_shared_by_every_section_and_cut_once():
    run = HiddenRun(
        statuses={f"tests/t.py::t{i}": E for i in range(20)},
        error_messages={f"tests/t.py::t{i}": f"RuntimeError: message {i} " + "words " * 90 for i in range(20)},
        collection_errors={"tests/a.py": "E   ImportError: " + "tail " * 390},
    )
    report = build_report(run)
    assert report.count("(cut: the report's size limit)") == 1
    assert len(report.encode()) <= LEAK_BUDGET + FRAME_BYTES
