"""GitHub reporting through the real PyGithub client, over real HTTP, against tests/github_server.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from github_server import ACTIONS_BOT, FakeGitHub, GitHubState, start
from typer.testing import CliRunner

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import ci_app
from swechain_ci.github.reporting import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT,
    GitHubConfig,
    GitHubReporter,
    fit_comment,
    marker,
    set_commit_status,
    upsert_comment,
    write_job_summary,
)
from swechain_ci.models import Metrics, RunRecord, Scorecard, StepScore
from swechain_ci.records import write_model

REPO_NAME = "octo-org/demo"
SHA = "0123456789abcdef0123456789abcdef01234567"
FAST = {"seconds_between_requests": None, "seconds_between_writes": None}  # PyGithub throttles by default


@pytest.fixture
def server():
    with FakeGitHub(GitHubState(repository=REPO_NAME)) as fake:
        yield fake


@pytest.fixture(params=["root", "enterprise"])
def gh_env(request, server, monkeypatch):
    """The environment GitHub Actions gives, pointed at the fake server (bare root or /api/v3)."""
    url = server.url if request.param == "root" else server.enterprise_url
    monkeypatch.setenv("GITHUB_API_URL", url)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO_NAME)
    monkeypatch.delenv("SWECHAIN_COMMENT_AUTHOR", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return "/api/v3" if request.param == "enterprise" else ""


@pytest.fixture
def reporter(gh_env):
    with GitHubReporter.from_env(**FAST) as r:
        yield r


def assert_all_requests_authorized(server: FakeGitHub, prefix: str) -> None:
    assert server.state.requests
    for r in server.state.requests:
        assert r.headers["authorization"] == "token test-token"
        assert r.prefix == prefix, (r.method, r.prefix, r.path)


# -- sticky comments ----------------------------------------------------------------------------


def test_first_call_creates_second_edits_the_same_comment(server, gh_env, reporter):
    comment_id, created = reporter.upsert_comment(1, "oracle", "first body")
    assert created
    comment_id2, created2 = reporter.upsert_comment(1, "oracle", "second body")
    assert (comment_id2, created2) == (comment_id, False)

    [comment] = server.state.comments_on(1)
    assert comment.id == comment_id
    assert comment.body == f"{marker('oracle')}\nsecond body"
    assert comment.author == "swechain-bot" and comment.edits == 1
    assert len(server.state.requests_matching("POST", r"/repos/octo-org/demo/issues/1/comments")) == 1
    assert len(server.state.requests_matching("PATCH", rf"/repos/octo-org/demo/issues/comments/{comment_id}")) == 1
    assert_all_requests_authorized(server, gh_env)


def test_the_same_body_again_is_edited_in_place(server, gh_env, reporter):
    comment_id, _ = reporter.upsert_comment(1, "oracle", "body")
    assert reporter.upsert_comment(1, "oracle", "body") == (comment_id, False)
    assert len(server.state.comments_on(1)) == 1
    assert len(server.state.requests_matching("PATCH", r"/issues/comments/\d+$")) == 1


def test_our_own_comment_that_only_quotes_a_marker_is_not_that_agents_comment(server, gh_env, reporter):
    """A string placed in one comment (agent A's stop_reason quoting agent B's marker) never makes
    the next upsert for B edit A's comment: the marker counts only where it opens the body."""
    a_id, _ = reporter.upsert_comment(1, "a", f"stopped: ```{marker('b')}```")
    b_id, created = reporter.upsert_comment(1, "b", "B's scorecard")
    assert created and b_id != a_id
    reporter.upsert_comment(1, "b", "B's scorecard, updated")
    comments = {c.id: c for c in server.state.comments_on(1)}
    assert comments[a_id].edits == 0 and comments[a_id].body.startswith(marker("a"))
    assert comments[b_id].body == f"{marker('b')}\nB's scorecard, updated"


def test_another_authors_comment_with_our_marker_is_not_touched(server, gh_env, reporter):
    theirs = server.state.add_comment(1, f"{marker('oracle')}\nquoted by someone", "someone-else")
    ours_id, created = reporter.upsert_comment(1, "oracle", "ours")
    assert created and ours_id != theirs.id
    reporter.upsert_comment(1, "oracle", "ours, updated")

    comments = {c.id: c for c in server.state.comments_on(1)}
    assert len(comments) == 2
    assert comments[theirs.id].body == f"{marker('oracle')}\nquoted by someone" and comments[theirs.id].edits == 0
    assert comments[ours_id].body.endswith("ours, updated")
    assert server.state.requests_matching("PATCH", rf".*/comments/{theirs.id}") == []


