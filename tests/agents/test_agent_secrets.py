"""Agent secrets: only what the runner grants an agent by name reaches it; smoke runs get none."""

from __future__ import annotations

import os
import re

import pytest

from swechain_ci.agents.manifest import (
    AgentManifest,
    grant_name,
    granted_secrets,
    scrub_runner_environment,
)
from swechain_ci.errors import SwechainError

VENDOR = AgentManifest(name="claude-code", kind="cli", commands={"build": "x", "fix": "y"}, env=["ANTHROPIC_API_KEY"])


def test_the_grant_is_named_after_the_agent_and_the_variable():
    assert grant_name("claude-code", "ANTHROPIC_API_KEY") == "SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY"
    assert grant_name("my.agent_2", "K") == "SWECHAIN_SECRET_MY_AGENT_2__K"


def test_only_the_agents_own_grant_counts():
    runner = {"ANTHROPIC_API_KEY": "the maintainer's key", "SWECHAIN_SECRET_OTHER__ANTHROPIC_API_KEY": "other's"}
    with pytest.raises(SwechainError, match="grants them as SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY"):
        granted_secrets(VENDOR, runner)
    runner["SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY"] = "granted"
    assert granted_secrets(VENDOR, runner) == {"ANTHROPIC_API_KEY": "granted"}


def test_a_smoke_run_gets_no_secret_at_all():
    runner = {"SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY": "granted", "SWECHAIN_NO_SECRETS": "1"}
    assert granted_secrets(VENDOR, runner) == {}


def test_the_runners_internals_and_grants_are_scrubbed_from_the_process():
    environ = {
        "GITHUB_TOKEN": "t",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "o",
        "RUNNER_TEMP": "/r",
        "SWECHAIN_SECRET_X__K": "k",
        "PATH": "/bin",
        "SWECHAIN_HOME": "/h",
    }
    assert sorted(scrub_runner_environment(environ)) == [
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "GITHUB_TOKEN",
        "RUNNER_TEMP",
        "SWECHAIN_SECRET_X__K",
    ]
    assert environ == {"PATH": "/bin", "SWECHAIN_HOME": "/h"}


def test_the_run_reads_the_grants_the_cli_took_with_what_the_process_kept(monkeypatch):
    """The CLI takes the runner's variables out of the process before a run and hands them on:
    the agent's grant arrives, and a smoke run's SWECHAIN_NO_SECRETS (left in place) still wins."""
    from swechain_ci.run import secrets_for

    monkeypatch.setenv("SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY", "granted")
    monkeypatch.delenv("SWECHAIN_NO_SECRETS", raising=False)
    taken = scrub_runner_environment(os.environ)
    assert "SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY" not in os.environ
    assert secrets_for(VENDOR, taken) == {"ANTHROPIC_API_KEY": "granted"}
    monkeypatch.setenv("SWECHAIN_NO_SECRETS", "1")
    assert secrets_for(VENDOR, taken) == {}
    os.environ.update(taken)  # monkeypatch restores only what it set


def test_grants_come_from_the_runners_grants_file_and_no_job_environment_holds_them(tmp_path):
    """The runner's .env names the file; the values reach only the run that starts the agent."""
    grants = tmp_path / "grants.env"
    grants.write_text("# the runner's grants\nSWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY=from-the-file\n\n")
    job = {"SWECHAIN_GRANTS_FILE": str(grants), "PATH": "/usr/bin"}
    assert granted_secrets(VENDOR, job) == {"ANTHROPIC_API_KEY": "from-the-file"}
    assert not [v for v in job.values() if "from-the-file" in v], "the job's environment holds a path only"
    assert granted_secrets(VENDOR, {**job, "SWECHAIN_NO_SECRETS": "1"}) == {}
    scrub_runner_environment(job)
    assert "SWECHAIN_GRANTS_FILE" not in job, "what runs after the grants are read cannot find the file"


def test_a_line_of_the_grants_file_that_is_not_a_grant_is_named_without_its_value(tmp_path):
    grants = tmp_path / "grants.env"
    grants.write_text("SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY=k\nANTHROPIC_API_KEY=sk-the-raw-key\n")
    with pytest.raises(SwechainError, match="line 2 is not a grant") as caught:
        granted_secrets(VENDOR, {"SWECHAIN_GRANTS_FILE": str(grants)})
    assert "sk-the-raw-key" not in str(caught.value)
    with pytest.raises(SwechainError, match="cannot be read"):
        granted_secrets(VENDOR, {"SWECHAIN_GRANTS_FILE": str(tmp_path / "missing")})


def test_the_weekly_matrix_sees_the_grants_files_names(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from swechain_ci.github.cli import ci_app

    grants = tmp_path / "grants.env"
    grants.write_text("SWECHAIN_SECRET_CLAUDE_CODE__ANTHROPIC_API_KEY=k\n")
    for name in [n for n in __import__("os").environ if n.startswith("SWECHAIN_SECRET_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SWECHAIN_GRANTS_FILE", str(grants))
    result = CliRunner().invoke(ci_app, ["matrix", "--runnable-only", "--chains", "toy"])
    assert result.exit_code == 0, result.output
    agents = {row["agent"] for row in json.loads(result.stdout)["include"]}
    assert "claude-code" in agents and "codex" not in agents


def test_no_workflow_puts_a_secret_in_a_jobs_environment():
    from conftest import REPO

    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        text = path.read_text()
        assert not re.search(r"\bsecrets\.\w|SWECHAIN_SECRET_|SWECHAIN_GRANTS_FILE", text), path.name
