"""Oracle builds over a pool of runners: the gold runs split into one share per version, and the
final job's verification of the runs the shares hand on (no Docker: runs are written as a share keeps them)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.containers.images import ChainImages
from swechain_ci.containers.runner import runner_size
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle
from swechain_ci.models import Status
from swechain_ci.models import TestRun as GoldRun
from tests.conftest import run_cli

IMAGES = ChainImages(
    deps={},
    versions={v: f"sha256:{v.replace('.', '')}" for v in ("0.1.0", "0.2.0", "0.3.0", "0.4.0")},
    environments={},
    keys={v: f"inputs-{v}" for v in ("0.1.0", "0.2.0", "0.3.0", "0.4.0")},
)


@pytest.fixture
def toy(project_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_RUNNER_CPUS", "2")
    monkeypatch.setenv("SWECHAIN_RUNNER_MEMORY", "8g")
    monkeypatch.delenv("SWECHAIN_NETWORK_PROBE", raising=False)
    return load_chain("toy")


def test_the_shares_partition_the_gold_runs_one_per_version(toy, monkeypatch):
    jobs = oracle.gold_jobs(toy, None)
    shares = oracle.pool_shares(toy)
    assert [s["version"] for s in shares] == toy.versions
    assert len(jobs) == 4 * 2 + 3
    assert sum(s["gold_runs"] for s in shares) == len(jobs) + 2 * 3  # and each step's tripwire verification
    # the first version has no step into it: its own suite twice; the others also the old gold of their
    # step and their step's tripwires verified on new and on old gold
    assert [s["gold_runs"] for s in shares] == [2, 5, 5, 5]
    assert {tests_of for tests_of, code_of, _ in jobs if code_of != tests_of} == {"0.2.0", "0.3.0", "0.4.0"}
    two_steps = toy.select_steps("2-3")
    assert oracle.pool_shares(two_steps) == [
        {"version": "0.2.0", "gold_runs": 2},
        {"version": "0.3.0", "gold_runs": 5},
        {"version": "0.4.0", "gold_runs": 5},
    ]
    monkeypatch.setenv("SWECHAIN_NETWORK_PROBE", "probe-net")
    assert [s["gold_runs"] for s in oracle.pool_shares(toy)] == [3, 6, 6, 6]


def test_a_share_built_with_only_its_image_keys_its_runs_as_the_whole_build_does(toy):
    jobs = oracle.gold_jobs(toy, None)
    whole = oracle.gold_run_paths(toy, IMAGES.keys, jobs, runner_size())
    share = oracle.gold_run_paths(toy, {"0.3.0": IMAGES.keys["0.3.0"]}, jobs, runner_size())
    assert len(set(whole.values())) == len(jobs)  # the repeats are kept apart
    assert share == {n: whole[n] for n, (tests_of, _, _) in enumerate(jobs) if tests_of == "0.3.0"}
    assert len(share) == 3


def test_a_share_verifies_the_tripwires_of_the_step_into_its_version_only(toy):
    whole = oracle.tripwire_pools(toy, IMAGES.keys, runner_size())
    share = oracle.tripwire_pools(toy, {"0.3.0": IMAGES.keys["0.3.0"]}, runner_size())
    assert [(j.tests_of, j.code_of) for j in share.jobs] == [("0.3.0", "0.3.0"), ("0.3.0", "0.2.0")]
    assert [j.path for j in share.jobs] == [j.path for j in whole.jobs if j.tests_of == "0.3.0"]
    assert len(whole.jobs) == 6 and len({j.path for j in whole.jobs}) == 6
    gold = set(oracle.gold_run_paths(toy, IMAGES.keys, oracle.gold_jobs(toy, None), runner_size()).values())
    assert not gold & {j.path for j in whole.jobs}, "a verification is kept apart from the plain gold runs"


def test_a_handed_on_tripwire_verification_is_taken(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "runner-a"))
    artifacts = tmp_path / "artifacts"
    keep_share(toy, "0.3.0", artifacts / "share-0.3.0", verifications=True)
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "final"))
    taken = oracle.take_handed_on(toy, IMAGES, artifacts)
    checks = {j.path for j in oracle.tripwire_pools(toy, IMAGES.keys, runner_size()).jobs if j.tests_of == "0.3.0"}
    assert len(checks) == 2 and checks <= taken and len(taken) == 3 + 2


def keep_share(chain, version: str, folder: Path, verifications: bool = False) -> dict[Path, GoldRun]:
    """What a pool runner's share keeps and hands on, written as keep_gold_run writes it."""
    jobs = oracle.gold_jobs(chain, None)
    paths = oracle.gold_run_paths(chain, {version: IMAGES.keys[version]}, jobs, runner_size())
    if verifications:
        checks = oracle.tripwire_pools(chain, {version: IMAGES.keys[version]}, runner_size()).jobs
        paths |= {len(jobs) + i: job.path for i, job in enumerate(checks)}
    runs = {}
    for n, path in paths.items():
        run = GoldRun(statuses={f"tests/test_{n}.py::test_a": Status.passed}, exit_code=0, collected=1)
        log = folder.parent.parent / "logs" / f"{n}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"log of run {n}\n")
        oracle.keep_gold_run(path, run, log)
        runs[path] = run
    oracle.hand_on(list(paths.values()), folder)
    return runs