def test_one_comment_per_agent(server, gh_env, reporter):
    a, _ = reporter.upsert_comment(1, "oracle", "A")
    b, _ = reporter.upsert_comment(1, "oracle-2", "B")  # a name that extends another is another agent
    assert a != b
    reporter.upsert_comment(1, "oracle", "A2")
    bodies = {c.id: c.body for c in server.state.comments_on(1)}
    assert bodies == {a: f"{marker('oracle')}\nA2", b: f"{marker('oracle-2')}\nB"}


def test_our_comment_is_found_beyond_the_first_page(server, gh_env, reporter):
    for i in range(35):
        server.state.add_comment(1, f"chatter {i}", "someone-else")
    ours = server.state.add_comment(1, f"{marker('noop')}\nold", "swechain-bot")
    assert reporter.upsert_comment(1, "noop", "new") == (ours.id, False)
    assert ours.body == f"{marker('noop')}\nnew"
    pages = [r.query.get("page") for r in server.state.requests_matching("GET", r".*/issues/1/comments")]
    assert ["2"] in pages


def test_actions_token_falls_back_to_github_actions_bot(server, gh_env, monkeypatch):
    server.state.add_token("actions-token", None)  # GET /user answers 403, like an Actions token
    monkeypatch.setenv("GITHUB_TOKEN", "actions-token")
    other = server.state.add_comment(1, f"{marker('oracle')}\nby a person", "swechain-bot")
    ours = server.state.add_comment(1, f"{marker('oracle')}\nby the bot", ACTIONS_BOT)
    with GitHubReporter.from_env(**FAST) as reporter:
        assert reporter.comment_author() == ACTIONS_BOT
        assert reporter.upsert_comment(1, "oracle", "fresh") == (ours.id, False)
    assert ours.body.endswith("fresh") and other.body.endswith("by a person")
    assert len(server.state.requests_matching("GET", r"^/user$")) == 1


def test_comment_author_can_be_overridden(server, gh_env, monkeypatch):
    monkeypatch.setenv("SWECHAIN_COMMENT_AUTHOR", "our-app[bot]")
    ours = server.state.add_comment(1, f"{marker('oracle')}\nold", "our-app[bot]")
    assert upsert_comment(1, "oracle", "new") == (ours.id, False)  # the module-level convenience, from env
    assert ours.body.endswith("new")
    assert server.state.requests_matching("GET", r"^/user$") == []


def test_long_body_is_cut_at_a_line_under_the_limit_with_the_artifact_link(server, gh_env, reporter):
    lines = [f"| {i:06d} | {'x' * 90} |" for i in range(2000)]  # ~200,000 characters
    url = "https://github.example/octo-org/demo/actions/runs/7/artifacts/9"
    reporter.upsert_comment(1, "oracle", "\n".join(lines), artifact_url=url)
    [comment] = server.state.comments_on(1)
    assert len(comment.body) <= COMMENT_LIMIT
    body, _, note = comment.body.rpartition("\n\n**Truncated**")
    assert body.startswith(marker("oracle") + "\n")
    kept = body.split("\n")[1:]
    assert kept == lines[: len(kept)] and 500 < len(kept) < 2000  # whole lines only, in order
    assert f"[the run's artifact]({url})" in note
    assert f"first {len(kept) + 1} of 2001 lines" in note


def test_fit_comment_without_a_url_and_with_one_huge_line():
    assert fit_comment("short") == "short"
    cut = fit_comment("y" * 100_000)
    assert len(cut) <= COMMENT_LIMIT and cut.startswith("y" * 60_000) and "scorecard.md" in cut


def test_an_oversized_body_refused_by_the_server_is_what_we_avoid(server, gh_env, reporter):
    issue = reporter.repo.get_issue(1)
    with pytest.raises(Exception, match="too long"):
        issue.create_comment("z" * (COMMENT_LIMIT + 1))


# -- statuses -----------------------------------------------------------------------------------


