"""Chain authoring with real Docker: a failed sanity check shows and keeps its cause, edits to
chain.yaml change the next build, and pytest-xdist workers keep the per-test results exact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from swechain_ci.chain import sources
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.models import ChainOracle, Status
from swechain_ci.models import TestRun as Run
from swechain_ci.records import read_model
from swechain_ci.settings import state_home

pytestmark = pytest.mark.docker
LABELS = {"swechain-ci.test": "authoring"}


def edit(chain_yaml: Path, **changes) -> None:
    data = yaml.safe_load(chain_yaml.read_text())
    data.update(changes)
    chain_yaml.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def toy(docker_engine, project_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    return project_copy / "chains" / "toy"


def test_a_suite_that_runs_nothing_shows_its_output_and_keeps_the_log(toy):
    conftest = toy / "versions" / "0.2.0" / "tests" / "conftest.py"
    conftest.write_text("import toyslug_test_helpers  # a test dependency nobody declared\n" + conftest.read_text())
    result = run_cli("chain", "build", "toy", "--steps", "1", env={"SWECHAIN_ROOT": str(toy.parent.parent)})
    assert result.returncode == 2
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("error: chain toy fails its sanity check: version 0.2.0's own suite ran no tests")
    assert "import error in a conftest.py" in error and "known_failures" not in error
    log = Path(error.split("whole log: ")[1].split(". ")[0])
    assert "ModuleNotFoundError: No module named 'toyslug_test_helpers'" in log.read_text()
    # The tail is printed before the error: the cause is on screen without opening the log.
    assert "toyslug_test_helpers" in result.stdout + result.stderr.replace(error, "")


def test_editing_protected_files_or_test_folder_changes_the_next_build(toy):
    sandbox = DockerSandbox()

    def build() -> tuple[ChainOracle, str]:
        chain = load_chain("toy").select_steps("1")
        built = images.ensure_images(sandbox, chain)
        return oracle.build(sandbox, chain, built), built.versions["0.2.0"]

    first, first_image = build()
    assert read_model(oracle.oracle_path(load_chain("toy").select_steps("1")), ChainOracle) == first
    # pyproject.toml (the pytest config naming --cov) is no longer protected: the image changes.
    edit(toy / "chain.yaml", protected_files=["setup.py"])
    second, second_image = build()
    assert second_image != first_image and second.inputs_hash != first.inputs_hash
    # Only tests/test_slugify.py is hidden now: the oracle has only its tests.
    edit(toy / "chain.yaml", test_folder="tests/only_slugify")
    (toy / "versions" / "0.1.0" / "tests" / "only_slugify").mkdir()
    (toy / "versions" / "0.2.0" / "tests" / "only_slugify").mkdir()
    for version in ("0.1.0", "0.2.0"):
        shutil.copy(
            toy / "versions" / version / "tests" / "test_slugify.py",
            toy / "versions" / version / "tests" / "only_slugify" / "test_slugify.py",
        )
    third, _ = build()
    assert {t.split("::")[0] for t in third.steps[0].new_gold} == {"tests/only_slugify/test_slugify.py"}
    assert len(first.steps[0].new_gold) > len(third.steps[0].new_gold)


def test_xdist_workers_give_the_same_exact_results(toy, tmp_path):
    """Two pytest-xdist workers: the same per-test statuses and failed imports as one process,
    a report the host trusts (its stream has each outcome once), workers as the test user."""
    sandbox = DockerSandbox()
    serial = load_chain("toy").select_steps("1")
    edit(toy / "chain.yaml", pytest={"remove_options": [{"name": "--cov", "takes_value": True}], "workers": 2})
    parallel = load_chain("toy").select_steps("1")
    runs = {}
    for name, chain in (("serial", serial), ("parallel", parallel)):
        built = images.ensure_images(sandbox, chain)
        code = tmp_path / name
        shutil.copytree(sources.materialize(chain, "0.1.0").code, code)
        init = code / "src" / "toyslug" / "__init__.py"
        init.write_text(
            "import os as _os\nif _os.getuid() == 0: raise RuntimeError('running as root')\n" + init.read_text()
        )
        runs[name] = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    serial_run, parallel_run = runs["serial"], runs["parallel"]
    assert "created: 2/2 workers" in parallel_run.output_tail and "workers" not in serial_run.output_tail
    assert parallel_run.execution_error is None and serial_run.execution_error is None
    assert parallel_run.statuses == serial_run.statuses and len(parallel_run.statuses) == 35
    assert parallel_run.failed_imports == serial_run.failed_imports != []


def test_the_network_probe_finds_a_test_that_needs_the_network(toy, monkeypatch):
    """Where a runner has a network (here Docker's host network), gold runs once more on it:
    a test that passes there but not offline is left out of scoring, with why."""
    online = toy / "versions" / "0.2.0" / "tests" / "test_online.py"
    online.write_text("import os\n\ndef test_sees_a_network():\n    assert os.listdir('/sys/class/net') != ['lo']\n")
    test = "tests/test_online.py::test_sees_a_network"
    sandbox = DockerSandbox()
    chain = load_chain("toy").select_steps("1")
    built = images.ensure_images(sandbox, chain)
    with pytest.raises(Exception, match=r"fails its sanity check \(version 0.2.0: 1/36 failing"):
        oracle.build(sandbox, chain, built)
    monkeypatch.setenv("SWECHAIN_NETWORK_PROBE", "host")
    [step] = oracle.build(sandbox, chain, built).steps
    assert step.new_gold[test].value == "failed"
    assert step.needs_network == [test]
    assert step.excluded[test] == "needs_network in 0.2.0: passes on network host, failed offline (network probe)"


def test_pytest_env_reaches_the_tests_and_cannot_replace_the_harness_variables(toy, tmp_path):
    """chain.yaml's pytest.env is in the tests' environment (urllib3 sets CI=1 so); the harness's
    own variables keep their values."""
    sandbox = DockerSandbox()
    edit(
        toy / "chain.yaml",
        pytest={"remove_options": [{"name": "--cov", "takes_value": True}], "env": {"TOYSLUG_MODE": "ci"}},
    )
    chain = load_chain("toy").select_steps("1")
    built = images.ensure_images(sandbox, chain)
    code = tmp_path / "code"
    shutil.copytree(sources.materialize(chain, "0.2.0").code, code)
    init = code / "src" / "toyslug" / "__init__.py"
    init.write_text(
        "import os as _os\nif _os.environ.get('TOYSLUG_MODE') != 'ci' or _os.environ['PYTEST_ADDOPTS']:\n"
        "    raise RuntimeError('environment')\n" + init.read_text()
    )
    with_env = evaluate(sandbox, chain, built.versions["0.2.0"], code, LABELS)
    edit(toy / "chain.yaml", pytest={"remove_options": [{"name": "--cov", "takes_value": True}]})
    without = evaluate(sandbox, load_chain("toy").select_steps("1"), built.versions["0.2.0"], code, LABELS)
    assert with_env.execution_error is None and not with_env.failed_imports
    assert with_env.statuses and all(s.value == "passed" for s in with_env.statuses.values())
    assert not without.statuses and any("RuntimeError: environment" in e for e in without.collection_errors.values())


def test_a_build_after_declaring_known_failures_reruns_no_gold_run(toy, monkeypatch):
    """A failed sanity check keeps its gold runs: declaring the failure in chain.yaml and building
    again runs nothing new; --force runs everything again."""
    sandbox = DockerSandbox()
    evaluated = []

    def counted(*args, **kwargs):
        evaluated.append(args[2])
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(oracle, "evaluate", counted)
    shutil.rmtree(state_home() / "gold-runs" / "toy", ignore_errors=True)  # kept by an earlier session
    failing = "tests/test_extra.py::test_fails_on_its_own_release"
    (toy / "versions" / "0.2.0" / "tests" / "test_extra.py").write_text(
        "def test_fails_on_its_own_release():\n    assert False, 'needs something this machine lacks'\n"
    )

    def build(force: bool = False) -> ChainOracle:
        chain = load_chain("toy").select_steps("1")
        return oracle.build(sandbox, chain, images.ensure_images(sandbox, chain), force=force)

    with pytest.raises(SwechainError, match="fails its sanity check"):
        build()
    assert len(evaluated) == 5  # 2 new-gold runs of each version, 1 old-gold run
    edit(toy / "chain.yaml", oracle={"baseline_runs": 2, "known_failures": {"0.2.0": [failing]}})
    built = build()
    # no gold run again; the 2 new runs verify the step's tripwires (planted on new and on old gold),
    # which a build that stopped at the sanity check never reached
    assert len(evaluated) == 5 + 2
    assert built.steps[0].new_gold[failing] == Status.failed and failing not in built.steps[0].upgrade_related
    assert all(check.ok for check in built.sanity)
    build(force=True)
    assert len(evaluated) == 7 + 7


def test_an_old_gold_run_that_does_not_run_is_said_out_loud(toy, monkeypatch):
    """Every test counts as upgrade-related when the previous code cannot run on the target's
    tests; the build says so (xarray 2025.6.0 on 2025.6.1's image, before its images matched)."""
    sandbox = DockerSandbox()
    said = []
    monkeypatch.setattr(oracle.progress, "say", said.append)

    def old_gold_broken(sandbox_, chain, image, code, labels, **kwargs):
        if "0.1.0" in str(code) and image == built.versions["0.2.0"]:
            return Run(execution_error="pytest left no report (exit code 4)", exit_code=4)
        return evaluate(sandbox_, chain, image, code, labels, **kwargs)

    monkeypatch.setattr(oracle, "evaluate", old_gold_broken)
    chain = load_chain("toy").select_steps("1")
    built = images.ensure_images(sandbox, chain)
    step = oracle.build(sandbox, chain, built, force=True).steps[0]
    passing = [t for t, s in step.new_gold.items() if s == Status.passed]
    assert step.upgrade_related == sorted(passing)
    assert any("step 1: the old gold (0.1.0's code on 0.2.0's tests) did not run" in m for m in said)
