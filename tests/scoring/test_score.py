"""Scoring (SEMANTICS.md, "Scoring one step" and "Scoring a chain").

Every expected number below is worked out by hand from the semantics table;
the comments show the arithmetic.
"""

from __future__ import annotations

import pytest

from swechain_ci.models import (
    AgentOutcome,
    Category,
    Counts,
    DiffStats,
    PhaseRecord,
    RunRecord,
    Status,
    StepRecord,
)
from swechain_ci.models import (
    TestRun as HiddenRun,
)
from swechain_ci.scoring.score import (
    categorize,
    chain_metrics,
    count,
    score_step,
    scorecard,
    step_metrics,
)

P, F, E = Status.passed, Status.failed, Status.error
S, XF, XP = Status.skipped, Status.xfailed, Status.xpassed


# --------------------------------------------------------------------------- categorize


def test_every_category_of_the_table():
    related = ["u_res", "u_res_from_error", "u_unres_failed", "u_unres_error"]
    universe = [
        "u_res",
        "u_res_from_error",
        "u_unres_failed",
        "u_unres_error",
        "pres",
        "reg_failed",
        "reg_error",
        "recov",
        "unrecov_f",
        "unrecov_e",
    ]
    prev = {
        "u_res": F,
        "u_res_from_error": E,
        "u_unres_failed": P,
        "u_unres_error": F,
        "pres": P,
        "reg_failed": P,
        "reg_error": P,
        "recov": E,
        "unrecov_f": F,
        "unrecov_e": E,
    }
    curr = {
        "u_res": P,
        "u_res_from_error": P,
        "u_unres_failed": F,
        "u_unres_error": E,
        "pres": P,
        "reg_failed": F,
        "reg_error": E,
        "recov": P,
        "unrecov_f": E,
        "unrecov_e": F,
    }
    assert categorize(related, universe, prev, curr) == {
        # upgrade-related, curr passed -> resolved whatever prev was
        "u_res": Category.resolved,
        "u_res_from_error": Category.resolved,
        # upgrade-related, curr failed or error -> unresolved (even if prev passed)
        "u_unres_failed": Category.unresolved,
        "u_unres_error": Category.unresolved,
        # not related, passed -> passed
        "pres": Category.preserved,
        # not related, passed -> failed/error: failed and error count alike
        "reg_failed": Category.regressed,
        "reg_error": Category.regressed,
        # not related, broken -> passed
        "recov": Category.recovered,
        # not related, broken -> broken (failed and error alike)
        "unrecov_f": Category.unrecovered,
        "unrecov_e": Category.unrecovered,
    }


@pytest.mark.parametrize("bad", [S, XF, XP])
def test_tests_with_unscoreable_prev_or_curr_are_left_out(bad):
    related = ["u_prev_bad", "u_curr_bad"]
    universe = ["u_prev_bad", "u_curr_bad", "n_prev_bad", "n_curr_bad", "kept"]
    prev = {"u_prev_bad": bad, "u_curr_bad": F, "n_prev_bad": bad, "n_curr_bad": P, "kept": P}
    curr = {"u_prev_bad": P, "u_curr_bad": bad, "n_prev_bad": F, "n_curr_bad": bad, "kept": F}
    # only "kept" has both statuses in {passed, failed, error}: passed -> failed = regressed
    assert categorize(related, universe, prev, curr) == {"kept": Category.regressed}


def test_tests_missing_from_prev_or_curr_are_left_out():
    # a status of None is not passed/failed/error, so the test is not scored
    assert categorize(["a"], ["a", "b"], {"b": P}, {"a": P}) == {}


def test_only_tests_in_the_universe_are_scored():
    # "u_not_gold" is upgrade-related but not in the universe (does not pass on new gold)
    cats = categorize(
        ["u", "u_not_gold"],
        ["u", "n"],
        {"u": F, "u_not_gold": F, "n": P, "x": P},
        {"u": P, "u_not_gold": P, "n": P, "x": F},
    )
    assert cats == {"u": Category.resolved, "n": Category.preserved}


# --------------------------------------------------------------------------- count / step_metrics


def test_count_maps_categories_to_confusion_counts():
    cats = {
        "a": Category.resolved,
        "b": Category.resolved,
        "c": Category.unresolved,
        "d": Category.regressed,
        "e": Category.regressed,
        "f": Category.regressed,
        "g": Category.preserved,
        "h": Category.recovered,
        "i": Category.recovered,
        "j": Category.unrecovered,
    }
    assert count(cats) == Counts(tp=2, fn=1, fp=3, tn=1, recovered=2, unrecovered=1)


