"""Agent secrets: only what the runner grants an agent by name reaches it; smoke runs get none."""

from __future__ import annotations

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