@pytest.fixture
def handed_on(toy, tmp_path, monkeypatch):
    """The shares of 0.2.0 and 0.3.0 kept on a runner of their own and handed on; then the state home of
    the final job, another runner."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "runner-a"))
    artifacts = tmp_path / "artifacts"
    runs = keep_share(toy, "0.2.0", artifacts / "share-0.2.0") | keep_share(toy, "0.3.0", artifacts / "share-0.3.0")
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "final"))
    return artifacts, runs


def test_handed_on_runs_whose_keys_are_ours_are_kept_and_reused(toy, handed_on):
    artifacts, runs = handed_on
    taken = oracle.take_handed_on(toy, IMAGES, artifacts)
    assert len(taken) == 6
    for path in taken:
        assert oracle.kept_gold_run(path) is not None
        assert path.with_suffix(".log").read_text().startswith("log of run")
    # keyed alike on both runners: the final job's own paths are where they are kept
    assert {p.name for p in taken} == {p.name for p in runs}
    assert sorted(oracle.kept_gold_run(p).model_dump_json() for p in taken) == sorted(
        r.model_dump_json() for r in runs.values()
    )


def only_kept(home: Path) -> list[Path]:
    return sorted((home / "gold-runs").rglob("*.json")) if (home / "gold-runs").exists() else []


def edit_run(record: Path, rehash: bool) -> None:
    data = json.loads(record.read_text())
    data["statuses"] = {"tests/test_planted.py::test_a": "passed"}
    record.write_text(json.dumps(data))
    if rehash:
        import hashlib

        oracle.content_hash_path(record).write_text(hashlib.sha256(record.read_bytes()).hexdigest() + "\n")


def first_record(artifacts: Path) -> Path:
    return sorted(artifacts.rglob("*.json"))[0]


def test_an_edited_run_is_refused_naming_it_and_nothing_is_kept(toy, handed_on, tmp_path):
    artifacts, _ = handed_on
    record = first_record(artifacts)
    edit_run(record, rehash=False)
    with pytest.raises(SwechainError, match=r"^handed-on gold run .*: its bytes do not match its recorded hash") as e:
        oracle.take_handed_on(toy, IMAGES, artifacts)
    assert str(record) in str(e.value) and "\n" not in str(e.value)
    assert only_kept(tmp_path / "final") == []


def test_runs_handed_on_from_another_docker_host_are_taken(toy, handed_on, tmp_path):
    # Another host built the same inputs into images with other ids: the keys are the inputs', so its
    # runs are this runner's, and none of them runs again.
    artifacts, _ = handed_on
    rebuilt = dataclasses.replace(IMAGES, versions={v: i + "-other-host" for v, i in IMAGES.versions.items()})
    taken = oracle.take_handed_on(toy, rebuilt, artifacts)
    assert taken and taken == oracle.take_handed_on(toy, IMAGES, artifacts)


def test_a_run_from_other_inputs_is_refused_even_with_a_consistent_hash(toy, handed_on, tmp_path, monkeypatch):
    artifacts, _ = handed_on
    # images of other inputs on the final runner (say a changed environment): no handed-on key is one of its runs
    other = dataclasses.replace(IMAGES, keys={v: k + "-changed" for v, k in IMAGES.keys.items()})
    with pytest.raises(SwechainError, match=r"its key matches none of chain toy's gold runs"):
        oracle.take_handed_on(toy, other, artifacts)
    # a runner too small for the chain's limits runs its suites with less memory: other keys too
    monkeypatch.setenv("SWECHAIN_RUNNER_MEMORY", "512m")
    with pytest.raises(SwechainError, match=r"runner size"):
        oracle.take_handed_on(toy, IMAGES, artifacts)
    monkeypatch.setenv("SWECHAIN_RUNNER_MEMORY", "8g")
    # a planted run under a name it made up, its hash recomputed
    record = first_record(artifacts)
    planted = record.with_name("0" * 64 + ".json")
    record.rename(planted)
    oracle.content_hash_path(record).rename(oracle.content_hash_path(planted))
    with pytest.raises(SwechainError, match=rf"handed-on gold run {planted}: its key matches none"):
        oracle.take_handed_on(toy, IMAGES, artifacts)
    assert only_kept(tmp_path / "final") == []


def test_an_edited_run_with_its_hash_recomputed_is_kept_only_under_its_own_key(toy, handed_on):
    """What the key cannot prove: a runner of the pool that lies about a run's outcome (the pool is
    trusted as the machine building an oracle locally is); it proves the inputs it was made from."""
    artifacts, _ = handed_on
    record = first_record(artifacts)
    edit_run(record, rehash=True)
    taken = oracle.take_handed_on(toy, IMAGES, artifacts)
    assert record.name in {p.name for p in taken}


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda a: (a / "notes.txt").write_text("x"), r"notes.txt is not a gold run's file"),
        (lambda a: (a / ("a" * 64 + ".json")).symlink_to("/etc/passwd"), r"is not a gold run's file"),
        (lambda a: (a / ("b" * 64 + ".log")).write_text("x"), r"its " + "b" * 64 + r"\.json is missing"),
        (lambda a: malformed(a), r"not a gold run record"),
        (lambda a: unfinished(a), r"an unfinished run"),
    ],
    ids=["stray file", "symlink", "log without its run", "malformed record", "unfinished run"],
)
def test_a_malformed_artifact_is_a_one_line_error_naming_it(toy, handed_on, tmp_path, plant, message):
    artifacts, _ = handed_on
    plant(artifacts)
    with pytest.raises(SwechainError, match=message) as e:
        oracle.take_handed_on(toy, IMAGES, artifacts)
    assert "\n" not in str(e.value)
    assert only_kept(tmp_path / "final") == []


def _rewrite(record: Path, content: str) -> None:
    import hashlib

    record.write_text(content)
    oracle.content_hash_path(record).write_text(hashlib.sha256(content.encode()).hexdigest() + "\n")


def malformed(artifacts: Path) -> None:
    _rewrite(first_record(artifacts), '{"statuses": "all passed"}')


def unfinished(artifacts: Path) -> None:
    record = first_record(artifacts)
    data = json.loads(record.read_text())
    data["timed_out"] = True
    _rewrite(record, json.dumps(data))


def test_the_cli_prints_the_matrix_and_refuses_a_share_that_is_no_version(toy, project_copy, tmp_path):
    env = {"SWECHAIN_ROOT": str(project_copy), "SWECHAIN_HOME": str(tmp_path / "home")}
    planned = run_cli("chain", "build", "toy", "--steps", "2-3", "--plan-jobs", env=env)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout) == {"include": oracle.pool_shares(toy.select_steps("2-3"))}
    wrong = run_cli("chain", "build", "toy", "--steps", "2-3", "--gold-runs-of", "0.1.0", env=env)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == (
        "error: --gold-runs-of 0.1.0: not a version of chain toy steps 2-3 (versions: 0.2.0, 0.3.0, 0.4.0); "
        "`chain build toy --plan-jobs` lists the shares"
    )
    alone = run_cli("chain", "build", "toy", "--hand-on", str(tmp_path / "out"), env=env)
    assert alone.returncode == 2 and "--hand-on needs --gold-runs-of" in alone.stderr
    missing = run_cli("chain", "build", "toy", "--gold-runs-from", str(tmp_path / "none"), "--verify", env=env)
    assert missing.returncode == 2 and "--verify reruns every gold run itself" in missing.stderr
