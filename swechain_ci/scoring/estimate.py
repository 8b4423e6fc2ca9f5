"""A plan before the bill: runner time and agent dollars of a dispatch, estimated before it starts.

``recorded(...)`` gathers what earlier work measured: suite times from the kept gold runs and from
the evaluations in earlier runs' step records, and per agent and chain the wall time and dollars of
each agent phase and how often a Fix was granted. ``estimate(...)`` is pure: per (agent, chain,
steps) it adds the evaluations (prev and Build per step, and the Fix's where one is granted), the
agent phases and, for versions whose gold runs are not kept yet, the gold runs (each suite run with
its container's overhead, and as many per step as the agent's recorded steps took); where nothing is
recorded it falls back to the manifest's limits (an upper bound, and said so), and where not even
that exists it says the figure is unknown rather than guessing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from swechain_ci.errors import SwechainError
from swechain_ci.models import RunRecord, StepRecord, TestRun
from swechain_ci.records import RUN_FILE, RunFolder, read_model

GOLD_RUNS_PER_VERSION = 3  # baseline runs on new gold, and old gold under the next version's tests
DEFAULT_FIX_RATE = 1.0  # with no history, every step is assumed to earn its Fix (an upper bound)
# An evaluation's time beyond its suite (a container started, the code copied in, /out read back):
# toy's 0.3 s suites took 1.3 s each end to end here (benchmarks/plan_accuracy.py).
EVALUATION_OVERHEAD_S = 1.0


@dataclass
class Recorded:
    suite_s: dict[str, list[float]] = field(default_factory=dict)  # chain -> one gold suite run's seconds
    # chain -> one candidate's suite run's seconds (earlier runs): what a dispatch's runs take, where
    # gold runs also hold the oracle's tripwire verifications (the whole pool planted)
    run_suite_s: dict[str, list[float]] = field(default_factory=dict)
    agent_s: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (agent, chain) -> per phase
    cost_usd: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (agent, chain) -> per step
    fixes: dict[tuple[str, str], list[bool]] = field(default_factory=dict)  # (agent, chain) -> Fix granted
    # (agent, chain) -> per step, the suite runs it took: a run of code already run is reused (a noop's
    # Build and Fix ship prev's code), so not every step takes prev, Build and Fix
    evaluations: dict[tuple[str, str], list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    agent: str
    chain: str
    steps: int
    versions_unbuilt: int = 0  # versions whose gold runs are not kept yet
    limit_wall_s: float | None = None  # the manifest's limits, for agents with no history
    limit_cost_usd: float | None = None
    priced: bool = True  # False for the baselines, which spend nothing


@dataclass
class Estimate:
    request: Request
    runner_s: float | None
    dollars: float | None
    basis: list[str]  # where each part came from, in words


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def estimate(request: Request, recorded: Recorded) -> Estimate:
    key = (request.agent, request.chain)
    basis: list[str] = []
    fix_history = recorded.fixes.get(key, [])
    fix_rate = sum(fix_history) / len(fix_history) if fix_history else DEFAULT_FIX_RATE
    basis.append(
        f"Fix granted in {sum(fix_history)} of {len(fix_history)} recorded steps"
        if fix_history
        else "no recorded steps: a Fix assumed at every step"
    )
    phases = request.steps * (1 + fix_rate)
    timings = recorded.run_suite_s.get(request.chain) or recorded.suite_s.get(request.chain, [])
    suite = _mean(timings)
    runner: float | None = None
    if suite is None:
        basis.append(f"no suite time recorded for {request.chain}: build one step first (chain build --steps 1)")
    else:
        kind = "earlier runs'" if request.chain in recorded.run_suite_s else "gold"
        basis.append(f"suite {suite:.0f} s (mean of {len(timings)} recorded {kind} suite runs)")
        taken = recorded.evaluations.get(key, [])
        per_step = math.fsum(taken) / len(taken) if taken else 2 + fix_rate
        if taken:
            basis.append(f"{per_step:.1f} suite runs per step (mean of {len(taken)} recorded steps)")
        evaluations = request.steps * per_step + GOLD_RUNS_PER_VERSION * request.versions_unbuilt
        runner = (suite + EVALUATION_OVERHEAD_S) * evaluations
    agent_s = _mean(recorded.agent_s.get(key, []))
    if agent_s is None and not request.priced:
        agent_s = 0.0
        basis.append("a baseline: its phases take no agent time")
    elif agent_s is not None:
        basis.append(f"agent phase {agent_s:.0f} s (mean of {len(recorded.agent_s[key])} recorded)")
    elif request.limit_wall_s is not None:
        agent_s = request.limit_wall_s
        basis.append(f"agent phase at most {agent_s:.0f} s (the manifest's wall-clock limit; no history)")
    else:
        basis.append("no agent phase time recorded")
    runner = None if runner is None or agent_s is None else runner + phases * agent_s
    cost = _mean(recorded.cost_usd.get(key, []))
    dollars: float | None
    if not request.priced:
        dollars = 0.0
    elif cost is not None:
        dollars = cost * request.steps
        basis.append(f"${cost:.2f} per step (mean of {len(recorded.cost_usd[key])} recorded)")
    elif request.limit_cost_usd is not None:
        dollars = request.limit_cost_usd * phases
        basis.append(f"at most ${request.limit_cost_usd:.2f} per phase (the manifest's limit; no history)")
    else:
        dollars = None
        basis.append("no cost recorded and no dollar limit in the manifest")
    return Estimate(request=request, runner_s=runner, dollars=dollars, basis=basis)


def total(estimates: Iterable[Estimate]) -> tuple[float | None, float | None]:
    """Runner seconds and dollars over a dispatch; None if any part is unknown."""
    listed = list(estimates)
    runner = [e.runner_s for e in listed]
    dollars = [e.dollars for e in listed]
    return (
        None if None in runner else math.fsum(r for r in runner if r is not None),
        None if None in dollars else math.fsum(d for d in dollars if d is not None),
    )


def _seconds(run: TestRun) -> float | None:
    return run.duration_s if run.duration_s > 0 and not run.timed_out else None


def suite_runs(step: StepRecord) -> int:
    """The suite runs a recorded step took: prev (none at a range's first step), the Build unless it
    shipped prev's code unchanged, the Fix unless it shipped the Build's."""
    prev = step.prev_run is not None
    build = not (prev and step.build.diff.files == 0)
    fix = step.fix is not None and step.fix.code_sha256 != step.build.code_sha256
    return prev + build + fix


def _read(path: Path, model):  # a record of an older format only informs an estimate: skipped
    try:
        return read_model(path, model)
    except (SwechainError, ValidationError, OSError, ValueError):
        return None


def recorded(gold_runs: Path, run_folders: Iterable[Path]) -> Recorded:
    """What earlier work measured: kept gold runs (``<state home>/gold-runs/<chain>/``) and the step
    records of the runs under ``run_folders`` (each ``run.json`` names its agent and chain)."""
    found = Recorded()
    if gold_runs.is_dir():
        for chain_dir in sorted(p for p in gold_runs.iterdir() if p.is_dir()):
            for path in sorted(chain_dir.glob("*.json")):
                run = _read(path, TestRun)
                if run is not None and (seconds := _seconds(run)) is not None:
                    found.suite_s.setdefault(chain_dir.name, []).append(seconds)
    for folder in run_folders:
        for run_json in sorted(folder.rglob(RUN_FILE)):
            identity = _read(run_json, RunRecord)
            if identity is None:
                continue
            key = (identity.agent, identity.chain)
            for step_json in RunFolder(run_json.parent).step_records():
                step = _read(step_json, StepRecord)
                if step is None:
                    continue
                found.fixes.setdefault(key, []).append(step.fix is not None)
                found.evaluations.setdefault(key, []).append(suite_runs(step))
                costs = []
                for phase in (step.build, step.fix):
                    if phase is None:
                        continue
                    if (seconds := _seconds(phase.run)) is not None:
                        found.run_suite_s.setdefault(identity.chain, []).append(seconds)
                    found.agent_s.setdefault(key, []).append(phase.agent.wall_s)
                    if phase.agent.cost_usd is not None:
                        costs.append(phase.agent.cost_usd)
                if costs:
                    found.cost_usd.setdefault(key, []).append(math.fsum(costs))
    return found
