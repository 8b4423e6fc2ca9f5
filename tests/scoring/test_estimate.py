"""The plan's estimate: pure arithmetic over what was recorded, limits where nothing was."""

from __future__ import annotations

import pytest

from swechain_ci.scoring.estimate import (
    EVALUATION_OVERHEAD_S,
    GOLD_RUNS_PER_VERSION,
    Recorded,
    Request,
    estimate,
    total,
)

OVERHEAD = EVALUATION_OVERHEAD_S


def test_recorded_history_gives_the_estimate():
    recorded = Recorded(
        suite_s={"c": [10.0, 20.0]},
        agent_s={("a", "c"): [100.0, 300.0]},
        cost_usd={("a", "c"): [1.0, 3.0]},
        fixes={("a", "c"): [True, False]},
    )
    e = estimate(Request("a", "c", steps=4, versions_unbuilt=2), recorded)
    # 4 steps x (prev + Build + half a Fix) evaluations of 15 s, 2 unbuilt versions' gold runs,
    # and 4 x 1.5 agent phases of 200 s
    assert e.runner_s == pytest.approx((15 + OVERHEAD) * (4 * 2.5 + GOLD_RUNS_PER_VERSION * 2) + 4 * 1.5 * 200)
    assert e.dollars == pytest.approx(2.0 * 4)
    assert "Fix granted in 1 of 2 recorded steps" in e.basis


def test_limits_bound_an_agent_with_no_history_and_say_so():
    e = estimate(Request("new", "c", steps=2, limit_wall_s=600, limit_cost_usd=5), Recorded(suite_s={"c": [10.0]}))
    assert e.runner_s == pytest.approx((10 + OVERHEAD) * 2 * 3 + 2 * 2 * 600)  # a Fix assumed at every step
    assert e.dollars == pytest.approx(5 * 4)
    assert any("the manifest's limit" in b for b in e.basis)


def test_unknown_figures_stay_unknown():
    e = estimate(Request("new", "unbuilt", steps=2), Recorded())
    assert (e.runner_s, e.dollars) == (None, None)
    assert any("build one step first" in b for b in e.basis)
    baseline = estimate(
        Request("noop", "c", steps=2, priced=False), Recorded(suite_s={"c": [5.0]}, agent_s={("noop", "c"): [0.0]})
    )
    assert baseline.dollars == 0 and baseline.runner_s == pytest.approx((5 + OVERHEAD) * 2 * 3)
    assert total([e, baseline]) == (None, None)
    assert total([baseline, baseline]) == (pytest.approx(2 * (5 + OVERHEAD) * 6), 0.0)


def test_the_suite_runs_a_recorded_step_took_are_counted():
    """A noop's Build and Fix ship prev's code: its runs are reused, one suite run per step."""
    recorded = Recorded(suite_s={"c": [10.0]}, agent_s={("noop", "c"): [0.0]}, evaluations={("noop", "c"): [1, 1]})
    e = estimate(Request("noop", "c", steps=3, priced=False), recorded)
    assert e.runner_s == pytest.approx((10 + OVERHEAD) * 3)
    assert "1.0 suite runs per step (mean of 2 recorded steps)" in e.basis


def test_earlier_runs_suite_times_come_before_the_gold_runs():
    """Gold runs also hold the tripwire verifications (the whole pool planted): slower than a candidate's."""
    recorded = Recorded(suite_s={"c": [30.0]}, run_suite_s={"c": [10.0]}, agent_s={("oracle", "c"): [0.0]})
    e = estimate(Request("oracle", "c", steps=1, priced=False), recorded)
    assert e.runner_s == pytest.approx((10 + OVERHEAD) * 3)
    assert "suite 10 s (mean of 1 recorded earlier runs' suite runs)" in e.basis
    assert estimate(Request("oracle", "other", steps=1, priced=False), Recorded(suite_s={"other": [30.0]})).runner_s
