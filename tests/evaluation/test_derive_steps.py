"""The oracle's derivation of a step from its gold runs, without Docker (SEMANTICS.md, "Four runs
per step": upgrade-related tests pass on new gold and fail or error on old gold).

Every expected list below is worked out by hand from the runs given.
"""

from __future__ import annotations

from swechain_ci.evaluation.oracle import derive_step, derive_steps
from swechain_ci.models import IntegrityFlag, Status
from swechain_ci.models import TestRun as HiddenRun

P, F, E, S, XF = Status.passed, Status.failed, Status.error, Status.skipped, Status.xfailed


def run(**statuses: Status) -> HiddenRun:
    return HiddenRun(statuses={f"t.py::{name}": s for name, s in statuses.items()})


def ids(*names: str) -> list[str]:
    return [f"t.py::{n}" for n in names]


def test_upgrade_related_pass_on_new_gold_and_break_on_old_gold():
    new = run(fixed=P, errored=P, kept=P, skipped=S, broken_by_both=F)
    old = run(fixed=F, errored=E, kept=P, skipped=F, broken_by_both=F)
    step = derive_step(3, "1.0", "1.1", [new, new], old, {})
    # fixed (F -> P) and errored (E -> P) are related; kept passes on both; skipped and
    # broken_by_both do not pass on new gold, so they are excluded, not related.
    assert (step.index, step.prev_version, step.next_version) == (3, "1.0", "1.1")
    assert step.upgrade_related == ids("errored", "fixed")
    assert step.excluded == {
        "t.py::broken_by_both": "not passing on new gold (failed)",
        "t.py::skipped": "not passing on new gold (skipped)",
    }
    assert step.new_gold == new.statuses and step.old_gold == old.statuses
    assert step.flaky == [] and step.needs_network == []


def test_old_gold_is_resolved_against_new_gold():
    """A new-gold test the old code never reported counts as failed (error under a failed
    collector), so it is upgrade-related; a test only old gold has is not a test of the step."""
    new = run(new_feature=P, in_broken_module=P, steady=P)
    old = HiddenRun(
        statuses={"t.py::steady": P, "t.py::gone": P},
        collection_errors={"t.py::in_broken_module": "ImportError"},
    )
    step = derive_step(1, "1.0", "1.1", [new], old, {})
    assert step.old_gold == {"t.py::new_feature": F, "t.py::in_broken_module": E, "t.py::steady": P}
    assert step.upgrade_related == ids("in_broken_module", "new_feature")
    assert step.old_gold_collection_errors == ["t.py::in_broken_module"]


def test_an_old_gold_that_did_not_run_makes_every_passing_test_related():
    new = run(a=P, b=P, c=F)
    old = HiddenRun(statuses={"t.py::a": P}, execution_error="the harness left no result")
    step = derive_step(1, "1.0", "1.1", [new], old, {})
    assert step.old_gold == {"t.py::a": E, "t.py::b": E, "t.py::c": E}
    assert step.upgrade_related == ids("a", "b")


def test_flaky_tests_are_excluded_and_never_related():
    first = run(wobbly=P, fixed=P, steady=P)
    second = run(wobbly=F, fixed=P, steady=P)
    old = run(wobbly=F, fixed=F, steady=P)
    step = derive_step(1, "1.0", "1.1", [first, second], old, {})
    # new gold is the first run; wobbly changed between the runs, so it is flaky
    assert step.new_gold["t.py::wobbly"] == P
    assert step.flaky == ids("wobbly")
    assert step.upgrade_related == ids("fixed")
    assert step.excluded == {"t.py::wobbly": "flaky: its outcome changed between new-gold runs"}


def test_declared_flaky_tests_are_excluded_even_where_both_runs_agree():
    """A test that fails at random can pass both new-gold runs and fail old gold by chance: the
    chain declares it (oracle.flaky), and it is flaky where new gold has it."""
    new = run(random=P, fixed=P)
    old = run(random=F, fixed=F)
    declared = {"t.py::random": "thread idents are reused", "t.py::elsewhere": "another version's"}
    step = derive_step(1, "1.0", "1.1", [new, new], old, {}, declared)
    assert step.flaky == ids("random")
    assert step.upgrade_related == ids("fixed")
    assert step.excluded == {"t.py::random": "flaky in 1.1 (oracle.flaky): thread idents are reused"}


def test_a_test_both_measured_and_declared_flaky_is_listed_once_with_the_declared_reason():
    first, second = run(random=P), run(random=F)
    step = derive_step(1, "1.0", "1.1", [first, second], run(random=F), {}, {"t.py::random": "why"})
    assert step.flaky == ids("random")
    assert step.excluded == {"t.py::random": "flaky in 1.1 (oracle.flaky): why"}


def test_network_tests_are_excluded_only_where_new_gold_has_them():
    new = run(online=P, fixed=P)
    old = run(online=F, fixed=F)
    reasons = {"t.py::online": "declared in chain.yaml", "t.py::elsewhere": "network probe"}
    step = derive_step(1, "1.0", "1.1", [new], old, reasons)
    assert step.needs_network == ids("online")
    assert step.upgrade_related == ids("fixed")
    assert step.excluded == {"t.py::online": "needs_network in 1.1: declared in chain.yaml"}


def test_gold_findings_are_kept_once():
    flag = IntegrityFlag(kind="frame_walk", detail="d", location="t.py:3")
    new = HiddenRun(statuses={"t.py::a": P}, integrity_flags=[flag])
    step = derive_step(1, "1.0", "1.1", [new, new], run(a=F), {})
    assert step.gold_integrity_flags == [flag]


def test_steps_are_numbered_from_the_first_index_and_keyed_by_their_target():
    own = {"1.0": [run(a=F)], "1.1": [run(a=P, b=F)], "1.2": [run(a=P, b=P)]}
    cross = {"1.1": run(a=F, b=F), "1.2": run(a=P, b=F)}
    steps = derive_steps([("1.0", "1.1"), ("1.1", "1.2")], 5, own, cross, {"1.1": {}, "1.2": {}})
    assert [(s.index, s.prev_version, s.next_version) for s in steps] == [(5, "1.0", "1.1"), (6, "1.1", "1.2")]
    assert [s.upgrade_related for s in steps] == [ids("a"), ids("b")]
    assert steps[0].excluded == {"t.py::b": "not passing on new gold (failed)"}


def test_declared_flaky_tests_reach_the_steps_of_their_target_only():
    own = {"1.0": [run(a=F)], "1.1": [run(a=P)], "1.2": [run(a=P)]}
    cross = {"1.1": run(a=F), "1.2": run(a=F)}
    network = {"1.1": {}, "1.2": {}}
    steps = derive_steps([("1.0", "1.1"), ("1.1", "1.2")], 1, own, cross, network, {"1.2": {"t.py::a": "why"}})
    assert [s.upgrade_related for s in steps] == [ids("a"), []]
    assert [s.flaky for s in steps] == [[], ids("a")]
