"""The plan's estimate: pure arithmetic over what was recorded, limits where nothing was."""

from __future__ import annotations

import pytest

from swechain_ci.scoring.estimate import GOLD_RUNS_PER_VERSION, Recorded, Request, estimate, total


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
    assert e.runner_s == pytest.approx(15 * (4 * 2.5 + GOLD_RUNS_PER_VERSION * 2) + 4 * 1.5 * 200)
    assert e.dollars == pytest.approx(2.0 * 4)
    assert "Fix granted in 1 of 2 recorded steps" in e.basis


def test_limits_bound_an_agent_with_no_history_and_say_so():
    e = estimate(Request("new", "c", steps=2, limit_wall_s=600, limit_cost_usd=5), Recorded(suite_s={"c": [10.0]}))
    assert e.runner_s == pytest.approx(10 * 2 * 3 + 2 * 2 * 600)  # a Fix assumed at every step
    assert e.dollars == pytest.approx(5 * 4)
    assert any("the manifest's limit" in b for b in e.basis)


def test_unknown_figures_stay_unknown():
    e = estimate(Request("new", "unbuilt", steps=2), Recorded())
    assert (e.runner_s, e.dollars) == (None, None)
    assert any("build one step first" in b for b in e.basis)
    baseline = estimate(
        Request("noop", "c", steps=2, priced=False), Recorded(suite_s={"c": [5.0]}, agent_s={("noop", "c"): [0.0]})
    )
    assert baseline.dollars == 0 and baseline.runner_s == pytest.approx(5 * 2 * 3)
    assert total([e, baseline]) == (None, None)
    assert total([baseline, baseline]) == (pytest.approx(60.0), 0.0)