def test_count_of_nothing_is_all_zero():
    assert count({}) == Counts(tp=0, fn=0, fp=0, tn=0, recovered=0, unrecovered=0)


def test_step_metrics_ordinary():
    m = step_metrics(Counts(tp=3, fn=1, fp=2, tn=7, recovered=4, unrecovered=5))
    assert m.resolving == pytest.approx(0.75)  # 3 / (3 + 1)
    assert m.precision == pytest.approx(0.6)  # 3 / (3 + 2)
    assert m.f1 == pytest.approx(6 / 9)  # 2*3 / (2*3 + 2 + 1)
    assert (m.tp, m.fn, m.fp) == (3, 1, 2)


def test_step_metrics_all_denominators_zero_are_null():
    # no upgrade-related test and no regression: 0/0 everywhere
    m = step_metrics(Counts(tp=0, fn=0, fp=0, tn=12, recovered=1, unrecovered=1))
    assert m.resolving is None
    assert m.precision is None
    assert m.f1 is None


def test_step_with_no_upgrade_related_tests_still_scores_regressions():
    m = step_metrics(Counts(tp=0, fn=0, fp=1, tn=4))
    assert m.resolving is None  # 0 / (0 + 0) undefined
    assert m.precision == 0.0  # 0 / (0 + 1)
    assert m.f1 == 0.0  # 2*0 / (0 + 1 + 0)
    assert m.fp == 1


def test_step_with_only_unresolved_tests():
    m = step_metrics(Counts(tp=0, fn=2, fp=0))
    assert m.resolving == 0.0  # 0 / 2
    assert m.precision is None  # 0 / (0 + 0) undefined
    assert m.f1 == 0.0  # 0 / (0 + 0 + 2)


def test_step_all_resolved_nothing_regressed():
    m = step_metrics(Counts(tp=5, fn=0, fp=0))
    assert (m.resolving, m.precision, m.f1) == (1.0, 1.0, 1.0)


# --------------------------------------------------------------------------- chain_metrics


def test_chain_metrics_micro_average():
    a = Counts(tp=3, fn=1, fp=0, tn=10)
    b = Counts(tp=1, fn=3, fp=2, tn=1)
    m = chain_metrics([a, b])
    # sums: TP=4, FN=4, FP=2
    assert (m.tp, m.fn, m.fp) == (4, 4, 2)
    assert m.resolving == pytest.approx(0.5)  # 4 / 8
    assert m.precision == pytest.approx(2 / 3)  # 4 / 6
    # F1 = 2PR/(P+R) = 2*(2/3)*(1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    assert m.f1 == pytest.approx(4 / 7)


def test_chain_metrics_is_not_the_mean_of_step_metrics():
    # step A: TP=1 FN=0 -> resolving 1.0; step B: TP=1 FN=9 -> resolving 0.1
    # macro mean would be 0.55; micro is 2 / 11
    m = chain_metrics([Counts(tp=1, fn=0, fp=0), Counts(tp=1, fn=9, fp=0)])
    assert m.resolving == pytest.approx(2 / 11)
    assert m.precision == 1.0  # 2 / (2 + 0)
    # F1 = 2 * 1 * (2/11) / (1 + 2/11) = (4/11) / (13/11) = 4/13
    assert m.f1 == pytest.approx(4 / 13)


def test_chain_f1_null_when_recall_undefined():
    # no upgrade-related tests anywhere, one regression: R = 0/0, P = 0/1 = 0
    m = chain_metrics([Counts(tp=0, fn=0, fp=1), Counts()])
    assert m.resolving is None
    assert m.precision == 0.0
    assert m.f1 is None


def test_chain_f1_null_when_precision_undefined():
    # TP=0, FP=0 -> P = 0/0; R = 0/3 = 0
    m = chain_metrics([Counts(tp=0, fn=3, fp=0)])
    assert m.precision is None
    assert m.resolving == 0.0
    assert m.f1 is None


def test_chain_f1_null_when_precision_and_recall_both_zero():
    # P = 0/1 = 0, R = 0/2 = 0, so F1 = 2PR/(P+R) has denominator 0 -> undefined
    m = chain_metrics([Counts(tp=0, fn=2, fp=1)])
    assert (m.precision, m.resolving) == (0.0, 0.0)
    assert m.f1 is None


