"""The vendor CLIs' event streams (recorded samples in tests/fixtures/streams/), the triage
table of infrastructure failures (a test per row), and the shipped manifests' documentation
of every flag they use."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from swechain_ci.agents.manifest import parse_manifest
from swechain_ci.agents.streams import PARSERS, LiveParse
from swechain_ci.agents.triage import SIGNATURES, classify
from swechain_ci.models import AgentOutcome, Usage
from swechain_ci.prices import load_prices, price_for
from swechain_ci.scoring.report import usage_cells

STREAMS = REPO / "tests" / "fixtures" / "streams"
PRICES = load_prices()


def parse(stream: str, fixture: str, model: str, chunk: int | None = None) -> LiveParse:
    live = LiveParse(stream, price_for(model, PRICES))
    data = (STREAMS / fixture).read_bytes()
    step = chunk or len(data)
    for start in range(0, len(data), step):  # arbitrary chunk boundaries, as a pipe delivers them
        live.feed(data[start : start + step])
    live.finish()
    return live


@pytest.mark.parametrize("chunk", [None, 7])
def test_claude_stream_json(chunk):
    live = parse("claude-stream-json", "claude-stream-json.jsonl", "claude-sonnet-4-5", chunk)
    tally = live.tally
    assert (tally.turns, tally.session) == (2, "8f0e4b8e-3c1a-4d6e-9b2f-7a5c1e0d9f42")
    usage = tally.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (
        1500,
        570,
        5800,
        5000,
    )
    assert (live.cost_usd, live.cost_source) == (0.0363, "cli"), "the result's total_cost_usd"
    assert not tally.errors and tally.cli_limit is None


def test_claude_before_its_result_is_priced_from_the_messages_counting_each_message_once():
    lines = (STREAMS / "claude-stream-json.jsonl").read_text().splitlines()
    live = LiveParse("claude-stream-json", price_for("claude-sonnet-4-5", PRICES))
    live.feed(("\n".join(lines[:-1]) + "\n").encode())
    assert live.tally.turns == 2, "two events of one message id are one turn"
    # (1500 * 3 + 570 * 15 + 5800 * 3.75 + 5000 * 0.30) / 1e6, the same as the CLI's own figure
    assert (live.cost_usd, live.cost_source) == (pytest.approx(0.0363), "prices")


def test_claude_errors_and_its_own_limits():
    live = parse("claude-stream-json", "claude-stream-json.overloaded.jsonl", "claude-sonnet-4-5")
    assert len(live.tally.errors) == 1 and "overloaded_error" in live.tally.errors[0]
    for subtype, limit in (("error_max_turns", "turns"), ("error_max_budget_usd", "cost_usd")):
        live = LiveParse("claude-stream-json", None)
        live.feed(f'{{"type":"result","subtype":"{subtype}","is_error":true,"num_turns":9}}\n'.encode())
        assert (live.tally.cli_limit, live.tally.turns, live.tally.errors) == (limit, 9, [])


def test_codex_json_is_priced_from_prices_yaml():
    live = parse("codex-json", "codex-json.jsonl", "gpt-5-codex")
    tally = live.tally
    assert (tally.turns, tally.session) == (3, "0199a213-81c0-7800-8aa1-bbab2a035a53")
    # input_tokens includes the cached ones: 24763 - 24448 uncached
    assert (tally.usage.input_tokens, tally.usage.cache_read_tokens, tally.usage.output_tokens) == (315, 24448, 122)
    assert live.cost_source == "prices"
    assert live.cost_usd == pytest.approx((315 * 1.25 + 122 * 10.0 + 24448 * 0.125) / 1e6)
    failed = LiveParse("codex-json", None)
    failed.feed(b'{"type":"turn.failed","error":{"message":"stream error: 429 Too Many Requests"}}\n')
    assert failed.tally.errors == ["stream error: 429 Too Many Requests"]


def test_opencode_json_sums_its_steps_costs():
    live = parse("opencode-json", "opencode-json.jsonl", "anthropic/claude-sonnet-4-5", chunk=50)
    tally = live.tally
    assert (tally.turns, tally.session) == (2, "ses_5a1b2c3d4ffeK7pQ2mX9vR4tY8")
    assert (tally.usage.input_tokens, tally.usage.output_tokens) == (5, 405)
    assert (tally.usage.cache_read_tokens, tally.usage.cache_write_tokens) == (4900, 5220)
    assert (live.cost_usd, live.cost_source) == (pytest.approx(0.027135), "cli")


def test_lines_that_are_not_json_objects_and_overlong_lines_are_passed_over():
    live = LiveParse("codex-json", None)
    live.feed(b"warning: something\n[1, 2]\n{not json\n")
    live.feed(b"{" + b"x" * 5_000_000)  # no newline yet: dropped, not buffered without bound
    live.feed(b'"}\n{"type":"thread.started","thread_id":"t1"}\n')
    assert live.tally.session == "t1" and len(live.pending) == 0


def test_every_format_has_a_parser_and_a_recorded_sample():
    assert {p.name.split(".")[0] for p in STREAMS.glob("*.jsonl")} == set(PARSERS)


# -- triage: one example per row, in order, and agent failures that are not infrastructure ------

EXAMPLES = {
    "egress_proxy": "Error: tunneling socket could not be established, cause=connect ECONNREFUSED 10.0.0.2:3128",
    "overloaded": 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "rate_limited": "stream error: exceeded retry limit, last status: 429 Too Many Requests",
    "network": "APIConnectionError: Connection error. getaddrinfo EAI_AGAIN api.anthropic.com",
    "server_error": 'API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}',
}


@pytest.mark.parametrize("row", SIGNATURES, ids=lambda r: r.name)
def test_each_triage_row_matches_its_failure_first(row):
    assert classify(EXAMPLES[row.name]) is row


@pytest.mark.parametrize(
    "text",
    [
        "exited with 3: about to fail",
        'Traceback (most recent call last):\n  File "x.py", line 1\nSyntaxError: invalid syntax',
        "AssertionError: assert 500 == 200",
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}',
        "Error: Invalid API key · Please run /login",
    ],
)
def test_agent_failures_are_not_infrastructure(text):
    assert classify(text) is None


def test_every_row_has_an_example():
    assert [r.name for r in SIGNATURES] == list(EXAMPLES)


# -- manifests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude-code", "codex", "opencode"])
def test_every_flag_a_vendor_manifest_uses_is_documented(name):
    manifest = parse_manifest(REPO / "agents" / f"{name}.yaml")
    used = set()
    for phase in ("build", "fix"):
        text = getattr(manifest.commands, phase)
        used |= set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text))
        used |= {f"-c {key}" for key in re.findall(r"-c ([a-z_]+)=", text)}
    used -= {"-c"}
    assert used <= set(manifest.docs), f"undocumented: {sorted(used - set(manifest.docs))}"
    assert all(re.search(r"https://\S+", where) for where in manifest.docs.values())
    assert manifest.stream in PARSERS and manifest.cli_version and manifest.model
    assert manifest.limits.turns and manifest.limits.cost_usd, "limits enforced by flag or by the live parse"
    assert price_for(manifest.model, PRICES), "a price for the model, for the dollar limit before a CLI reports cost"


def test_usage_totals_keep_unknowns_apart():
    total = Usage.total(
        [
            AgentOutcome(
                turns=2, input_tokens=10, output_tokens=5, cache_read_tokens=1, cache_write_tokens=2, cost_usd=0.1
            ),
            AgentOutcome(turns=1, input_tokens=3, output_tokens=1, cost_usd=0.2),
            AgentOutcome(),
        ]
    )
    assert total.model_dump() == {
        "turns": 3,
        "requests": None,  # no part counted requests (DecompSynth's field): unknown, not 0
        "input_tokens": 13,
        "output_tokens": 6,
        "cache_read_tokens": 1,
        "cache_write_tokens": 2,
        "cost_usd": pytest.approx(0.3),
    }
    assert Usage.total([AgentOutcome()]) == Usage()
    assert usage_cells(total) == ["3", "13/6/3"] and usage_cells(Usage()) == ["", ""]


# -- a paused run: the commit status and the workflow's continue ----------------------------------


def test_a_paused_run_is_an_error_status_and_is_not_continued_automatically(tmp_path):
    from conftest import run_cli

    from swechain_ci.github.cli import status_for
    from swechain_ci.models import RunRecord
    from swechain_ci.records import write_model

    run = RunRecord(
        run_id="r1",
        chain="toy",
        step_range="1-3",
        agent="codex",
        spec_level="manual",
        oracle_hash="h",
        steps_total=3,
        status="paused",
        stop_reason="step 2 build: infrastructure failure (overloaded)",
    )
    state, description = status_for(run, None)
    assert state == "error" and description.startswith("paused: no scorecard; step 2 build: infrastructure")
    write_model(tmp_path / "run.json", run)
    result = run_cli(
        "continue",
        str(tmp_path),
        "--workflow",
        "chain-run.yml",
        "--ref",
        "main",
        env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "paused by an infrastructure failure; not continued automatically" in result.stdout


def test_a_changed_config_file_selects_the_agents_whose_recipes_may_copy_it():
    import json

    from conftest import run_cli

    result = run_cli("matrix", "--changed-manifests", "agents/files/claude-settings.json", "--chains", "toy")
    assert result.returncode == 0, result.stderr
    assert [row["agent"] for row in json.loads(result.stdout)["include"]] == ["claude-code", "codex", "opencode"]


# -- CliAgent's outcome from what the container reported (a workspace that replays output) -------


class ReplayWorkspace:
    """Plays recorded output through the live parse as the container would; ``stop`` the
    command when ``on_output`` asks, as AgentContainer.run_command does (by ending it)."""

    def __init__(self, chunks: list[bytes], exit_code: int) -> None:
        self.chunks, self.exit_code = chunks, exit_code

    def run(self, argv, timeout_s, output_limit, log=None, env=None, on_output=None):
        from swechain_ci.containers.sandbox import CommandOutcome

        seen = b""
        for chunk in self.chunks:
            seen += chunk
            if on_output and on_output(chunk):
                return CommandOutcome(
                    exit_code=137,
                    output=seen.decode(),
                    timed_out=False,
                    truncated=False,
                    output_bytes=len(seen),
                    stopped=True,
                )
        return CommandOutcome(
            exit_code=self.exit_code, output=seen.decode(), timed_out=False, truncated=False, output_bytes=len(seen)
        )


def cli_outcome(tmp_path, name: str, chunks: list[bytes], exit_code: int = 0, **limits):
    from swechain_ci.agents.base import PhaseContext
    from swechain_ci.agents.cli import CliAgent
    from swechain_ci.agents.manifest import AgentLimits

    manifest = parse_manifest(REPO / "agents" / f"{name}.yaml")
    ctx = PhaseContext(
        phase="build",
        step_index=1,
        prev_version="0.1.0",
        next_version="0.2.0",
        spec="",
        fix_report=None,
        prompt="",
        workspace=ReplayWorkspace(chunks, exit_code),
        chain=None,
        log=tmp_path / "agent.log",
        session_id="s",
        limits=AgentLimits(**limits),
    )
    return CliAgent(manifest).run(ctx)


def test_the_live_parse_ends_a_cli_past_its_turn_limit(tmp_path):
    step = (STREAMS / "opencode-json.jsonl").read_text().splitlines()[-1].encode() + b"\n"
    outcome = cli_outcome(tmp_path, "opencode", [step] * 10, turns=3)
    assert (outcome.status, outcome.ended_by, outcome.limit, outcome.turns) == ("ok", "limit", "turns", 4)
    assert "4 turns taken (limit 3)" in outcome.detail


def test_a_cli_stopped_by_its_own_budget_flag_is_ended_by_limit(tmp_path):
    result = b'{"type":"result","subtype":"error_max_budget_usd","is_error":true,"num_turns":3,"total_cost_usd":2.01}\n'
    outcome = cli_outcome(tmp_path, "claude-code", [result], exit_code=1)
    assert (outcome.status, outcome.ended_by, outcome.limit, outcome.cost_usd) == ("ok", "limit", "cost_usd", 2.01)


@pytest.mark.parametrize(
    ("name", "output", "status", "infra"),
    [
        (
            "codex",
            b'{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}\n',
            "infra_error",
            "rate_limited",
        ),
        (
            "opencode",
            b'{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Overloaded",'
            b'"statusCode":529}}}\n',
            "infra_error",
            "overloaded",
        ),
        (
            "codex",
            b"Error: tunneling socket could not be established, cause=connect ECONNREFUSED 172.18.0.2:3128\n",
            "infra_error",
            "egress_proxy",
        ),
        ("codex", b"Traceback (most recent call last):\nKeyError: 'x'\n", "crashed", None),
    ],
)
def test_a_failed_cli_is_triaged(tmp_path, name, output, status, infra):
    outcome = cli_outcome(tmp_path, name, [output], exit_code=1)
    assert (outcome.status, outcome.infra) == (status, infra)


def test_a_recovered_error_event_does_not_fail_a_cli_that_exits_0(tmp_path):
    lines = [
        b'{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}\n',
        *(STREAMS / "codex-json.jsonl").read_bytes().splitlines(keepends=True),
    ]
    outcome = cli_outcome(tmp_path, "codex", lines)
    assert (outcome.status, outcome.ended_by, outcome.turns, outcome.cost_source) == ("ok", "exit", 3, "prices")
