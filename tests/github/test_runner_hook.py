"""The self-hosted runner's job-started hook, on the variables and event payloads GitHub sends.

The fixtures in tests/fixtures/runner_events/ are what the runner gives a job-started hook:
the GITHUB_* variables (GITHUB_WORKFLOW_REF as owner/repo/.github/workflows/FILE@REF) and the
webhook payload at GITHUB_EVENT_PATH, for the events that reach a self-hosted job: a fork's
pull request whose ci.yml was edited to `runs-on: self-hosted`, a dispatch from the default
branch and from another branch, the weekly schedule, /smoke comments, workflow_run, push.
The installed hook is run as the runner runs it (`bash -e job-started.sh`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from swechain_ci.github import runner_hook

EVENTS = REPO / "tests" / "fixtures" / "runner_events"
RUNNER_ENV = {runner_hook.REPOSITORY_ENV: "acme/bench", runner_hook.DEFAULT_BRANCH_ENV: "main"}

# fixture -> None (accepted) or the words its one-line refusal must contain
CASES = {
    "pull_request_fork": "pull request #7 from mallory/bench",
    "pull_request_same_repo": "event pull_request never runs on this runner",
    "pull_request_target_fork": "pull_request_target job of pull request #7 from mallory/bench",
    "workflow_run_from_fork": "event workflow_run never runs on this runner",
    "push_main": "event push never runs on this runner",
    "workflow_dispatch_branch": "chain-run.yml is the file at refs/heads/maint/try, not on the default branch",
    "issue_comment_outsider": "a comment by mallory (CONTRIBUTOR) starts nothing",
    "workflow_dispatch_main": None,
    "schedule_weekly": None,
    "issue_comment_smoke_member": None,
}


def fixture(name: str) -> tuple[dict, dict]:
    data = json.loads((EVENTS / f"{name}.json").read_text())
    return data["env"], data["event"]


def test_every_fixture_has_a_case():
    assert sorted(p.stem for p in EVENTS.glob("*.json")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_hook_accepts_only_trusted_workflows_from_the_default_branch(name, tmp_path):
    env, event = fixture(name)
    expected = CASES[name]
    if expected is None:
        assert runner_hook.check({**env, **RUNNER_ENV}, event).startswith(
            env["GITHUB_WORKFLOW_REF"].split("/workflows/")[1].split("@")[0]
        )
    else:
        with pytest.raises(runner_hook.Refused, match=re.escape(expected)):
            runner_hook.check({**env, **RUNNER_ENV}, event)


def edited(name: str, **changes: str) -> tuple[dict, dict]:
    env, event = fixture(name)
    return {**env, **RUNNER_ENV, **changes}, event


# One row per rule of runner_hook.RULES, in order: a job that only that rule refuses.
RULE_CASES = {
    "repository": (edited("workflow_dispatch_main", GITHUB_REPOSITORY="other/bench"), "this runner serves acme/bench"),
    "fork": (edited("pull_request_fork"), "pull requests never run on this runner"),
    "event": (edited("push_main"), "event push never runs"),
    "workflow": (
        edited("workflow_dispatch_main", GITHUB_WORKFLOW_REF="acme/bench/.github/workflows/ci.yml@refs/heads/main"),
        "workflow ci.yml has no job for this runner",
    ),
    "default branch": (edited("workflow_dispatch_branch"), "not on the default branch"),
    "commenter": (edited("issue_comment_outsider"), "starts nothing on this runner"),
}


def test_every_rule_has_a_case():
    assert [name for name, _ in runner_hook.RULES] == list(RULE_CASES)


@pytest.mark.parametrize("rule", list(RULE_CASES))
def test_each_rule_refuses_its_case(rule):
    (env, event), words = RULE_CASES[rule]
    job = runner_hook.Job(env, event)
    function = dict(runner_hook.RULES)[rule]
    with pytest.raises(runner_hook.Refused, match=re.escape(words)):
        function(job)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"GITHUB_WORKFLOW_REF": ""}, "GITHUB_WORKFLOW_REF is ''"),
        (
            {"GITHUB_WORKFLOW_REF": "mallory/bench/.github/workflows/chain-run.yml@refs/heads/main"},
            "from mallory/bench",
        ),
        ({"GITHUB_WORKFLOW_REF": "acme/bench/.github/workflows/chain-run.yml@refs/tags/v1"}, "file at refs/tags/v1"),
        (
            {
                "GITHUB_WORKFLOW_REF": "acme/bench/.github/workflows/weekly.yml@refs/heads/main",
                "GITHUB_REF": "refs/heads/x",
            },
            "ref is refs/heads/x",
        ),
        ({runner_hook.REPOSITORY_ENV: ""}, "SWECHAIN_RUNNER_REPOSITORY is not set"),
    ],
)
def test_variables_that_do_not_name_a_trusted_workflow_are_refused(changes, words):
    env, event = edited("workflow_dispatch_main", **changes)
    with pytest.raises(runner_hook.Refused, match=re.escape(words)):
        runner_hook.check(env, event)


def test_a_dispatch_of_a_workflow_on_events_it_does_not_trust():
    env, event = edited(
        "schedule_weekly", GITHUB_WORKFLOW_REF="acme/bench/.github/workflows/chain-run.yml@refs/heads/main"
    )
    with pytest.raises(
        runner_hook.Refused, match=r"chain-run\.yml runs here on workflow_dispatch only, not on schedule"
    ):
        runner_hook.check(env, event)


def test_the_trusted_table_is_what_the_workflows_run_self_hosted():
    """Exactly the workflows with a self-hosted job, each with its own triggers: the table cannot
    drift from the workflow files (a new self-hosted job needs a row, a removed one loses it)."""
    found = {}
    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        workflow = yaml.safe_load(path.read_text())
        if any("self-hosted" in json.dumps(job.get("runs-on")) for job in workflow["jobs"].values()):
            found[path.name] = tuple(sorted(workflow[True]))
    assert {name: tuple(sorted(events)) for name, events in runner_hook.TRUSTED_WORKFLOWS.items()} == found


def install(tmp_path: Path) -> Path:
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".env").write_text("LANG=C.UTF-8\nSWECHAIN_RUNNER_REPOSITORY=old/one\n")
    done = subprocess.run(
        [str(REPO / "scripts" / "install-runner-hook"), "--runner-dir", str(runner), "--repository", "acme/bench"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "acme/bench/.github/workflows/chain-run.yml@refs/heads/main" in done.stderr, "the selected-workflows list"
    return runner


def run_installed(runner: Path, name: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The installed hook as the runner starts it: `bash -e`, with the runner's .env and the job's variables."""
    env, event = fixture(name)
    event_file = tmp_path / f"{name}-event.json"
    event_file.write_text(json.dumps(event))
    runner_env = dict(line.split("=", 1) for line in (runner / ".env").read_text().splitlines())
    hook = runner_env["ACTIONS_RUNNER_HOOK_JOB_STARTED"]
    return subprocess.run(
        ["bash", "-e", hook],
        env={"PATH": os.environ["PATH"], **runner_env, **env, "GITHUB_EVENT_PATH": str(event_file)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


def test_the_installed_hook_fails_a_forks_job_and_lets_a_dispatch_from_main_run(tmp_path):
    runner = install(tmp_path)
    lines = (runner / ".env").read_text().splitlines()
    assert "LANG=C.UTF-8" in lines and "SWECHAIN_RUNNER_REPOSITORY=acme/bench" in lines
    assert "SWECHAIN_RUNNER_REPOSITORY=old/one" not in lines and "SWECHAIN_RUNNER_DEFAULT_BRANCH=main" in lines
    assert not str(runner / "swechain-hook").startswith(str(runner / "_work")), "outside every job's workspace"
    refused = run_installed(runner, "pull_request_fork", tmp_path)
    assert refused.returncode != 0
    [line] = refused.stdout.splitlines()
    assert line.startswith("::error title=swechain-ci runner::job refused: a pull_request job of pull request #7")
    accepted = run_installed(runner, "workflow_dispatch_main", tmp_path)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "job accepted: chain-run.yml (workflow_dispatch) from refs/heads/main" in accepted.stdout
    assert run_installed(runner, "workflow_dispatch_branch", tmp_path).returncode != 0


def test_a_missing_event_file_is_refused_in_one_line(tmp_path, capsys):
    env, _ = edited("workflow_dispatch_main", GITHUB_EVENT_PATH=str(tmp_path / "none.json"))
    assert runner_hook.main(env) == 1
    assert capsys.readouterr().out.count("\n") == 1


def test_the_hook_uses_the_standard_library_only():
    import ast

    tree = ast.parse((REPO / "swechain_ci" / "github" / "runner_hook.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    import sys

    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
