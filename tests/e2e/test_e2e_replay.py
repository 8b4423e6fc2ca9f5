"""Replay runs with hand-made patches: exact hand-computed scores, and a cheating candidate."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, load_json, run_cli

from swechain_ci.chain import trees

pytestmark = pytest.mark.docker
TOY = REPO / "chains" / "toy" / "versions"


def counts(metrics: dict) -> tuple[int, int, int]:
    return metrics["tp"], metrics["fn"], metrics["fp"]


def test_replay_patches_give_the_hand_computed_scores(toy_oracle, runs_dir):
    # tests/fixtures/replay_toy/EXPECTED.md derives these by hand:
    # step 1 resolves 6 of 9 (the truncate bug stays); step 2's build has a
    # SyntaxError that breaks collection (all 39 tests error, 25 preserved ones
    # regress), its one Fix repairs it; step 3 regresses one preserved test.
    output = runs_dir / "replay"
    result = run_cli(
        "run", "--chain", "toy", "--agent", f"replay:{REPO / 'tests/fixtures/replay_toy'}", "--output", str(output)
    )
    assert result.returncode == 0, result.stderr
    card = load_json(output / "scorecard.json")
    steps = card["steps"]
    assert [counts(s["build"]) for s in steps] == [(6, 3, 0), (0, 14, 25), (7, 0, 1)]
    assert [counts(s["build_fix"]) for s in steps] == [(6, 3, 0), (11, 3, 0), (7, 0, 1)]
    assert [s["fix_ran"] for s in steps] == [False, True, False], "exactly one Fix, on the collection error"
    assert steps[2]["categories_build_fix"]["unrecovered"] == 3
    assert steps[2]["categories_build_fix"]["regressed"] == 1
    assert counts(card["build"]) == (13, 17, 26)
    assert counts(card["build_fix"]) == (24, 6, 1)
    assert card["build"]["resolving"] == pytest.approx(13 / 30)
    assert card["build"]["precision"] == pytest.approx(13 / 39)
    assert card["build_fix"]["resolving"] == pytest.approx(0.8)
    assert card["build_fix"]["precision"] == pytest.approx(24 / 25)
    assert card["build_fix"]["f1"] == pytest.approx(2 * 0.8 * 0.96 / 1.76)

    step2 = load_json(output / "steps" / "02-0.2.0-0.3.0" / "step.json")
    assert step2["build"]["execution_error"] is True
    assert "SyntaxError" in step2["fix_report"]
    assert step2["fix"]["execution_error"] is False
    assert "shorten(text: str, length: int" in (output / "steps" / "02-0.2.0-0.3.0" / "fix.diff").read_text()


FORCE_PASS_PLUGIN = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""


def cheating_patch(tmp: Path) -> str:
    """0.1.0's code plus every way we know to make pytest report passes without fixing anything."""
    before, after = tmp / "before", tmp / "after"
    trees.copy_tree(TOY / "0.1.0", before, exclude=lambda rel: rel.parts[0] == "tests")
    shutil.copytree(before, after)
    (after / "conftest.py").write_text(FORCE_PASS_PLUGIN)
    (after / "src" / "toyslug" / "conftest.py").write_text(FORCE_PASS_PLUGIN)
    (after / "src" / "toyslug_cheat.py").write_text(FORCE_PASS_PLUGIN)
    (after / "pytest.ini").write_text("[pytest]\naddopts = -p toyslug_cheat\n")
    (after / "src" / "sitecustomize.py").write_text('import os\nos.environ["PYTEST_ADDOPTS"] = "-p toyslug_cheat"\n')
    pyproject = after / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('addopts = "', 'addopts = "-p toyslug_cheat '))
    return trees.diff(before, after)


def test_the_cheat_really_forces_passes_under_plain_pytest(tmp_path):
    """Without the harness, the cheating candidate does pass the new tests it never fixed."""
    patch = cheating_patch(tmp_path)
    tree = tmp_path / "plain"
    trees.copy_tree(TOY / "0.1.0", tree, exclude=lambda rel: rel.parts[0] == "tests")
    trees.apply_patch(tree, patch)
    shutil.copytree(TOY / "0.2.0" / "tests", tree / "tests")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-q",
            "--ignore=tests/test_unique.py",
            "tests",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree / "src")},
    )
    # test_truncate.py fails on 0.1.0's code (the bug step 1 fixes), yet everything "passes".
    summary = result.stdout.splitlines()[-1]
    assert " failed" not in summary and " passed" in summary, result.stdout


def test_a_candidate_forcing_passes_resolves_nothing_it_did_not_fix(toy_oracle, runs_dir, tmp_path):
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "step-1.build.patch").write_text(cheating_patch(tmp_path))
    output = runs_dir / "cheat"
    result = run_cli("run", "--chain", "toy", "--agent", f"replay:{patches}", "--output", str(output))
    assert result.returncode == 0, result.stderr
    step1 = load_json(output / "scorecard.json")["steps"][0]
    assert counts(step1["build"]) == (0, 9, 0)
    assert counts(step1["build_fix"]) == (0, 9, 0)


def test_an_agent_crash_stops_the_chain_after_scoring_that_step(toy_oracle, runs_dir, tmp_path):
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "step-1.build.patch").write_text("--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-x\n+y\n")
    output = runs_dir / "crash"
    result = run_cli("run", "--chain", "toy", "--agent", f"replay:{patches}", "--output", str(output))
    assert result.returncode == 0, result.stderr
    card = load_json(output / "scorecard.json")
    assert card["steps_scored"] == 1 and card["steps_total"] == 3
    assert card["stop_reason"].startswith("step 1: agent crashed: SwechainError: git apply failed")
    assert card["steps"][0]["agent_status"] == "crashed"
    assert counts(card["steps"][0]["build"]) == (0, 9, 0), "the unchanged code is scored as it stands"
    assert load_json(output / "run.json")["status"] == "stopped"
    assert not (output / "steps" / "02-0.2.0-0.3.0").exists()
    # A resumed run starts again at the step whose agent failed; with the bad patch gone it runs on.
    (patches / "step-1.build.patch").unlink()
    again = run_cli("run", "--chain", "toy", "--agent", f"replay:{patches}", "--output", str(output))
    assert again.returncode == 0, again.stderr
    assert "step 1 ended with a failed agent; running it again" in again.stderr
    card = load_json(output / "scorecard.json")
    assert card["steps_scored"] == 3 and card["stop_reason"] is None
    assert card["steps"][0]["agent_status"] == "ok"
    assert load_json(output / "run.json")["status"] == "finished"
