"""Why a test failed: a deterministic per-test failure taxonomy from what the harness recorded.

Every unresolved upgrade-related test and every regression of a phase gets one mode, from
the first row of ``RULES`` that matches its evidence: the test's own error message, the
error of the collector it sits under, the failed imports of its test file, and whether the
run timed out or left no trusted report. The rules are data, one row per way a mode is
recognised, in order; ``tests/test_failure_modes.py`` checks each row on real run outputs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from swechain_ci.evaluation.outcomes import is_under
from swechain_ci.models import Category, TestRun


class FailureMode(str, Enum):
    missing_name = "missing_name"  # a missing name or a failed import
    wrong_signature = "wrong_signature"  # TypeError at the call
    wrong_exception = "wrong_exception"  # another exception than the test expects, or none
    assertion = "assertion"  # the behaviour differs: an assertion mismatch
    timeout = "timeout"
    collection = "collection"  # the test module failed to collect (syntax error and the like)
    no_report = "no_report"  # the run left no trustworthy report: nothing to tell per test
    other = "other"


LABELS = {
    FailureMode.missing_name: "missing name / failed import",
    FailureMode.wrong_signature: "wrong signature",
    FailureMode.wrong_exception: "wrong exception type",
    FailureMode.assertion: "assertion mismatch",
    FailureMode.timeout: "time-out",
    FailureMode.collection: "collection / syntax error",
    FailureMode.no_report: "no trusted report",
    FailureMode.other: "other",
}


@dataclass(frozen=True)
class Rule:
    """One way to recognise a mode: ``pattern`` searched in the evidence ``field`` (see ``evidence``)."""

    mode: FailureMode
    field: str
    pattern: re.Pattern[str]
    # A second condition on another field, when one field alone cannot tell.
    also: tuple[str, re.Pattern[str]] | None = None


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text, re.DOTALL)


RULES: tuple[Rule, ...] = (
    # pytest-timeout's own verdict on the test
    Rule(FailureMode.timeout, "message", _re(r"^Failed: Timeout\b")),
    # the whole run hit its time limit before this test reported anything
    Rule(FailureMode.timeout, "run_timed_out", _re(r"^yes$"), also=("message", _re(r"^$"))),
    Rule(FailureMode.no_report, "execution_error", _re(r".")),
    # a test module whose own import fails on a missing module or name
    Rule(FailureMode.missing_name, "collection", _re(r"^(ImportError|ModuleNotFoundError)\b")),
    Rule(FailureMode.collection, "collection", _re(r".")),
    Rule(
        FailureMode.missing_name,
        "message",
        _re(r"^(ImportError|ModuleNotFoundError|NameError)\b|^AttributeError: (?!'NoneType').*has no attribute"),
    ),
    # a name the harness bound to None after a failed `from X import Y` in the test file
    Rule(
        FailureMode.missing_name,
        "message",
        _re(r"'NoneType' object (is not callable|is not subscriptable|is not iterable|has no attribute)"),
        also=("failed_imports", _re(r".")),
    ),
    Rule(
        FailureMode.wrong_signature,
        "message",
        _re(
            r"^TypeError: .*(unexpected keyword argument|positional arguments? but|missing \d+ required"
            r"|takes no (keyword )?arguments|required keyword-only|multiple values for argument)"
        ),
    ),
    Rule(FailureMode.wrong_exception, "message", _re(r"^Failed: DID NOT RAISE")),
    Rule(FailureMode.assertion, "message", _re(r"^(AssertionError\b|assert\b|Failed: )")),
    # any other exception escaping the test: not the one it expects (or none at all)
    Rule(FailureMode.wrong_exception, "message", _re(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")),
    Rule(FailureMode.other, "message", _re(r"")),
)

_E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)


def _last_exception_line(longrepr: str) -> str:
    """The last ``E   Name: message`` line of a collection error (its own exception)."""
    lines = [m.group(1).strip() for m in _E_LINE.finditer(longrepr)]
    named = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b", line)]
    return (named or lines or [longrepr.strip().splitlines()[-1] if longrepr.strip() else "?"])[-1]


def evidence(run: TestRun, test: str) -> dict[str, str]:
    """What the run recorded about one test, as the strings the rules read."""
    test_file = test.split("::", 1)[0]
    collection = next((text for collector, text in run.collection_errors.items() if is_under(test, collector)), None)
    return {
        "message": (run.error_messages.get(test) or "").strip(),
        "collection": _last_exception_line(collection) if collection is not None else "",
        "failed_imports": "; ".join(f.error for f in run.failed_imports if f.test_file == test_file),
        "run_timed_out": "yes" if run.timed_out else "",
        "execution_error": run.execution_error or "",
    }


def matching_rule(facts: Mapping[str, str]) -> Rule:
    for rule in RULES:
        if not rule.pattern.search(facts[rule.field]):
            continue
        if rule.also is not None and not rule.also[1].search(facts[rule.also[0]]):
            continue
        return rule
    raise AssertionError("the last rule matches everything")  # pragma: no cover


def classify(run: TestRun, test: str) -> FailureMode:
    return matching_rule(evidence(run, test)).mode


FAILING = (Category.unresolved, Category.regressed)


def classify_phase(run: TestRun, categories: Mapping[str, Category]) -> dict[str, FailureMode]:
    """The mode of every unresolved upgrade-related test and every regression of one phase."""
    return {test: classify(run, test) for test, category in sorted(categories.items()) if category in FAILING}


def tally(modes: Mapping[str, FailureMode]) -> dict[FailureMode, int]:
    counted = Counter(modes.values())
    return {mode: counted[mode] for mode in FailureMode}
