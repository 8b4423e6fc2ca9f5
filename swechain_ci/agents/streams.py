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
  ``exec resume`` takes); each ``turn.completed`` carries ``usage`` with ``input_tokens``
  (cached ones included), ``cached_input_tokens`` and ``output_tokens``, and no dollars;
  ``turn.failed`` and ``error`` carry messages.
- ``opencode-json``: ``opencode run --format json``. Every event has ``sessionID``; each
  ``step_finish`` part carries ``cost`` and ``tokens`` {input, output, reasoning,
  cache: {read, write}}; ``error`` events carry the provider's error.

Dollars come from the CLI where it reports them (Claude Code's result, OpenCode's steps),
else from ``prices.yaml`` over the tokens (Codex, and Claude Code before its result).
"""

from __future__ import annotations

import json
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
    messages: dict[str, TokenUsage] = field(default_factory=dict)  # claude: usage per message id


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


def codex_json(event: dict[str, Any], tally: Tally) -> None:
    kind = event.get("type")
    if kind == "thread.started" and isinstance(event.get("thread_id"), str):
        tally.session = event["thread_id"]
    elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
        usage = event["usage"]
        cached = _int(usage.get("cached_input_tokens"))
        tally.usage.add(
            TokenUsage(
                input_tokens=max(_int(usage.get("input_tokens")) - cached, 0),
                output_tokens=_int(usage.get("output_tokens")),
                cache_read_tokens=cached,
            )
        )
        tally.turns += 1
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


PARSERS: dict[str, Callable[[dict[str, Any], Tally], None]] = {
    "claude-stream-json": claude_stream_json,
    "codex-json": codex_json,
    "opencode-json": opencode_json,
}


class LiveParse:
    """Feed it the agent's output as it arrives; it keeps the tally. Lines that are not JSON
    objects (stderr, progress) are passed over."""

    def __init__(self, stream: str, price: Price | None) -> None:
        self.parse = PARSERS[stream]
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
    def cost_usd(self) -> float | None:
        if self.tally.reported_cost is not None:
            return self.tally.reported_cost
        return self.price.cost(self.tally.usage) if self.price else None

    @property
    def cost_source(self) -> str | None:
        if self.tally.reported_cost is not None:
            return "cli"
        return "prices" if self.price else None
