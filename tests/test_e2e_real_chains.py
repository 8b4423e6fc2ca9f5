"""Real chains from real releases, end to end with real Docker, on the steps their YAML picks for CI.

The full chains are the documented commands `swechain-ci chain build <id>` and
`swechain-ci run --chain <id> --agent oracle --output DIR` (all steps).
"""

from __future__ import annotations

import pytest

from conftest import load_json, run_cli
from swechain_ci.chain import load_chain

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REAL_CHAINS = ["pyjwt", "jinja2"]


@pytest.fixture(scope="module", params=REAL_CHAINS)
def built_chain(request, docker_engine):
    chain = load_chain(request.param)
    steps = chain.config.ci_steps
    assert steps, f"chains/{chain.id}/chain.yaml names no ci_steps"
    result = run_cli("chain", "build", chain.id, "--steps", steps, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return chain.id, steps


def test_oracle_agent_resolves_every_upgrade_related_test_and_regresses_none(built_chain, runs_dir):
    chain_id, steps = built_chain
    output = runs_dir / f"{chain_id}-oracle"
    result = run_cli("run", "--chain", chain_id, "--agent", "oracle", "--steps", steps, "--output", str(output),
                     timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    card = load_json(output / "scorecard.json")
    for phase in ("build", "build_fix"):
        assert (card[phase]["resolving"], card[phase]["precision"]) == (1.0, 1.0)
        assert card[phase]["fn"] == 0 and card[phase]["fp"] == 0 and card[phase]["tp"] > 0
    for step in card["steps"]:
        # A step without upgrade-related tests has an undefined (null) resolving, never a made-up 1.0.
        expected = 1.0 if step["upgrade_related"] else None
        assert step["build"]["resolving"] == expected, step
        assert step["build"]["fp"] == 0 and not step["fix_ran"]


def test_noop_agent_resolves_nothing(built_chain, runs_dir):
    chain_id, steps = built_chain
    output = runs_dir / f"{chain_id}-noop"
    result = run_cli("run", "--chain", chain_id, "--agent", "noop", "--steps", steps, "--output", str(output),
                     timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    card = load_json(output / "scorecard.json")
    for phase in ("build", "build_fix"):
        assert card[phase]["resolving"] == 0.0 and card[phase]["tp"] == 0
