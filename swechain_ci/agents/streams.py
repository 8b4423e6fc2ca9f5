"""The vendor CLIs' JSON event streams, parsed live: turns, tokens, dollars, session, errors.

A manifest names its format (``stream:``); ``PARSERS`` maps each format to a function that
folds one event into a ``Tally``. The formats, as their vendors document them (samples in
tests/fixtures/streams/):

- ``claude-stream-json``: ``claude -p --output-format stream-json --verbose``. ``assistant``
  events carry the API message with its ``usage`` (one event per content block, so a
  message id counts once); the final ``result`` event carries ``num_turns``,
  ``total_cost_usd``, the session's ``usage`` and, on error, ``is_error`` and a ``subtype``
  (``error_max_turns``, ``error_max_budget_usd``, ``error_during_execution``).
- ``codex-json``: ``codex exec --json``. ``thread.started`` names the thread (the session
  ``exec resume`` takes); ``item.started``/``item.completed`` carry what the model did
  (messages, commands, patches: a turn each, counted live); each ``turn.completed`` (one per
  exec) carries ``usage`` with ``input_tokens`` (cached ones included),
  ``cached_input_tokens`` and ``output_tokens``, and no dollars;
  ``turn.failed`` and ``error`` carry messages.
- ``opencode-json``: ``opencode run --format json``. Every event has ``sessionID``; each
  ``step_finish`` part carries ``cost`` and ``tokens`` {input, output, reasoning,
  cache: {read, write}}; ``error`` events carry the provider's error.

Dollars come from the CLI where it reports them (Claude Code's result, OpenCode's steps),
else from ``prices.yaml`` over the tokens (Codex, and Claude Code before its result).

A Fix that resumes the Build's session is charged its own share only: what a format reports
for the whole session rather than for the run at hand (``SESSION_TOTALS``) has the Build's
figures (a ``Baseline``) taken off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swechain_ci.prices import Price, TokenUsage

MAX_LINE = 4_000_000  # longer lines (a huge tool output) are skipped, not buffered without bound


@dataclass
class Tally:
    turns: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    reported_cost: float | None = None
    session: str | None = None
    errors: list[str] = field(default_factory=list)
    cli_limit: str | None = None  # the CLI stopped itself at a limit of its own: turns or cost_usd
    unreadable: dict[str, str] = field(default_factory=dict)  # task input -> why the CLI's read of it failed
    reads: dict[str, str] = field(default_factory=dict)  # tool call id -> the task input it reads
    messages: dict[str, TokenUsage] = field(default_factory=dict)  # claude: usage per message id; codex: items


# The task's inputs outside the code folder: a phase whose CLI could not read one worked blind.
TASK_INPUTS = ("/app/SPEC.md", "/app/FIX_REPORT.md")
REFUSED = re.compile(r"permission|denied|rejected|prevents you from using|not allowed", re.IGNORECASE)


def _read_result(tally: Tally, path: str | None, ok: bool, text: str) -> None:
    """A read tool's result for ``path``: a refusal marks a task input unreadable, a success clears it."""
    if path not in TASK_INPUTS:
        return
    if ok:
        tally.unreadable.pop(path, None)
    elif REFUSED.search(text):
        tally.unreadable[path] = text[:300]


def _mapping(value: Any) -> dict[str, Any]:
    """An event's object field, or an empty one when it is missing or not an object."""
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _error_text(value: Any) -> str:
    return (value if isinstance(value, str) else json.dumps(value, default=str))[:2000]


