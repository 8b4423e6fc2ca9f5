"""Each shipped vendor manifest runs the toy chain's first step end to end in the real agent
container against a stand-in installed under the CLI's name (tests/fake_cli/): the
stand-in checks the exact command line, prints the vendor's documented event stream and
applies the gold patch (Build breaks collection on purpose, so Fix runs and must resume
the Build session). Also: a stand-in that keeps spending is ended at its dollar limit, and
one that meets 529s pauses the run, which a resume finishes with an identical scorecard.

The only changes to the vendor manifests: the install recipe (the stand-in instead of the
npm package) and no network (this machine has no egress proxy).
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_json, run_cli

from swechain_ci.agents.manifest import grant_name
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import load_chain

FIXTURES = REPO / "tests" / "fixtures" / "streams"
KEYS = {"claude-code": "ANTHROPIC_API_KEY", "codex": "CODEX_API_KEY", "opencode": "ANTHROPIC_API_KEY"}
# What each recorded stream reports per phase (tests/test_agent_streams.py checks the parse);
# Build and Fix each print it once, so a step holds twice these.
PER_PHASE = {
    "claude-code": {
        "turns": 2,
        "input_tokens": 1500,
        "output_tokens": 570,
        "cache_read_tokens": 5000,
        "cache_write_tokens": 5800,
        "cost_usd": 0.0363,
        "cost_source": "cli",
    },
    "codex": {
        "turns": 3,  # a command, a file change, a message: counted live from the items
        "input_tokens": 315,
        "output_tokens": 122,
        "cache_read_tokens": 24448,
        "cache_write_tokens": 0,
        "cost_usd": 0.00466975,
        "cost_source": "prices",
    },
    "opencode": {
        "turns": 2,
        "input_tokens": 5,
        "output_tokens": 405,
        "cache_read_tokens": 4900,
        "cache_write_tokens": 5220,
        "cost_usd": 0.027135,
        "cost_source": "cli",
    },
}


@pytest.fixture(scope="module")
def fake_agents(tmp_path_factory, toy_oracle) -> Path:
    """A folder with the vendor manifests (install recipe swapped for the stand-in's) and
    the recipe's build context: the stand-in, the recorded streams, the shipped config
    files and the toy chain's gold patches."""
    folder = tmp_path_factory.mktemp("fake-agents")
    files = folder / "files"
    files.mkdir()
    shutil.copy(REPO / "tests" / "fake_cli" / "fake_cli.py", files / "fake_cli.py")
    shutil.copytree(FIXTURES, files / "fixtures")
    for config in (REPO / "agents" / "files").iterdir():
        shutil.copy(config, files / config.name)
    chain = load_chain("toy")
    (files / "patches").mkdir()
    for prev, next_ in itertools.pairwise(chain.versions):
        patch = trees.diff(sources.materialize(chain, prev).code, sources.materialize(chain, next_).code)
        (files / "patches" / f"{prev}-{next_}.patch").write_text(patch)
    shutil.copy(REPO / "tests" / "fake_cli" / "fake-cli.Dockerfile", folder / "fake-cli.Dockerfile")
    for name in KEYS:
        data = yaml.safe_load((REPO / "agents" / f"{name}.yaml").read_text())
        data["install"] = {"dockerfile": "fake-cli.Dockerfile"}
        data["network"] = {"mode": "none"}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def run_step_one(manifest: Path, output: Path, key: str, value: str):
    """The toy's step 1 with the runner granting the agent ``key`` (SWECHAIN_SECRET_<AGENT>__<KEY>)."""
    return run_cli(
        "run",
        "--chain",
        "toy",
        "--steps",
        "1-1",
        "--agent",
        str(manifest),
        "--output",
        str(output),
        env={grant_name(manifest.stem, key): value},
    )


@pytest.fixture(scope="module")
def vendor_runs(fake_agents, tmp_path_factory) -> dict[str, Path]:
    runs = {}
    for name, key in KEYS.items():
        output = tmp_path_factory.mktemp(f"run-{name}") / "run"
        result = run_step_one(fake_agents / f"{name}.yaml", output, key, "test-key")
        assert result.returncode == 0, result.stderr
        runs[name] = output
    return runs


@pytest.mark.docker
@pytest.mark.parametrize("name", list(KEYS))
def test_a_vendor_manifest_runs_the_toy_step_against_its_stand_in(vendor_runs, name):
    output = vendor_runs[name]
    step = load_json(next(output.glob("steps/01-*/step.json")))
    for phase in ("build", "fix"):
        agent = step[phase]["agent"]
        log = (output / "steps" / "01-0.1.0-0.2.0" / "logs" / f"agent-{phase}.log").read_text()
        assert (agent["status"], agent["ended_by"], agent["exit_code"]) == ("ok", "exit", 0), log[-2000:]
        got = {k: agent[k] for k in PER_PHASE[name]}
        assert got == pytest.approx(PER_PHASE[name]), phase
        assert agent["prices_date"] == ("2026-11-30" if name == "codex" else None)
    assert step["build"]["execution_error"] is True, "the stand-in's Build breaks collection on purpose"
    assert step["fix"]["agent"]["cli_session"] == step["build"]["agent"]["cli_session"], "Fix resumed Build"
    card = load_json(output / "scorecard.json")
    assert card["build_fix"]["resolving"] == 1.0 and card["build_fix"]["precision"] == 1.0
    expected = {k: 2 * v for k, v in PER_PHASE[name].items() if k != "cost_source"}
    for usage in (card["usage"], card["steps"][0]["usage"], step["usage"]):
        assert {k: usage[k] for k in expected} == pytest.approx(expected)
        assert usage.get("requests") is None, "an agent counts turns, not requests"
    assert card["cost_usd"] == pytest.approx(expected["cost_usd"])
    markdown = (output / "scorecard.md").read_text()
    turns = expected["turns"]
    tokens = (
        f"{expected['input_tokens']:,}/{expected['output_tokens']:,}/"
        f"{expected['cache_read_tokens'] + expected['cache_write_tokens']:,}"
    )
    assert f"; {turns} agent turns, tokens in/out/cache {tokens}" in markdown
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in markdown.splitlines() if line.startswith("|")]
    [row] = [r for r in rows if r[0] == "1"]
    assert row[-3:] == [str(turns), tokens, f"{expected['cost_usd']:.2f}"]


