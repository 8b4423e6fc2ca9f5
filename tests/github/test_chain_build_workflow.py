"""The chain-build workflow under act: a maintainer's dispatch builds a chain's oracle on the
runner and publishes its per-step table as the job summary."""

from __future__ import annotations

import re

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
    # one job per version's gold runs (and its step's tripwire verification), each handing them on; the
    # final job verifies all 8 + 2 * 2 and reruns none
    for version in ("0.2.0", "0.3.0", "0.4.0"):
        assert re.search(rf"^\[Chain build/gold-runs-\d\s*\] .*Gold runs of {re.escape(version)}", result.stdout, re.M)
    assert "oracle toy: 12 of 12 gold runs handed on and verified" in result.stdout
    assert (
        "oracle toy: gold runs: 0/0" in result.stdout or "(8 kept from an earlier build or handed on)" in result.stdout
    )
    assert "Summary - # Oracle of toy, steps 2-3" in result.stdout
    # The toy chain's steps 2 and 3 have 14 and 7 upgrade-related tests (chains/toy/README.md).
    assert "|      2 | 0.2.0 -> 0.3.0 |      39 |                14 |" in result.stdout
    assert "|      3 | 0.3.0 -> 0.4.0 |      44 |                 7 |" in result.stdout
    assert "3 of 3 versions pass their sanity check." in result.stdout


@pytest.mark.docker
def test_a_gold_run_planted_among_the_handed_on_is_refused_naming_it(toy_oracle, act_repo):  # noqa: F811
    work, _origin, shared = act_repo
    planted = shared / "gold-runs" / "0.3.0" / ("0" * 64 + ".json")
    planted.parent.mkdir(parents=True)
    planted.write_text('{"schema_version": 1, "statuses": {"tests/test_x.py::test_x": "passed"}}')
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
    assert result.returncode != 0
    assert re.search(
        r"error: handed-on gold run (\S*/)?handed-on/0\.3\.0/0{64}\.json: its key matches none of chain toy's gold runs",
        result.stdout,
    ), result.stdout[-5000:]
    assert "Summary - # Oracle of toy" not in result.stdout