def claude_stream_json(event: dict[str, Any], tally: Tally) -> None:
    kind = event.get("type")
    if isinstance(event.get("session_id"), str):
        tally.session = event["session_id"]
    content = (event.get("message") or {}).get("content") if isinstance(event.get("message"), dict) else None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
            path = block["input"].get("file_path")
            if block.get("name") == "Read" and isinstance(path, str):
                tally.reads[str(block.get("id"))] = path
        elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in tally.reads:
            content = block.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            _read_result(tally, tally.reads[str(block["tool_use_id"])], not block.get("is_error"), text)
    if kind == "assistant" and isinstance(event.get("message"), dict):
        message = event["message"]
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        key = str(message.get("id") or f"anonymous-{len(tally.messages)}")
        tally.messages[key] = TokenUsage(
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        )
        tally.turns = len(tally.messages)
        total = TokenUsage()
        for part in tally.messages.values():
            total.add(part)
        tally.usage = total
    elif kind == "result":
        usage = event.get("usage") if isinstance(event.get("usage"), dict) else None
        if usage is not None:
            tally.usage = TokenUsage(
                input_tokens=_int(usage.get("input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
                cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
            )
        if isinstance(event.get("num_turns"), int):
            tally.turns = event["num_turns"]
        if isinstance(event.get("total_cost_usd"), (int, float)):
            tally.reported_cost = float(event["total_cost_usd"])
        subtype = str(event.get("subtype", ""))
        if "max_turns" in subtype:
            tally.cli_limit = "turns"
        elif "budget" in subtype:
            tally.cli_limit = "cost_usd"
        elif event.get("is_error"):
            tally.errors.append(_error_text(event.get("result") or event.get("errors") or subtype))


CODEX_MODEL_ITEMS = frozenset(
    {"agent_message", "command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
)


def codex_json(event: dict[str, Any], tally: Tally) -> None:
    kind = event.get("type")
    if kind == "thread.started" and isinstance(event.get("thread_id"), str):
        tally.session = event["thread_id"]
    elif kind in ("item.started", "item.completed") and isinstance(event.get("item"), dict):
        # Usage comes only when the exec ends, so turns are counted live, one per thing the
        # model did (a message, a command, a patch, a tool call), each item id once.
        item = event["item"]
        if item.get("type") in CODEX_MODEL_ITEMS:
            tally.messages.setdefault(str(item.get("id") or f"anonymous-{len(tally.messages)}"), TokenUsage())
            tally.turns = len(tally.messages)
    elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
        usage = event["usage"]
        cached = _int(usage.get("cached_input_tokens"))
        tally.usage.add(
            TokenUsage(
                input_tokens=max(_int(usage.get("input_tokens")) - cached, 0),
                output_tokens=_int(usage.get("output_tokens")),
                cache_read_tokens=cached,
                cache_write_tokens=_int(usage.get("cache_write_input_tokens")),
            )
        )
    elif kind == "turn.failed":
        error = event.get("error")
        tally.errors.append(_error_text(error.get("message") if isinstance(error, dict) else error))
    elif kind == "error":
        tally.errors.append(_error_text(event.get("message")))


def opencode_json(event: dict[str, Any], tally: Tally) -> None:
    kind = event.get("type")
    if isinstance(event.get("sessionID"), str):
        tally.session = event["sessionID"]
    part = _mapping(event.get("part"))
    state = _mapping(part.get("state"))
    if kind == "tool_use" and part.get("tool") == "read" and isinstance(state.get("input"), dict):
        path = state["input"].get("filePath")
        _read_result(tally, path, state.get("status") == "completed", _error_text(state.get("error", "")))
    if kind == "step_finish":
        tokens = _mapping(part.get("tokens"))
        cache = _mapping(tokens.get("cache"))
        tally.usage.add(
            TokenUsage(
                input_tokens=_int(tokens.get("input")),
                output_tokens=_int(tokens.get("output")) + _int(tokens.get("reasoning")),
                cache_read_tokens=_int(cache.get("read")),
                cache_write_tokens=_int(cache.get("write")),
            )
        )
        if isinstance(part.get("cost"), (int, float)):
            tally.reported_cost = (tally.reported_cost or 0.0) + float(part["cost"])
        tally.turns += 1
    elif kind == "error":
        tally.errors.append(_error_text(event.get("error")))


# Per format, what a resumed session reports cumulatively (for the session), measured with the
# pinned CLIs: Claude Code 2.1.332's total_cost_usd (its usage and num_turns are the run's own);
# Codex 0.171.0's turn.completed usage.
SESSION_TOTALS: dict[str, frozenset[str]] = {
    "claude-stream-json": frozenset({"cost"}),
    "codex-json": frozenset({"tokens"}),
    "opencode-json": frozenset(),
}


@dataclass(frozen=True)
class Baseline:
    """What the Build's stream reported, taken off a resumed Fix's session totals."""

    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float | None = None  # dollars the CLI reported (None where they came from prices)


def _less(total: TokenUsage, part: TokenUsage) -> TokenUsage:
    return TokenUsage(
        input_tokens=max(total.input_tokens - part.input_tokens, 0),
        output_tokens=max(total.output_tokens - part.output_tokens, 0),
        cache_write_tokens=max(total.cache_write_tokens - part.cache_write_tokens, 0),
        cache_read_tokens=max(total.cache_read_tokens - part.cache_read_tokens, 0),
    )


PARSERS: dict[str, Callable[[dict[str, Any], Tally], None]] = {
    "claude-stream-json": claude_stream_json,
    "codex-json": codex_json,
    "opencode-json": opencode_json,
}


class LiveParse:
    """Feed it the agent's output as it arrives; it keeps the tally. Lines that are not JSON
    objects (stderr, progress) are passed over."""

    def __init__(self, stream: str, price: Price | None, baseline: Baseline | None = None) -> None:
        self.parse = PARSERS[stream]
        self.totals = SESSION_TOTALS[stream] if baseline else frozenset()
        self.baseline = baseline or Baseline()
        self.price = price
        self.tally = Tally()
        self.pending = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> None:
        self.pending.extend(chunk)
        while (end := self.pending.find(b"\n")) >= 0:
            line = bytes(self.pending[:end])
            del self.pending[: end + 1]
            if self.skipping:
                self.skipping = False
                continue
            self.line(line)
        if len(self.pending) > MAX_LINE:
            self.pending.clear()
            self.skipping = True

    def finish(self) -> Tally:
        if self.pending and not self.skipping:
            self.line(bytes(self.pending))
        self.pending.clear()
        return self.tally

    def line(self, raw: bytes) -> None:
        text = raw.strip()
        if not text.startswith(b"{"):
            return
        try:
            event = json.loads(text)
        except ValueError:
            return
        if isinstance(event, dict):
            self.parse(event, self.tally)

    @property
    def usage(self) -> TokenUsage:
        """This run's own tokens."""
        if "tokens" in self.totals:
            return _less(self.tally.usage, self.baseline.usage)
        return self.tally.usage

    @property
    def cost_usd(self) -> float | None:
        """This run's own dollars."""
        reported = self.tally.reported_cost
        if reported is not None:
            if "cost" in self.totals and self.baseline.cost is not None:
                return max(reported - self.baseline.cost, 0.0)
            return reported
        return self.price.cost(self.usage) if self.price else None

    @property
    def cost_source(self) -> str | None:
        if self.tally.reported_cost is not None:
            return "cli"
        return "prices" if self.price else None
