"""The oracle: per step, which hidden tests an upgrade must make pass.

New gold (the target's own code) runs ``baseline_runs`` times; tests whose
outcome changes between runs are flaky and left out of scoring. Old gold (the
previous version's code) runs once against the target's tests. The result is
stored under the state home, outside anything an agent sees.

Each gold run is kept too, keyed by everything that shapes it, so a build that stops at
the sanity check loses no run: declaring known failures in chain.yaml and building again
reruns nothing (``--force`` reruns everything).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from swechain_ci import progress
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.images import ChainImages
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.containers.runner import (
    RunnerSize,
    parallel_runs,
    run_limits,
    runner_size,
    test_workers,
)
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import tripwires
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import resolve, scored_universe
from swechain_ci.evaluation.test_imports import package_imports
from swechain_ci.models import (
    BROKEN,
    ChainOracle,
    IntegrityFlag,
    Status,
    StepOracle,
    TestRun,
    TripwireCandidate,
    VersionSanity,
)
from swechain_ci.records import read_model, write_model, write_text
from swechain_ci.settings import HARNESS_DIR, state_home

OUTPUT_TAIL_LINES = 25
# Part of every oracle's key: raised when what an oracle records changes (2: the gold runs' own
# integrity findings; 3: verified tripwires, the tests' imports of the package, old gold's failed
# imports; 4: tripwires mutated only where a test ends; 5: no natural tripwire that some version's
# own suite passes; 6: no tripwire expects another type than an exception that ends pytest's session),
# so older oracles are rebuilt, from kept gold runs (and kept verification runs) where there are any.
ORACLE_FORMAT = "6"


def oracle_path(chain: Chain) -> Path:
    """Keyed by the chain file's location too: a chain of the same id built from another
    folder never overwrites this one's oracle."""
    where = hashlib.sha256(str(sources.chain_file(chain).resolve()).encode()).hexdigest()[:12]
    return state_home() / "oracles" / f"{chain.id}-{where}" / f"steps-{chain.step_range}.json"


