"""Agent pull requests through the API: the PR is found from the head SHA and repository, never
from an artifact; only changed manifests count; smoke runs are started by maintainers only."""

from __future__ import annotations

import json
import re

import pytest
from conftest import assert_inert
from github_server import FakeGitHub, GitHubState
from typer.testing import CliRunner

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import ci_app

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


def test_validation_is_computed_from_the_pull_requests_files_at_its_head_and_posted_there(github):
    """The default branch's code reads the changed manifests at the head SHA through the API: the
    PR's own validation run (and anything it uploads) decides nothing."""
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml", "agents/leak.yaml", "README.md"])
    github.state.add_pull(9, "9" * 40, "other/bench", files=["agents/other.yaml"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    github.state.add_file(HEAD, "agents/lazy.Dockerfile", b"ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\n")
    github.state.add_file(
        HEAD,
        "agents/leak.yaml",
        f"name: leak\nkind: cli\nenv: [{json.dumps(INJECTION)}, GITHUB_TOKEN]\n"
        "commands: {build: 'true', fix: 'true'}\n".encode(),
    )
    result = invoke("validation-comment", "--head-sha", HEAD, "--head-repo", "fork/bench")
    assert result.exit_code == 0, result.output
    assert github.state.comments_on(9) == []
    [comment] = github.state.comments_on(7)
    assert "1 of 2 manifests valid" in comment.body and "list variable NAMES only" in comment.body
    assert_inert(comment.body)
    [status] = github.state.statuses
    assert (status.sha, status.state, status.context) == (HEAD, "failure", "swechain-ci/validate")
    assert github.state.requests_matching("GET", r"/contents/agents/leak\.yaml"), "read through the API"


def test_a_dockerfile_only_change_is_validated_with_the_manifest_that_names_it(github):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.Dockerfile"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    github.state.add_file(
        HEAD, "agents/lazy.Dockerfile", b"ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\nADD http://127.0.0.1:9/secret /s\n"
    )
    result = invoke("validation-comment", "--head-sha", HEAD, "--head-repo", "fork/bench")
    assert result.exit_code == 0, result.output
    [comment] = github.state.comments_on(7)
    assert "agents/lazy.Dockerfile line 3" in comment.body and "ADD of http://127.0.0.1:9/secret" in comment.body
    assert [s.state for s in github.state.statuses] == ["failure"]


def test_no_pull_request_for_the_head_posts_nothing(github):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    result = invoke("validation-comment", "--head-sha", HEAD, "--head-repo", "acme/bench")
    assert result.exit_code == 0 and "nothing posted" in result.stdout
    assert github.state.comments == [] and github.state.statuses == []


LAZY = b"schema_version: 1\nname: lazy\nkind: cli\ninstall: {dockerfile: lazy.Dockerfile}\ncommands: {build: 'true', fix: 'true'}\n"


def test_a_smoke_plan_reads_the_changed_agents_at_the_head_sha(github, tmp_path):
    github.state.permissions["maint"] = "write"
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.Dockerfile", "README.md"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    github.state.add_file(HEAD, "agents/lazy.Dockerfile", b"ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\n")
    result = invoke(
        "smoke-plan", "--pr", "7", "--actor", "maint", "--request", f"/smoke {HEAD}", "--output", str(tmp_path / "in")
    )
    assert result.exit_code == 0, result.output
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert (lines["pr"], lines["head_sha"], lines["agents"]) == ("7", HEAD, "lazy"), "a Dockerfile-only change counts"
    assert json.loads(lines["matrix"]) == {"include": [{"agent": "lazy", "chain": "toy"}]}
    assert sorted(p.name for p in (tmp_path / "in" / "agents").iterdir()) == ["lazy.Dockerfile", "lazy.yaml"]


def test_only_maintainers_start_smoke_runs(github, tmp_path):
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    with pytest.raises(SwechainError, match="outsider has read permission on acme/bench: only maintainers"):
        invoke("smoke-plan", "--pr", "7", "--actor", "outsider", "--request", HEAD, "--output", str(tmp_path / "in"))
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
        invoke("smoke-plan", "--pr", "7", "--actor", "maint", "--request", HEAD, "--output", str(tmp_path / "in"))
    [comment] = github.state.comments_on(7)
    assert "Smoke run not started" in comment.body and "GITHUB_TOKEN" in comment.body
    [status] = github.state.statuses
    assert (status.sha, status.state, status.context) == (HEAD, "failure", "swechain-ci/smoke")


@pytest.mark.parametrize(
    ("request_text", "words"),
    [
        ("/smoke " + "e" * 40, "names eeeeeeeeeeee, but the head of pull request #7 is ffffffffffff"),
        ("/smoke", "not a commit"),
        ("/smoke ffffff", "not a commit"),
        ("/smoke please " + HEAD, "not a commit"),
    ],
)
def test_a_smoke_request_for_another_commit_is_refused_with_a_comment(github, tmp_path, request_text, words):
    """The vendor pushed after the maintainer reviewed (or the comment names no commit): nothing runs."""
    github.state.permissions["maint"] = "write"
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    with pytest.raises(SwechainError, match=re.escape(words)):
        invoke(
            "smoke-plan", "--pr", "7", "--actor", "maint", "--request", request_text, "--output", str(tmp_path / "in")
        )
    [comment] = github.state.comments_on(7)
    assert "Smoke run not started" in comment.body and words in comment.body
    assert [(s.sha, s.state) for s in github.state.statuses] == [(HEAD, "failure")]
    assert not (tmp_path / "in").exists(), "nothing read"


def test_a_smoke_request_reads_the_files_at_the_commit_it_names(github, tmp_path):
    github.state.permissions["maint"] = "write"
    github.state.add_pull(7, HEAD, "fork/bench", files=["agents/lazy.yaml"])
    github.state.add_file(HEAD, "agents/lazy.yaml", LAZY)
    github.state.add_file(HEAD, "agents/lazy.Dockerfile", b"ARG AGENT_IMAGE\nFROM ${AGENT_IMAGE}\n")
    result = invoke(
        "smoke-plan", "--pr", "7", "--actor", "maint", "--request", HEAD.upper(), "--output", str(tmp_path / "in")
    )
    assert result.exit_code == 0, result.output
    reads = github.state.requests_matching("GET", r"/contents/agents/")
    assert reads and all(r.query.get("ref") == [HEAD] for r in reads)