@pytest.mark.docker
def test_a_stand_in_that_keeps_spending_is_ended_at_its_dollar_limit(fake_agents, tmp_path):
    data = yaml.safe_load((fake_agents / "opencode.yaml").read_text())
    data["limits"]["cost_usd"] = 1.0
    manifest = fake_agents / "opencode.yaml"
    spender = tmp_path / "opencode.yaml"
    spender.write_text(yaml.safe_dump(data))
    shutil.copy(fake_agents / "fake-cli.Dockerfile", tmp_path / "fake-cli.Dockerfile")
    shutil.copytree(fake_agents / "files", tmp_path / "files")
    assert manifest.exists()
    output = tmp_path / "run"
    result = run_step_one(spender, output, "ANTHROPIC_API_KEY", "test-key-spend")
    assert result.returncode == 0, result.stderr
    step = load_json(next(output.glob("steps/01-*/step.json")))
    agent = step["build"]["agent"]
    assert (agent["status"], agent["ended_by"], agent["limit"]) == ("ok", "limit", "cost_usd")
    assert 1.0 < agent["cost_usd"] <= 2.0, "ended at the first step past the limit, give or take one chunk"
    assert agent["cost_source"] == "cli" and "limit $1.0" in agent["detail"]
    # Its processes are gone: a limit ends the agent, it does not stop the chain.
    assert load_json(output / "run.json")["status"] == "finished"


@pytest.mark.docker
def test_a_stand_in_meeting_529s_pauses_the_run_and_a_resume_matches_an_uninterrupted_run(
    fake_agents,
    vendor_runs,
    tmp_path,
):
    output = tmp_path / "run"
    manifest = fake_agents / "claude-code.yaml"
    paused = run_step_one(manifest, output, "ANTHROPIC_API_KEY", "test-key-overloaded")
    assert paused.returncode == 0, paused.stderr
    run = load_json(output / "run.json")
    assert run["status"] == "paused" and "infrastructure failure (overloaded)" in run["stop_reason"]
    assert "resume with the same `swechain-ci run` command" in run["stop_reason"]
    assert not list(output.glob("steps/*/step.json")), "the step is not scored"
    card = load_json(output / "scorecard.json") if (output / "scorecard.json").exists() else None
    assert card is None or card["steps_scored"] == 0
    [kept] = list((output / "infra-errors").iterdir())
    assert "overloaded_error" in (kept / "agent-build.log").read_text()
    summary = run_cli("report", str(output)) if card else None
    assert summary is None or "paused:" in summary.stdout
    resumed = run_step_one(manifest, output, "ANTHROPIC_API_KEY", "test-key")
    assert resumed.returncode == 0, resumed.stderr
    assert load_json(output / "run.json")["status"] == "finished"
    assert (output / "scorecard.md").read_text() == (vendor_runs["claude-code"] / "scorecard.md").read_text()
    mine, theirs = load_json(output / "scorecard.json"), load_json(vendor_runs["claude-code"] / "scorecard.json")
    for card_ in (mine, theirs):
        for step in card_["steps"]:
            step.pop("wall_s")
    assert mine == theirs, "identical but for wall-clock seconds"
