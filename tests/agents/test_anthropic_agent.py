"""The reference agent (swechain_ci/agents/anthropic.py) against a scripted Messages API.

Real SDK over real HTTP (tests/anthropic_server.py on 127.0.0.1), real Docker, the real
agent container: the model is scripted, everything else is what a run does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from pathlib import Path

import pytest
import yaml
from anthropic_server import (
    Reply,
    ScriptedServer,
    first_user_text,
    message,
    result_text,
    text,
    tool_results,
    tool_use,
    turns_taken,
    usage,
)
from conftest import REPO, load_json, run_cli

from swechain_ci.agents.anthropic import ELIDED, AnthropicAgent
from swechain_ci.agents.base import PhaseContext, Workspace
from swechain_ci.agents.image import ensure_agent_image
from swechain_ci.agents.manifest import AgentLimits, AgentManifest, parse_manifest
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers.images import ensure_images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.errors import SwechainError
from swechain_ci.prices import Price, TokenUsage, load_prices

MANIFEST = REPO / "agents" / "claude-reference.yaml"
TOY = REPO / "chains" / "toy" / "versions"
SONNET = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
SOLVER_USAGE = usage(input_tokens=2000, output_tokens=300, cache_write=1000, cache_read=4000)
# Per turn: (2000 * 3 + 300 * 15 + 1000 * 3.75 + 4000 * 0.30) / 1e6 = (6000 + 4500 + 3750 + 1200) / 1e6
SOLVER_TURN_USD = 0.01545


# ---------------------------------------------------------------------------------------------
# the scripted model that solves the toy chain


def versions_of(body: dict) -> tuple[str, str]:
    found = re.search(r"from\s+(?:version\s+)?(\d[\w.]*\d)\s+to\s+(?:version\s+)?(\d[\w.]*\d)", first_user_text(body))
    assert found, "the first user message names no versions"
    return found.group(1), found.group(2)


def source_files(version: str) -> dict[str, str]:
    root = TOY / version
    return {str(p.relative_to(root)): p.read_text() for p in sorted((root / "src").rglob("*.py"))}


def solver_plan(prev: str, next_: str) -> list[list[dict]]:
    """The turns of one Build: look, a deliberately wrong edit, the gold edits, a check, done."""
    old, new = source_files(prev), source_files(next_)
    edits = []
    for path, content in new.items():
        if path not in old:
            edits.append(tool_use("create", {"path": path, "file_text": content}))
        elif old[path] != content:
            edits.append(tool_use("str_replace", {"path": path, "old_str": old[path], "new_str": content}))
    gone = sorted(set(old) - set(new))
    if gone:
        edits.append(tool_use("bash", {"command": "rm " + " ".join(gone)}))
    check = 'python -c \'import sys; sys.path.insert(0, "src"); import toyslug; print("version", toyslug.__version__)\''
    return [
        [
            text("Let me look at the code."),
            tool_use("bash", {"command": "ls -R src"}),
            tool_use("view", {"path": "src/toyslug/__init__.py"}),
        ],
        [tool_use("str_replace", {"path": "src/toyslug/__init__.py", "old_str": "no such text", "new_str": "x"})],
        [text("Now the upgrade."), *edits],
        [tool_use("bash", {"command": check})],
        [text(f"Upgraded to {next_}.")],
    ]


def toy_solver(body: dict) -> dict:
    prev, next_ = versions_of(body)
    plan = solver_plan(prev, next_)
    turn = turns_taken(body)
    return message(plan[min(turn, len(plan) - 1)], usage_=SOLVER_USAGE)


@pytest.fixture(scope="module")
def solved_run(toy_oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("claude-reference")
    with ScriptedServer(toy_solver) as server:
        data = yaml.safe_load(MANIFEST.read_text())
        data["base_url"] = server.url
        data["network"] = {"mode": "none"}  # the SDK runs on the host; only the tools run in the container
        manifest = tmp / "claude-reference.yaml"
        manifest.write_text(yaml.safe_dump(data))
        output = tmp / "run"
        result = run_cli(
            "run",
            "--chain",
            "toy",
            "--agent",
            str(manifest),
            "--output",
            str(output),
            env={
                "SWECHAIN_SECRET_CLAUDE_REFERENCE__ANTHROPIC_API_KEY": "test-key",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            },
        )
        assert result.returncode == 0, result.stderr
        assert not server.errors, server.errors
        return output, list(server.requests)


def test_the_manifest_is_valid():
    manifest = parse_manifest(MANIFEST)
    assert (manifest.kind, manifest.model, manifest.env) == ("python", "claude-sonnet-4-6", ["ANTHROPIC_API_KEY"])
    assert manifest.network.mode == "none", "the model is called from the harness; tools need no network"
    agent = AnthropicAgent(manifest)
    assert agent.name == "claude-reference" and agent.options.max_tokens == manifest.options["max_tokens"]


@pytest.mark.docker
def test_a_scripted_model_solves_the_toy_chain(solved_run):
    output, _requests = solved_run
    card = load_json(output / "scorecard.json")
    for phase in ("build", "build_fix"):
        assert card[phase]["resolving"] == 1.0, card[phase]
        assert card[phase]["precision"] == 1.0
    assert card["steps_scored"] == 3 and not any(s["fix_ran"] for s in card["steps"])
    for step in sorted(output.glob("steps/*/step.json")):
        agent = load_json(step)["build"]["agent"]
        assert (agent["status"], agent["ended_by"], agent["turns"]) == ("ok", "end_turn", 5)
        assert (agent["input_tokens"], agent["output_tokens"]) == (5 * 2000, 5 * 300)
        assert (agent["cache_write_tokens"], agent["cache_read_tokens"]) == (5 * 1000, 5 * 4000)
        assert agent["cost_usd"] == pytest.approx(5 * SOLVER_TURN_USD, abs=1e-9)
    assert load_json(output / "run.json")["status"] == "finished"


@pytest.mark.docker
def test_a_run_of_529s_pauses_the_run_and_a_resume_matches_the_uninterrupted_run(solved_run, tmp_path):
    """Step 2's first call meets an outage that outlasts the retry window: the run pauses
    with infra_error, step 2 unscored; run again, it resumes at step 2 and its scorecard
    is the uninterrupted run's."""

    def outage_at_step_2(body):
        if versions_of(body) == ("0.2.0", "0.3.0") and not outage_at_step_2.done:
            outage_at_step_2.done = True
            outage_at_step_2.server.outage(10_000)
            return Reply({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)
        return toy_solver(body)

    outage_at_step_2.done = False
    output = tmp_path / "run"
    env = {
        "SWECHAIN_SECRET_CLAUDE_REFERENCE__ANTHROPIC_API_KEY": "test-key",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    with ScriptedServer(outage_at_step_2) as server:
        outage_at_step_2.server = server
        data = yaml.safe_load(MANIFEST.read_text())
        data["base_url"] = server.url
        data["options"].update(max_retries=0, infra_retry_minutes=0.02, infra_backoff_first_s=0.2)
        manifest = tmp_path / "claude-reference.yaml"
        manifest.write_text(yaml.safe_dump(data))
        paused = run_cli("run", "--chain", "toy", "--agent", str(manifest), "--output", str(output), env=env)
        assert paused.returncode == 0, paused.stderr
        run = load_json(output / "run.json")
        assert run["status"] == "paused" and run["stop_reason"].startswith(
            "step 2 build: infrastructure failure (overloaded), not scored"
        )
        assert [p.name for p in sorted(output.glob("steps/*/step.json"))] == ["step.json"]
        markdown = (output / "scorecard.md").read_text()
        assert "paused: `" in markdown and "step 2 build: infrastructure failure (overloaded)" in markdown
        server.outage(0)
        resumed = run_cli("run", "--chain", "toy", "--agent", str(manifest), "--output", str(output), env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert not server.errors, server.errors
    assert "resuming after step 1" in resumed.stderr
    assert load_json(output / "run.json")["status"] == "finished"
    solved, _ = solved_run
    assert (output / "scorecard.md").read_text() == (solved / "scorecard.md").read_text()
    mine, theirs = load_json(output / "scorecard.json"), load_json(solved / "scorecard.json")
    for card in (mine, theirs):
        for step in card["steps"]:
            step.pop("wall_s")
    assert mine == theirs, "identical but for wall-clock seconds"


@pytest.mark.docker
def test_the_sdk_sent_what_the_agent_meant(solved_run):
    _, requests = solved_run
    assert len(requests) == 3 * 5
    for request in requests:
        credential = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        assert credential.endswith("test-key"), request.headers
        assert request.body["model"] == "claude-sonnet-4-6"
        assert request.body["max_tokens"] == 16000
        assert [t["name"] for t in request.body["tools"]] == ["bash", "view", "str_replace", "create"]
        assert request.messages[0]["role"] == "user"
        # prompt caching: breakpoints on the system prompt and the last two user messages at most
        marks = sum("cache_control" in b for m in request.messages for b in m["content"])
        assert 1 <= marks <= 2
    first = first_user_text(requests[0].body)
    assert "0.1.0" in first and "0.2.0" in first and "unique_slug" in first, "prompt and spec in the first message"
    # turn 2 got the listing and the numbered file; turn 3 the error of the wrong edit
    listing, viewed = (result_text(b) for b in tool_results(requests[1].body))
    assert "src/toyslug:" in listing and "core.py" in listing
    assert '     1\t"""toyslug' in viewed and '__version__ = "0.1.0"' in viewed
    [wrong] = tool_results(requests[2].body)
    assert wrong["is_error"] and "does not occur" in result_text(wrong)
    # after the edits, the container's code is the target version's
    versions = [result_text(tool_results(r.body)[0]) for r in requests if turns_taken(r.body) == 4]
    assert [re.search(r"version (\S+)", v).group(1) for v in versions] == ["0.2.0", "0.3.0", "0.4.0"]


@pytest.mark.docker
def test_trajectories_record_every_turn(solved_run):
    output, _ = solved_run
    for step in sorted(output.glob("steps/*")):
        path = step / "logs" / "trajectory-build.jsonl"
        events = [json.loads(line) for line in path.read_text().splitlines()]
        kinds = [e["event"] for e in events]
        assert kinds[0] == "session" and kinds[-1] == "end"
        responses = [e for e in events if e["event"] == "response"]
        assert len(responses) == 5 and kinds.count("tool_results") == 4
        assert all(e["usage"]["input_tokens"] == 2000 for e in responses)
        assert responses[-1]["cost_total_usd"] == pytest.approx(5 * SOLVER_TURN_USD)
        names = [b["name"] for e in responses for b in e["content"] if b["type"] == "tool_use"]
        assert {"bash", "view", "str_replace"} <= set(names)
        assert events[-1]["ended_by"] == "end_turn"
        assert "> bash: ls -R src" in (step / "logs" / "agent-build.log").read_text()


# ---------------------------------------------------------------------------------------------
# limits, through AnthropicAgent.run in a real agent container


@pytest.fixture(scope="module")
def agent_container(toy_oracle):
    sandbox = DockerSandbox()
    chain = load_chain("toy")
    images = ensure_images(sandbox, chain)
    manifest = parse_manifest(MANIFEST)
    image = ensure_agent_image(sandbox, chain, images, manifest)
    labels = {"swechain-ci.test": "anthropic-agent"}
    sandbox.remove_labelled(labels)
    container = sandbox.start_agent_container(image, chain.config.limits, labels)
    try:
        yield chain, container
    finally:
        container.remove()


def run_agent(agent_container, tmp_path: Path, script, options: dict | None = None, server=None, **limits):
    chain, container = agent_container
    manifest = AgentManifest(
        name="claude-reference",
        kind="python",
        entrypoint="swechain_ci.agents.anthropic:AnthropicAgent",
        model="claude-sonnet-4-5",
        env=["ANTHROPIC_API_KEY"],
        options={"max_retries": 1, **(options or {})},
    )
    with contextlib.nullcontext(server) if server else ScriptedServer(script) as server:
        manifest.base_url = server.url
        ctx = PhaseContext(
            phase="build",
            step_index=1,
            prev_version="0.1.0",
            next_version="0.2.0",
            spec="Bump the version.",
            fix_report=None,
            prompt="Upgrade from version 0.1.0 to version 0.2.0.",
            workspace=Workspace(container),
            chain=chain,
            log=tmp_path / "logs" / "agent-build.log",
            session_id="test",
            limits=AgentLimits(**limits),
            secrets={"ANTHROPIC_API_KEY": "test-key"},
        )
        started = time.monotonic()
        outcome = AnthropicAgent(manifest).run(ctx)
        elapsed = time.monotonic() - started
        assert not server.errors, server.errors
        events = [json.loads(line) for line in (tmp_path / "logs" / "trajectory-build.jsonl").read_text().splitlines()]
        for event in events:  # shown with a failing test's output: why a session crashed
            if event["event"] == "error" and "traceback" in event:
                print(event["traceback"])
        return outcome, list(server.requests), events, elapsed


@pytest.mark.docker
def test_the_turn_limit_ends_a_session_that_never_ends(agent_container, tmp_path):
    def endless(body):
        return message([tool_use("bash", {"command": f"echo turn {turns_taken(body)}"})])

    outcome, requests, events, _ = run_agent(agent_container, tmp_path, endless, turns=2)
    assert (outcome.status, outcome.ended_by, outcome.limit, outcome.turns) == ("ok", "limit", "turns", 2)
    assert len(requests) == 2
    assert [e["event"] for e in events].count("tool_results") == 2, "the last turn's tools still ran"
    assert "turn 0" in result_text(tool_results(requests[1].body)[0])


@pytest.mark.docker
def test_the_cost_limit_counts_every_token_kind(agent_container, tmp_path):
    def expensive(body):
        return message(
            [tool_use("bash", {"command": f"echo {turns_taken(body)}"})],
            usage_=usage(input_tokens=1_000_000, output_tokens=100_000, cache_write=0, cache_read=0),
        )

    outcome, requests, _, _ = run_agent(agent_container, tmp_path, expensive, cost_usd=0.5)
    assert (outcome.status, outcome.ended_by, outcome.limit, outcome.turns) == ("ok", "limit", "cost_usd", 1)
    assert outcome.cost_usd == pytest.approx(3.0 + 1.5)
    assert len(requests) == 1


@pytest.mark.docker
def test_the_wall_clock_ends_a_long_tool(agent_container, tmp_path):
    def sleepy(body):
        return message([tool_use("bash", {"command": "sleep 60; echo woke"})])

    outcome, _requests, events, elapsed = run_agent(agent_container, tmp_path, sleepy, wall_s=2)
    assert (outcome.status, outcome.ended_by, outcome.limit) == ("timed_out", "limit", "wall_s")
    assert elapsed < 15
    [results] = [e for e in events if e["event"] == "tool_results"]
    assert "woke" not in json.dumps(results) and "killed" in json.dumps(results)
    _, container = agent_container
    processes = container.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"], user=0).output
    assert b"sleep 60" not in processes, "the tool's processes were ended"


@pytest.mark.docker
def test_the_wall_clock_bounds_a_slow_model_call(agent_container, tmp_path):
    def slow(body):
        return Reply(message([text("late")]), delay_s=8)

    outcome, requests, _, elapsed = run_agent(agent_container, tmp_path, slow, wall_s=2)
    assert (outcome.status, outcome.ended_by, outcome.limit) == ("timed_out", "limit", "wall_s")
    assert elapsed < 6, "no HTTP attempt outlives the wall clock"
    assert len(requests) == 1, "no retry is started after the wall clock"


@pytest.mark.docker
def test_identical_tool_calls_in_a_row_end_the_session(agent_container, tmp_path):
    def stuck(body):
        return message([tool_use("view", {"path": "README.md", "view_range": [1, 3]})])

    outcome, _requests, events, _ = run_agent(agent_container, tmp_path, stuck, repeats=3)
    assert (outcome.status, outcome.ended_by, outcome.turns) == ("ok", "repetition", 3)
    assert [e["event"] for e in events].count("tool_results") == 2, "the repeat that trips the guard is not run"


@pytest.mark.docker
def test_an_api_error_that_is_not_infrastructure_is_a_crash_with_usage_kept(agent_container, tmp_path):
    def failing(body):
        if turns_taken(body) == 0:
            return message([tool_use("bash", {"command": "true"})], usage_=usage(1000, 100))
        return Reply({"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool"}}, status=400)

    outcome, requests, events, _ = run_agent(agent_container, tmp_path, failing)
    assert (outcome.status, outcome.ended_by, outcome.turns) == ("crashed", "api_error", 1)
    assert len(requests) == 2, "a 400 is not retried"
    assert outcome.cost_usd == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    assert events[-1]["event"] == "end"


@pytest.mark.docker
def test_overload_is_retried_with_backoff_and_the_session_goes_on(agent_container, tmp_path):
    def flaky(body):
        turn = turns_taken(body)
        if turn == 0 and not flaky.tripped:
            flaky.tripped = True
            flaky.server.outage(3)  # this and the next requests: the SDK's retry, then two of ours
            return Reply({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)
        return message([tool_use("bash", {"command": "true"})] if turn == 0 else [text("done")])

    flaky.tripped = False
    with ScriptedServer(flaky) as server:
        flaky.server = server
        outcome, _requests, events, _ = run_agent(
            agent_container,
            tmp_path,
            flaky,
            server=server,
            options={"infra_backoff_first_s": 0.1, "infra_retry_minutes": 1},
        )
    assert (outcome.status, outcome.ended_by, outcome.turns) == ("ok", "end_turn", 2)
    retries = [e for e in events if e["event"] == "infra_error"]
    assert [e["signature"] for e in retries] == ["overloaded"] * 2
    assert [e["retry_in_s"] for e in retries] == [0.1, 0.2], "exponential backoff"


@pytest.mark.docker
def test_persistent_overload_ends_the_phase_as_infra_error(agent_container, tmp_path):
    def down(body):
        down.server.outage(10_000)
        return Reply({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)

    with ScriptedServer(down) as server:
        down.server = server
        outcome, _, events, elapsed = run_agent(
            agent_container,
            tmp_path,
            down,
            server=server,
            options={"infra_backoff_first_s": 0.2, "infra_retry_minutes": 0.03},
        )
    assert (outcome.status, outcome.ended_by, outcome.infra) == ("infra_error", "infra", "overloaded")
    assert "still failing after" in outcome.detail and outcome.turns == 0
    assert 1.5 < elapsed < 15, "retried for the window (1.8 s), then gave up"
    assert len([e for e in events if e["event"] == "infra_error"]) >= 3


@pytest.mark.docker
def test_tool_calls_of_a_reply_cut_off_at_max_tokens_are_not_run(agent_container, tmp_path):
    def cut(body):
        if turns_taken(body) == 0:
            return message([tool_use("create", {"path": "half.py", "file_text": "def f(:"})], stop_reason="max_tokens")
        return message([text("done")])

    outcome, requests, events, _ = run_agent(agent_container, tmp_path, cut)
    assert (outcome.ended_by, outcome.turns) == ("end_turn", 2)
    [result] = tool_results(requests[1].body)
    assert result["is_error"] and "cut off at the output token limit" in result_text(result)
    assert "truncated" in [e["event"] for e in events] and "tool_results" not in [e["event"] for e in events]
    _, container = agent_container
    assert container.exec(["test", "-e", "/app/code/half.py"]).exit_code != 0, "the truncated file was not written"


@pytest.mark.docker
def test_the_prompt_is_counted_before_each_call_and_made_to_fit(agent_container, tmp_path):
    def chatty(body):
        turn = turns_taken(body)
        if turn < 5:
            return message([tool_use("bash", {"command": f"seq 1 10{turn}"})])
        return message([text("done")])

    def count(body):  # 100 tokens per tool output still shown
        return 100 * sum(
            1
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result" and ELIDED not in json.dumps(b)
        )

    window = {"context_window_tokens": 16000 + 450, "compact_at_tokens": None}
    with ScriptedServer(chatty, count=count) as server:
        outcome, requests, events, _ = run_agent(agent_container, tmp_path, chatty, server=server, options=window)
        counts = len(server.counts)
    assert (outcome.ended_by, outcome.turns) == ("end_turn", 6), outcome.detail
    assert counts == 6 + 1, "one count per call, and a recount after eliding"
    [compact] = [e for e in events if e["event"] == "compact"]
    assert compact["elided"] == 2, "five outputs do not fit; the oldest two are elided"

    with ScriptedServer(chatty, count=lambda body: 10**6) as server:
        outcome, requests, _, _ = run_agent(agent_container, tmp_path / "huge", chatty, server=server)
    assert (outcome.status, outcome.ended_by, outcome.turns) == ("ok", "context_window", 0)
    assert requests == [], "no call is made with a prompt that cannot fit"


@pytest.mark.docker
def test_fix_continues_the_build_conversation(agent_container, tmp_path):
    chain, container = agent_container
    manifest = AgentManifest(
        name="claude-reference",
        kind="python",
        entrypoint="swechain_ci.agents.anthropic:AnthropicAgent",
        model="claude-sonnet-4-5",
        env=["ANTHROPIC_API_KEY"],
        session="resume",
        options={"max_retries": 0},
    )

    def script(body):
        if turns_taken(body) == 0:  # Build: a tool call, then stopped by the turn limit
            return message([tool_use("bash", {"command": "echo built"}), tool_use("bash", {"command": "echo more"})])
        return message([text("fixed")])

    with ScriptedServer(script) as server:
        manifest.base_url = server.url
        for phase, turns in (("build", 1), ("fix", 5)):
            agent = AnthropicAgent(manifest)  # a new process for each phase: Fix reads the Build's trajectory
            ctx = PhaseContext(
                phase=phase,
                step_index=1,
                prev_version="0.1.0",
                next_version="0.2.0",
                spec="SPEC-TEXT",
                fix_report="REPORT-TEXT" if phase == "fix" else None,
                prompt=f"{phase.upper()}-PROMPT",
                workspace=Workspace(container),
                chain=chain,
                log=tmp_path / "logs" / f"agent-{phase}.log",
                session_id="s1",
                limits=AgentLimits(turns=turns, repeats=2),
                secrets={"ANTHROPIC_API_KEY": "k"},
            )
            outcome = agent.run(ctx)
        requests = list(server.requests)
    assert (outcome.ended_by, outcome.turns) == ("end_turn", 1)
    build_first, fix_first = requests[0].messages, requests[1].messages
    assert fix_first[0] == build_first[0], "the Build task opens the Fix conversation"
    assert [b["input"]["command"] for b in fix_first[1]["content"]] == ["echo built", "echo more"]
    assert [m["role"] for m in fix_first] == ["user", "assistant", "user"], "Build's turn, then the Fix message"
    opening = fix_first[2]["content"]
    results = [b for b in opening if b.get("type") == "tool_result"]
    assert len(results) == 2, "Build's unanswered tool calls get results before the Fix task"
    fix_text = "".join(b.get("text", "") for b in opening if b.get("type") == "text")
    assert "FIX-PROMPT" in fix_text and "REPORT-TEXT" in fix_text and "SPEC-TEXT" not in fix_text


# ---------------------------------------------------------------------------------------------
# tools and cost accounting


@pytest.mark.docker
def test_file_tools_run_in_the_container_as_the_agent_user(agent_container, tmp_path):
    big = "".join(f"line {i} {'x' * 60}\n" for i in range(3000))  # ~200 kB: several base64 chunks
    tricky = "quotes ' \" $HOME `id` \\n and a tab\t and unicode \u00e9\n"
    plan = [
        [
            tool_use("create", {"path": "scratch/big.txt", "file_text": big}),
            tool_use("create", {"path": "scratch/tricky.txt", "file_text": tricky}),
        ],
        [
            tool_use("str_replace", {"path": "scratch/big.txt", "old_str": "line 2999 ", "new_str": "last "}),
            tool_use("str_replace", {"path": "scratch/big.txt", "old_str": "0 x", "new_str": "y"}),
            tool_use("view", {"path": "scratch/tricky.txt"}),
            tool_use("view", {"path": "scratch/big.txt", "view_range": [3000, -1]}),
            tool_use("bash", {"command": "id -u; pwd; sha256sum scratch/big.txt; whoami"}),
            tool_use("view", {"path": "/etc/shadow"}),
            tool_use("create", {"path": "/etc/swechain-test", "file_text": "no"}),
        ],
        [tool_use("bash", {"command": "rm -r scratch"})],
        [text("done")],
    ]

    def script(body):
        return message(plan[turns_taken(body)])

    outcome, requests, _, _ = run_agent(agent_container, tmp_path, script)
    assert (outcome.status, outcome.ended_by) == ("ok", "end_turn")
    created = [result_text(b) for b in tool_results(requests[1].body)]
    assert all(r.startswith("wrote scratch/") for r in created), created
    replaced, ambiguous, tricky_view, tail, shell, shadow, etc = tool_results(requests[2].body)
    assert "replaced 1 occurrence" in result_text(replaced) and not replaced["is_error"]
    assert ambiguous["is_error"] and "occurs 300 times" in result_text(ambiguous)
    assert "lines 1, 11, 21, " in result_text(ambiguous)
    assert result_text(tricky_view) == "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(tricky.splitlines(), 1))
    assert result_text(tail) == f"  3000\tlast {'x' * 60}\n"
    expected = big.replace("line 2999 ", "last ")
    lines = result_text(shell).splitlines()
    assert lines[0] == "1000" and lines[1] == "/app/code" and lines[3] == "agent"
    assert lines[2].split()[0] == hashlib.sha256(expected.encode()).hexdigest()
    assert shadow["is_error"] and etc["is_error"], "no root rights: neither /etc/shadow nor /etc is open"


def test_cost_is_exact_for_a_usage_sequence():
    sequence = [
        TokenUsage(input_tokens=1200, output_tokens=350, cache_write_tokens=5000, cache_read_tokens=0),
        TokenUsage(input_tokens=80, output_tokens=1200, cache_write_tokens=700, cache_read_tokens=5000),
        TokenUsage(input_tokens=50, output_tokens=90, cache_write_tokens=0, cache_read_tokens=5700),
    ]
    # By hand, in millionths of a dollar:
    #   1: 1200*3 + 350*15 + 5000*3.75          = 3600 + 5250 + 18750        = 27600
    #   2: 80*3 + 1200*15 + 700*3.75 + 5000*0.3 = 240 + 18000 + 2625 + 1500  = 22365
    #   3: 50*3 + 90*15 + 5700*0.3              = 150 + 1350 + 1710          = 3210
    prices = load_prices()
    assert prices["claude-sonnet-4-5"] == SONNET
    costs = [prices["claude-sonnet-4-5"].cost(u) for u in sequence]
    assert costs == pytest.approx([0.0276, 0.022365, 0.00321], abs=1e-12)
    assert sum(costs) == pytest.approx(0.053175, abs=1e-12)


@pytest.mark.docker
def test_the_agent_accounts_a_scripted_usage_sequence_exactly(agent_container, tmp_path):
    sequence = [usage(1200, 350, 5000, 0), usage(80, 1200, 700, 5000), usage(50, 90, 0, 5700)]

    def script(body):
        turn = turns_taken(body)
        if turn < 2:
            return message([tool_use("bash", {"command": f"echo {turn}"})], usage_=sequence[turn])
        return message([text("done")], usage_=sequence[turn])

    outcome, _, events, _ = run_agent(agent_container, tmp_path, script)
    assert (outcome.ended_by, outcome.turns) == ("end_turn", 3), outcome.detail
    assert (outcome.input_tokens, outcome.output_tokens) == (1330, 1640)
    assert (outcome.cache_write_tokens, outcome.cache_read_tokens) == (5700, 10700)
    assert outcome.cost_usd == pytest.approx(0.053175, abs=1e-9)
    totals = [e["cost_total_usd"] for e in events if e["event"] == "response"]
    assert totals == pytest.approx([0.0276, 0.049965, 0.053175], abs=1e-9)


def test_a_model_without_a_price_fails_before_any_call():
    manifest = AgentManifest(
        name="x", kind="python", entrypoint="swechain_ci.agents.anthropic:AnthropicAgent", model="claude-unknown-9"
    )
    with pytest.raises(SwechainError, match="no price for model claude-unknown-9"):
        AnthropicAgent(manifest)
    priced = manifest.model_copy(
        update={
            "options": {"prices": {"claude-unknown-9": {"input": 1, "output": 2, "cache_write": 3, "cache_read": 4}}}
        }
    )
    assert AnthropicAgent(priced).price == Price(input=1, output=2, cache_write=3, cache_read=4)
    with pytest.raises(SwechainError, match="options"):
        AnthropicAgent(manifest.model_copy(update={"options": {"max_token": 5}}))


@pytest.mark.docker
def test_a_long_prompt_elides_old_tool_outputs(agent_container, tmp_path):
    def chatty(body):
        turn = turns_taken(body)
        if turn < 5:
            return message([tool_use("bash", {"command": f"seq 1 20{turn}"})], usage_=usage(input_tokens=2000))
        return message([text("done")])

    outcome, requests, events, _ = run_agent(agent_container, tmp_path, chatty, options={"compact_at_tokens": 1000})
    assert (outcome.ended_by, outcome.turns) == ("end_turn", 6)
    users = [m for m in requests[-1].messages if m["role"] == "user"]
    shown = [result_text(tool_results({"messages": [m]})[0]) for m in users[1:]]
    assert [s.startswith("[output elided") for s in shown] == [True, True, False, False, False]
    assert shown[-1].startswith("1\n2\n3\n") and "204" in shown[-1]
    assert "Bump the version." in first_user_text(requests[-1].body), "the task message is never elided"
    assert sum(e["elided"] for e in events if e["event"] == "compact") == 2
