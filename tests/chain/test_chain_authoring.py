"""Chain authoring: every mistake a chain author makes gets a one-line error naming cause and fix,
and every cache is keyed on what shapes it. No Docker here (see test_chain_authoring_docker.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from swechain_ci.chain import sources
from swechain_ci.chain.definition import ChainConfig, load_chain
from swechain_ci.chain.environments import resolve
from swechain_ci.chain.interpreters import INTERPRETERS, interpreter
from swechain_ci.containers.images import ChainImages
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle
from swechain_ci.models import Status, VersionSanity
from swechain_ci.models import TestRun as Run
from swechain_ci.settings import base_image
from swechain_ci.specs.store import load_specs


@pytest.fixture
def toy(project_copy, monkeypatch, tmp_path):
    """The toy chain in a project copy, with a state home of its own."""
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return project_copy / "chains" / "toy" / "chain.yaml"


def edit(chain_yaml: Path, **changes) -> None:
    data = yaml.safe_load(chain_yaml.read_text())
    data.update(changes)
    chain_yaml.write_text(yaml.safe_dump(data, sort_keys=False))


# --------------------------------------------------------------------------- interpreters


@pytest.mark.parametrize(
    ("python", "suite", "newest_glibc"),
    [
        ("3.9", "bullseye", "manylinux_2_31"),
        ("3.11", "bookworm", "manylinux_2_36"),
        ("3.13", "trixie", "manylinux_2_41"),
    ],
)
def test_each_python_has_its_debian_suite_and_wheel_platforms(python, suite, newest_glibc, monkeypatch):
    monkeypatch.delenv("SWECHAIN_BASE_IMAGE", raising=False)
    row = interpreter(python)
    assert row.debian_suite == suite
    assert row.platforms[0].startswith(newest_glibc + "_")
    assert base_image(python, suite) == f"swechain/base:py{python}-{suite}"
    monkeypatch.setenv("SWECHAIN_BASE_IMAGE", "python:{python}-slim")
    assert base_image(python, suite) == f"python:{python}-slim"


def test_an_unknown_python_names_the_interpreters_there_are(toy):
    edit(toy, python="3.10")
    with pytest.raises(SwechainError) as caught:
        load_chain("toy")
    message = str(caught.value)
    assert "field 'python'" in message and "Python 3.10 has no base image" in message
    assert all(p in message for p in INTERPRETERS), message


def test_resolution_follows_the_interpreter():
    """pytest 8.3 needs tomli and exceptiongroup below Python 3.11 only (environment markers)."""
    on_39 = {pin.split("==")[0] for pin in resolve(["pytest==8.3.0"], "3.9")}
    on_313 = {pin.split("==")[0] for pin in resolve(["pytest==8.3.0"], "3.13")}
    assert {"tomli", "exceptiongroup"} <= on_39
    assert not {"tomli", "exceptiongroup"} & on_313


# --------------------------------------------------------------------------- errors that say what to do


def test_a_wrong_source_root_names_where_the_package_is(toy):
    edit(toy, source_root=".")
    with pytest.raises(SwechainError) as caught:
        sources.materialize(load_chain("toy"), "0.1.0")
    message = str(caught.value)
    assert "field 'source_root'" in message and "holds no import package 'toyslug'" in message
    assert "set source_root: src" in message


def test_a_wrong_import_name_says_no_folder_holds_it(toy):
    edit(toy, import_name="toyslugs")
    with pytest.raises(SwechainError, match=r"no folder holds it: check import_name \('toyslugs'\) and source_root"):
        sources.materialize(load_chain("toy"), "0.1.0")


def test_a_test_folder_typo_is_named_even_after_a_build_with_the_right_one(toy):
    sources.materialize(load_chain("toy"), "0.1.0")
    edit(toy, test_folder="tset")
    with pytest.raises(
        SwechainError, match=r"version 0.1.0 has no test folder 'tset' \(set test_folder in chain.yaml\)"
    ):
        sources.materialize(load_chain("toy"), "0.1.0")


def test_a_missing_specification_names_the_command_that_makes_it(toy):
    chain = load_chain("toy")
    with pytest.raises(SwechainError, match=r"no level-L1 specification .*`swechain-ci specs render toy` writes them"):
        load_specs(chain, "L1")
    with pytest.raises(SwechainError, match=r"`swechain-ci specs synth toy --levels L3`"):
        load_specs(chain, "L3")


def sanity_failure(run: Run, failing: list[str]) -> str:
    chain = load_chain("toy")
    check = VersionSanity(
        version="0.2.0",
        tests=len(run.statuses),
        failed=len(failing),
        errors=0,
        setup_errors=[],
        failing=failing,
        ok=False,
    )
    return oracle.sanity_problem(chain, [check], {"0.2.0": [run]}, Path("/state/logs/x.log"))


def test_a_suite_that_ran_nothing_suggests_causes_not_known_failures(toy):
    message = sanity_failure(Run(execution_error="pytest left no report (exit code 4)", exit_code=4), [])
    assert "0.2.0's own suite ran no tests (pytest left no report (exit code 4))" in message
    assert "whole log: /state/logs/x.log" in message
    assert "import error in a conftest.py" in message and "missing" in message and "source_root" in message
    assert "known_failures" not in message
    assert "\n" not in message


def test_a_suite_with_failures_names_them_the_log_and_the_declaration(toy):
    run = Run(
        statuses={"tests/test_a.py::test_x": Status.failed, "tests/test_a.py::test_y": Status.passed}, exit_code=1
    )
    message = sanity_failure(run, ["tests/test_a.py::test_x"])
    assert "version 0.2.0: 1/2 failing" in message and "tests/test_a.py::test_x" in message
    assert "whole log: /state/logs/x.log" in message and "oracle.known_failures" in message


CHAIN_EXAMPLE = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize(
    "readme",
    [
        "README.md",
        *sorted(str(p.relative_to(REPO)) for p in REPO.glob("docs/*.md")),
        *sorted(str(p.relative_to(REPO)) for p in REPO.glob("chains/*/README.md")),
    ],
)
def test_every_chain_example_in_the_readmes_passes_the_schema(readme):
    examples = [yaml.safe_load(block) for block in CHAIN_EXAMPLE.findall((REPO / readme).read_text())]
    chain_examples = [e for e in examples if isinstance(e, dict) and "versions" in e]
    if readme == "docs/writing-a-chain.md":
        assert chain_examples, "the chain author's guide shows a chain.yaml"
    for example in chain_examples:
        ChainConfig.model_validate(example)


# --------------------------------------------------------------------------- per-version network tests


def test_network_tests_apply_in_their_version_range():
    """PyJWT's JWKS test fetches a real URL up to 2.10.1; from 2.11.0 on it runs on a local mock."""
    settings = load_chain("pyjwt").config.oracle
    test = "tests/test_jwks_client.py::TestPyJWKClient::test_get_jwt_set_sslcontext_default"
    for version in ("2.0.0", "2.8.0", "2.10.1"):
        assert test in settings.network_tests(version)
    for version in ("2.11.0", "2.12.0", "2.12.1"):
        assert settings.network_tests(version) == {}


