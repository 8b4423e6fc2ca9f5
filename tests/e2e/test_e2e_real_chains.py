"""Real chains from real releases, end to end with real Docker, on the steps their YAML picks for CI.

The full chains are the documented commands `swechain-ci chain build <id>` and
`swechain-ci run --chain <id> --agent oracle --output DIR` (all steps).
"""

from __future__ import annotations

import pytest
from conftest import REPO, load_json, run_cli

from swechain_ci.chain.definition import load_chain

pytestmark = [pytest.mark.docker, pytest.mark.slow]
# sqlparse runs on Python 3.13, jinja2-py39 and flask on Python 3.9 (their chain.yaml `python:`), PyJWT
# on 3.11. The 3.x Jinja2 chain (3.11, as PyJWT; steps without upgrade-related tests, as PyJWT's 15) is
# left to the interpreter test below, which builds its images: end to end it added two minutes to CI.
REAL_CHAINS = ["pyjwt", "sqlparse", "jinja2-py39", "flask"]


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
    result = run_cli(
        "run",
        "--chain",
        chain_id,
        "--agent",
        "oracle",
        "--steps",
        steps,
        "--output",
        str(output),
        "--spec-level",
        "L1",
        timeout=1800,
    )  # committed for every step; PyJWT's default L3 is imported
    assert result.returncode == 0, result.stderr[-3000:]
    card = load_json(output / "scorecard.json")
    for phase in ("build", "build_fix"):
        assert (card[phase]["resolving"], card[phase]["precision"]) == (1.0, 1.0)
        assert card[phase]["fn"] == 0 and card[phase]["fp"] == 0 and card[phase]["tp"] > 0
    assert card["integrity"]["status"] == "clean", card["integrity"]["flags"]
    for step in card["steps"]:
        # A step without upgrade-related tests has an undefined (null) resolving, never a made-up 1.0.
        expected = 1.0 if step["upgrade_related"] else None
        assert step["build"]["resolving"] == expected, step
        assert step["build"]["fp"] == 0 and not step["fix_ran"]


def test_noop_agent_resolves_nothing_it_did_not_inherit(built_chain, runs_dir):
    """noop changes nothing. On the first step its code is old gold, so it resolves nothing.
    Later its code is the chain's start version, which may pass a test that an intermediate
    release broke and the next one fixed (PyJWT 2.10.0 -> 2.10.1 has one): by the definition
    that counts as resolved, and it can only be a test that already passed before the step."""
    chain_id, steps = built_chain
    output = runs_dir / f"{chain_id}-noop"
    result = run_cli(
        "run",
        "--chain",
        chain_id,
        "--agent",
        "noop",
        "--steps",
        steps,
        "--output",
        str(output),
        timeout=1800,
    )  # no level asked for: the default where every step has it, else `none` (a baseline reads none)
    assert result.returncode == 0, result.stderr[-3000:]
    card = load_json(output / "scorecard.json")
    chain = load_chain(chain_id).select_steps(steps)
    assert card["spec_level"] in (chain.config.default_spec_level, "none")
    assert card["integrity"]["status"] == "clean", card["integrity"]["flags"]
    first = card["steps"][0]
    assert first["build_fix"]["tp"] == 0
    assert first["build_fix"]["resolving"] == (0.0 if first["upgrade_related"] else None)
    for path in sorted(output.glob("steps/*/step.json")):
        step = load_json(path)
        for phase in filter(None, (step["build"], step["fix"])):
            assert phase["diff"] == {"files": 0, "added": 0, "removed": 0}
            resolved = [t for t, c in phase["categories"].items() if c == "resolved"]
            assert all(step["prev_outcomes"][t] == "passed" for t in resolved), path
        assert step["build"]["counts"]["fp"] == 0


REFERENCE = REPO.parent / "shared" / "reference" / "swe-chain-oracle" / "pyjwt_2.0.0_to_2.12.1"
NETWORK_TEST = "tests/test_jwks_client.py::TestPyJWKClient::test_get_jwt_set_sslcontext_default"


def test_pyjwt_network_test_is_scored_where_it_runs_offline(docker_engine):
    """From 2.11.0 on the JWKS test runs on a local mock: scored in steps 13-15, excluded before, with why."""
    from swechain_ci.evaluation.oracle import oracle_path

    result = run_cli("chain", "build", "pyjwt", "--steps", "11-15", timeout=1800)  # CI's steps: built already
    assert result.returncode == 0, result.stderr[-3000:]
    built = load_json(oracle_path(load_chain("pyjwt").select_steps("11-15")))
    by_index = {s["index"]: s for s in built["steps"]}
    for index in (13, 14, 15):
        assert by_index[index]["new_gold"][NETWORK_TEST] == "passed"
        assert NETWORK_TEST not in by_index[index]["needs_network"] and NETWORK_TEST not in by_index[index]["excluded"]
    for index in (11, 12):
        assert by_index[index]["excluded"][NETWORK_TEST].startswith(
            f"needs_network in {by_index[index]['next_version']}: fetches"
        )


def test_chain_compare_explains_pyjwt_step_9(docker_engine):
    """The reference ran online: its one extra test in step 9 is explained by needs_network."""
    if not REFERENCE.is_dir():
        # Its published files are the reference's, not ours to copy into the project.
        pytest.skip(f"the reference implementation's PyJWT oracle is not beside this checkout ({REFERENCE})")
    result = run_cli("chain", "build", "pyjwt", "--steps", "9", timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    result = run_cli("chain", "compare", "pyjwt", "--steps", "9", "--reference", str(REFERENCE))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "explained (needs_network)" in result.stdout
    assert (
        f"step 9 only theirs: {NETWORK_TEST}: needs_network: excluded here: needs_network in 2.8.0: "
        "fetches https://dev-87evx9ru.auth0.com/.well-known/jwks.json"
    ) in result.stdout


def test_the_interpreter_really_changes_jinja2_302_fails_on_311_and_passes_on_39(docker_engine):
    """Jinja2 3.0.2's traceback test predates Python 3.11's caret lines (PEP 657): the same test
    of the same release, failing on the 3.11 image and passing on the 3.9 one."""
    from swechain_ci.chain import sources
    from swechain_ci.containers import images
    from swechain_ci.containers.sandbox import DockerSandbox
    from swechain_ci.evaluation.evaluate import evaluate

    test = "tests/test_debug.py::TestDebug::test_runtime_error"
    sandbox = DockerSandbox()
    runs = {}
    for chain in (load_chain("jinja2-py39").select_steps("1"), load_chain("jinja2").select_steps("3")):
        assert chain.versions[0] == "3.0.2"
        built = images.ensure_images(sandbox, chain)
        runs[chain.config.python] = evaluate(
            sandbox,
            chain,
            built.versions["3.0.2"],
            sources.materialize(chain, "3.0.2").code,
            {"swechain-ci.test": "python"},
        )
    assert "platform linux -- Python 3.9." in runs["3.9"].output_tail
    assert "platform linux -- Python 3.11." in runs["3.11"].output_tail
    assert runs["3.9"].statuses[test].value == "passed"
    assert runs["3.11"].statuses[test].value == "failed"
    others = {t for t, s in runs["3.9"].statuses.items() if s.value == "passed"} - {test}
    assert all(runs["3.11"].statuses[t].value == "passed" for t in others)
