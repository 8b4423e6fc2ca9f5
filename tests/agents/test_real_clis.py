"""The real vendor CLIs, at the versions their manifests pin, installed from npm as the runner
installs them (fetched on the host, built into the agent image offline), driven by the
scripted model server (tests/model_server.py) in a container without network, the agent
container in its network namespace: ``swechain-ci run`` as a runner calls it.

For each CLI: the toy chain's three steps with Build and a granted Fix that resumes the Build
session; the spec and the Fix report read with the CLI's own tools; a denied command
refused; turns, tokens and dollars recorded per phase as the CLI reported them (a resumed
Fix charged its own share); the turn, dollar and wall-clock limits. The home left for the
session is the agent's own and small (so it is kept and the Fix resumes it).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CLI, REPO, load_json, run_cli
from model_server_container import ModelServer, toy_scenario

from swechain_ci.agents.manifest import grant_name

KEYS = {"claude-code": "ANTHROPIC_API_KEY", "opencode": "ANTHROPIC_API_KEY", "codex": "CODEX_API_KEY"}
DENIED = "curl -s http://127.0.0.1:8080/denied"
pytestmark = pytest.mark.docker


def run_agent(manifest: Path, output: Path, server: ModelServer, *args: str):
    env = {**server.env(), grant_name(manifest.stem, KEYS[manifest.stem]): "test-key-real-cli"}
    return run_cli("run", "--chain", "toy", "--agent", str(manifest), "--output", str(output), *args, env=env)


def manifest_with(tmp_path: Path, name: str, limits: dict[str, Any]) -> Path:
    """The shipped manifest with other limits, beside its recipe and files (the same image)."""
    data = yaml.safe_load((REPO / "agents" / f"{name}.yaml").read_text())
    data["limits"].update(limits)
    folder = tmp_path / "agents"
    folder.mkdir()
    shutil.copy(REPO / "agents" / data["install"]["dockerfile"], folder)
    shutil.copytree(REPO / "agents" / "files", folder / "files")
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / f"{name}.yaml"


def stream_events(log: Path) -> list[dict[str, Any]]:
    events = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def tool_results(requests: list[dict[str, Any]]) -> str:
    """Every tool result the CLIs sent back to the model, as text."""
    return "\n".join(json.dumps(r["body"]) for r in requests if r.get("body"))


@pytest.fixture(scope="module", params=list(KEYS))
def chain_run(request, toy_oracle, tmp_path_factory):
    name = request.param
    output = tmp_path_factory.mktemp(f"real-{name}") / "run"
    with ModelServer(toy_scenario(extra_build=[{"bash": DENIED}])) as server:
        result = run_agent(REPO / "agents" / f"{name}.yaml", output, server)
        requests = server.requests()
    assert result.returncode == 0, result.stderr[-3000:]
    return name, output, result, requests


def test_the_real_cli_runs_the_toy_chain_with_each_fix_resuming_its_build(chain_run):
    _name, output, result, requests = chain_run
    assert load_json(output / "run.json")["status"] == "finished"
    card = load_json(output / "scorecard.json")
    assert card["steps_scored"] == 3
    assert card["build_fix"]["resolving"] == 1.0 and card["build"]["resolving"] == 0.0
    for folder in sorted((output / "steps").iterdir()):
        step = load_json(folder / "step.json")
        build, fix = load_json(folder / "agent-build.json"), load_json(folder / "agent-fix.json")
        assert step["build"]["execution_error"] is True, "the scripted Build breaks the package: a Fix is granted"
        assert build["session"] == "kept", build["session_note"]
        assert (build["agent"]["status"], fix["agent"]["status"]) == ("ok", "ok"), fix["agent"]["detail"]
        assert fix["agent"]["cli_session"] == build["agent"]["cli_session"] is not None
        assert "no Build session to resume" not in (folder / "logs" / "agent-fix.log").read_text()
    prompts = [r["body"] for r in requests if r.get("body") and "Your upgrade of /app/code" in json.dumps(r["body"])]
    assert prompts and all("Upgrade it from version" in json.dumps(body) for body in prompts), (
        "every Fix request carries the Build's conversation: the session was resumed"
    )
    assert "  agent| " in result.stderr, "the agent's output reached the terminal"


def test_the_spec_and_the_fix_report_were_read_and_the_denied_command_refused(chain_run):
    _name, _output, _, requests = chain_run
    sent = tool_results(requests)
    assert "Hidden-test check: execution errors" in sent, "the Fix report's text reached the model"
    for spec in (REPO / "specs" / "toy").glob("*/manual.md"):
        line = max(spec.read_text().splitlines(), key=len)  # a line of this spec only
        assert json.dumps(line)[1:-1][:60] in sent, f"{spec} was read with the CLI's read tool"
    assert DENIED in sent
    assert re.search(r"denied|forbidden|rejected|prevents you from using", sent, re.IGNORECASE)
    assert "applied with /opt/venv/bin/python" in sent, "the chain's venv is on PATH, in login shells too"


def reported(name: str, events: list[dict[str, Any]]) -> dict[str, float]:
    """Turns, tokens and dollars as the CLI's own stream states them (for the session, after a resume)."""
    if name == "claude-code":
        [result] = [e for e in events if e.get("type") == "result"]
        usage = result["usage"]
        return {
            "turns": result["num_turns"],
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
            "cache_read_tokens": usage["cache_read_input_tokens"],
            "cache_write_tokens": usage["cache_creation_input_tokens"],
            "cost_usd": result["total_cost_usd"],
        }
    if name == "codex":
        [done] = [e for e in events if e.get("type") == "turn.completed"]
        usage = done["usage"]
        items = {
            e["item"]["id"] for e in events if e.get("type") == "item.completed" and e["item"]["type"] != "reasoning"
        }
        return {
            "turns": len(items),
            "input_tokens": usage["input_tokens"] - usage["cached_input_tokens"],
            "output_tokens": usage["output_tokens"],
            "cache_read_tokens": usage["cached_input_tokens"],
            "cache_write_tokens": usage.get("cache_write_input_tokens", 0),
        }
    steps = [e["part"] for e in events if e.get("type") == "step_finish"]
    return {
        "turns": len(steps),
        "input_tokens": sum(p["tokens"]["input"] for p in steps),
        "output_tokens": sum(p["tokens"]["output"] + p["tokens"]["reasoning"] for p in steps),
        "cache_read_tokens": sum(p["tokens"]["cache"]["read"] for p in steps),
        "cache_write_tokens": sum(p["tokens"]["cache"]["write"] for p in steps),
        "cost_usd": sum(p["cost"] for p in steps),
    }