def test_commit_status_is_posted(server, gh_env, reporter):
    reporter.set_commit_status(SHA, "pending", "running")
    reporter.set_commit_status(
        SHA, "success", "d" * 300, context="swechain-ci/oracle/toy", target_url="https://github.example/run/1"
    )
    first, second = server.state.statuses
    assert (first.sha, first.state, first.description, first.context, first.target_url) == (
        SHA,
        "pending",
        "running",
        "swechain-ci",
        None,
    )
    assert (second.state, second.context, second.target_url) == (
        "success",
        "swechain-ci/oracle/toy",
        "https://github.example/run/1",
    )
    assert len(second.description) == 140 and second.description.endswith("…")
    assert_all_requests_authorized(server, gh_env)
    assert len(server.state.requests_matching("POST", rf"/repos/octo-org/demo/statuses/{SHA}")) == 2


def test_commit_status_checks_its_input(gh_env, reporter):
    with pytest.raises(SwechainError, match="pending, success, failure, error"):
        reporter.set_commit_status(SHA, "passed", "x")
    with pytest.raises(SwechainError, match="40-character"):
        reporter.set_commit_status("abc123", "success", "x")


def test_module_level_status_from_env(server, gh_env):
    set_commit_status(SHA, "failure", "stopped")
    assert [(s.state, s.context) for s in server.state.statuses] == [("failure", "swechain-ci")]


# -- configuration and errors -------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["GITHUB_TOKEN", "GITHUB_REPOSITORY"])
def test_missing_variable_is_one_line_naming_it(gh_env, monkeypatch, variable):
    monkeypatch.delenv(variable)
    with pytest.raises(SwechainError, match=variable) as info:
        GitHubReporter.from_env()
    assert "\n" not in str(info.value)


