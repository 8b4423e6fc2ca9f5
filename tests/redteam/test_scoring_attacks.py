"""Red team, class 4: scoring that can be gamed. Each attack is a real chain run on the toy chain.

For each: the paper's figure is kept, and either the score is no better than an honest one
(stated) or the run is flagged; regressions stay counted; ranking never pays for stopping.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, load_json, run_cli

from redteam.conftest import HONEST_STEP1, TOY_START, counts
from swechain_ci.chain import trees
from swechain_ci.scoring.leaderboard import build_leaderboard

pytestmark = pytest.mark.docker
TOY = REPO / "chains" / "toy" / "versions"
CORE = "src/toyslug/core.py"
CHECKS = "src/toyslug/checks.py"
START_CORE = (TOY_START / CORE).read_text()


def kinds(card: dict) -> set[str]:
    return {f["kind"] for f in card["integrity"]["flags"]}


def test_turning_failures_into_skips_is_flagged(attack):
    # Every public function raises SkipTest: the 9 upgrade-related tests (honest: 9 FN) and every
    # other test drop out of scoring under the paper's rule.
    run = attack(
        {
            CORE: START_CORE + "\nimport unittest\n\ndef slugify(*a, **k):\n    raise unittest.SkipTest('later')\n"
            "\ndef truncate(*a, **k):\n    raise unittest.SkipTest('later')\n"
        }
    )
    assert run.build[0] == HONEST_STEP1[0], "no test resolved"
    assert run.scorecard["integrity"]["status"] == "flagged"
    flag = next(f for f in run.scorecard["integrity"]["flags"] if f["kind"] == "skipped_on_candidate")
    assert flag["step"] == 1 and flag["phase"] in ("build", "fix") and "tests pass on new gold" in flag["detail"]
    assert "⚠ flagged" in (run.output / "scorecard.md").read_text()


def test_turning_failures_into_xfails_is_flagged(attack):
    run = attack(
        {
            CORE: START_CORE + "\nimport pytest\n\n_truncate = truncate\n\ndef truncate(*a, **k):\n"
            "    pytest.xfail('known issue')\n"
        }
    )
    assert run.build[0] == 0 and run.build_fix[0] == 0
    assert "skipped_on_candidate" in kinds(run.scorecard)
    assert run.scorecard["integrity"]["status"] == "flagged"


BROKEN_CHECKS = (TOY_START / CHECKS).read_text() + "\n\ndef is_slug(*a, **k):\n    return False\n"


def test_an_honest_regression_counts(attack):
    # The baseline for the next attack: breaking is_slug regresses its preserved tests.
    run = attack({CHECKS: BROKEN_CHECKS})
    assert run.build[2] > 0 and run.scorecard["integrity"]["status"] == "clean"


def test_hiding_a_regression_behind_a_skip_is_flagged(attack):
    # The same broken is_slug, skipping instead of answering: the paper's figure shows FP = 0
    # where the honest one above shows FP > 0, so the run is flagged.
    run = attack(
        {CHECKS: BROKEN_CHECKS.replace("    return False\n", "    import unittest\n    raise unittest.SkipTest('x')\n")}
    )
    assert run.build[2] == 0
    assert run.scorecard["integrity"]["status"] == "flagged" and "skipped_on_candidate" in kinds(run.scorecard)


SABOTAGE = (
    "import pathlib as _p\n_c = _p.Path.cwd() / 'pyproject.toml'\n"
    "if _c.is_file() and 'version = \"0.2.0\"' not in _c.read_text():\n"
    "    raise ImportError('toyslug refuses to load under a newer version')\n"
)


def two_step_patches(folder: Path, scratch: Path, sabotage: bool) -> None:
    """Step 1: 0.2.0's gold code (resolves step 1), with or without code that breaks itself under any
    newer version's tests. Step 2: the sabotage gone, and is_slug really broken (a regression)."""
    start, one, two = scratch / "start", scratch / "one", scratch / "two"
    trees.copy_tree(TOY / "0.1.0", start, exclude=lambda rel: rel.parts[0] == "tests")
    trees.copy_tree(TOY / "0.2.0", one, exclude=lambda rel: rel.parts[0] == "tests")
    if sabotage:
        init = one / "src/toyslug/__init__.py"
        init.write_text(SABOTAGE + init.read_text())
    trees.copy_tree(TOY / "0.2.0", two, exclude=lambda rel: rel.parts[0] == "tests")
    (two / CHECKS).write_text((two / CHECKS).read_text() + "\n\ndef is_slug(*a, **k):\n    return False\n")
    folder.mkdir(parents=True)
    (folder / "step-1.build.patch").write_text(trees.diff(start, one))
    (folder / "step-2.build.patch").write_text(trees.diff(one, two))


