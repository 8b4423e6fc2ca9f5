"""The oracle: per step, which hidden tests an upgrade must make pass.

New gold (the target's own code) runs ``baseline_runs`` times; tests whose
outcome changes between runs are flaky and left out of scoring. Old gold (the
previous version's code) runs once against the target's tests. The result is
stored under the state home, outside anything an agent sees.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from swechain_ci import progress
from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.images import ChainImages
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import resolve, scored_universe
from swechain_ci.models import (
    BROKEN,
    ChainOracle,
    Status,
    StepOracle,
    TestRun,
    VersionSanity,
)
from swechain_ci.records import read_model, write_model
from swechain_ci.settings import state_home


def oracle_path(chain: Chain) -> Path:
    return state_home() / "oracles" / chain.id / f"steps-{chain.step_range}.json"


def built_ranges(chain: Chain) -> list[str]:
    """The step ranges of ``chain`` whose oracle is stored, e.g. ``["1-15", "11-15"]``."""
    folder = oracle_path(chain).parent
    return sorted((p.stem.removeprefix("steps-") for p in folder.glob("steps-*.json")), key=_range_start)


def _range_start(step_range: str) -> tuple[int, int]:
    first, _, last = step_range.partition("-")
    return (int(first), -int(last or first)) if first.isdigit() and (last or first).isdigit() else (0, 0)


def inputs_hash(chain: Chain, images: ChainImages) -> str:
    evaluation = chain.config.model_dump(include={"test_folder", "source_root", "protected_files", "pytest", "timeouts", "oracle"})
    payload = images.fingerprint + json.dumps(evaluation, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def workers() -> int:
    """Containers run at once: ``SWECHAIN_WORKERS``, else one per CPU."""
    return max(1, int(os.environ.get("SWECHAIN_WORKERS", os.cpu_count() or 1)))


def summary(run: TestRun) -> str:
    if run.execution_error:
        return f"execution error: {run.execution_error}"
    tally = Counter(s.value for s in run.statuses.values())
    return ", ".join(f"{n} {s}" for s, n in sorted(tally.items())) or "no tests"


def flaky_tests(runs: list[TestRun]) -> list[str]:
    tests = set().union(*(r.statuses for r in runs))
    return sorted(t for t in tests if len({r.statuses.get(t) for r in runs}) > 1)


def sanity(chain: Chain, version: str, run: TestRun, flaky: list[str]) -> VersionSanity:
    """A version's own suite: no setup errors, fewer than the allowed fraction failing."""
    allowed = set(chain.config.oracle.known_failures.get(version, [])) | set(flaky)
    allowed |= set(chain.config.oracle.needs_network)
    errors = sorted(t for t, s in run.statuses.items() if s == Status.error and t not in allowed)
    errors += sorted(c for c in run.collection_errors if c not in allowed)
    failing = sorted(t for t, s in run.statuses.items() if s == Status.failed and t not in allowed)
    total = len(run.statuses)
    too_many = total == 0 or (bool(failing) and len(failing) / total >= chain.config.oracle.max_failing_fraction)
    ok = not errors and not too_many and not run.execution_error
    return VersionSanity(
        version=version, tests=total, failed=len(failing), errors=len(errors),
        setup_errors=errors, failing=failing, ok=ok,
    )


def build(sandbox: DockerSandbox, chain: Chain, images: ChainImages, force: bool = False) -> ChainOracle:
    """Build (or reuse) the chain's oracle."""
    path = oracle_path(chain)
    wanted = inputs_hash(chain, images)
    if path.exists() and not force:
        try:
            existing = read_model(path, ChainOracle)
        except SwechainError:
            existing = None  # written by an older swechain-ci: rebuild it
        if existing is not None and existing.inputs_hash == wanted:
            return existing
    labels = {"swechain-ci.chain": chain.id}
    repeats = chain.config.oracle.baseline_runs
    # Every gold run up front, a few containers at a time: (tests of, code of) -> runs.
    jobs = [(v, v) for v in chain.versions for _ in range(repeats)] + [(b, a) for a, b in chain.steps]
    progress.say(f"oracle {chain.id}: {len(jobs)} gold runs, {workers()} at a time")
    for version in chain.versions:
        sources.materialize(chain, version)  # once, before the threads share the cache

    def gold_run(job: tuple[str, str]) -> TestRun:
        tests_of, code_of = job
        run = evaluate(sandbox, chain, images.versions[tests_of], sources.materialize(chain, code_of).code, labels)
        progress.say(f"oracle {chain.id}: tests of {tests_of} on code of {code_of}: {summary(run)}")
        return run

    with ThreadPoolExecutor(max_workers=workers()) as pool:
        results = list(pool.map(gold_run, jobs))
    own_runs: dict[str, list[TestRun]] = {v: [] for v in chain.versions}
    cross_runs: dict[str, TestRun] = {}
    for (tests_of, code_of), run in zip(jobs, results, strict=True):
        if tests_of == code_of:
            own_runs[tests_of].append(run)
        else:
            cross_runs[tests_of] = run
    checks = [sanity(chain, v, runs[0], flaky_tests(runs)) for v, runs in own_runs.items()]
    bad = [c for c in checks if not c.ok]
    if bad:
        details = "; ".join(
            f"{c.version}: {c.failed}/{c.tests} failing, setup errors {c.setup_errors[:5]}, failing {c.failing[:5]}"
            + (f", run problem: {own_runs[c.version][0].execution_error}" if own_runs[c.version][0].execution_error else "")
            for c in bad
        )
        raise SwechainError(
            f"chain {chain.id} fails its sanity check ({details}); fix the chain or declare the tests under "
            f"oracle.known_failures in {chain.folder / 'chain.yaml'}"
        )
    steps = []
    for index, (prev, next_) in enumerate(chain.steps, start=chain.step_offset + 1):
        new_runs = own_runs[next_]
        new_gold = new_runs[0].statuses
        old_gold = resolve(cross_runs[next_], new_gold)
        flaky = flaky_tests(new_runs)
        network = sorted(set(chain.config.oracle.needs_network) & set(new_gold))
        related = sorted(t for t in scored_universe(new_gold, flaky + network) if old_gold[t] in BROKEN)
        steps.append(StepOracle(
            index=index, prev_version=prev, next_version=next_, new_gold=new_gold, old_gold=old_gold,
            upgrade_related=related, flaky=flaky, needs_network=network,
        ))
    oracle = ChainOracle(
        chain=chain.id, inputs_hash=wanted, versions=chain.versions, environments=images.environments,
        steps=steps, sanity=checks,
    )
    write_model(path, oracle)
    return oracle


def summary_rows(oracle: ChainOracle) -> list[dict]:
    """Per step: tests, upgrade-related, flaky, and excluded (not passing on new gold, flaky or network)."""
    rows = []
    for step in oracle.steps:
        scored = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
        rows.append({
            "step": step.index,
            "upgrade": f"{step.prev_version} -> {step.next_version}",
            "tests": len(step.new_gold),
            "upgrade-related": len(step.upgrade_related),
            "flaky": len(step.flaky),
            "excluded": len(step.new_gold) - len(scored),
        })
    return rows
