"""The one rule for "which agents does a changed file concern" (agents.manifest.agents_concerned),
used by the CI matrix, `agents validate` and a pull request's validation and smoke runs."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from swechain_ci.agents.manifest import agents_concerned

DOCKERFILES = {"claude-code": "claude-code.Dockerfile", "codex": "codex.Dockerfile", "noop": None}


@pytest.mark.parametrize(
    ("changed", "agents"),
    [
        ("codex.yaml", ["codex"]),  # its own manifest
        ("new-agent.yml", ["new-agent"]),  # a manifest not registered yet
        ("codex.Dockerfile", ["codex"]),  # the Dockerfile a manifest names
        ("files/codex.rules", ["claude-code", "codex"]),  # a recipe may copy it: every agent with an image
        ("files/deep/settings.json", ["claude-code", "codex"]),
        ("README.md", []),
        ("other.Dockerfile", []),  # a Dockerfile no manifest names
        ("sub/codex.yaml", []),  # manifests sit in the agents folder itself
    ],
)
def test_a_changed_file_concerns(changed, agents):
    assert agents_concerned(PurePosixPath(changed), DOCKERFILES) == agents


def test_without_dockerfiles_only_manifests_concern_anyone():
    assert agents_concerned(PurePosixPath("files/x"), {"noop": None}) == []
    assert agents_concerned(PurePosixPath("noop.yaml"), {}) == ["noop"]
