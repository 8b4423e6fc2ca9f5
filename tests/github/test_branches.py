"""Chain runs as branches: one commit per phase, pushed as it lands, resumable from the branch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, load_json, run_cli

pytestmark = pytest.mark.docker
BRANCH = "runs/replay/toy/r1"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_a_run_branch_has_a_commit_per_phase_and_resumes_on_another_machine(toy_oracle, tmp_path):
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin))
    first = tmp_path / "machine-a"
    git("clone", "-q", str(origin), str(first))
    patches = tmp_path / "patches"
    shutil.copytree(REPO / "tests" / "fixtures" / "replay_toy", patches)
    good_step3 = (patches / "step-3.build.patch").read_text()
    (patches / "step-3.build.patch").write_text("not a patch\n")
    agent = f"replay:{patches}"
    output_a = tmp_path / "out-a"
    result = run_cli(
        "run",
        "--chain",
        "toy",
        "--agent",
        agent,
        "--output",
        str(output_a),
        "--git-branch",
        BRANCH,
        "--git-repo",
        str(first),
        "--push",
        "origin",
    )
    assert result.returncode == 0, result.stderr
    assert load_json(output_a / "run.json")["status"] == "stopped"
    log = git("--git-dir", str(origin), "log", "--format=%s", BRANCH).splitlines()
    assert [line.split(":")[0] for line in reversed(log)] == [
        "start",
        "step 1 build",
        "step 1 evaluate",
        "step 2 build",
        "step 2 evaluate",
        "step 2 fix",
        "step 2 evaluate fix",
        "step 3 build",
        "step 3 evaluate",
        "stopped",
    ]
    # Each commit's tree is the agent's code (no tests) plus the records.
    files = git("--git-dir", str(origin), "ls-tree", "-r", "--name-only", f"{BRANCH}~4").splitlines()
    assert "src/toyslug/text.py" in files and ".swechain/run.json" in files
    assert not [f for f in files if f.startswith("tests/")]
    # A phase's commit holds that phase's records and nothing later: the Build's, not its Fix.
    build_records = git(
        "--git-dir", str(origin), "ls-tree", "-r", "--name-only", f"{BRANCH}~6", ".swechain/steps/02-0.2.0-0.3.0"
    ).splitlines()
    assert ".swechain/steps/02-0.2.0-0.3.0/agent-build.json" in build_records
    assert not [f for f in build_records if f.rsplit("/", 1)[-1] in ("step.json", "evaluate.json", "agent-fix.json")]
    evaluated = git(
        "--git-dir", str(origin), "ls-tree", "-r", "--name-only", f"{BRANCH}~5", ".swechain/steps/02-0.2.0-0.3.0"
    ).splitlines()
    assert ".swechain/steps/02-0.2.0-0.3.0/fix_report.md" in evaluated
    assert not [f for f in evaluated if f.rsplit("/", 1)[-1] in ("step.json", "agent-fix.json")]
    fix_diff = git("--git-dir", str(origin), "diff", f"{BRANCH}~5", f"{BRANCH}~4", "--", "src")
    assert "+def shorten(text: str, length: int" in fix_diff

    # Another machine: a fresh clone and an empty output folder; the branch carries the run.
    (patches / "step-3.build.patch").write_text(good_step3)
    second = tmp_path / "machine-b"
    git("clone", "-q", str(origin), str(second))
    output_b = tmp_path / "out-b"
    again = run_cli(
        "run",
        "--chain",
        "toy",
        "--agent",
        agent,
        "--output",
        str(output_b),
        "--git-branch",
        BRANCH,
        "--git-repo",
        str(second),
        "--push",
        "origin",
    )
    assert again.returncode == 0, again.stderr
    assert "restored the run's records" in again.stderr and "step 3 ended with a failed agent" in again.stderr
    card = load_json(output_b / "scorecard.json")
    assert card["steps_scored"] == 3 and [s["fix_ran"] for s in card["steps"]] == [False, True, False]
    assert (card["build_fix"]["tp"], card["build_fix"]["fn"], card["build_fix"]["fp"]) == (24, 6, 1)
    head = git("--git-dir", str(origin), "log", "-3", "--format=%s", BRANCH).splitlines()
    assert [line.split(":")[0] for line in head] == ["finished", "step 3 evaluate", "step 3 build"]
    final = git("--git-dir", str(origin), "ls-tree", "-r", "--name-only", BRANCH).splitlines()
    assert "src/toyslug/text.py" in final and ".swechain/scorecard.json" in final
    # Recording the end changes only the records, never the code.
    assert git("--git-dir", str(origin), "diff", "--stat", f"{BRANCH}~1", BRANCH, "--", ".", ":!.swechain") == ""


@pytest.mark.parametrize("shape", ["file", "link to the code", "link out of the tree", "folder"])
def test_whatever_the_agent_left_at_the_records_name_gives_way_and_no_workflow_lands(tmp_path, shape):
    """An agent's tree with `.swechain` as a file (a traceback and a wedged run before), as a link
    (records sent into the agent's own code), or as a folder of its own; and `.github/workflows/`
    (a push the job token refuses without the workflows permission)."""
    from swechain_ci.github.branches import RunBranch

    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin))
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone))
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    (code / "src" / "mod.py").write_text("x = 1\n")
    (code / ".github" / "workflows").mkdir(parents=True)
    (code / ".github" / "workflows" / "evil.yml").write_text("on: push\njobs: {x: {runs-on: self-hosted}}\n")
    records = code / ".swechain"
    if shape == "file":
        records.write_text("not a folder\n")
    elif shape == "link to the code":
        records.symlink_to("src")
    elif shape == "link out of the tree":
        records.symlink_to(tmp_path)
    else:
        records.mkdir()
        (records / "run.json").write_text('{"forged": true}\n')
    output = tmp_path / "out"
    output.mkdir()
    (output / "run.json").write_text('{"run_id": "r1"}\n')
    sha = RunBranch(clone, BRANCH, "origin").commit(code, output, "step 1 build: x")
    files = git("--git-dir", str(origin), "ls-tree", "-r", "--name-only", sha).splitlines()
    assert sorted(files) == [".swechain/run.json", "src/mod.py"]
    assert git("--git-dir", str(origin), "show", f"{sha}:.swechain/run.json") == '{"run_id": "r1"}'
    assert sorted(p.name for p in (code / "src").iterdir()) == ["mod.py"], "nothing written into the agent's code"
    message = git("--git-dir", str(origin), "log", "-1", "--format=%B", sha)
    assert message.startswith("step 1 build: x\n\nLeft out of this tree")
    assert ".github (workflow files" in message
    # a link out of the tree is never copied at all (trees.copy_tree), so there is nothing to leave out
    assert (".swechain (the harness's records folder" in message) == (shape != "link out of the tree")