def test_declared_flaky_tests_apply_in_their_version_range():
    """urllib3's HTTP/2 probe test asserts a new thread's ident differs from an ended one's: from 2.2.0 on."""
    settings = load_chain("urllib3").config.oracle
    test = "test/with_dummyserver/test_https.py::TestHTTPS_TLSv1_3::test_http2_probe_blocked_per_thread"
    assert test not in settings.flaky_tests("2.1.0")
    for version in ("2.2.0", "2.4.0", "2.6.3"):
        assert "ident" in settings.flaky_tests(version)[test]
        assert all(test not in tests for tests in settings.known_failures.values()), "declared once"


def test_a_flaky_declaration_keys_records_only_where_a_chain_makes_one(toy):
    """Kept runs and recorded oracles are keyed by the config: a chain without oracle.flaky keeps
    the keys it had before the field existed; one with it is keyed by it."""
    bare = load_chain("toy").config.keyed_dump({"oracle"})
    assert "flaky" not in bare["oracle"] and "needs_network" in bare["oracle"]
    edit(toy, oracle={"flaky": ["tests/test_a.py::test_x"]})
    declared = load_chain(str(toy)).config
    assert declared.keyed_dump({"oracle"})["oracle"]["flaky"] == [
        {"test": "tests/test_a.py::test_x", "versions": None, "reason": "fails at random here"}
    ]


