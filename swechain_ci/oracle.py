"""The oracle: per step, which hidden tests an upgrade must make pass.

New gold (the target's own code) runs ``baseline_runs`` times; tests whose
outcome changes between runs are flaky and left out of scoring. Old gold (the
previous version's code) runs once against the target's tests. The result is
stored under the state home, outside anything an agent sees.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from swechain_ci import progress, sources
from swechain_ci.chain import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.evaluate import evaluate
from swechain_ci.images import ChainImages
from swechain_ci.models import BROKEN, ChainOracle, Status, StepOracle, TestRun, VersionSanity
from swechain_ci.outcomes import resolve
from swechain_ci.records import read_model, write_model
from swechain_ci.sandbox import DockerSandbox
from swechain_ci.score import scored_universe
from swechain_ci.settings import state_home


def oracle_path(chain: Chain) -> Path:
    return state_home() / "oracles" / chain.id / "oracle.json"


def inputs_hash(chain: Chain, images: ChainImages) -> str:
    evaluation = chain.config.model_dump(include={"test_folder", "source_root", "protected_files", "pytest", "timeouts", "oracle"})
    payload = images.fingerprint + json.dumps(evaluation, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


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
    own_runs: dict[str, list[TestRun]] = {}
    for version in chain.versions:
        code = sources.materialize(chain, version).code
        runs = []
        for attempt in range(chain.config.oracle.baseline_runs):
            progress.say(f"oracle {chain.id}: {version} own suite, run {attempt + 1}/{chain.config.oracle.baseline_runs}")
            runs.append(evaluate(sandbox, chain, images.versions[version], code, labels))
        own_runs[version] = runs
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
    for index, (prev, next_) in enumerate(chain.steps, start=1):
        progress.say(f"oracle {chain.id}: step {index} {prev} -> {next_}, old gold")
        new_runs = own_runs[next_]
        new_gold = new_runs[0].statuses
        old_run = evaluate(sandbox, chain, images.versions[next_], sources.materialize(chain, prev).code, labels)
        old_gold = resolve(old_run, new_gold)
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
