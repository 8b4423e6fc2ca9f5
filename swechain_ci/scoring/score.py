"""Scoring as SWE-Chain defines it: pure functions over per-test outcome maps.

Nothing here touches Docker or the disk, so stored results re-score exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from swechain_ci.evaluation.outcomes import scored_universe
from swechain_ci.models import (
    SCOREABLE,
    Category,
    Counts,
    IntegrityFlag,
    Metrics,
    PlannedStep,
    Ranking,
    RunRecord,
    Scorecard,
    Status,
    StepOracle,
    StepRecord,
    StepScore,
    TestRun,
    Usage,
)
from swechain_ci.scoring import failure_modes
from swechain_ci.scoring.integrity import Clearance, integrity_of, prev_for_scoring, run_flags


def categorize(
    upgrade_related: Iterable[str],
    universe: Iterable[str],
    prev: Mapping[str, Status],
    curr: Mapping[str, Status],
) -> dict[str, Category]:
    """Category of every scored test.

    ``universe`` is the tests that pass on new gold (flaky ones already left
    out). A test is scored only when its prev and curr status are each passed,
    failed or error.
    """
    related = set(upgrade_related)
    categories: dict[str, Category] = {}
    for test in sorted(universe):
        before, after = prev.get(test), curr.get(test)
        if before not in SCOREABLE or after not in SCOREABLE:
            continue
        if test in related:
            categories[test] = Category.resolved if after == Status.passed else Category.unresolved
        elif before == Status.passed:
            categories[test] = Category.preserved if after == Status.passed else Category.regressed
        else:
            categories[test] = Category.recovered if after == Status.passed else Category.unrecovered
    return categories


def count(categories: Mapping[str, Category]) -> Counts:
    tally = Counter(categories.values())
    return Counts(
        tp=tally[Category.resolved],
        fn=tally[Category.unresolved],
        fp=tally[Category.regressed],
        tn=tally[Category.preserved],
        recovered=tally[Category.recovered],
        unrecovered=tally[Category.unrecovered],
    )


def ratio(numerator: float, denominator: float) -> float | None:
    """A ratio whose denominator is 0 is undefined (None), never 0 or 1."""
    return None if denominator == 0 else numerator / denominator


def step_metrics(counts: Counts) -> Metrics:
    tp, fn, fp = counts.tp, counts.fn, counts.fp
    return Metrics(
        resolving=ratio(tp, tp + fn),
        precision=ratio(tp, tp + fp),
        f1=ratio(2 * tp, 2 * tp + fp + fn),
        tp=tp,
        fn=fn,
        fp=fp,
    )


def chain_metrics(per_step: Iterable[Counts]) -> Metrics:
    """Micro-average: sum TP, FN, FP over steps; F1 = 2PR/(P+R)."""
    steps = list(per_step)
    tp = sum(c.tp for c in steps)
    fn = sum(c.fn for c in steps)
    fp = sum(c.fp for c in steps)
    resolving = ratio(tp, tp + fn)
    precision = ratio(tp, tp + fp)
    f1 = None
    if resolving is not None and precision is not None:
        f1 = ratio(2 * precision * resolving, precision + resolving)
    return Metrics(resolving=resolving, precision=precision, f1=f1, tp=tp, fn=fn, fp=fp)


def f1_undefined(metrics: Metrics) -> str:
    """Why a chain's F1 is undefined although tests were scored (empty when it is defined or nothing was)."""
    if metrics.f1 is not None or metrics.tp + metrics.fn + metrics.fp == 0:
        return ""
    if metrics.precision is None:
        return "no test was resolved and none regressed, so precision TP/(TP+FP) is 0/0"
    if metrics.resolving is None:
        return "the steps had no upgrade-related test, so resolving TP/(TP+FN) is 0/0"
    return "precision and resolving are both 0"


def category_tally(categories: Mapping[str, Category]) -> dict[Category, int]:
    tally = Counter(categories.values())
    return {c: tally[c] for c in Category}


def _modes(run: TestRun, categories: Mapping[str, Category]) -> dict[str, int]:
    return {m.value: n for m, n in failure_modes.tally(failure_modes.classify_phase(run, categories)).items()}