def test_api_url_defaults_to_github_com(monkeypatch):
    config = GitHubConfig.from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "a/b"})
    assert config.api_url == "https://api.github.com"
    with pytest.raises(SwechainError, match="owner/name"):
        GitHubConfig.from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "nope"})
    with pytest.raises(SwechainError, match="GITHUB_API_URL"):
        GitHubConfig.from_env({"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "a/b", "GITHUB_API_URL": "ftp://x"})


def test_bad_token_and_unknown_pull_request_are_explained(server, gh_env, monkeypatch):
    with (
        GitHubReporter.from_env(**FAST) as reporter,
        pytest.raises(SwechainError, match=r"404 Not Found.*GITHUB_REPOSITORY"),
    ):
        reporter.upsert_comment(99, "oracle", "x")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/elsewhere")
    with (
        GitHubReporter.from_env(**FAST) as reporter,
        pytest.raises(SwechainError, match=r"404 Not Found.*GITHUB_REPOSITORY \(octo-org/elsewhere\)"),
    ):
        reporter.set_commit_status(SHA, "success", "x")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO_NAME)
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    with (
        GitHubReporter.from_env(**FAST) as reporter,
        pytest.raises(SwechainError, match=r"401 Bad credentials.*GITHUB_TOKEN"),
    ):
        reporter.upsert_comment(1, "oracle", "x")
    assert server.state.comments == []


# -- job summary --------------------------------------------------------------------------------


def test_job_summary_without_the_variable_is_a_noop_with_a_message(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert write_job_summary("# hi") is None
    assert "GITHUB_STEP_SUMMARY is not set" in capsys.readouterr().err


def test_job_summary_appends(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    assert write_job_summary("# one") == path
    write_job_summary("# two\n")
    assert path.read_text() == "earlier step\n# one\n# two\n"


def test_job_summary_keeps_the_file_within_one_mib(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_bytes(b"a" * 1000 + b"\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    lines = [f"| {i} | {'é' * 50} |" for i in range(20_000)]  # ~2 MB of UTF-8
    write_job_summary("\n".join(lines))
    data = path.read_bytes()
    assert len(data) <= SUMMARY_LIMIT == 1024 * 1024
    text = data.decode()  # never cut inside a character
    body, _, note = text.rpartition("\n> **Truncated:**")
    kept = body.split("\n")[1:-1]
    assert kept == lines[: len(kept)] and len(kept) > 1000
    assert "at most 1 MiB" in note
    write_job_summary("more")  # a full file: nothing more fits
    assert len(path.read_bytes()) <= SUMMARY_LIMIT


# -- the CLI commands ---------------------------------------------------------------------------


def metrics(resolving, precision, f1, tp=0, fn=0, fp=0) -> Metrics:
    return Metrics(resolving=resolving, precision=precision, f1=f1, tp=tp, fn=fn, fp=fp)


def make_run(folder: Path, agent="oracle", chain="toy", status="finished", stop_reason=None) -> Path:
    step = StepScore(
        index=1,
        prev_version="0.1.0",
        next_version="0.2.0",
        upgrade_related=4,
        fix_ran=True,
        build=metrics(0.25, 0.5, 1 / 3, 1, 3, 1),
        build_fix=metrics(0.5, 2 / 3, 4 / 7, 2, 2, 1),
        categories_build={},
        categories_build_fix={},
        agent_status="ok",
        cost_usd=0.12,
    )
    write_model(
        folder / "run.json",
        RunRecord(
            run_id="r1",
            chain=chain,
            step_range="1-3",
            agent=agent,
            spec_level="manual",
            oracle_hash="h",
            steps_total=3,
            status=status,
            stop_reason=stop_reason,
        ),
    )
    write_model(
        folder / "scorecard.json",
        Scorecard(
            chain=chain,
            step_range="1-3",
            agent=agent,
            spec_level="manual",
            steps_total=3,
            steps_scored=3 if status == "finished" else 1,
            stop_reason=stop_reason,
            build=metrics(0.25, 0.5, 1 / 3, 1, 3, 1),
            build_fix=metrics(0.5, 2 / 3, 4 / 7, 2, 2, 1),
            steps=[step],
        ),
    )
    return folder


def invoke(*args: str):
    result = CliRunner().invoke(ci_app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_cli_comment_creates_then_updates(server, gh_env, tmp_path):
    run = make_run(tmp_path / "run")
    url = "https://github.example/artifacts/1"
    first = invoke("comment", str(run), "--pr", "1", "--artifact-url", url)
    assert first.exit_code == 0 and "created comment" in first.stdout
    second = invoke("comment", str(run), "--pr", "1")
    assert second.exit_code == 0 and "updated comment" in second.stdout
    [comment] = server.state.comments_on(1)
    assert comment.body.startswith(marker("oracle") + "\n# Scorecard: `oracle` on `toy`")
    assert "| chain | Build+Fix |" in comment.body and url not in comment.body


def test_cli_comment_puts_one_agents_chains_in_one_comment(server, gh_env, tmp_path):
    runs = [
        make_run(tmp_path / "a", chain="toy"),
        make_run(tmp_path / "b", chain="pyjwt"),
        make_run(tmp_path / "c", agent="noop", chain="toy"),
    ]
    result = invoke("comment", *map(str, runs), "--pr", "1")
    assert result.exit_code == 0, result.output
    bodies = sorted(c.body for c in server.state.comments_on(1))
    assert len(bodies) == 2
    noop, oracle = bodies
    assert noop.startswith(marker("noop")) and oracle.startswith(marker("oracle"))
    assert oracle.index("`oracle` on `pyjwt`") < oracle.index("`oracle` on `toy`")


def test_cli_comment_needs_a_scored_run(gh_env, tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(SwechainError, match=re.escape("scorecard.json does not exist")):
        invoke("comment", str(tmp_path / "run"), "--pr", "1")


@pytest.mark.parametrize("status, state", [("finished", "success"), ("stopped", "failure"), ("running", "pending")])
def test_cli_status(server, gh_env, tmp_path, status, state):
    run = make_run(
        tmp_path / "run", status=status, stop_reason="agent crashed at step 2" if status == "stopped" else None
    )
    result = invoke("status", str(run), "--sha", SHA, "--target-url", "https://github.example/run/5")
    assert result.exit_code == 0, result.output
    [posted] = server.state.statuses
    assert (posted.state, posted.context, posted.target_url) == (
        state,
        "swechain-ci/oracle/toy",
        "https://github.example/run/5",
    )
    assert "B+F resolving 50.0%, precision 66.7%" in posted.description
    if status == "stopped":
        assert posted.description.startswith("stopped:") and "agent crashed at step 2" in posted.description


def test_cli_summary(tmp_path, monkeypatch):
    run = make_run(tmp_path / "run")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke("summary", str(run))
    assert result.exit_code == 0 and str(summary) in result.stdout
    assert summary.read_text().startswith("# Scorecard: `oracle` on `toy`")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    result = invoke("summary", str(run))
    assert result.exit_code == 0 and "GITHUB_STEP_SUMMARY is not set" in result.stderr


# -- the matrix ---------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    for chain in ("alpha", "beta"):
        (root / "chains" / chain).mkdir(parents=True)
        (root / "chains" / chain / "chain.yaml").write_text(
            f"id: {chain}\npackage: p\nimport_name: p\ndefault_spec_level: manual\n"
            "versions: [{version: '1', source: {kind: local, path: v1}}, {version: '2', source: {kind: local, path: v2}}]\n"
        )
    # Only alpha has its default level's specification: a weekly run of beta could not start.
    (root / "specs" / "alpha" / "1-2").mkdir(parents=True)
    (root / "specs" / "alpha" / "1-2" / "manual.md").write_text("# Upgrade\n")
    agents = root / "agents"
    agents.mkdir()
    (agents / "needs-key.yaml").write_text(
        "name: needs-key\nkind: cli\nenv: [VENDOR_TEST_KEY]\ninstall: {dockerfile: needs-key.Dockerfile}\n"
        "commands: {build: 'true', fix: 'true'}\n"
    )
    (agents / "needs-key.Dockerfile").write_text("FROM ${AGENT_IMAGE}\n")
    (agents / "free.yaml").write_text("name: free\nkind: cli\ncommands: {build: 'true', fix: 'true'}\n")
    monkeypatch.setenv("SWECHAIN_ROOT", str(root))
    monkeypatch.delenv("SWECHAIN_SECRET_NEEDS_KEY__VENDOR_TEST_KEY", raising=False)
    return root


def matrix(*args: str) -> list[tuple[str, str]]:
    result = invoke("matrix", *args)
    assert result.exit_code == 0, result.output
    return [(e["agent"], e["chain"]) for e in json.loads(result.stdout)["include"]]


def test_matrix(project, monkeypatch):
    assert matrix() == [(a, c) for a in ("oracle", "noop", "free", "needs-key") for c in ("alpha", "beta")]
    assert matrix("--exclude-builtin", "--chains", "beta") == [("free", "beta"), ("needs-key", "beta")]
    assert matrix("--agents", "noop,free", "--chains", "alpha") == [("noop", "alpha"), ("free", "alpha")]
    assert matrix("--runnable-only", "--exclude-builtin", "--chains", "alpha") == [("free", "alpha")]
    monkeypatch.setenv("VENDOR_TEST_KEY", "x")  # the bare name grants nothing
    assert ("needs-key", "alpha") not in matrix("--runnable-only")
    monkeypatch.setenv("SWECHAIN_SECRET_NEEDS_KEY__VENDOR_TEST_KEY", "x")
    # The baselines read no specification: beta, without its default level, is theirs still.
    assert matrix("--runnable-only") == [
        ("oracle", "alpha"),
        ("oracle", "beta"),
        ("noop", "alpha"),
        ("noop", "beta"),
        *[(a, "alpha") for a in ("free", "needs-key")],
    ]
    assert (
        "chain beta left out (but for the baselines): its default level manual is missing"
        in invoke("matrix", "--runnable-only").stderr
    )
    with pytest.raises(SwechainError, match="unknown agents nope"):
        invoke("matrix", "--agents", "nope")


def test_matrix_of_changed_manifests(project):
    changed = ["agents/needs-key.Dockerfile", "README.md", "agents/deleted.yaml"]
    assert matrix("--changed-manifests", *changed, "--chains", "alpha") == [("needs-key", "alpha")]
    assert matrix("--changed-manifests", f"{project}/agents/free.yaml agents/needs-key.yaml") == [
        ("free", "alpha"),
        ("free", "beta"),
        ("needs-key", "alpha"),
        ("needs-key", "beta"),
    ]
    assert matrix("--changed-manifests") == []
    with pytest.raises(SwechainError, match="only with --changed-manifests"):
        invoke("matrix", "agents/free.yaml")


def test_start_serves_any_repository_until_exit(monkeypatch):
    url, state = start()
    state.add_token("t2", "someone")
    monkeypatch.setenv("GITHUB_API_URL", url + "/api/v3")
    monkeypatch.setenv("GITHUB_TOKEN", "t2")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/bench")
    monkeypatch.delenv("SWECHAIN_COMMENT_AUTHOR", raising=False)
    assert upsert_comment(1, "noop", "hello")[1] is True
    [comment] = state.comments_on(1)
    assert comment.author == "someone" and comment.body.endswith("hello")
    assert state.requests[-1].path == "/repos/acme/bench/issues/1/comments"