def test_chain_metrics_of_no_steps_is_all_null():
    m = chain_metrics([])
    assert (m.resolving, m.precision, m.f1, m.tp, m.fn, m.fp) == (None, None, None, 0, 0, 0)


# --------------------------------------------------------------------------- records


def phase(name, outcomes, *, status="ok", cost=None, wall=0.0):
    return PhaseRecord(
        phase=name,
        agent=AgentOutcome(status=status, cost_usd=cost, wall_s=wall),
        code_sha256="0" * 64,
        diff=DiffStats(),
        run=HiddenRun(),
        outcomes=outcomes,
        # stored categories/counts are deliberately empty: scoring must recompute them
        categories={},
        counts=Counts(),
        execution_error=False,
    )


def step_a():
    """Index 1, no fix. Build: TP=3 FN=1 FP=0 TN=1."""
    new_gold = {"u1": P, "u2": P, "u3": P, "u4": P, "p1": P, "gone": F}
    prev = {"u1": F, "u2": F, "u3": E, "u4": F, "p1": P, "gone": F}
    build = {"u1": P, "u2": P, "u3": P, "u4": F, "p1": P, "gone": P}
    return StepRecord(
        index=1,
        prev_version="1.0",
        next_version="1.1",
        spec_level="L3",
        # "gone" is listed as upgrade-related but fails on new gold: never scored
        upgrade_related=["u1", "u2", "u3", "u4", "gone"],
        new_gold=new_gold,
        prev_outcomes=prev,
        build=phase("build", build, cost=None, wall=10.0),
    )


def step_b():
    """Index 2, with a fix.

    Build:  v1 resolved, v2/v3/v4 unresolved -> TP=1 FN=3;
            q1, q2 passed -> failed/error -> FP=2; q3 preserved; q4 failed -> passed recovered;
            fl (flaky) would be regressed but is left out.
    Fix:    v1..v4 passed -> TP=4 FN=0; q1 passed -> passed preserved (prev is the
            agent's previous state, not the build outcome); q2 still error -> FP=1;
            q3 preserved; q4 failed -> failed unrecovered.
    """
    new_gold = {"v1": P, "v2": P, "v3": P, "v4": P, "q1": P, "q2": P, "q3": P, "q4": P, "fl": P}
    prev = {"v1": F, "v2": F, "v3": F, "v4": P, "q1": P, "q2": P, "q3": P, "q4": F, "fl": P}
    build = {"v1": P, "v2": F, "v3": E, "v4": F, "q1": F, "q2": E, "q3": P, "q4": P, "fl": F}
    fix = {"v1": P, "v2": P, "v3": P, "v4": P, "q1": P, "q2": E, "q3": P, "q4": F, "fl": E}
    return StepRecord(
        index=2,
        prev_version="1.1",
        next_version="1.2",
        spec_level="L3",
        upgrade_related=["v1", "v2", "v3", "v4"],
        flaky=["fl"],
        new_gold=new_gold,
        prev_outcomes=prev,
        build=phase("build", build, cost=1.5, wall=10.0),
        fix=phase("fix", fix, status="timed_out", cost=0.25, wall=5.0),
        fix_report="...",
    )


def test_score_step_without_fix_uses_build_for_both():
    score, build_counts, final_counts = score_step(step_a())
    assert build_counts == Counts(tp=3, fn=1, fp=0, tn=1, recovered=0, unrecovered=0)
    assert final_counts == build_counts
    assert score.fix_ran is False
    assert score.upgrade_related == 4  # "gone" does not pass on new gold
    assert score.build == score.build_fix
    assert score.build.resolving == pytest.approx(0.75)  # 3/4
    assert score.build.precision == 1.0  # 3/3
    assert score.build.f1 == pytest.approx(6 / 7)  # 2*3 / (6 + 0 + 1)
    assert score.cost_usd is None  # no phase reported a cost
    assert score.wall_s == 10.0
    assert score.agent_status == "ok"
    assert score.categories_build == {
        Category.resolved: 3,
        Category.unresolved: 1,
        Category.preserved: 1,
        Category.regressed: 0,
        Category.recovered: 0,
        Category.unrecovered: 0,
    }