def test_a_bad_version_range_says_how_to_write_one(toy):
    edit(toy, oracle={"needs_network": [{"test": "tests/test_a.py::test_x", "versions": "before 2.0"}]})
    with pytest.raises(SwechainError, match=r"'before 2.0' is not a version range; write it as '<2.11.0'"):
        load_chain("toy")


# --------------------------------------------------------------------------- caches keyed on what shapes them


def test_editing_protected_files_or_test_folder_changes_the_split(toy):
    first = sources.materialize(load_chain("toy"), "0.2.0")
    assert (first.protected / "pyproject.toml").is_file()
    edit(toy, protected_files=["setup.py"])
    second = sources.materialize(load_chain("toy"), "0.2.0")
    assert second.protected != first.protected and not (second.protected / "pyproject.toml").exists()
    assert (second.code / "pyproject.toml").is_file()
    edit(toy, test_folder="src")
    third = sources.materialize(load_chain("toy"), "0.2.0")
    assert (third.hidden / "src" / "toyslug" / "core.py").is_file() and not (third.code / "src").exists()
    edit(toy, test_folder="tests")
    assert sources.materialize(load_chain("toy"), "0.2.0") == second


def test_oracles_of_one_chain_id_from_two_folders_are_kept_apart(toy, tmp_path):
    here = load_chain("toy")
    elsewhere = tmp_path / "elsewhere" / "toy"
    elsewhere.mkdir(parents=True)
    (elsewhere / "chain.yaml").write_text(toy.read_text())
    assert oracle.oracle_path(load_chain(str(elsewhere))) != oracle.oracle_path(here)


def test_the_oracle_is_keyed_on_the_chain_file_and_the_harness(toy):
    images = ChainImages(deps={}, versions={"0.1.0": "sha256:a"}, environments={}, keys={"0.1.0": "inputs-a"})
    before = oracle.inputs_hash(load_chain("toy"), images)
    toy.write_text(toy.read_text() + "\n# a note\n")
    assert oracle.inputs_hash(load_chain("toy"), images) != before


# --------------------------------------------------------------------------- runs sized by the runner


@pytest.mark.parametrize(
    ("workers", "cpus", "memory", "expected_workers", "run_cpus", "run_memory", "side_by_side"),
    [
        (1, 8, "64g", 1, 1.0, "1024m", 8),  # one worker a run: a run per CPU
        (4, 8, "64g", 4, 4.0, "4096m", 2),  # four workers a run: two runs at a time
        ("auto", 8, "64g", 8, 8.0, "8192m", 1),  # as many workers as the runner has CPUs
        (4, 2, "64g", 2, 2.0, "2048m", 1),  # never more workers than CPUs
        (1, 8, "3g", 1, 1.0, "1024m", 3),  # memory bounds how many runs go side by side
    ],
)
def test_runs_are_sized_by_the_runner(
    toy, monkeypatch, workers, cpus, memory, expected_workers, run_cpus, run_memory, side_by_side
):
    from swechain_ci.containers.runner import memory_bytes, parallel_runs, run_limits, runner_size, test_workers

    monkeypatch.delenv("SWECHAIN_WORKERS", raising=False)
    monkeypatch.setenv("SWECHAIN_RUNNER_CPUS", str(cpus))
    monkeypatch.setenv("SWECHAIN_RUNNER_MEMORY", memory)
    edit(toy, pytest={"workers": workers}, limits={"memory": "1g", "cpus": 1.0, "pids": 256})
    chain, size = load_chain("toy"), runner_size()
    assert size.memory == memory_bytes(memory, "test")
    limits = run_limits(chain, size)
    assert (test_workers(chain, size), limits.cpus, limits.memory) == (expected_workers, run_cpus, run_memory)
    assert limits.pids == 256 * expected_workers
    assert parallel_runs(chain, size) == side_by_side