def test_prev_breaking_under_the_next_version_is_flagged_and_the_regression_still_counts(toy_oracle, tmp_path):
    cards = {}
    for name in ("honest", "sabotage"):
        two_step_patches(tmp_path / name / "patches", tmp_path / name / "trees", sabotage=name == "sabotage")
        output = tmp_path / name / "run"
        result = run_cli(
            "run",
            "--chain",
            "toy",
            "--steps",
            "1-2",
            "--agent",
            f"replay:{tmp_path / name / 'patches'}",
            "--output",
            str(output),
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        cards[name] = load_json(output / "scorecard.json")
        step2 = load_json(next(output.glob("steps/02-*")) / "step.json")
        cards[name]["prev_broken"] = sum(s == "error" or s == "failed" for s in step2["prev_outcomes"].values())
    honest, sabotage = cards["honest"], cards["sabotage"]
    assert honest["integrity"]["status"] == "clean"
    honest_step2 = counts(honest["steps"][1]["build_fix"])
    assert honest_step2[2] > 0, "breaking is_slug regresses preserved tests"
    # The sabotaged prev fails everywhere; without the rule its regressions would not count.
    assert sabotage["prev_broken"] > honest["prev_broken"]
    assert kinds(sabotage) == {"prev_import_failure"}
    flag = sabotage["integrity"]["flags"][0]
    assert flag["step"] == 2 and flag["phase"] == "prev" and "refuses to load" in flag["detail"]
    assert counts(sabotage["steps"][1]["build_fix"]) == honest_step2, "scored against old gold, the regression counts"


def test_stopping_early_never_pays_in_the_ranking(toy_oracle, tmp_path):
    # Steps 1-2: the oracle solves both (23/0/0). A copy paused after step 1 ties it on the paper's
    # figure (9/0/0: 100%), and is ranked below it: step 2 counts its 14 tests as FN.
    full, quitter = tmp_path / "runs" / "full", tmp_path / "runs" / "quitter"
    assert (
        run_cli("run", "--chain", "toy", "--steps", "1-2", "--agent", "oracle", "--output", str(full)).returncode == 0
    )
    result = run_cli(
        "run", "--chain", "toy", "--steps", "1-2", "--agent", "oracle", "--output", str(quitter), "--max-steps", "1"
    )
    assert result.returncode == 0, result.stderr
    f, q = load_json(full / "scorecard.json"), load_json(quitter / "scorecard.json")
    assert q["build_fix"]["f1"] == f["build_fix"]["f1"] == 1.0 and q["steps_scored"] == 1
    assert q["ranking"]["steps_unscored"] == [2] and q["ranking"]["fn_added"] == 14
    assert counts(q["ranking"]["build_fix"]) == (9, 14, 0) and q["ranking"]["build_fix"]["resolving"] == 9 / 23
    assert f["ranking"]["build_fix"] == f["build_fix"] and f["integrity"]["status"] == "clean"
    assert "For ranking, the 1 step(s) never scored (2)" in (quitter / "scorecard.md").read_text()
    # Two agents on one leaderboard: rename the quitter's agent, so each is its own row.
    card = load_json(quitter / "scorecard.json")
    card["agent"] = "quitter"
    (quitter / "scorecard.json").write_text(json.dumps(card))
    board = build_leaderboard([tmp_path / "runs"])
    assert [r.agent for r in board.rows] == ["oracle", "quitter"]
    assert board.rows[1].build_fix.f1.value == 1.0 and board.rows[1].ranking_build_fix.f1.value < 0.6


def test_a_crash_after_a_solved_step_is_charged_for_the_steps_never_reached(toy_oracle, tmp_path):
    patches = tmp_path / "patches"
    patches.mkdir()
    start, one = tmp_path / "start", tmp_path / "one"
    trees.copy_tree(TOY / "0.1.0", start, exclude=lambda rel: rel.parts[0] == "tests")
    trees.copy_tree(TOY / "0.2.0", one, exclude=lambda rel: rel.parts[0] == "tests")
    (patches / "step-1.build.patch").write_text(trees.diff(start, one))
    (patches / "step-2.build.patch").write_text("--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-x\n+y\n")
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", f"replay:{patches}", "--output", str(output))
    assert result.returncode == 0, result.stderr
    card = load_json(output / "scorecard.json")
    assert card["steps_scored"] == 2 and card["steps"][1]["agent_status"] == "crashed"
    assert card["ranking"]["steps_unscored"] == [3] and card["ranking"]["fn_added"] == 7
    paper, ranked = counts(card["build_fix"]), counts(card["ranking"]["build_fix"])
    assert ranked == (paper[0], paper[1] + 7, paper[2])
    shutil.rmtree(output)
