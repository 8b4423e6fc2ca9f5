"""A step's records from its runs (scoring/step.py), pure: hand-made runs, no Docker."""

from __future__ import annotations

from swechain_ci.evaluation.step import PhaseTests
from swechain_ci.models import AgentOutcome, AgentPhaseRecord, Category, DiffStats, Status, StepOracle
from swechain_ci.models import TestRun as Run
from swechain_ci.scoring import step as scored

P, F = Status.passed, Status.failed
STEP = StepOracle(
    index=2,
    prev_version="0.2",
    next_version="0.3",
    new_gold={"u1": P, "u2": P, "k1": P},
    old_gold={"u1": F, "u2": F, "k1": P},
    upgrade_related=["u1", "u2"],
)


def agent(phase: str, status: str = "ok") -> AgentPhaseRecord:
    return AgentPhaseRecord(
        phase=phase,
        agent=AgentOutcome(status=status, input_tokens=10),
        session_id="s",
        code_sha256=f"sha-{phase}",
        diff=DiffStats(),
    )


def ran(outcomes: dict, execution_error: bool = False) -> PhaseTests:
    return PhaseTests(Run(statuses=outcomes), outcomes, execution_error)


def test_prev_at_a_ranges_first_step_is_old_gold():
    prev = scored.prev_as_scored(STEP, None, None, "toy")
    assert (prev.run, prev.outcomes, prev.flags, prev.scored) == (None, STEP.old_gold, [], STEP.old_gold)


def test_prev_observed_is_resolved_against_new_gold():
    run = Run(statuses={"u1": P, "u2": F, "k1": P}, collected=3)
    prev = scored.prev_as_scored(STEP, run, None, "toy")
    assert prev.outcomes == {"u1": P, "u2": F, "k1": P} and prev.scored == prev.outcomes


def test_a_phase_is_categorized_against_prev_as_scored():
    record = scored.phase_record(agent("build"), ran({"u1": P, "u2": F, "k1": F}), STEP, STEP.old_gold)
    assert record.categories == {"u1": Category.resolved, "u2": Category.unresolved, "k1": Category.regressed}
    assert (record.counts.tp, record.counts.fn, record.counts.fp) == (1, 1, 1)
    assert (record.phase, record.code_sha256) == ("build", "sha-build")


def test_only_an_agent_that_ran_and_hit_an_execution_error_earns_the_fix():
    prev = scored.prev_as_scored(STEP, None, None, "toy")
    for status, error, granted in (("ok", True, True), ("ok", False, False), ("crashed", True, False)):
        build = scored.phase_record(agent("build", status), ran({"u1": F}, error), STEP, prev.scored)
        record = scored.step_record(STEP, "L3", prev, build)
        assert (scored.fix_report(record) is not None) == granted, (status, error)


def test_a_finished_step_carries_the_usage_of_its_phases():
    prev = scored.prev_as_scored(STEP, None, None, "toy")
    build = scored.phase_record(agent("build"), ran({"u1": P, "u2": P, "k1": P}), STEP, prev.scored)
    record = scored.finished(scored.step_record(STEP, "L3", prev, build), None, "toy")
    assert record.usage is not None and record.usage.input_tokens == 10
    assert scored.prev_of(record) == STEP.old_gold