def test_a_bad_runner_size_says_how_to_write_it(monkeypatch):
    from swechain_ci.containers.runner import runner_size

    monkeypatch.setenv("SWECHAIN_RUNNER_MEMORY", "lots")
    with pytest.raises(
        SwechainError, match=r"SWECHAIN_RUNNER_MEMORY: 'lots' is not a memory size; write it as 512m or 4g"
    ):
        runner_size()


@pytest.mark.parametrize(
    ("env", "accepted"),
    [
        ({"CI": "1"}, True),
        ({"PYTHONPATH": "/tmp"}, False),
        ({"PYTEST_ADDOPTS": "-p evil"}, False),
        ({"SWECHAIN_TESTS_ROOT": "/"}, False),
        ({"LD_PRELOAD": "/tmp/x.so"}, False),
        ({"HOME": "/root"}, False),
        ({"NOT-A-NAME": "1"}, False),
    ],
)
def test_pytest_env_may_not_touch_what_the_harness_controls(toy, env, accepted):
    edit(toy, pytest={"env": env})
    if accepted:
        assert load_chain("toy").config.pytest.env == env
    else:
        with pytest.raises(SwechainError, match=r"reserved|not an environment variable name"):
            load_chain("toy")


def test_a_kept_gold_run_is_keyed_by_what_shapes_it_and_not_by_known_failures(toy, tmp_path):
    from swechain_ci.containers.runner import RunnerSize

    size = RunnerSize(cpus=2, memory=8 * 2**30)
    code = tmp_path / "code"
    code.mkdir()
    (code / "mod.py").write_text("x = 1\n")

    def key(**kwargs) -> Path:
        args = {"image_key": "inputs-a", "network": "none", "repeat": 0, "size": size} | kwargs
        return oracle.gold_run_path(load_chain("toy"), code=code, **args)

    first = key()
    edit(toy, oracle={"baseline_runs": 2, "known_failures": {"0.2.0": ["tests/test_checks.py::test_x"]}})
    assert key() == first
    assert key(repeat=1) != first and key(image_key="inputs-b") != first
    assert key(network="probe") != first and key(size=RunnerSize(cpus=1, memory=2**29)) != first
    (code / "mod.py").write_text("x = 2\n")
    changed_code = key()
    assert changed_code != first
    edit(toy, pytest={"extra_args": ["-p", "no:warnings"]})
    assert key() not in (first, changed_code)


def test_a_pick_whose_requires_python_excludes_the_image_python_is_named_for_exclusion():
    from swechain_ci.chain.environments import outside_requires_python

    def pick(name: str, version: str, requires: str | None) -> dict:
        return {"metadata": {"name": name, "version": version, "requires_python": requires}}

    installs = [
        pick("argcomplete", "3.7.2", ">=3.10"),
        pick("Attrs", "26.1.0", ">=3.9"),
        pick("six", "1.17.0", None),
        pick("old", "1.0", "!=3.9.*,>=3.8"),
    ]
    assert outside_requires_python(installs, "3.9") == ["argcomplete!=3.7.2", "old!=1.0"]
    assert outside_requires_python(installs, "3.11") == []
