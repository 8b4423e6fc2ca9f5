"""What an agent did, turn by turn: its recorded stream read into entries the run pages show.

Four recorded shapes, recognised line by line by an ordered table (the first row whose test
matches a JSON line reads it): the reference agent's ``trajectory-<phase>.jsonl`` and the
event streams of the three vendor CLIs in the phase log (Claude Code's ``stream-json``,
Codex's ``exec --json``, OpenCode's ``run --format json``). Everything here is agent output,
so hostile: each text is bounded, the entries are bounded, and the templates escape it all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_READ_BYTES = 4 << 20  # of one recorded file
MAX_TEXT = 4000  # characters of one entry
MAX_ENTRIES = 1500  # per phase


@dataclass
class Entry:
    kind: str  # "message", "thinking", "tool_call", "tool_result", "note"
    title: str  # who or what: "assistant", "user", a tool's name, "bash", ...
    text: str
    turn: int | None = None


def _bounded(text: object) -> str:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"\n[… {len(value) - MAX_TEXT:,} more characters]"


def _tool_input(name: str, data: Any) -> str:
    if isinstance(data, dict):
        for key in ("command", "cmd", "file_path", "path", "pattern"):
            if isinstance(data.get(key), str | list):
                shown = data[key] if isinstance(data[key], str) else " ".join(map(str, data[key]))
                rest = {k: v for k, v in data.items() if k != key}
                return shown + (f"\n{json.dumps(rest, ensure_ascii=False)}" if rest else "")
    return json.dumps(data, ensure_ascii=False, default=str)


def _content_blocks(blocks: Any, role: str, turn: int | None) -> Iterator[Entry]:
    """Anthropic-style content blocks (the reference agent and Claude Code share them)."""
    if isinstance(blocks, str):
        yield Entry("message", role, _bounded(blocks), turn)
        return
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield Entry("message", role, _bounded(block.get("text", "")), turn)
        elif kind == "thinking":
            yield Entry("thinking", role, _bounded(block.get("thinking", "")), turn)
        elif kind == "tool_use":
            name = str(block.get("name", "tool"))
            yield Entry("tool_call", name, _bounded(_tool_input(name, block.get("input"))), turn)
        elif kind == "tool_result":
            content = block.get("content")
            if isinstance(content, list):
                content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            yield Entry(
                "tool_result", "result" + (" (error)" if block.get("is_error") else ""), _bounded(content), turn
            )


def _reference(event: dict[str, Any]) -> Iterator[Entry]:
    kind, turn = event.get("event"), event.get("turn")
    if kind == "session":
        yield Entry("note", "session", _bounded(f"{event.get('phase')} of step {event.get('step')}"), turn)
    elif kind == "response":
        yield from _content_blocks(event.get("content"), "assistant", turn)
    elif kind in ("request", "tool_results", "truncated"):
        message = event.get("message") or {}
        yield from _content_blocks(message.get("content"), "user", turn)
    elif kind in ("error", "warning", "compact", "resume", "end"):
        details = {k: v for k, v in event.items() if k not in ("event", "t", "traceback")}
        yield Entry("note", str(kind), _bounded(details), turn)


def _claude(event: dict[str, Any]) -> Iterator[Entry]:
    kind = event.get("type")
    if kind in ("assistant", "user"):
        yield from _content_blocks((event.get("message") or {}).get("content"), str(kind), None)
    elif kind == "result":
        yield Entry("note", "result", _bounded(event.get("result") or event.get("subtype") or ""), None)
    elif kind == "system":
        yield Entry("note", "session", _bounded(f"{event.get('subtype')}: model {event.get('model')}"), None)


def _codex(event: dict[str, Any]) -> Iterator[Entry]:
    if event.get("type") != "item.completed":
        if event.get("type") in ("turn.failed", "error"):
            yield Entry("note", "error", _bounded(event.get("error") or event.get("message") or event), None)
        return
    item = event.get("item") or {}
    kind = item.get("type")
    if kind == "agent_message":
        yield Entry("message", "assistant", _bounded(item.get("text", "")), None)
    elif kind == "reasoning":
        yield Entry("thinking", "assistant", _bounded(item.get("text", "")), None)
    elif kind == "command_execution":
        yield Entry("tool_call", "shell", _bounded(item.get("command", "")), None)
        output = item.get("aggregated_output", "")
        yield Entry("tool_result", f"exit {item.get('exit_code')}", _bounded(output), None)
    elif kind == "file_change":
        changes = item.get("changes") or []
        listed = "\n".join(f"{c.get('kind')} {c.get('path')}" for c in changes if isinstance(c, dict))
        yield Entry("tool_call", "file change", _bounded(listed), None)


def _opencode(event: dict[str, Any]) -> Iterator[Entry]:
    part = event.get("part") or {}
    kind = event.get("type")
    if kind == "text":
        yield Entry("message", "assistant", _bounded(part.get("text", "")), None)
    elif kind == "tool_use":
        state = part.get("state") or {}
        name = str(part.get("tool", "tool"))
        yield Entry("tool_call", name, _bounded(_tool_input(name, state.get("input"))), None)
        yield Entry("tool_result", str(state.get("status", "result")), _bounded(state.get("output", "")), None)
    elif kind == "error":
        yield Entry("note", "error", _bounded(event.get("error") or part), None)


# Ordered: the first row whose test holds reads the line.
READERS: list[tuple[str, Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], Iterator[Entry]]]] = [
    ("reference agent", lambda e: isinstance(e.get("event"), str), _reference),
    ("opencode-json", lambda e: "sessionID" in e and "part" in e, _opencode),
    ("codex-json", lambda e: isinstance(e.get("type"), str) and "." in e["type"], _codex),
    ("claude-stream-json", lambda e: e.get("type") in ("system", "assistant", "user", "result"), _claude),
]


def read_entries(path: Path) -> list[Entry]:
    """The entries of one recorded file; lines that are not one of the known shapes are skipped."""
    with path.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES)
    entries: list[Entry] = []
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        for _, test, reader in READERS:
            if test(event):
                entries.extend(reader(event))
                break
        if len(entries) >= MAX_ENTRIES:
            entries = entries[:MAX_ENTRIES]
            entries.append(Entry("note", "cut", f"the site shows the first {MAX_ENTRIES} entries"))
            break
    return entries