def content_hash_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def reusable_oracle(path: Path, wanted_inputs: str) -> ChainOracle | None:
    """The stored oracle, if its inputs are ``wanted_inputs`` AND its bytes still hash to what was
    recorded when it was written (a self-declared inputs_hash alone proves nothing about the
    content). An oracle from before content hashes were kept has its hash recorded on first use."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    recorded = content_hash_path(path)
    if recorded.is_file() and recorded.read_text().strip() != digest:
        progress.say(f"oracle {path} does not match its recorded content hash: building it again")
        return None
    try:
        existing = read_model(path, ChainOracle)
    except SwechainError:
        return None  # written by an older swechain-ci: rebuild it
    if existing.inputs_hash != wanted_inputs:
        return None
    if not recorded.is_file():
        write_text(recorded, digest + "\n")
    return existing


def store_oracle(path: Path, model: ChainOracle | TestRun) -> None:
    """Write the oracle (or a kept gold run) and the SHA-256 of its bytes beside it."""
    write_model(path, model)
    write_text(content_hash_path(path), hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


def built_ranges(chain: Chain) -> list[str]:
    """The step ranges of ``chain`` whose oracle is stored, e.g. ``["1-15", "11-15"]``."""
    folder = oracle_path(chain).parent
    return sorted((p.stem.removeprefix("steps-") for p in folder.glob("steps-*.json")), key=_range_start)


def _range_start(step_range: str) -> tuple[int, int]:
    first, _, last = step_range.partition("-")
    return (int(first), -int(last or first)) if first.isdigit() and (last or first).isdigit() else (0, 0)


def inputs_hash(chain: Chain, images: ChainImages) -> str:
    """Everything that shapes the oracle: the images, the chain file's content and the harness."""
    evaluation = chain.config.keyed_dump(
        {"test_folder", "source_root", "protected_files", "pytest", "timeouts", "oracle"}
    )
    payload = "\0".join(
        [
            ORACLE_FORMAT,
            images.fingerprint,
            json.dumps(evaluation, sort_keys=True),
            hashlib.sha256(sources.chain_file(chain).read_bytes()).hexdigest(),
            trees.digest(HARNESS_DIR),
            network_probe() or "",
        ]
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def network_probe() -> str | None:
    """``SWECHAIN_NETWORK_PROBE``: a Docker network with internet access on this runner, if any.
    Each version's gold then runs once more on it; a test that passes there but not offline
    needs the network in that version, whether chain.yaml declares it or not."""
    return os.environ.get("SWECHAIN_NETWORK_PROBE") or None


def detected_network_tests(offline: TestRun, online: TestRun, network: str) -> dict[str, str]:
    return {
        t: f"passes on network {network}, {offline.statuses.get(t, Status.failed).value} offline (network probe)"
        for t, s in online.statuses.items()
        if s == Status.passed and offline.statuses.get(t) != Status.passed
    }


def log_dir(chain: Chain, wanted: str) -> Path:
    return state_home() / "logs" / "oracle" / f"{chain.id}-{wanted[:12]}"


def summary(run: TestRun) -> str:
    if run.execution_error:
        return f"execution error: {run.execution_error}"
    tally = Counter(s.value for s in run.statuses.values())
    return ", ".join(f"{n} {s}" for s, n in sorted(tally.items())) or "no tests"


def flaky_tests(runs: list[TestRun]) -> list[str]:
    tests = set().union(*(r.statuses for r in runs))
    return sorted(t for t in tests if len({r.statuses.get(t) for r in runs}) > 1)


def sanity(chain: Chain, version: str, run: TestRun, tolerated: list[str]) -> VersionSanity:
    """A version's own suite: no setup errors, fewer than the allowed fraction failing (``tolerated``:
    flaky tests and those the network probe found)."""
    allowed = set(chain.config.oracle.known_failures.get(version, [])) | set(tolerated)
    allowed |= set(chain.config.oracle.network_tests(version)) | set(chain.config.oracle.flaky_tests(version))
    errors = sorted(t for t, s in run.statuses.items() if s == Status.error and t not in allowed)
    errors += sorted(c for c in run.collection_errors if c not in allowed)
    failing = sorted(t for t, s in run.statuses.items() if s == Status.failed and t not in allowed)
    total = len(run.statuses)
    too_many = total == 0 or (bool(failing) and len(failing) / total >= chain.config.oracle.max_failing_fraction)
    ok = not errors and not too_many and not run.execution_error
    return VersionSanity(
        version=version,
        tests=total,
        failed=len(failing),
        errors=len(errors),
        setup_errors=errors,
        failing=failing,
        ok=ok,
    )


def sanity_problem(chain: Chain, bad: list[VersionSanity], own_runs: dict[str, list[TestRun]], log: Path) -> str:
    """The one-line error for a failed sanity check: what went wrong, where the log is, what to do."""
    first = bad[0]
    run = own_runs[first.version][0]
    chain_yaml = chain.folder / "chain.yaml"
    others = f" (also failing: {', '.join(c.version for c in bad[1:])})" if len(bad) > 1 else ""
    if not run.statuses:
        problem = run.execution_error or f"pytest exited with code {run.exit_code}"
        return (
            f"chain {chain.id} fails its sanity check: version {first.version}'s own suite ran no tests "
            f"({problem}){others}; whole log: {log}. Likely causes: an import error in a conftest.py or a "
            f"test dependency that is missing (add it under environment.extra or environment.extras), an old "
            f"pin that breaks on Python {chain.config.python} (environment.override), or a wrong source_root "
            f"or test_folder in {chain_yaml}"
        )
    details = (
        f"{first.failed}/{first.tests} failing, setup errors {first.setup_errors[:5]}, failing {first.failing[:5]}"
    )
    if run.execution_error:
        details += f", run problem: {run.execution_error}"
    return (
        f"chain {chain.id} fails its sanity check (version {first.version}: {details}){others}; whole log: {log}; "
        f"fix the chain, or declare tests that cannot pass here under oracle.known_failures "
        f"(or oracle.needs_network) in {chain_yaml}"
    )


def gold_run_path(
    chain: Chain, image_key: str, code: Path, network: str, repeat: int, size: RunnerSize, planted: str = ""
) -> Path:
    """Where one gold run is kept: keyed by the image's inputs (``ChainImages.keys``: the same on
    every runner that builds the image from them), the code, how the harness runs it (the chain's
    evaluation settings, limits and workers on this runner), the harness, the network, which of the
    repeated runs it is and, for a tripwire verification, the planted modules."""
    evaluation = chain.config.keyed_dump(
        {"import_name", "test_folder", "source_root", "protected_files", "pytest", "timeouts"}
    )
    payload = "\0".join(
        [
            image_key,
            trees.digest(code),
            json.dumps(evaluation, sort_keys=True),
            trees.digest(HARNESS_DIR),
            network,
            str(repeat),
            run_limits(chain, size).model_dump_json(),
            str(test_workers(chain, size)),
            *([planted] if planted else []),
        ]
    )
    return gold_runs_folder(chain) / f"{hashlib.sha256(payload.encode()).hexdigest()}.json"


def gold_runs_folder(chain: Chain) -> Path:
    return state_home() / "gold-runs" / chain.id


def kept_gold_run(path: Path) -> TestRun | None:
    """A kept gold run whose bytes still hash to what was recorded when it was written."""
    recorded = content_hash_path(path)
    if not (path.is_file() and recorded.is_file()):
        return None
    if hashlib.sha256(path.read_bytes()).hexdigest() != recorded.read_text().strip():
        return None
    try:
        return read_model(path, TestRun)
    except SwechainError:
        return None


def keep_gold_run(path: Path, run: TestRun, log: Path) -> None:
    """Only a run that finished, with its log: one the machine cut short (time-out, crash) runs
    again next time."""
    if run.execution_error is None and not run.timed_out:
        store_oracle(path, run)
        if log.is_file():
            shutil.copyfile(log, path.with_suffix(".log"))


def gold_flags(runs: list[TestRun]) -> list[IntegrityFlag]:
    """The harness's findings on the target's own code, once each: what the package's tests do by
    themselves (hypothesis' @given wrappers, pytest testing pytest), not what a candidate did."""
    seen: dict[tuple, IntegrityFlag] = {}
    for run in runs:
        for flag in run.integrity_flags:
            seen.setdefault((flag.kind, flag.location, flag.detail), flag)
    return list(seen.values())


def derive_step(
    index: int,
    prev: str,
    next_: str,
    new_runs: list[TestRun],
    cross_run: TestRun,
    network_reasons: Mapping[str, str],
    declared_flaky: Mapping[str, str] = MappingProxyType({}),
) -> StepOracle:
    """One step's oracle from its gold runs, without Docker (SEMANTICS.md, "Oracle").

    ``new_runs``: the target's own suite, repeated (the first is new gold; tests whose outcome
    changed between them are flaky); ``cross_run``: the previous version's code under the target's
    tests (old gold, resolved against new gold); ``network_reasons``: tests that need the network,
    with why; ``declared_flaky``: tests the chain declares flaky in the target, with why (the runs
    can agree on a random outcome). Upgrade-related: the scored tests (passing on new gold, neither
    flaky nor needing the network) that old gold breaks.
    """
    new_gold = new_runs[0].statuses
    old_gold = resolve(cross_run, new_gold)
    measured = flaky_tests(new_runs)
    declared = sorted(set(declared_flaky) & set(new_gold))
    flaky = sorted({*measured, *declared})
    network = sorted(set(network_reasons) & set(new_gold))
    related = sorted(t for t in scored_universe(new_gold, flaky + network) if old_gold[t] in BROKEN)
    excluded = {t: f"not passing on new gold ({s.value})" for t, s in new_gold.items() if s != Status.passed}
    excluded |= {t: "flaky: its outcome changed between new-gold runs" for t in measured}
    excluded |= {t: f"flaky in {next_} (oracle.flaky): {declared_flaky[t]}" for t in declared}
    excluded |= {t: f"needs_network in {next_}: {network_reasons[t]}" for t in network}
    return StepOracle(
        index=index,
        prev_version=prev,
        next_version=next_,
        new_gold=new_gold,
        old_gold=old_gold,
        upgrade_related=related,
        flaky=flaky,
        needs_network=network,
        excluded=dict(sorted(excluded.items())),
        old_gold_collection_errors=sorted(cross_run.collection_errors),
        gold_integrity_flags=gold_flags(new_runs),
    )


def derive_steps(
    steps: Sequence[tuple[str, str]],
    first_index: int,
    own_runs: Mapping[str, list[TestRun]],
    cross_runs: Mapping[str, TestRun],
    network_of: Mapping[str, Mapping[str, str]],
    flaky_of: Mapping[str, Mapping[str, str]] = MappingProxyType({}),
) -> list[StepOracle]:
    """Every step's oracle from the gold runs keyed by version (the target's), numbered from ``first_index``."""
    return [
        derive_step(index, prev, next_, own_runs[next_], cross_runs[next_], network_of[next_], flaky_of.get(next_, {}))
        for index, (prev, next_) in enumerate(steps, start=first_index)
    ]


# One gold run: the tests of a version, the code of a version, the Docker network it runs on.
GoldJob = tuple[str, str, str]
# A handed-on gold run's files: <key>.json, its <key>.json.sha256 and its <key>.log.
HANDED_ON_NAME = re.compile(r"^(?P<key>[0-9a-f]{64})(?P<kind>\.json|\.json\.sha256|\.log)$")
HANDED_ON_MAX_BYTES = 64 * 2**20


def gold_jobs(chain: Chain, probe: str | None) -> list[GoldJob]:
    """Every gold run of the oracle, in the order the oracle is derived from: each version's own suite
    ``baseline_runs`` times, each step's old gold, and each version once on the probe network if any."""
    repeats = chain.config.oracle.baseline_runs
    jobs = [(v, v, "none") for v in chain.versions for _ in range(repeats)] + [(b, a, "none") for a, b in chain.steps]
    return jobs + ([(v, v, probe) for v in chain.versions] if probe else [])


def pool_shares(chain: Chain) -> list[dict[str, str | int]]:
    """The oracle's gold runs split over a pool of runners: one share per version, the runs of its
    tests (own suite, repeats, the old gold of the step into it, the probe, the tripwire verification
    of the step into it). Each share needs only its version's image."""
    jobs = gold_jobs(chain, network_probe())
    checked = {next_ for _, next_ in chain.steps}  # 2 verification runs where its pool is not empty
    return [
        {"version": v, "gold_runs": sum(1 for tests_of, _, _ in jobs if tests_of == v) + 2 * (v in checked)}
        for v in chain.versions
    ]


def gold_run_paths(
    chain: Chain, image_keys: Mapping[str, str], jobs: Sequence[GoldJob], size: RunnerSize
) -> dict[int, Path]:
    """Where each of ``jobs`` is kept, by job number, for the jobs whose tests' image is in
    ``image_keys`` (version -> the image's key: a pool runner builds only its share's)."""
    seen: Counter = Counter()
    paths = {}
    for number, job in enumerate(jobs):
        tests_of, code_of, network = job
        if tests_of in image_keys:
            code = sources.materialize(chain, code_of).code
            paths[number] = gold_run_path(chain, image_keys[tests_of], code, network, seen[job], size)
        seen[job] += 1
    return paths


def run_gold(
    sandbox: Sandbox,
    chain: Chain,
    images: ChainImages,
    jobs: Sequence[GoldJob],
    logs: Path,
    force: bool,
    share: str | None = None,
    handed_on: frozenset[Path] = frozenset(),
) -> dict[int, TestRun]:
    """Run (or reuse kept) gold runs, a few containers at a time: by job number, every job, or only
    those of ``share`` (a version whose tests run). ``handed_on`` runs are reused even with ``force``:
    this build verified and took them in."""
    size = runner_size()
    side_by_side = parallel_runs(chain, size)
    labels = {"swechain-ci.chain": chain.id}
    kept_at = gold_run_paths(chain, images.keys, jobs, size)  # splits each version used once, before the threads
    numbers = [n for n, (tests_of, _, _) in enumerate(jobs) if share is None or tests_of == share]
    kept = {
        n: run
        for n in numbers
        if (not force or kept_at[n] in handed_on) and (run := kept_gold_run(kept_at[n])) is not None
    }
    reused = f" ({len(kept)} kept from an earlier build or handed on)" if kept else ""
    of_share = f" of {share}" if share else ""
    progress.say(f"oracle {chain.id}: {len(numbers)} gold runs{of_share}{reused}, {side_by_side} at a time")

    def gold_run(number: int) -> TestRun:
        tests_of, code_of, network = jobs[number]
        log = logs / f"{number:03d}-tests-{tests_of}-code-{code_of}.log"
        if number in kept:
            if kept_at[number].with_suffix(".log").is_file():
                log.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(kept_at[number].with_suffix(".log"), log)
            return kept[number]
        run = evaluate(
            sandbox,
            chain,
            images.versions[tests_of],
            sources.materialize(chain, code_of).code,
            labels,
            log=log,
            network=network,
        )
        keep_gold_run(kept_at[number], run, log)
        where = f" (network {network})" if network != "none" else ""
        done(f"tests of {tests_of} on code of {code_of}{where}: {summary(run)}")
        return run

    with (
        progress.task(f"oracle {chain.id}: gold runs{of_share}", len(numbers) - len(kept)) as done,
        ThreadPoolExecutor(max_workers=side_by_side) as pool,
    ):
        return dict(zip(numbers, pool.map(gold_run, numbers), strict=True))


def gold_runs_of(sandbox: Sandbox, chain: Chain, images: ChainImages, version: str, force: bool = False) -> list[Path]:
    """One pool runner's share: run (or reuse) the gold runs of ``version``'s tests, and the
    tripwire verification of the step into it, and keep them; the kept files, for handing on to
    the job that derives the oracle."""
    jobs = gold_jobs(chain, network_probe())
    logs = log_dir(chain, inputs_hash(chain, images))
    results = run_gold(sandbox, chain, images, jobs, logs, force, version)
    kept_at = gold_run_paths(chain, images.keys, jobs, runner_size())
    unkept = [n for n in results if kept_gold_run(kept_at[n]) is None]
    if unkept:
        tests_of, code_of, _ = jobs[unkept[0]]
        raise SwechainError(
            f"{len(unkept)} gold run(s) of {version} did not finish (first: tests of {tests_of} on code of "
            f"{code_of}: {summary(results[unkept[0]])}); they are not handed on: run the share again"
        )
    checks = tripwire_pools(chain, images.keys, runner_size()).jobs
    verifications = run_tripwire_jobs(sandbox, chain, images, checks, logs, force)
    unfinished = [job for job in checks if kept_gold_run(job.path) is None]
    if unfinished:
        job = unfinished[0]
        raise SwechainError(
            f"the tripwire verification of {version} on code of {job.code_of} did not finish "
            f"({summary(verifications[job.path])}); it is not handed on: run the share again"
        )
    return [kept_at[n] for n in results] + [job.path for job in checks]


def hand_on(kept: Sequence[Path], folder: Path) -> None:
    """Copy kept gold runs (with their hashes and logs) into ``folder``, an artifact's content."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in kept:
        for part in (path, content_hash_path(path), path.with_suffix(".log")):
            if part.is_file():
                shutil.copyfile(part, folder / part.name)


def take_handed_on(chain: Chain, images: ChainImages, folder: Path) -> frozenset[Path]:
    """Verify the gold runs other runners handed on in ``folder`` and keep them here.

    A handed-on run is used only if its name is the key this runner computes for one of the oracle's
    gold runs from its own inputs (images, code, harness, settings, runner size), its bytes hash to
    its recorded hash, and it is a finished run: so an artifact from other inputs, another chain or
    an edited one is refused, in one line naming it, before anything is kept. Runs missing from the
    folder run here. Returns where the taken runs are kept."""
    if not folder.is_dir():
        raise SwechainError(
            f"--gold-runs-from {folder}: not a folder; give the folder the pool's artifacts were put in"
        )
    jobs = gold_jobs(chain, network_probe())
    size = runner_size()
    expected = {p.name: p for p in gold_run_paths(chain, images.keys, jobs, size).values()}
    expected |= {job.path.name: job.path for job in tripwire_pools(chain, images.keys, size).jobs}
    files: dict[str, dict[str, Path]] = {}
    for entry in sorted(folder.rglob("*")):
        if entry.is_dir() and not entry.is_symlink():
            continue
        found = HANDED_ON_NAME.match(entry.name)
        if entry.is_symlink() or not entry.is_file() or found is None:
            raise SwechainError(
                f"handed-on gold runs: {entry} is not a gold run's file (<key>.json, .json.sha256, .log); remove it from the artifact"
            )
        if entry.stat().st_size > HANDED_ON_MAX_BYTES:
            raise SwechainError(f"handed-on gold run {entry}: over {HANDED_ON_MAX_BYTES // 2**20} MiB; refused")
        files.setdefault(found["key"] + ".json", {})[found["kind"]] = entry
    taken: list[tuple[Path, Path, TestRun]] = []
    for name, parts in files.items():
        record = parts.get(".json")
        if record is None:
            raise SwechainError(
                f"handed-on gold run {next(iter(parts.values()))}: its {name} is missing from the artifact"
            )
        if name not in expected:
            raise SwechainError(
                f"handed-on gold run {record}: its key matches none of chain {chain.id}'s gold runs (steps "
                f"{chain.step_range}) on this runner's inputs (images, code, harness, runner size); rebuild it "
                f"from the same commit on runners of one size, or leave it out"
            )
        recorded = parts.get(".json.sha256")
        digest = hashlib.sha256(record.read_bytes()).hexdigest()
        if recorded is None or recorded.read_text(errors="replace").strip() != digest:
            raise SwechainError(
                f"handed-on gold run {record}: its bytes do not match its recorded hash ({name}.sha256); refused"
            )
        try:
            run = read_model(record, TestRun)
        except SwechainError as exc:
            raise SwechainError(f"handed-on gold run {record}: not a gold run record ({exc}); refused") from None
        if run.execution_error is not None or run.timed_out:
            raise SwechainError(
                f"handed-on gold run {record}: an unfinished run (kept runs are finished ones); refused"
            )
        taken.append((record, expected[name], run))
    for record, kept_at, run in taken:
        store_oracle(kept_at, run)
        log = files[record.name].get(".log")
        if log is not None:
            shutil.copyfile(log, kept_at.with_suffix(".log"))
    progress.say(f"oracle {chain.id}: {len(taken)} of {len(expected)} gold runs handed on and verified")
    return frozenset(kept_at for _, kept_at, _ in taken)


def build(
    sandbox: Sandbox,
    chain: Chain,
    images: ChainImages,
    force: bool = False,
    handed_on: frozenset[Path] = frozenset(),
) -> ChainOracle:
    """Build (or reuse) the chain's oracle (``handed_on``: kept runs verified by ``take_handed_on``)."""
    path = oracle_path(chain)
    wanted = inputs_hash(chain, images)
    if not force and (existing := reusable_oracle(path, wanted)) is not None:
        return existing
    probe = network_probe()
    jobs = gold_jobs(chain, probe)
    logs = log_dir(chain, wanted)
    by_number = run_gold(sandbox, chain, images, jobs, logs, force, handed_on=handed_on)
    results = [by_number[n] for n in range(len(jobs))]
    own_runs: dict[str, list[TestRun]] = {v: [] for v in chain.versions}
    cross_runs: dict[str, TestRun] = {}
    online_runs: dict[str, TestRun] = {}
    for (tests_of, code_of, network), run in zip(jobs, results, strict=True):
        if network != "none":
            online_runs[tests_of] = run
        elif tests_of == code_of:
            own_runs[tests_of].append(run)
        else:
            cross_runs[tests_of] = run
    detected = (
        {v: detected_network_tests(own_runs[v][0], run, probe) for v, run in online_runs.items()} if probe else {}
    )
    network_of = {v: {**detected.get(v, {}), **chain.config.oracle.network_tests(v)} for v in chain.versions}
    checks = [
        sanity(chain, v, runs[0], flaky_tests(runs) + sorted(detected.get(v, {}))) for v, runs in own_runs.items()
    ]
    own_logs = {
        tests_of: logs / f"{n:03d}-tests-{tests_of}-code-{code_of}.log"
        for n, (tests_of, code_of, network) in reversed(list(enumerate(jobs)))
        if tests_of == code_of and network == "none"
    }
    bad = [c for c in checks if not c.ok]
    if bad:
        first = bad[0]
        run = own_runs[first.version][0]
        tail = run.output_tail.rstrip().splitlines()[-OUTPUT_TAIL_LINES:]
        progress.say(f"output of {first.version}'s own suite (last {len(tail)} lines):\n" + "\n".join(tail))
        raise SwechainError(sanity_problem(chain, bad, own_runs, own_logs[first.version]))
    flaky_of = {v: chain.config.oracle.flaky_tests(v) for v in chain.versions}
    steps = derive_steps(chain.steps, chain.step_offset + 1, own_runs, cross_runs, network_of, flaky_of)
    verified = verify_tripwires(sandbox, chain, images, own_runs, logs, force, handed_on)
    # A test some version's own suite passes is one honest code can pass (attrs' TestAssoc::test_unknown
    # fails on 23.1.0 and 23.2.0 only, and the noop's 21.3.0 code passes it): never a natural tripwire.
    passed_somewhere = frozenset(
        t for runs in own_runs.values() for run in runs for t, s in run.statuses.items() if s == Status.passed
    )
    steps = [
        step.model_copy(
            update=evidence(
                chain, step, own_runs[step.next_version], cross_runs[step.next_version], verified, passed_somewhere
            )
        )
        for step in steps
    ]
    for step in steps:
        if cross_runs[step.next_version].execution_error:
            # Legitimate when the target's environment dropped something the old code imports, but
            # more often a chain whose images differ where the paper's did not: say it out loud.
            progress.say(
                f"oracle {chain.id}: step {step.index}: the old gold ({step.prev_version}'s code on "
                f"{step.next_version}'s tests) did not run ({cross_runs[step.next_version].execution_error}), so "
                f"every test passing on new gold counts as upgrade-related; check its log in {logs}"
            )
    oracle = ChainOracle(
        chain=chain.id,
        inputs_hash=wanted,
        versions=chain.versions,
        environments=images.environments,
        steps=steps,
        sanity=checks,
    )
    store_oracle(path, oracle)
    return oracle


def evidence(
    chain: Chain,
    step: StepOracle,
    new_runs: list[TestRun],
    cross_run: TestRun,
    verified: Mapping[str, list[TripwireCandidate]],
    passed_somewhere: frozenset[str] = frozenset(),
) -> dict:
    """What the oracle records beyond the tests' outcomes: the step's verified tripwires (none a
    copy of a flaky test), its natural ones (none a test some version's own suite passes), its
    tests' imports of the package, old gold's failed imports."""
    flaky = set(step.flaky)
    return {
        "tripwires": [
            c for c in verified[step.next_version] if f"{c.test_file}::{c.qualname.replace('.', '::')}" not in flaky
        ],
        "natural_tripwires": tripwires.natural_tripwires(new_runs, step.old_gold, passed_somewhere),
        "test_imports": package_imports(
            sources.materialize(chain, step.next_version).hidden, chain.config.test_folder, chain.config.import_name
        ),
        "old_gold_failed_imports": cross_run.failed_imports,
    }


@dataclass(frozen=True)
class TripwireJob:
    """One verification run: a step's whole tripwire pool planted into ``tests_of``'s tests, on the
    gold code of ``code_of`` (the step's target, then its start), kept at ``path``."""

    tests_of: str
    code_of: str
    code: Path
    planting: tripwires.Planting
    path: Path


@dataclass(frozen=True)
class TripwirePools:
    """Per step's target version: its pool of candidates, how they are planted, and the jobs that
    verify them (none where the pool is empty)."""

    pools: dict[str, tuple[list[TripwireCandidate], tripwires.Planting]]
    jobs: list[TripwireJob]


def tripwire_pools(chain: Chain, image_keys: Mapping[str, str], size: RunnerSize) -> TripwirePools:
    """The tripwire pools of the steps into the versions of ``image_keys`` (a share: its version's)."""
    config = chain.config
    pools, jobs = {}, []
    for prev, next_ in chain.steps:
        if next_ not in image_keys:
            continue
        hidden = sources.materialize(chain, next_).hidden
        candidates = tripwires.pool(hidden, config.test_folder, config.import_name)
        planting = tripwires.plant(
            hidden, config.test_folder, candidates, random.Random(0), count=None, canonical_names=True
        )
        pools[next_] = (candidates, planting)
        if not planting.files:
            continue
        digest = hashlib.sha256(json.dumps(planting.files, sort_keys=True).encode()).hexdigest()
        for code_of in (next_, prev):  # new gold, then old gold
            code = sources.materialize(chain, code_of).code
            path = gold_run_path(chain, image_keys[next_], code, "none", 0, size, planted=digest)
            jobs.append(TripwireJob(next_, code_of, code, planting, path))
    return TripwirePools(pools, jobs)


def run_tripwire_jobs(
    sandbox: Sandbox,
    chain: Chain,
    images: ChainImages,
    jobs: Sequence[TripwireJob],
    logs: Path,
    force: bool,
    handed_on: frozenset[Path] = frozenset(),
) -> dict[Path, TestRun]:
    """Run (or reuse kept) verification runs, a few at a time; by where each is kept."""
    labels = {"swechain-ci.chain": chain.id}

    def verification(job: TripwireJob) -> TestRun:
        if (not force or job.path in handed_on) and (kept := kept_gold_run(job.path)) is not None:
            return kept
        log = logs / f"tripwires-tests-{job.tests_of}-code-{job.code_of}.log"
        run = evaluate(
            sandbox,
            chain,
            images.versions[job.tests_of],
            job.code,
            labels,
            log=log,
            planting=job.planting,
            keep_planted=True,
        )
        keep_gold_run(job.path, run, log)
        progress.say(f"oracle {chain.id}: tripwires of {job.tests_of} on code of {job.code_of}: {summary(run)}")
        return run

    with ThreadPoolExecutor(max_workers=parallel_runs(chain, runner_size())) as pool:
        return dict(zip((j.path for j in jobs), pool.map(verification, jobs), strict=True))


def verify_tripwires(
    sandbox: Sandbox,
    chain: Chain,
    images: ChainImages,
    own_runs: dict[str, list[TestRun]],
    logs: Path,
    force: bool,
    handed_on: frozenset[Path] = frozenset(),
) -> dict[str, list[TripwireCandidate]]:
    """Per step's target version, the tripwire candidates that fail on its gold code and do not
    pass on the previous version's: each step's whole pool planted once in each (README, "Tripwires")."""
    planned = tripwire_pools(chain, images.keys, runner_size())
    runs = run_tripwire_jobs(sandbox, chain, images, planned.jobs, logs, force, handed_on)
    by_step = {(j.tests_of, j.code_of): runs[j.path] for j in planned.jobs}
    found: dict[str, list[TripwireCandidate]] = {}
    for prev, next_ in chain.steps:
        candidates, planting = planned.pools[next_]
        if (next_, next_) not in by_step:
            found[next_] = []
            continue
        new_run, old_run = by_step[(next_, next_)], by_step[(next_, prev)]
        found[next_] = tripwires.verified(planting, [new_run], old_run, own_runs[next_][0].statuses, candidates)
    return found


def summary_rows(oracle: ChainOracle) -> list[dict]:
    """Per step: tests, upgrade-related, flaky, and excluded (not passing on new gold, flaky or network)."""
    rows = []
    for step in oracle.steps:
        scored = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
        rows.append(
            {
                "step": step.index,
                "upgrade": f"{step.prev_version} -> {step.next_version}",
                "tests": len(step.new_gold),
                "upgrade-related": len(step.upgrade_related),
                "flaky": len(step.flaky),
                "excluded": len(step.new_gold) - len(scored),
            }
        )
    return rows
