"""A step's records from its hidden-test runs, pure as the rest of scoring: prev as scored, each
agent phase's categories and counts, the step's record, the one Fix it may grant, and the
findings and usage it is finished with."""

from __future__ import annotations

from dataclasses import dataclass

from swechain_ci.evaluation.outcomes import resolve, scored_universe
from swechain_ci.evaluation.step import PhaseTests
from swechain_ci.models import (
    AgentPhaseRecord,
    IntegrityFlag,
    PhaseRecord,
    Status,
    StepOracle,
    StepRecord,
    TestRun,
    Usage,
)
from swechain_ci.scoring import integrity
from swechain_ci.scoring.fix_report import build_report
from swechain_ci.scoring.score import categorize, count


@dataclass(frozen=True)
class Prev:
    """prev as observed (``run`` is None at a range's first step, where prev is old gold by
    definition) and as scored: old gold where prev broke on purpose (scoring/integrity.py)."""

    run: TestRun | None
    outcomes: dict[str, Status]
    flags: list[IntegrityFlag]
    scored: dict[str, Status]


def prev_as_scored(step: StepOracle, run: TestRun | None, previous: StepRecord | None, import_name: str | None) -> Prev:
    outcomes = dict(step.old_gold) if run is None else resolve(run, step.new_gold)
    flag = integrity.prev_import_flag(
        step.index, step.next_version, run, previous, import_name, step.old_gold_failed_imports
    )
    flags = [flag] if flag else []
    # prev's results forged (a tripwire passed): scored as old gold too
    flags += [
        f.model_copy(update={"step": step.index, "phase": "prev"})
        for f in (run.integrity_flags if run else [])
        if f.kind == integrity.TRIPWIRE
    ]
    return Prev(run, outcomes, flags, integrity.prev_for_scoring(outcomes, step.old_gold, flags))


def phase_record(
    agent: AgentPhaseRecord, tests: PhaseTests, step: StepOracle, prev_outcomes: dict[str, Status]
) -> PhaseRecord:
    """An agent phase's record: what it left, its hidden-test run, and that run scored against prev."""
    universe = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
    categories = categorize(step.upgrade_related, universe, prev_outcomes, tests.outcomes)
    return PhaseRecord(
        phase=agent.phase,
        agent=agent.agent,
        code_sha256=agent.code_sha256,
        diff=agent.diff,
        run=tests.run,
        outcomes=tests.outcomes,
        categories=categories,
        counts=count(categories),
        execution_error=tests.execution_error,
    )


def step_record(step: StepOracle, spec_level: str, prev: Prev, build: PhaseRecord) -> StepRecord:
    """The step after its Build's evaluation."""
    return StepRecord(
        **step.gold(),
        spec_level=spec_level,
        prev_outcomes=prev.outcomes,
        build=build,
        prev_run=prev.run,
        integrity_flags=prev.flags,
    )


def fix_report(record: StepRecord) -> str | None:
    """The Fix report when the Build earns the one Fix (it ran, and hit an execution error), else None."""
    build = record.build
    if build.agent.status != "ok" or not build.execution_error:
        return None
    return build_report(build.run, record.test_imports)


def finished(record: StepRecord, previous: StepRecord | None, import_name: str | None) -> StepRecord:
    """The step as recorded at its end: every integrity finding, and the usage of its phases."""
    flags = integrity.step_flags(record, previous, import_name)
    usage = Usage.total([p.agent for p in (record.build, record.fix) if p])
    return record.model_copy(update={"integrity_flags": flags, "usage": usage})


def prev_of(record: StepRecord) -> dict[str, Status]:
    """prev as the step's Build was scored against it (the Fix is scored against the same)."""
    return integrity.prev_for_scoring(record.prev_outcomes, record.old_gold, record.integrity_flags)
