"""Agents as data: manifests, the vendor CLIs' commands, and shell-script agents in the real container."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_json, run_cli

from swechain_ci.agents.cli import placeholder_values, render_command
from swechain_ci.agents.manifest import parse_manifest
from swechain_ci.errors import SwechainError

SESSION = "0b5f9a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"


def values(manifest, phase: str, cli_session: str | None = None) -> dict[str, str]:
    class Ctx:
        session_id, step_index = SESSION, 2

    Ctx.phase = phase
    return placeholder_values(manifest, Ctx, cli_session)


def test_the_shipped_manifests_validate():
    result = run_cli("agents", "validate")
    assert result.returncode == 0, result.stderr
    validated = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("ok: ")}
    assert {str(REPO / "agents" / f"{n}.yaml") for n in ("claude-code", "codex", "opencode")} <= validated


def test_claude_code_fix_resumes_the_build_session():
    manifest = parse_manifest(REPO / "agents" / "claude-code.yaml")
    build = render_command(manifest, values(manifest, "build"), "build")
    fix = render_command(manifest, values(manifest, "fix"), "fix")
    assert build[:2] == ["bash", "-c"] and fix[:2] == ["bash", "-c"]
    assert build[2] == (
        f'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 claude -p "$(cat /app/PROMPT.md)" --session-id {SESSION} --model claude-sonnet-4-5 '
        "--output-format stream-json --verbose --permission-mode bypassPermissions --add-dir /app "
        "--settings /opt/agent-config/claude-settings.json --max-turns 100 --max-budget-usd 10"
    )
    assert f"--resume {SESSION}" in fix[2] and "--session-id" not in fix[2]
    assert manifest.session == "resume" and manifest.env == ["ANTHROPIC_API_KEY"]
    assert manifest.network.mode == "egress" and manifest.network.allow == ["api.anthropic.com"]
    assert (manifest.stream, manifest.cli_version) == ("claude-stream-json", "2.1.332")


def test_codex_and_opencode_commands():
    codex = parse_manifest(REPO / "agents" / "codex.yaml")
    build = render_command(codex, values(codex, "build"), "build")[2]
    fix = render_command(codex, values(codex, "fix", "thread-7"), "fix")[2]
    head = (
        "codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --model gpt-5.5 "
        "-c model_reasoning_effort=high -c web_search=disabled "
        "-c model_provider=swechain -c model_providers.swechain.base_url=https://api.openai.com/v1 "
    )
    assert build == head + '"$(cat /app/PROMPT.md)"'
    assert fix == head + 'resume thread-7 "$(cat /app/PROMPT.md)"', (
        "exec resume takes the Build thread, no sandbox flag"
    )
    opencode = parse_manifest(REPO / "agents" / "opencode.yaml")
    build = render_command(opencode, values(opencode, "build"), "build")[2]
    fix = render_command(opencode, values(opencode, "fix", "ses_1"), "fix")[2]
    assert f"--title swechain-{SESSION}" in build and "--session" not in build
    assert "opencode run --format json --model anthropic/claude-sonnet-4-5 --session ses_1 " in fix


def test_list_templates_are_filled_without_a_shell(tmp_path):
    path = tmp_path / "lister.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "lister",
                "kind": "cli",
                "model": "m1",
                "commands": {
                    "build": ["tool", "--spec", "{spec_file}", "--s={session_id}"],
                    "fix": ["tool", "{fix_report_file}"],
                },
            }
        )
    )
    manifest = parse_manifest(path)
    assert render_command(manifest, values(manifest, "build"), "build") == [
        "tool",
        "--spec",
        "/app/SPEC.md",
        f"--s={SESSION}",
    ]
    assert render_command(manifest, values(manifest, "fix"), "fix") == ["tool", "/app/FIX_REPORT.md"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": "bad", "kind": "cli"}, "kind cli needs commands"),
        ({"name": "bad", "kind": "python"}, "kind python needs entrypoint"),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x {secret}", "fix": "y"}},
            "unknown placeholders ['secret']",
        ),
        (
            {"name": "bad", "kind": "builtin", "builtin": "oracle", "env": ["ANTHROPIC_API_KEY=sk-123"]},
            "list variable NAMES only",
        ),
        (
            {"name": "bad", "kind": "builtin", "builtin": "noop", "network": {"allow": ["api.x.com"]}},
            "set mode: egress",
        ),
        # runner internals are never an agent's to ask for (a row per rule family)
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["GITHUB_TOKEN"]},
            "env lists GITHUB_TOKEN, which an agent may not ask for: GITHUB_* belong to the runner",
        ),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["ACTIONS_RUNTIME_TOKEN"]},
            "ACTIONS_* belong to the runner",
        ),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["RUNNER_TEMP"]},
            "RUNNER_* belong to the runner",
        ),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["SWECHAIN_SECRET_X__K"]},
            "SWECHAIN_* configure swechain-ci",
        ),
        ({"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["GIT_ASKPASS"]}, "GIT_*"),
        ({"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["LD_PRELOAD"]}, "LD_*"),
        ({"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["PYTHONPATH"]}, "PYTHON*"),
        ({"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["DOCKER_HOST"]}, "DOCKER_*"),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["AWS_SECRET_ACCESS_KEY"]},
            "the host's credentials",
        ),
        (
            {"name": "bad", "kind": "cli", "commands": {"build": "x", "fix": "y"}, "env": ["PATH"]},
            "runner's own process",
        ),
        ({"name": "bad", "kind": "python", "entrypoint": "evil_module:Agent"}, "outside swechain_ci.agents"),
        ({"name": "bad", "kind": "builtin", "builtin": "noop", "limits": {"wall_s": 0}}, "field 'limits.wall_s'"),
        ({"name": "other", "kind": "builtin", "builtin": "noop"}, "the file is 'bad.yaml'; make them equal"),
        ({"name": "bad", "kind": "robot"}, "field 'kind'"),
    ],
)
def test_bad_manifests_name_the_file_and_the_field(tmp_path, data, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SwechainError) as caught:
        parse_manifest(path)
    assert str(path) in str(caught.value) and expected in str(caught.value)
    result = run_cli("agents", "validate", str(path))
    assert result.returncode == 2 and expected in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), "one line"


def write_agent(tmp_path: Path, name: str, build: str, fix: str = "true", **extra) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": name, "kind": "cli", "commands": {"build": build, "fix": fix}, "session": "resume", **extra}
        )
    )
    return path


BREAK_AND_FIX_BUILD = (
    "echo {session_id} > ~/build-session-{step}; "
    "if [ {step} = 1 ]; then printf 'def broken(:\\n' > src/toyslug/broken.py; "
    "echo 'from toyslug import broken' >> src/toyslug/__init__.py; fi"
)
BREAK_AND_FIX_FIX = (
    'test "$(cat ~/build-session-{step})" = {session_id} || exit 9; '
    "rm -f src/toyslug/broken.py; sed -i '/from toyslug import broken/d' src/toyslug/__init__.py"
)


@pytest.mark.docker
def test_a_shell_script_agent_builds_breaks_and_fixes_in_the_same_session(toy_oracle, tmp_path):
    agent = write_agent(tmp_path, "breaker", BREAK_AND_FIX_BUILD, BREAK_AND_FIX_FIX)
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert result.returncode == 0, result.stderr
    step = load_json(next(output.glob("steps/01-*/step.json")))
    assert step["build"]["execution_error"] is True and step["build"]["run"]["collection_errors"]
    assert "SyntaxError" in step["fix_report"]
    assert step["fix"]["agent"]["status"] == "ok" and step["fix"]["agent"]["exit_code"] == 0
    assert not step["fix"]["run"]["collection_errors"], "the fix repaired the syntax error"
    # What remains is the failed import of unique_slug, which this agent never adds.
    assert [f["names"] for f in step["fix"]["run"]["failed_imports"]] == [["unique_slug"]]
    logs = output / "steps" / "01-0.1.0-0.2.0" / "logs"
    build_session = re.search(r"echo (\S+) > ~/build-session-1", (logs / "agent-build.log").read_text())
    assert build_session and f"= {build_session.group(1)} ||" in (logs / "agent-fix.log").read_text()
    # Later steps add nothing either: their failed imports give each its one Fix, in its own session.
    card = load_json(output / "scorecard.json")
    assert [s["fix_ran"] for s in card["steps"]] == [True, True, True]
    assert [s["agent_status"] for s in card["steps"]] == ["ok", "ok", "ok"]


PROBE = (
    "if [ {step} = 2 ]; then "
    "echo PROBE-archive $(ls /archive >/dev/null 2>&1 && echo readable || echo denied); "
    "echo PROBE-hidden $(find / -xdev -name 'test_unique.py' 2>/dev/null | wc -l); "
    "echo PROBE-version-dir $(test -e /opt/swechain/version && echo present || echo absent); "
    "echo PROBE-net $(ls /sys/class/net | tr '\\n' ' '); "
    "echo PROBE-connect $(python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" "
    ">/dev/null 2>&1 && echo open || echo refused); "
    "echo PROBE-user $(id -u); fi"
)


@pytest.mark.docker
def test_the_agent_container_holds_no_tests_no_archive_access_and_no_network(toy_oracle, tmp_path):
    agent = write_agent(tmp_path, "prober", PROBE)
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert result.returncode == 0, result.stderr
    log = (output / "steps" / "02-0.2.0-0.3.0" / "logs" / "agent-build.log").read_text()
    probes = dict(line.split(" ", 1) for line in log.splitlines() if line.startswith("PROBE-"))
    assert probes == {
        "PROBE-archive": "denied",
        "PROBE-hidden": "0",
        "PROBE-version-dir": "absent",
        "PROBE-net": "lo",
        "PROBE-connect": "refused",
        "PROBE-user": "1000",
    }


@pytest.mark.docker
@pytest.mark.parametrize(
    ("build", "limits", "status", "ended_by"),
    [
        ("echo about to fail; exit 3", {}, "crashed", "exit"),
        ("sleep 600 & setsid sleep 600 & sleep 600", {"wall_s": 3}, "timed_out", "limit"),
    ],
    ids=["crash", "hang"],
)
def test_a_failing_agent_stops_the_chain_and_a_resume_starts_at_that_step(
    toy_oracle, tmp_path, build, limits, status, ended_by
):
    agent = write_agent(tmp_path, "failing", build, limits=limits)
    output = tmp_path / "run"
    started = time.monotonic()
    result = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 120
    step = load_json(next(output.glob("steps/01-*/step.json")))
    assert (step["build"]["agent"]["status"], step["build"]["agent"]["ended_by"]) == (status, ended_by)
    assert step["fix"] is None
    assert load_json(output / "run.json")["status"] == "stopped"
    card = load_json(output / "scorecard.json")
    assert card["steps_scored"] == 1 and card["stop_reason"].startswith(f"step 1: agent {status}")
    # The agent is mended; the resumed run starts again at step 1 and runs to the end.
    write_agent(tmp_path, "failing", "true")
    again = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert again.returncode == 0 and "step 1 ended with a failed agent; running it again" in again.stderr
    assert load_json(output / "scorecard.json")["steps_scored"] == 3


@pytest.mark.docker
def test_an_output_flood_is_truncated_in_the_record(toy_oracle, tmp_path):
    agent = write_agent(tmp_path, "flooder", "head -c 50000000 /dev/zero | tr '\\0' x", limits={"output_bytes": 10000})
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert result.returncode == 0, result.stderr
    step = load_json(next(output.glob("steps/01-*/step.json")))
    assert step["build"]["agent"]["status"] == "ok" and step["build"]["agent"]["output_truncated"] is True
    assert (output / "steps" / "01-0.1.0-0.2.0" / "logs" / "agent-build.log").stat().st_size < 12000


@pytest.mark.docker
def test_a_manifest_installs_its_python_tools_into_the_agent_container(toy_oracle, tmp_path):
    agent = write_agent(
        tmp_path,
        "tooled",
        "/opt/agent-tools/bin/python -c 'import six; print(\"tool six\", six.__version__)'",
        install={"pip": ["six==1.16.0"]},
    )
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", str(agent), "--output", str(output))
    assert result.returncode == 0, result.stderr
    log = (output / "steps" / "01-0.1.0-0.2.0" / "logs" / "agent-build.log").read_text()
    assert "tool six 1.16.0" in log
