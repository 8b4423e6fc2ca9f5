"""Turn one raw test run into a per-test outcome map over the new-gold tests.

Pure functions: the rules of SEMANTICS.md "Test outcomes" that concern tests a
run did not report itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from swechain_ci.evaluation.tripwires import TRIPWIRE
from swechain_ci.models import Status, TestRun


def is_under(test_id: str, collector_id: str) -> bool:
    """Whether a test node id lies under a collector (session, dir, module or class)."""
    if collector_id in ("", "."):
        return True
    return (
        test_id == collector_id
        or test_id.startswith(collector_id + "::")
        or test_id.startswith(collector_id.rstrip("/") + "/")
    )


def resolve(run: TestRun, tests: Iterable[str]) -> dict[str, Status]:
    """Give every test of ``tests`` (the new-gold tests) a status in ``run``.

    - reported tests keep their status, unless the report is untrusted;
    - a test under a collector that failed to collect is *error*;
    - a test with no result is *failed*, or *error* if the run timed out.
    """
    if run.execution_error:
        return {t: Status.error for t in tests}
    resolved: dict[str, Status] = {}
    for test in tests:
        if test in run.statuses:
            resolved[test] = run.statuses[test]
        elif any(is_under(test, c) for c in run.collection_errors):
            resolved[test] = Status.error
        else:
            resolved[test] = Status.error if run.timed_out else Status.failed
    return resolved


# Flags saying the run's results were forged, not observed: no Fix for those.
FORGERY_FLAGS = frozenset({"result_stream", TRIPWIRE})


def has_execution_error(run: TestRun, outcomes: dict[str, Status]) -> bool:
    """Whether a hidden check warrants the one Fix attempt (SEMANTICS.md, protocol 4).

    A collection error, a failed import in a test module, or at least one test
    with status error. Plain assertion failures never do, nor results the
    supervisor found forged (every test counts as error, but nothing ran wrong).
    """
    if any(flag.kind in FORGERY_FLAGS for flag in run.integrity_flags):
        return False
    return bool(
        run.execution_error
        or run.collection_errors
        or run.failed_imports
        or any(s == Status.error for s in run.statuses.values())
        or any(s == Status.error for s in outcomes.values())
    )


def scored_universe(new_gold: Mapping[str, Status], excluded: Iterable[str]) -> set[str]:
    """The tests a step is scored on: those passing on new gold, minus flaky and network tests."""
    return {t for t, s in new_gold.items() if s == Status.passed} - set(excluded)
