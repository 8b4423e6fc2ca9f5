"""The chain-build workflow under act: a maintainer's dispatch builds a chain's oracle on the
runner and publishes its per-step table as the job summary."""

from __future__ import annotations

import pytest
from github_server import FakeGitHub
from test_workflows_act import TOKEN, act, act_repo  # noqa: F401  (act_repo is a fixture)


@pytest.mark.docker
def test_a_dispatched_chain_build_publishes_the_oracle_table(toy_oracle, act_repo):  # noqa: F811
    work, _origin, shared = act_repo
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        result = act(
            work,
            shared,
            "workflow_dispatch",
            "chain-build.yml",
            {"inputs": {"chain": "toy", "steps": "2-3", "force": "false"}, "ref": "refs/heads/main"},
            github.url,
        )
    assert result.returncode == 0, result.stdout[-5000:]
    assert "Summary - # Oracle of toy, steps 2-3" in result.stdout
    # The toy chain's steps 2 and 3 have 14 and 7 upgrade-related tests (chains/toy/README.md).
    assert "|      2 | 0.2.0 -> 0.3.0 |      39 |                14 |" in result.stdout
    assert "|      3 | 0.3.0 -> 0.4.0 |      44 |                 7 |" in result.stdout
    assert "3 of 3 versions pass their sanity check." in result.stdout
