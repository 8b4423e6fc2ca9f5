"""Streams captured from the real vendor CLIs at their pinned versions (tests/fixtures/streams/,
``*.build``, ``*.fix-resumed``, ``*.connection-failed``: run against tests/model_server.py),
parsed as the runner does: turns, tokens, dollars and session ids as the CLI reported them, a
resumed Fix charged its own share (the Build's session totals taken off), an unreachable API
triaged as ``network``. Also: a Fix with no kept session starts a new one (the Build
command), never a resume of a session that is not there, and the live echo of agent output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import REPO

from swechain_ci.agents.base import PhaseContext
from swechain_ci.agents.cli import CliAgent, baseline_of
from swechain_ci.agents.echo import PREFIX, Echo
from swechain_ci.agents.manifest import parse_manifest
from swechain_ci.agents.streams import Baseline, LiveParse
from swechain_ci.agents.triage import classify
from swechain_ci.containers.sandbox import CommandOutcome
from swechain_ci.models import AgentOutcome
from swechain_ci.prices import load_prices, price_for

STREAMS = REPO / "tests" / "fixtures" / "streams"


def events(fixture: str) -> list[dict]:
    return [json.loads(line) for line in (STREAMS / fixture).read_text().splitlines() if line.startswith("{")]


def result_event(fixture: str) -> dict:
    return next(e for e in reversed(events(fixture)) if e.get("type") == "result")


def parsed(stream: str, fixture: str, model: str, baseline=None) -> LiveParse:
    live = LiveParse(stream, price_for(model, load_prices()), baseline)
    data = (STREAMS / fixture).read_bytes()
    for start in range(0, len(data), 97):  # arbitrary chunk boundaries, as a pipe delivers them
        live.feed(data[start : start + 97])
    live.finish()
    return live


def outcome_of(live: LiveParse) -> AgentOutcome:
    usage = live.usage
    return AgentOutcome(
        turns=live.tally.turns,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost_usd=live.cost_usd,
        cost_source=live.cost_source,
        cli_session=live.tally.session,
    )


def test_claude_code_build_and_resumed_fix_as_the_cli_reported_them():
    build = parsed("claude-stream-json", "claude-stream-json.build.jsonl", "claude-sonnet-4-5")
    reported = result_event("claude-stream-json.build.jsonl")
    assert build.tally.turns == reported["num_turns"] == 5
    assert build.usage.input_tokens == reported["usage"]["input_tokens"]
    assert build.usage.output_tokens == reported["usage"]["output_tokens"]
    assert build.usage.cache_read_tokens == reported["usage"]["cache_read_input_tokens"]
    assert build.cost_usd == reported["total_cost_usd"] and build.cost_source == "cli"
    built = outcome_of(build)
    fix = parsed("claude-stream-json", "claude-stream-json.fix-resumed.jsonl", "claude-sonnet-4-5", baseline_of(built))
    resumed = result_event("claude-stream-json.fix-resumed.jsonl")
    assert fix.tally.session == build.tally.session, "the Fix resumed the Build's session"
    # total_cost_usd after a resume is the session's: the Fix is charged its own share.
    assert resumed["total_cost_usd"] > built.cost_usd
    assert fix.cost_usd == pytest.approx(resumed["total_cost_usd"] - reported["total_cost_usd"])
    own = sum(m["costUSD"] for m in resumed["model_usage_since_last_result"].values())
    assert fix.cost_usd == pytest.approx(own), "as the CLI itself counts this run's dollars"
    # num_turns and usage are the run's own in 2.1.332: nothing is taken off them.
    assert fix.tally.turns == resumed["num_turns"] == 4
    assert fix.usage.input_tokens == resumed["usage"]["input_tokens"]


def test_claude_codes_unreachable_api_is_a_network_failure():
    live = parsed("claude-stream-json", "claude-stream-json.connection-failed.jsonl", "claude-sonnet-4-5")
    text = (STREAMS / "claude-stream-json.connection-failed.jsonl").read_text()
    signature = classify("\n".join([*live.tally.errors, text[-1500:]]))
    assert signature is not None and signature.name == "network"
    assert live.cost_usd == 0 and live.tally.errors


# -- a Fix with nothing to resume starts a new session ---------------------------------------------


class RecordingWorkspace:
    def __init__(self) -> None:
        self.argv: list[str] = []
        self.env: dict[str, str] = {}

    def run(self, argv, timeout_s, output_limit, log=None, env=None, on_output=None) -> CommandOutcome:
        self.argv, self.env = argv, env or {}
        return CommandOutcome(exit_code=0, output="", timed_out=False, truncated=False, output_bytes=0)


def fix_context(tmp_path: Path, resumes: AgentOutcome | None) -> tuple[PhaseContext, RecordingWorkspace]:
    workspace = RecordingWorkspace()
    ctx = PhaseContext(
        phase="fix",
        step_index=1,
        prev_version="0.1.0",
        next_version="0.2.0",
        spec="",
        fix_report="",
        prompt="",
        workspace=workspace,  # type: ignore[arg-type]
        chain=None,  # type: ignore[arg-type]
        log=tmp_path / "agent-fix.log",
        session_id="11111111-2222-3333-4444-555555555555",
        resumes=resumes,
    )
    return ctx, workspace


@pytest.mark.parametrize("name", ["claude-code", "codex", "opencode"])
def test_a_fix_without_a_kept_session_starts_a_new_one(tmp_path, name):
    agent = CliAgent(parse_manifest(REPO / "agents" / f"{name}.yaml"), environ={})
    ctx, workspace = fix_context(tmp_path, None)
    outcome = agent.run(ctx)
    command = workspace.argv[-1]
    assert outcome.status == "ok"
    assert "--resume" not in command and " resume " not in command and "--session " not in command, command
    assert "no Build session to resume" in ctx.log.read_text()
    resumed, workspace = fix_context(tmp_path, AgentOutcome(cli_session="ses_build", cost_usd=1.0, cost_source="cli"))
    agent.run(resumed)
    assert (
        "--resume" in workspace.argv[-1]
        or " resume " in workspace.argv[-1]
        or "--session ses_build" in (workspace.argv[-1])
    )


def test_the_runner_points_a_cli_at_its_model_endpoint(tmp_path):
    manifest = parse_manifest(REPO / "agents" / "claude-code.yaml")
    agent = CliAgent(manifest, environ={"SWECHAIN_AGENT_BASE_URL": "http://127.0.0.1:8080"})
    ctx, workspace = fix_context(tmp_path, None)
    agent.run(ctx)
    assert workspace.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8080"
    assert "ANTHROPIC_BASE_URL" not in CliAgent(manifest, environ={}).endpoint_env()


@pytest.mark.parametrize("name", ["claude-code", "codex", "opencode"])
def test_an_egress_agent_gets_the_runners_proxy(tmp_path, name):
    manifest = parse_manifest(REPO / "agents" / f"{name}.yaml")
    assert manifest.network.mode == "egress"
    agent = CliAgent(manifest, environ={"SWECHAIN_EGRESS_PROXY": "http://proxy:3128"})
    ctx, workspace = fix_context(tmp_path, None)
    agent.run(ctx)
    assert workspace.env["HTTPS_PROXY"] == workspace.env["https_proxy"] == "http://proxy:3128"
    assert workspace.env["NO_PROXY"] == "localhost,127.0.0.1"
    assert "HTTPS_PROXY" not in CliAgent(manifest, environ={}).endpoint_env()


# -- the live echo ---------------------------------------------------------------------------------


def test_the_echo_shows_whole_lines_escaped_and_bounded():
    out = io.StringIO()
    echo = Echo(limit=60, out=out)
    echo.feed(b"::add-mask::x\n\x1b[2Jpart")
    assert out.getvalue() == PREFIX + "::add-mask::x\n", "a whole line at once, behind the prefix"
    echo.feed(b"ial\n" + b"y" * 100)
    lines = out.getvalue().splitlines()
    assert lines[1] == PREFIX + "\ufffd[2Jpartial", "terminal escapes are replaced"
    assert lines[-1] == PREFIX + "[swechain-ci] output past 60 bytes is not shown"
    echo.feed(b"more\n")
    assert out.getvalue().count("\n") == len(lines), "nothing past the bound"
    assert all(line.startswith(PREFIX) for line in out.getvalue().splitlines())


# -- a phase that could not read its task -----------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "fixture", "refused"),
    [
        ("opencode-json", "opencode-json.spec-refused.jsonl", "/app/SPEC.md"),
        ("claude-stream-json", "claude-stream-json.build.jsonl", None),
        ("claude-stream-json", "claude-stream-json.fix-resumed.jsonl", None),
    ],
)
def test_a_refused_read_of_the_spec_or_fix_report_is_seen(stream, fixture, refused):
    live = parsed(stream, fixture, "claude-sonnet-4-5")
    assert list(live.tally.unreadable) == ([refused] if refused else [])


def test_a_phase_that_could_not_read_its_spec_does_not_end_ok(tmp_path):
    """OpenCode 1.18.33 with an external_directory rule that missed /app/SPEC.md (captured)."""
    stream = (STREAMS / "opencode-json.spec-refused.jsonl").read_bytes()

    class Replaying(RecordingWorkspace):
        def run(self, argv, timeout_s, output_limit, log=None, env=None, on_output=None) -> CommandOutcome:
            on_output(stream)
            return CommandOutcome(exit_code=0, output="", timed_out=False, truncated=False, output_bytes=len(stream))

    ctx, _ = fix_context(tmp_path, None)
    ctx.workspace = Replaying()  # type: ignore[assignment]
    outcome = CliAgent(parse_manifest(REPO / "agents" / "opencode.yaml"), environ={}).run(ctx)
    assert (outcome.status, outcome.ended_by) == ("crashed", "input_unreadable")
    assert "/app/SPEC.md" in outcome.detail and "external_directory" in outcome.detail


def test_codex_build_and_resumed_fix_as_the_cli_reported_them():
    build = parsed("codex-json", "codex-json.build.jsonl", "gpt-5.5")
    [done] = [e for e in events("codex-json.build.jsonl") if e.get("type") == "turn.completed"]
    assert build.tally.turns == 5, "a command, a read, a read, a patch, a message: counted as they came"
    assert build.usage.input_tokens == done["usage"]["input_tokens"] - done["usage"]["cached_input_tokens"]
    assert build.usage.cache_read_tokens == done["usage"]["cached_input_tokens"]
    assert build.cost_source == "prices" and build.cost_usd > 0
    fix = parsed("codex-json", "codex-json.fix-resumed.jsonl", "gpt-5.5", baseline_of(outcome_of(build)))
    [resumed] = [e for e in events("codex-json.fix-resumed.jsonl") if e.get("type") == "turn.completed"]
    assert fix.tally.session == build.tally.session
    # 0.171.0 reports the thread's usage after a resume: the Fix is charged its own share
    assert fix.usage.output_tokens == resumed["usage"]["output_tokens"] - done["usage"]["output_tokens"] > 0
    assert fix.usage.cache_read_tokens == resumed["usage"]["cached_input_tokens"] - done["usage"]["cached_input_tokens"]
    assert fix.tally.turns == 4
    assert fix.cost_usd < parsed("codex-json", "codex-json.fix-resumed.jsonl", "gpt-5.5").cost_usd


def test_opencode_resumed_fix_as_the_cli_reported_it():
    fix = parsed("opencode-json", "opencode-json.fix-resumed.jsonl", "claude-sonnet-4-5", Baseline(cost=1.0))
    steps = [e["part"] for e in events("opencode-json.fix-resumed.jsonl") if e.get("type") == "step_finish"]
    assert fix.tally.turns == len(steps) == 4
    assert fix.cost_usd == pytest.approx(sum(p["cost"] for p in steps)), "OpenCode reports each step's own dollars"
    assert fix.usage.input_tokens == sum(p["tokens"]["input"] for p in steps)
