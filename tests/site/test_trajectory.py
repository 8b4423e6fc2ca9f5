"""The trajectory viewer's readers (one test per row of READERS) and the failure judge."""

from __future__ import annotations

import json
import shutil

from conftest import REPO

from swechain_ci.site.trajectory import MAX_TEXT, READERS, read_entries

STREAMS = REPO / "tests" / "fixtures" / "streams"


def kinds(entries) -> list[tuple[str, str]]:
    return [(e.kind, e.title) for e in entries]


def test_the_readers_are_tried_in_this_order():
    assert [name for name, _, _ in READERS] == ["reference agent", "opencode-json", "codex-json", "claude-stream-json"]


def test_reference_agent_trajectory(tmp_path):
    path = tmp_path / "trajectory-build.jsonl"
    events = [
        {"event": "session", "phase": "build", "step": 1},
        {"event": "request", "turn": 1, "message": {"role": "user", "content": [{"type": "text", "text": "Upgrade."}]}},
        {
            "event": "response",
            "turn": 1,
            "content": [
                {"type": "text", "text": "Reading the spec."},
                {"type": "tool_use", "name": "bash", "input": {"command": "cat /app/SPEC.md"}},
            ],
        },
        {
            "event": "tool_results",
            "turn": 2,
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "# Spec", "is_error": False}]},
        },
        {"event": "end", "status": "ok", "ended_by": "agent"},
    ]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    entries = read_entries(path)
    assert kinds(entries) == [
        ("note", "session"),
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "bash"),
        ("tool_result", "result"),
        ("note", "end"),
    ]
    assert entries[3].text == "cat /app/SPEC.md" and entries[3].turn == 1


def test_claude_stream_json():
    entries = read_entries(STREAMS / "claude-stream-json.jsonl")
    assert ("tool_call", "Read") in kinds(entries) and ("tool_result", "result") in kinds(entries)
    assert any(e.kind == "message" and "specification" in e.text for e in entries)
    assert kinds(entries)[-1] == ("note", "result")


def test_codex_json():
    entries = read_entries(STREAMS / "codex-json.jsonl")
    assert kinds(entries) == [
        ("thinking", "assistant"),
        ("tool_call", "shell"),
        ("tool_result", "exit 0"),
        ("tool_call", "file change"),
        ("message", "assistant"),
    ]
    assert entries[1].text == "bash -lc 'cat /app/SPEC.md'"


def test_opencode_json():
    entries = read_entries(STREAMS / "opencode-json.jsonl")
    assert ("tool_call", "bash") in kinds(entries) and ("tool_result", "completed") in kinds(entries)
    assert entries[kinds(entries).index(("tool_call", "bash"))].text.startswith("cat /app/SPEC.md")


def test_hostile_streams_are_bounded_and_junk_is_skipped(tmp_path):
    path = tmp_path / "agent-build.log"
    huge = "x" * (MAX_TEXT * 3)
    lines = [
        "plain stderr text, not an event",
        "{not json",
        "[1, 2]",
        json.dumps({"type": "item.completed", "item": {"type": "agent_message", "text": huge}}),
    ]
    path.write_text("\n".join(lines) + "\n")
    [entry] = read_entries(path)
    assert len(entry.text) < MAX_TEXT + 100 and "more characters" in entry.text


def test_the_failure_judge_picks_a_category_validated_and_cached(tmp_path, monkeypatch):
    from anthropic_server import ScriptedServer, message, tool_use

    from swechain_ci.models import StepRecord
    from swechain_ci.site.failure_judge import NAMES, FailureJudge
    from swechain_ci.specs.llm import make_llm

    record = StepRecord.model_validate_json((REPO / "tests/fixtures/failure_modes/replay-step1.json").read_text())
    entries = read_entries(STREAMS / "codex-json.jsonl")
    answers = iter(
        [
            message([tool_use("failure_category", {"category": "made up", "reason": "x"})]),  # refused, asked again
            message(
                [tool_use("failure_category", {"category": "wrong solution", "reason": "The slug keeps accents."})]
            ),
        ]
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ScriptedServer(lambda body: next(answers)) as server:
        judge = FailureJudge(make_llm(base_url=server.url), cache=tmp_path / "cache")
        verdict = judge(record, entries, {"assertion mismatch": 3})
        again = judge(record, entries, {"assertion mismatch": 3})
        assert len(server.requests) == 2, "one refused answer, one accepted, then the cache"
    assert (verdict.category, verdict.reason) == ("wrong solution", "The slug keeps accents.") and again == verdict
    first = server.requests[0]
    prompt = json.loads(first.messages[0]["content"][0]["text"])
    assert prompt["last_turns"][-1] == {"kind": "message", "who": "assistant", "text": "The upgrade is done."}
    assert prompt["failing_tests_by_mode"] == {"assertion mismatch": 3}
    system = first.body["system"]
    system = system if isinstance(system, str) else " ".join(b["text"] for b in system)
    assert all(name in system for name in NAMES), "the judge is told every category"
    assert judge(record, [], {}) is None, "no trajectory, nothing to judge"


def test_judged_steps_are_shown_and_counted_per_agent(tmp_path, monkeypatch):
    from test_site import make_run

    from swechain_ci.scoring.leaderboard import build_leaderboard
    from swechain_ci.site.build import build_site, run_page_name
    from swechain_ci.site.failure_judge import Verdict

    runs = tmp_path / "runs"
    folder = make_run(runs, "replay", "toy", ["replay-step1", "replay-step2"])
    for step in sorted((folder / "steps").iterdir()):
        (step / "logs").mkdir(exist_ok=True)
        shutil.copyfile(STREAMS / "codex-json.jsonl", step / "logs" / "agent-build.log")
        shutil.copyfile(STREAMS / "codex-json.jsonl", step / "logs" / "agent-fix.log")

    def judge(record, entries, counts):
        assert entries, "the judge gets the phase's trajectory"
        return Verdict("tool error" if record.index == 1 else "wrong solution", "<b>because</b>")

    site = tmp_path / "site"
    build_site(site, build_leaderboard([runs]), [], "2026-W49", judge=judge)
    index = (site / "index.html").read_text()
    assert "Why agents fail" in index and "<th>tool error</th>" in index
    page = (site / run_page_name("replay", "toy")).read_text()
    assert page.count('<span class="category">') == 2 and "&lt;b&gt;because&lt;/b&gt;" in page