def test_score_step_build_and_build_fix_from_the_same_record():
    score, build_counts, final_counts = score_step(step_b())
    assert build_counts == Counts(tp=1, fn=3, fp=2, tn=1, recovered=1, unrecovered=0)
    assert final_counts == Counts(tp=4, fn=0, fp=1, tn=2, recovered=0, unrecovered=1)
    assert score.fix_ran is True
    assert score.upgrade_related == 4
    # Build: R = 1/4, P = 1/3, F1 = 2 / (2 + 2 + 3) = 2/7
    assert score.build.resolving == pytest.approx(0.25)
    assert score.build.precision == pytest.approx(1 / 3)
    assert score.build.f1 == pytest.approx(2 / 7)
    # Build+Fix: R = 4/4, P = 4/5, F1 = 8 / (8 + 1 + 0) = 8/9
    assert score.build_fix.resolving == 1.0
    assert score.build_fix.precision == pytest.approx(0.8)
    assert score.build_fix.f1 == pytest.approx(8 / 9)
    assert score.categories_build_fix == {
        Category.resolved: 4,
        Category.unresolved: 0,
        Category.preserved: 2,
        Category.regressed: 1,
        Category.recovered: 0,
        Category.unrecovered: 1,
    }
    assert score.cost_usd == pytest.approx(1.75)  # 1.5 + 0.25
    assert score.wall_s == pytest.approx(15.0)  # 10 + 5
    assert score.agent_status == "timed_out"  # the status of the last phase that ran


def test_flaky_test_is_not_scored():
    step = step_b()
    _, build_counts, _ = score_step(step)
    # without the flaky exclusion, "fl" (passed -> failed) would make FP=3
    assert build_counts.fp == 2
    unflaky = step.model_copy(update={"flaky": []})
    _, build_counts_unflaky, _ = score_step(unflaky)
    assert build_counts_unflaky.fp == 3


def test_scorecard_micro_averages_build_and_build_fix():
    run = RunRecord(
        run_id="r1",
        chain="toy",
        step_range="1-5",
        agent="dummy",
        spec_level="L3",
        oracle_hash="h",
        steps_total=5,
        status="stopped",
        stop_reason="agent timed out at step 2",
    )
    card = scorecard(run, [step_b(), step_a()])  # out of order on purpose
    assert [s.index for s in card.steps] == [1, 2]
    assert (card.chain, card.agent, card.spec_level) == ("toy", "dummy", "L3")
    assert card.steps_total == 5
    assert card.steps_scored == 2
    assert card.stop_reason == "agent timed out at step 2"
    # Build: A (TP3 FN1 FP0) + B build (TP1 FN3 FP2) = TP4 FN4 FP2
    assert (card.build.tp, card.build.fn, card.build.fp) == (4, 4, 2)
    assert card.build.resolving == pytest.approx(0.5)  # 4/8
    assert card.build.precision == pytest.approx(2 / 3)  # 4/6
    assert card.build.f1 == pytest.approx(4 / 7)  # 2*(2/3)*(1/2) / (2/3 + 1/2)
    # Build+Fix: A build (TP3 FN1 FP0) + B fix (TP4 FN0 FP1) = TP7 FN1 FP1
    assert (card.build_fix.tp, card.build_fix.fn, card.build_fix.fp) == (7, 1, 1)
    assert card.build_fix.resolving == pytest.approx(7 / 8)
    assert card.build_fix.precision == pytest.approx(7 / 8)
    assert card.build_fix.f1 == pytest.approx(7 / 8)  # P == R -> F1 == P


def test_scorecard_step_without_related_tests_counts_its_regression():
    # one step, no upgrade-related test, one regression, one preserved
    step = StepRecord(
        index=1,
        prev_version="1.0",
        next_version="1.1",
        spec_level="L3",
        upgrade_related=[],
        new_gold={"a": P, "b": P},
        prev_outcomes={"a": P, "b": P},
        build=phase("build", {"a": F, "b": P}),
    )
    run = RunRecord(run_id="r", chain="c", step_range="1-1", agent="x", spec_level="L3", oracle_hash="h", steps_total=1)
    card = scorecard(run, [step])
    assert card.steps[0].upgrade_related == 0
    assert card.steps[0].build.resolving is None  # 0/0
    assert card.steps[0].build.precision == 0.0  # 0/(0+1)
    assert card.steps[0].build.f1 == 0.0  # 0/(0+1+0)
    assert (card.build.tp, card.build.fn, card.build.fp) == (0, 0, 1)
    assert card.build.resolving is None
    assert card.build.precision == 0.0
    assert card.build.f1 is None  # R undefined -> 2PR/(P+R) undefined
