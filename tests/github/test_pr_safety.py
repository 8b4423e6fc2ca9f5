"""Agent pull requests through the API: the PR is found from the head SHA and repository, never
from an artifact; only changed manifests count; smoke runs are started by maintainers only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_inert
from github_server import FakeGitHub, GitHubState
from typer.testing import CliRunner

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import ci_app
from swechain_ci.models import ManifestCheck, ValidationReport
from swechain_ci.records import write_model

REPO_NAME = "acme/bench"
HEAD = "f" * 40
INJECTION = "# Owned\n![x](http://evil.example/x.png) @maintainers [click](http://evil.example) <b>"


@pytest.fixture
def github(monkeypatch):
    with FakeGitHub(GitHubState(repository=REPO_NAME)) as fake:
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        monkeypatch.setenv("GITHUB_REPOSITORY", REPO_NAME)
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        yield fake


def invoke(*args: str):
    result = CliRunner().invoke(ci_app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def report(tmp_path: Path, *checks: ManifestCheck) -> Path:
    path = tmp_path / "report.json"
    write_model(path, ValidationReport(checks=list(checks)))
    return path


def test_validation_is_posted_on_the_pull_request_the_api_names_with_only_its_changed_files(github, tmp_path):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    github.state.add_pull(9, "9" * 40, "other/bench", files=["agents/other.yaml"])
    found = report(
        tmp_path,
        ManifestCheck(file="agents/lazy.yaml", because="agents/lazy.yaml", ok=False, error=INJECTION),
        ManifestCheck(file="agents/other.yaml", because="agents/other.yaml", agent="other", ok=True),
    )
    result = invoke("validation-comment", str(found), "--head-sha", HEAD, "--head-repo", "fork/bench")
    assert result.exit_code == 0, result.output
    assert github.state.comments_on(9) == []
    [comment] = github.state.comments_on(7)
    assert "other" not in comment.body.replace("other.yaml", "") and "1 finding(s)" in comment.body
    assert_inert(comment.body)
    [status] = github.state.statuses
    assert (status.sha, status.state, status.context) == (HEAD, "failure", "swechain-ci/validate")


def test_no_pull_request_for_the_head_posts_nothing(github, tmp_path):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    found = report(tmp_path, ManifestCheck(file="agents/lazy.yaml", because="agents/lazy.yaml", ok=True))
    result = invoke("validation-comment", str(found), "--head-sha", HEAD, "--head-repo", "acme/bench")
    assert result.exit_code == 0 and "nothing posted" in result.stdout
    assert github.state.comments == [] and github.state.statuses == []


def test_a_report_off_the_schema_is_refused(github, tmp_path):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    forged = tmp_path / "report.json"
    forged.write_text(json.dumps({"checks": [], "pr": 9}))
    with pytest.raises(SwechainError, match="field 'pr'"):
        invoke("validation-comment", str(forged), "--head-sha", HEAD, "--head-repo", "fork/bench")
    assert github.state.comments == []


LAZY = b"schema_version: 1\nname: lazy\nkind: cli\ninstall: {dockerfile: lazy.Dockerfile}\ncommands: {build: 'true', fix: 'true'}\n"


def test_a_smoke_plan_reads_the_changed_agents_at_the_head_sha(github, tmp_path):
    github.state.permissions["maint"] = "write"
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.Dockerfile", "README.md"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    github.state.add_file(HEAD, "agents/lazy.Dockerfile", b"FROM ${AGENT_IMAGE}\n")
    result = invoke("smoke-plan", "--pr", "7", "--actor", "maint", "--output", str(tmp_path / "in"))
    assert result.exit_code == 0, result.output
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert (lines["pr"], lines["head_sha"], lines["agents"]) == ("7", HEAD, "lazy"), "a Dockerfile-only change counts"
    assert json.loads(lines["matrix"]) == {"include": [{"agent": "lazy", "chain": "toy"}]}
    assert sorted(p.name for p in (tmp_path / "in" / "agents").iterdir()) == ["lazy.Dockerfile", "lazy.yaml"]


def test_only_maintainers_start_smoke_runs(github, tmp_path):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    with pytest.raises(SwechainError, match="outsider has read permission on acme/bench: only maintainers"):
        invoke("smoke-plan", "--pr", "7", "--actor", "outsider", "--output", str(tmp_path / "in"))
    assert github.state.comments == []


def test_an_invalid_manifest_stops_the_smoke_run_with_a_comment_and_a_status(github, tmp_path):
    github.state.permissions["maint"] = "admin"
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/leak.yaml"])
    github.state.add_file(
        HEAD,
        "agents/leak.yaml",
        b"name: leak\nkind: cli\nenv: [GITHUB_TOKEN]\ncommands: {build: 'true', fix: 'true'}\n",
    )
    with pytest.raises(SwechainError, match="env lists GITHUB_TOKEN"):
        invoke("smoke-plan", "--pr", "7", "--actor", "maint", "--output", str(tmp_path / "in"))
    [comment] = github.state.comments_on(7)
    assert "Smoke run not started" in comment.body and "GITHUB_TOKEN" in comment.body
    [status] = github.state.statuses
    assert (status.sha, status.state, status.context) == (HEAD, "failure", "swechain-ci/smoke")