# What each pinned CLI reports for the whole session after a resume (measured; streams.SESSION_TOTALS).
SESSION_WIDE = {"claude-code": {"cost_usd"}, "codex": {"input_tokens", "output_tokens", "cache_read_tokens"}}


def test_turns_tokens_and_dollars_are_recorded_as_the_cli_reported_them(chain_run):
    name, output, _, _ = chain_run
    for folder in sorted((output / "steps").iterdir()):
        build = reported(name, stream_events(folder / "logs" / "agent-build.log"))
        fix = reported(name, stream_events(folder / "logs" / "agent-fix.log"))
        for key in SESSION_WIDE.get(name, ()):
            assert fix[key] > build[key], f"{key}: the resumed session's figure includes the Build's"
            fix[key] -= build[key]  # the Fix's own share
        for phase, expected in (("build", build), ("fix", fix)):
            agent = load_json(folder / f"agent-{phase}.json")["agent"]
            assert {k: agent[k] for k in expected} == pytest.approx(expected), phase
            assert agent["cost_usd"] > 0 and agent["cost_source"] == ("prices" if name == "codex" else "cli")
        assert fix["turns"] > 0 and fix["input_tokens"] > 0


# The turn and dollar limits are each CLI's own mechanism (Claude Code's flags, the live parse of
# Codex's items and OpenCode's steps): each is run for every CLI. The wall clock is the runner's,
# the same for all: one CLI shows it (the one quickest to start).
LIMIT_CASES = [
    *[
        pytest.param(name, limits, 0, expected, id=f"{name}-{what}")
        for name in KEYS
        for what, limits, expected in (
            ("turns", {"turns": 2}, ("ok", "turns")),
            ("dollars", {"cost_usd": 0.005}, ("ok", "cost_usd")),
        )
    ],
    pytest.param("codex", {"wall_s": 20}, 120, ("timed_out", "wall_s"), id="codex-wall-clock"),
]


@pytest.mark.parametrize(("name", "limits", "delay", "expected"), LIMIT_CASES)
def test_a_limit_ends_the_real_cli(name, limits, delay, expected, toy_oracle, tmp_path):
    manifest = manifest_with(tmp_path, name, limits)
    scenario = toy_scenario(extra_build=[{"bash": "echo first", "delay_s": delay}, *[{"bash": "echo more"}] * 4])
    with ModelServer(scenario) as server:
        result = run_agent(manifest, tmp_path / "run", server, "--steps", "1-1")
    assert result.returncode == 0, result.stderr[-3000:]
    agent = load_json(next((tmp_path / "run" / "steps").iterdir()) / "agent-build.json")["agent"]
    assert (agent["status"], agent["ended_by"], agent["limit"]) == (*expected[:1], "limit", expected[1]), agent
    if expected[1] == "turns":
        assert agent["turns"] <= 3
    if expected[1] == "cost_usd":
        assert agent["cost_usd"] > limits["cost_usd"]


def test_a_cli_agents_output_reaches_the_log_and_terminal_as_it_comes(toy_oracle, tmp_path):
    """A command that prints, waits, prints: the first line is in the step log and on the terminal
    while the command still runs; the output bound holds on both."""
    manifest = tmp_path / "talker.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "name": "talker",
                "kind": "cli",
                "commands": {
                    "build": "echo first line; sleep 8; echo second line; yes x | head -c 4000",
                    "fix": "true",
                },
                "limits": {"output_bytes": 2000},
            }
        )
    )
    output = tmp_path / "run"
    command = [*CLI, "run", "--chain", "toy", "--steps", "1-1", "--agent", str(manifest), "--output", str(output)]
    with subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True) as process:
        seen_at = None
        for line in process.stderr:
            if "agent| first line" in line:
                seen_at = time.monotonic()
                log = next(output.glob("steps/*/logs/agent-build.log")).read_text()
                assert "\nfirst line\n" in log and "\nsecond line" not in log, "the step log has it already"
                break
        rest = process.stderr.read()
        finished = time.monotonic()
    assert seen_at is not None, f"the first line never reached the terminal: {rest[-3000:]}"
    assert finished - seen_at > 5, f"shown before the agent's command ended: {rest[-3000:]}"
    assert "agent| second line" in rest and "output past 2000 bytes is not shown" in rest
    assert rest.count("x") < 2100
    log = next(output.glob("steps/*/logs/agent-build.log")).read_text()
    assert log.count("x") < 2000
