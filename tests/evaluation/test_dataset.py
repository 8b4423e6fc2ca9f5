"""The oracle as a committed dataset: every new-gold test in one place, a range build merges, a
rebuild that differs is a one-line error naming the step and its tests, the SWE-bench export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from swechain_ci.chain.definition import available_chains, load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import dataset
from swechain_ci.evaluation.dataset import OracleDataset, StepInputs
from swechain_ci.models import ChainOracle, Status, StepOracle

P, F, E, S = Status.passed, Status.failed, Status.error, Status.skipped
INPUTS = StepInputs(
    prev_source="a" * 64,
    next_source="b" * 64,
    environment=["pytest==8.3.5"],
    python="3.11",
    recipes="c" * 64,
    harness="d" * 64,
    evaluation="e" * 64,
)


def oracle_step(index: int = 1, prev: str = "0.1.0", next_: str = "0.2.0", **changes) -> StepOracle:
    new_gold = {"t::fixed": P, "t::kept": P, "t::skipped_before": P, "t::flaky": P, "t::net": P, "t::skip": S}
    old_gold = {"t::fixed": F, "t::kept": P, "t::skipped_before": S, "t::flaky": E, "t::net": F, "t::skip": S}
    fields = {
        "index": index,
        "prev_version": prev,
        "next_version": next_,
        "new_gold": new_gold,
        "old_gold": old_gold,
        "upgrade_related": ["t::fixed"],
        "flaky": ["t::flaky"],
        "needs_network": ["t::net"],
        "excluded": {
            "t::skip": "not passing on new gold (skipped)",
            "t::flaky": "flaky: its outcome changed between new-gold runs",
            "t::net": "needs_network in 0.2.0: fetches a URL",
        },
    }
    return StepOracle(**{**fields, **changes})


def test_every_new_gold_test_is_in_exactly_one_place():
    step = dataset.dataset_step(oracle_step(), INPUTS)
    places = [step.upgrade_related, step.pass_to_pass, list(step.other_scored), list(step.excluded)]
    assert (step.upgrade_related, step.pass_to_pass, step.other_scored) == (
        {"t::fixed": F},
        ["t::kept"],
        {"t::skipped_before": S},
    )
    assert sorted(t for place in places for t in place) == sorted(oracle_step().new_gold)
    assert step.excluded["t::net"] == "needs_network in 0.2.0: fetches a URL"
    assert step.inputs_hash == INPUTS.digest() and step.tests == 6


def test_the_inputs_hash_changes_with_any_input():
    assert INPUTS.model_copy(update={"harness": "f" * 64}).digest() != INPUTS.digest()
    assert INPUTS.model_copy(update={"environment": ["pytest==8.3.4"]}).digest() != INPUTS.digest()


def published(steps: list[StepOracle], versions: list[str]) -> OracleDataset:
    return OracleDataset(
        chain="toy", package="toy", versions=versions, steps=[dataset.dataset_step(s, INPUTS) for s in steps]
    )


def test_the_file_is_sorted_with_one_test_per_line():
    text = dataset.render(published([oracle_step()], ["0.1.0", "0.2.0"]))
    lines = text.splitlines()
    for test in oracle_step().new_gold:
        assert sum(1 for line in lines if f'"{test}"' in line) == 1, test
    excluded = [line.strip().split('"')[1] for line in lines if "not passing" in line or "flaky:" in line]
    assert excluded == sorted(excluded)
    assert OracleDataset.model_validate_json(text) == published([oracle_step()], ["0.1.0", "0.2.0"])


def test_a_range_build_keeps_the_other_steps_and_drops_those_of_other_versions():
    versions = ["0.1.0", "0.2.0", "0.3.0"]
    old = published([oracle_step(1), oracle_step(2, "0.2.0", "0.3.0", upgrade_related=[])], versions)
    rebuilt = published([oracle_step(2, "0.2.0", "0.3.0")], versions)
    merged = dataset.merged(old, rebuilt)
    assert [(s.index, list(s.upgrade_related)) for s in merged.steps] == [(1, ["t::fixed"]), (2, ["t::fixed"])]
    # 0.2.0 dropped from the chain: the kept step 1 (0.1.0 -> 0.2.0) is no longer a step of it
    shorter = published([oracle_step(1, "0.1.0", "0.3.0")], ["0.1.0", "0.3.0"])
    assert [(s.prev_version, s.next_version) for s in dataset.merged(old, shorter).steps] == [("0.1.0", "0.3.0")]


def test_changes_name_the_step_and_its_tests():
    versions = ["0.1.0", "0.2.0"]
    committed = published([oracle_step()], versions)
    assert dataset.changes(committed, committed) == []
    moved = oracle_step(upgrade_related=["t::fixed", "t::kept"], old_gold={**oracle_step().old_gold, "t::kept": F})
    assert dataset.changes(committed, published([moved], versions)) == [
        "step 1 (0.1.0 -> 0.2.0): upgrade_related gains t::kept; pass_to_pass loses t::kept"
    ]
    assert dataset.changes(None, committed) == ["step 1 (0.1.0 -> 0.2.0): not in the committed dataset"]


def test_equal_tests_from_other_inputs_are_reported_as_stale_not_as_a_mismatch():
    versions = ["0.1.0", "0.2.0"]
    committed = published([oracle_step()], versions)
    newer = INPUTS.model_copy(update={"harness": "f" * 64})
    rebuilt = committed.model_copy(
        update={
            "steps": [s.model_copy(update={"inputs": newer, "inputs_hash": newer.digest()}) for s in committed.steps]
        }
    )
    assert dataset.changes(committed, rebuilt) == []
    assert dataset.stale_inputs(committed, rebuilt) == ["step 1: harness"]


def test_the_dataset_gives_back_what_compare_and_scoring_read():
    original = oracle_step(old_gold={**oracle_step().old_gold, "t::fixed": E}, old_gold_collection_errors=["t/x.py"])
    back = dataset.step_oracle(dataset.dataset_step(original, INPUTS))
    for field in ("upgrade_related", "flaky", "needs_network", "excluded", "old_gold_collection_errors"):
        assert getattr(back, field) == getattr(original, field), field
    assert back.new_gold == {**original.new_gold, "t::flaky": P, "t::net": P}  # both were passing in run 1
    scored = ["t::fixed", "t::kept", "t::skipped_before"]
    assert {t: back.old_gold[t] for t in scored} == {t: original.old_gold[t] for t in scored}


def toy_copy(tmp_path: Path, monkeypatch) -> tuple:
    shutil.copytree(REPO / "chains" / "toy", tmp_path / "toy", ignore=shutil.ignore_patterns("oracle.json"))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    chain = load_chain(str(tmp_path / "toy")).select_steps("1")
    first, second = chain.versions
    oracle = ChainOracle(
        chain="toy",
        inputs_hash="x",
        versions=chain.versions,
        environments={second: ["pytest==8.3.5"]},
        steps=[oracle_step(1, first, second)],
        sanity=[],
    )
    return chain, oracle


def test_publish_then_verify_on_a_real_chain_folder(tmp_path, monkeypatch):
    chain, oracle = toy_copy(tmp_path, monkeypatch)
    with pytest.raises(SwechainError) as missing:
        dataset.verify(chain, oracle)
    assert str(missing.value) == (
        f"chain toy has no committed oracle ({tmp_path}/toy/oracle.json): run `swechain-ci chain build toy --write-dataset` "
        "and commit the file"
    )
    path, changed = dataset.publish(chain, oracle)
    assert path == tmp_path / "toy" / "oracle.json" and len(changed) == 1
    assert dataset.require(chain).versions == load_chain(str(tmp_path / "toy")).versions  # the whole chain's
    assert dataset.verify(chain, oracle) == []
    assert dataset.publish(chain, oracle)[1] == []  # the same build changes nothing
    broken = oracle.model_copy(update={"steps": [oracle_step(1, *chain.versions, upgrade_related=[])]})
    with pytest.raises(SwechainError) as mismatch:
        dataset.verify(chain, broken)
    assert str(mismatch.value) == (
        f"chain toy: the rebuild does not reproduce {path}: step 1 ({chain.versions[0]} -> {chain.versions[1]}): "
        "upgrade_related loses t::fixed; other_scored differs for t::fixed"
    )


def test_the_swebench_export_has_fail_to_pass_and_pass_to_pass_per_step(tmp_path, monkeypatch):
    chain, oracle = toy_copy(tmp_path, monkeypatch)
    dataset.publish(chain, oracle)
    result = run_cli("chain", "export", str(tmp_path / "toy"), env={"SWECHAIN_HOME": str(tmp_path / "home")})
    assert result.returncode == 0, result.stderr
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["instance_id"] == f"toy__{chain.versions[0]}-to-{chain.versions[1]}"
    assert (row["FAIL_TO_PASS"], row["PASS_TO_PASS"], row["version"]) == (["t::fixed"], ["t::kept"], chain.versions[1])


def test_export_without_a_committed_oracle_is_one_line(tmp_path, monkeypatch):
    toy_copy(tmp_path, monkeypatch)
    result = run_cli("chain", "export", str(tmp_path / "toy"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: chain toy has no committed oracle ({tmp_path}/toy/oracle.json): run `swechain-ci chain build toy --write-dataset` "
        "and commit the file"
    ]


@pytest.mark.parametrize("name", [c for c in available_chains() if (REPO / "chains" / c / "oracle.json").is_file()])
def test_each_committed_oracle_matches_its_chain(name):
    """Every committed dataset parses, names its chain's steps, and puts each test in one place."""
    chain = load_chain(name)
    committed = dataset.require(chain)
    assert (committed.chain, committed.versions) == (chain.id, chain.versions)
    for step in committed.steps:
        assert (step.prev_version, step.next_version) == chain.steps[step.index - 1]
        places = [step.upgrade_related, step.pass_to_pass, list(step.other_scored), list(step.excluded)]
        tests = [t for place in places for t in place]
        assert len(tests) == len(set(tests)) == step.tests, step.index
        assert step.inputs_hash == step.inputs.digest()
        assert list(step.upgrade_related) == sorted(step.upgrade_related)
        assert step.pass_to_pass == sorted(step.pass_to_pass)
    assert (REPO / "chains" / name / "oracle.json").read_text() == dataset.render(committed)


@pytest.mark.docker
def test_a_plain_build_never_changes_the_committed_dataset(project_copy):
    """Tests and runners build chains too: only --write-dataset records a build in the repository."""
    from conftest import run_cli

    committed = project_copy / "chains" / "toy" / "oracle.json"
    before = committed.read_bytes()
    env = {"SWECHAIN_ROOT": str(project_copy)}
    result = run_cli("chain", "build", "toy", "--steps", "1", env=env)
    assert result.returncode == 0, result.stderr
    assert committed.read_bytes() == before
    assert "oracle.json agrees with this build" in result.stdout or "(`--write-dataset` records it)" in result.stdout
    written = run_cli("chain", "build", "toy", "--steps", "1", "--write-dataset", env=env)
    assert written.returncode == 0 and "dataset written to" in written.stdout