def _summed(per_step: Iterable[dict[str, int]]) -> dict[str, int]:
    totals: Counter[str] = Counter({m.value: 0 for m in failure_modes.FailureMode})
    for modes in per_step:
        totals.update(modes)
    return dict(totals)


def score_step(step: StepRecord, flags: list[IntegrityFlag] | None = None) -> tuple[StepScore, Counts, Counts]:
    """Score one step's Build and Build+Fix from its stored outcome maps; ``flags`` (the step's
    integrity findings) decide what prev is scored as."""
    universe = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
    prev = prev_for_scoring(step.prev_outcomes, step.old_gold, flags or [])
    build_categories = categorize(step.upgrade_related, universe, prev, step.build.outcomes)
    final = step.fix or step.build
    final_categories = categorize(step.upgrade_related, universe, prev, final.outcomes)
    build_counts, final_counts = count(build_categories), count(final_categories)
    phases = [step.build] + ([step.fix] if step.fix else [])
    costs = [p.agent.cost_usd for p in phases if p.agent.cost_usd is not None]
    score = StepScore(
        index=step.index,
        prev_version=step.prev_version,
        next_version=step.next_version,
        upgrade_related=len(set(step.upgrade_related) & universe),
        fix_ran=step.fix is not None,
        build=step_metrics(build_counts),
        build_fix=step_metrics(final_counts),
        categories_build=category_tally(build_categories),
        categories_build_fix=category_tally(final_categories),
        agent_status=final.agent.status,
        cost_usd=sum(costs) if costs else None,
        usage=Usage.total([p.agent for p in phases]),
        wall_s=sum(p.agent.wall_s for p in phases),
        failure_modes_build=_modes(step.build.run, build_categories),
        failure_modes_build_fix=_modes(final.run, final_categories),
    )
    return score, build_counts, final_counts


def plan(steps: Iterable[StepOracle]) -> list[PlannedStep]:
    """A run's range, each step with the upgrade-related tests it is scored on."""
    return [
        PlannedStep(
            index=s.index,
            prev_version=s.prev_version,
            next_version=s.next_version,
            upgrade_related=len(set(s.upgrade_related) & scored_universe(s.new_gold, [*s.flaky, *s.needs_network])),
        )
        for s in steps
    ]


def ranking(planned: list[PlannedStep], scored: Mapping[int, tuple[Counts, Counts]]) -> Ranking:
    """The figures to rank by: every planned step never scored counts its upgrade-related tests
    as FN (no TP, no FP) in Build and in Build+Fix (SEMANTICS.md, "Ranking a run that did not finish")."""
    missing = [p for p in planned if p.index not in scored]
    charged = [Counts(fn=p.upgrade_related) for p in missing]
    return Ranking(
        build=chain_metrics([*(b for b, _ in scored.values()), *charged]),
        build_fix=chain_metrics([*(f for _, f in scored.values()), *charged]),
        steps_unscored=[p.index for p in missing],
        fn_added=sum(p.upgrade_related for p in missing),
    )


def scorecard(run: RunRecord, steps: list[StepRecord], clearance: Clearance | None = None) -> Scorecard:
    ordered = sorted(steps, key=lambda s: s.index)
    flags = run_flags(ordered, run.import_name)
    scored = [score_step(s, flags[s.index]) for s in ordered]
    return Scorecard(
        chain=run.chain,
        step_range=run.step_range,
        agent=run.agent,
        spec_level=run.spec_level,
        steps_total=run.steps_total,
        steps_scored=len(scored),
        stop_reason=run.stop_reason,
        build=chain_metrics(b for _, b, _ in scored),
        build_fix=chain_metrics(f for _, _, f in scored),
        cost_usd=sum(costs) if (costs := [s.cost_usd for s, _, _ in scored if s.cost_usd is not None]) else None,
        usage=Usage.total([s.usage for s, _, _ in scored if s.usage is not None]),
        status=run.status,
        steps=[s for s, _, _ in scored],
        oracle_hash=run.oracle_hash,
        failure_modes_build=_summed(s.failure_modes_build for s, _, _ in scored),
        failure_modes_build_fix=_summed(s.failure_modes_build_fix for s, _, _ in scored),
        ranking=ranking(run.steps_planned, {s.index: (b, f) for s, b, f in scored}) if run.steps_planned else None,
        integrity=integrity_of([f for s in ordered for f in flags[s.index]], clearance),
    )
