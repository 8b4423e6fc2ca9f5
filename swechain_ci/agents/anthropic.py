"""The reference agent: Claude through the Anthropic Messages API, with four tools.

The model runs on the host; every tool it calls runs INSIDE the persistent agent
container, as the non-root agent user, in /app/code (``Workspace.shell``). The host
file system is never touched on the model's behalf, and the API key never enters the
container. Tools:

- ``bash`` {command}: one fresh ``bash -c`` per call, ended (process tree and all) at
  ``limits.command_s`` or at the phase's wall clock, whichever comes first;
- ``view`` {path, view_range?}: a file with line numbers, or a directory listing;
- ``str_replace`` {path, old_str, new_str}: replace a string that occurs exactly once;
- ``create`` {path, file_text}: create or overwrite a file.

File contents cross the shell as base64 (``printf %s <b64> | base64 -d``), in chunks
below the kernel's limit on one argument, so no content is ever parsed by a shell.

Build starts a new conversation; Fix continues the Build conversation of its step (the
same session id; kept in memory, or read back from the Build's trajectory when the Fix runs
in another process), with the Fix prompt and the error report as the next user message. A
phase ends, with ``ended_by`` set, at:

======================  ===============  =========================================
ended_by                status           when
======================  ===============  =========================================
``end_turn``            ok               the model stops of its own accord
``limit`` (turns)       ok               ``limits.turns`` model turns were taken
``limit`` (cost_usd)    ok               ``limits.cost_usd`` dollars were spent
``repetition``          ok               the identical tool call ``limits.repeats``
                                         times in a row (the last is not run)
``refusal``             ok               the model refused (stop_reason refusal)
``context_window``      ok               the prompt no longer fits the context window,
                                         even with old tool outputs elided
``limit`` (wall_s)      timed_out        ``limits.wall_s`` passed
``infra``               infra_error      overload, rate limits, server or network
                                         errors (agents/triage.py) that persisted for
                                         ``options.infra_retry_minutes``
``api_error``           crashed          any other API error the SDK's retries did not cure
``error``               crashed          anything else (e.g. the container died)
======================  ===============  =========================================

Infrastructure errors are retried with exponential backoff (2 s, doubling up to 60 s) for
``infra_retry_minutes`` after the first failure, on top of the SDK's own short retries;
then the phase is ``infra_error``, which pauses the run without scoring the step.

Before every call the prompt is counted (``messages.count_tokens``, free); a prompt over
``context_window_tokens`` minus ``max_tokens`` has all old tool outputs elided first. A
response cut off at ``max_tokens`` may hold a truncated tool call: its tool calls are not
run, each gets an error result asking for a shorter call.

A turn, cost or repetition limit ends a session that leaves its code in place, so it
is "ok": the code is scored as it stands and the chain goes on. Only the wall clock
(like a cli agent's) and failures are not ok, and a not-ok agent stops the chain.
Turn and cost limits are checked before each model call, so the last call may
overshoot the cost limit by its own cost; the tool calls of the last turn are run.

The wall clock is checked before each model call and each tool, bounds each tool's
time-out, and bounds every HTTP attempt (an SDK middleware gives each attempt at most
the time that is left, and refuses to start one when none is left).

Cost is computed from every response's usage (input, output, cache writes, cache
reads) with ``prices.yaml`` (dollars per million tokens), which ``options.prices``
may extend or override with entries of the same shape. A model without a price is
an error before any call.

Every event (session start, the messages each request adds, each response's content
blocks with usage and cost so far, tool results, the end) is appended to
``trajectory-<phase>.jsonl`` beside the phase log and flushed at once, so a crash
loses nothing already done. The phase log gets a readable transcript, bounded by
``limits.output_bytes``.

Manifest ``options`` (all optional): ``max_tokens`` (16000), ``temperature``,
``max_retries`` (SDK retries per call, 3), ``request_timeout_s`` (600, per HTTP
attempt), ``tool_output_chars`` (30000, tool output shown to the model),
``prompt_caching`` (true: cache breakpoints on the system prompt and the last two
user messages), ``compact_at_tokens`` (150000: once a prompt is this long, old tool
outputs are elided; null: never), ``prices`` ({model: {input, output, cache_write, cache_read}}),
``infra_retry_minutes`` (30), ``infra_backoff_first_s`` (2), ``context_window_tokens`` (200000),
``count_tokens`` (true).
"""

from __future__ import annotations

import json
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anthropic
from anthropic.types import MessageParam, ToolParam
from pydantic import Field, ValidationError

from swechain_ci.agents.base import CODE_DIR, FIX_REPORT_FILE, SPEC_FILE, PhaseContext
from swechain_ci.agents.manifest import AgentManifest
from swechain_ci.agents.tools import ContainerTools, ToolResult
from swechain_ci.agents.triage import classify
from swechain_ci.errors import SwechainError, describe_validation
from swechain_ci.models import AgentOutcome, Strict
from swechain_ci.prices import PRICES_FILE, TokenUsage, load_prices, prices_date
from swechain_ci.records import trajectory_name

SDK_DIR = Path(anthropic.__file__).parent
# Tool outputs of the last user messages that context compaction leaves alone.
KEEP_RECENT = 3
ELIDED = "[output elided to save context; run the tool again if you need it]"
TRUNCATED = (
    "[not run: your reply was cut off at the output token limit, so this call may be incomplete; "
    "send it again, shorter (e.g. split a large file into several edits)]"
)
UNANSWERED = "[not run: the session ended before this call]"
BACKOFF_FIRST_S, BACKOFF_MAX_S = 2.0, 60.0

SYSTEM_PROMPT = """\
You are a careful software engineer maintaining the Python package {package} \
(import name `{import_name}`), whose code is in {code_dir} (the package itself under \
`{source_root}`).

You work through tools that run inside a sandbox as an unprivileged user:
- `bash` runs one command with `bash -c` in {code_dir}; every call is a fresh shell \
(no state such as `cd` or variables carries over) and is ended after {command_s} seconds. \
There is no network.
- `view` shows a file with line numbers, or lists a directory.
- `str_replace` replaces a string that occurs exactly once in a file.
- `create` creates or overwrites a file with the given text.
Relative paths are relative to {code_dir}.

The specification of the upgrade is in {spec_file} and in the first message. Read the \
code before you change it, make the changes the specification asks for, keep what it \
does not change working, and check your work (for example by importing the package and \
running small examples or tests of your own). When the work is done, reply with a short \
summary and no tool call."""

TOOLS: list[dict[str, Any]] = [
    {
        "name": "bash",
        "description": (
            "Run a shell command with `bash -c` in the code folder, as an unprivileged user without network. "
            "Each call is a new shell: working directory and variables do not persist. Output (stdout and "
            "stderr together) is cut after a limit; use head, tail or grep on long output. Long-running or "
            "interactive commands are ended at the command time limit."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command to run"}},
            "required": ["command"],
        },
    },
    {
        "name": "view",
        "description": (
            "Show a text file with line numbers (optionally only lines view_range [start, end], 1-based, "
            "end -1 meaning the last line), or list a directory two levels deep (hidden entries left out)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file or directory, absolute or relative to the code folder"},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "[start, end] line numbers, 1-based and inclusive; end -1 = to the end",
                },
            },
            "required": ["path"],
        },
    },
    {
        "name": "str_replace",
        "description": (
            "Replace old_str with new_str in a file. old_str must match the file's text exactly, whitespace "
            "included, and occur exactly once; include enough context to make it unique."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_str": {"type": "string", "description": "the exact text to replace; occurs exactly once"},
                "new_str": {"type": "string", "description": "the replacement (may be empty)"},
            },
            "required": ["path", "old_str", "new_str"],
        },
    },
    {
        "name": "create",
        "description": "Create a file with the given text, or overwrite it; missing parent folders are made.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "file_text": {"type": "string", "description": "the complete content of the file"},
            },
            "required": ["path", "file_text"],
        },
    },
]

# The conversation and the tools are kept as plain JSON (a session is saved and resumed); the SDK's
# TypedDicts describe the same wire shapes, so they are taken as those at the SDK's door.
TOOL_PARAMS = cast("list[ToolParam]", TOOLS)


def as_message_params(messages: list[dict[str, Any]]) -> list[MessageParam]:
    return cast("list[MessageParam]", messages)


# ---------------------------------------------------------------------------------------------
# options


class AnthropicOptions(Strict):
    max_tokens: int = Field(16000, gt=0)
    max_retries: int = Field(3, ge=0)
    request_timeout_s: float = Field(600, gt=0)
    tool_output_chars: int = Field(30_000, ge=1000)
    prompt_caching: bool = True
    compact_at_tokens: int | None = Field(150_000, gt=0)
    prices: dict[str, Any] = Field(default_factory=dict)
    infra_retry_minutes: float = Field(30, ge=0, description="how long infrastructure errors are retried")
    infra_backoff_first_s: float = Field(BACKOFF_FIRST_S, gt=0, description="the first wait; it doubles to 60 s")
    context_window_tokens: int = Field(200_000, gt=0)
    count_tokens: bool = Field(True, description="count the prompt before each call")


class WallClockPassed(Exception):
    """Raised by the request middleware when the phase has no time left; never retried."""


def deadline_middleware(deadline: float):
    """Per HTTP attempt (inside the SDK's retry loop): refuse to start once the wall clock
    has passed, and give the attempt no more time than is left."""

    def guard(request, call_next):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WallClockPassed("no time left for another API attempt")
        current = request.timeout
        limit = current if isinstance(current, (int, float)) else None
        return call_next(request.copy(timeout=min(limit, remaining) if limit else remaining))

    return guard


# ---------------------------------------------------------------------------------------------
# records


class Trajectory:
    """JSON lines, each appended and flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, "t": round(time.time(), 3), **fields}, default=str, ensure_ascii=False)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()


class PhaseLog:
    """A readable transcript in the phase's log, kept to ``limit`` bytes."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit, self.written, self.truncated = path, limit, 0, False
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, text: str) -> None:
        if self.truncated:
            return
        data = text.encode("utf-8", errors="replace")
        room = self.limit - self.written
        if len(data) > room:
            data = data[: max(room, 0)] + b"\n[log cut: limits.output_bytes reached]\n"
            self.truncated = True
        with open(self.path, "ab") as handle:
            handle.write(data)
        self.written += len(data)


def block_dict(block: Any) -> dict[str, Any]:
    """A response content block as request content (only what the API takes back)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return block.model_dump(mode="json", exclude_none=True)


def build_conversation(ctx: PhaseContext) -> list[dict[str, Any]] | None:
    """The Build conversation of this step's session, from its trajectory (beside the phase
    log; written by the harness, never by the agent), for a Fix run by another process."""
    path = ctx.log.with_name(trajectory_name("build"))
    if not path.is_file():
        return None
    messages: list[dict[str, Any]] = []
    session = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "session":
            session = event.get("session_id")
        elif kind in ("request", "tool_results", "truncated"):
            messages.append(event["message"])
        elif kind == "response":
            messages.append({"role": "assistant", "content": event["content"]})
    return messages if session == ctx.session_id and messages else None


def first_message(ctx: PhaseContext, resumed: bool = False) -> str:
    """The phase's task; a resumed Fix has the specification in its conversation already."""
    parts = [ctx.prompt.strip()]
    if not resumed:
        parts.append(f'<specification file="{SPEC_FILE}">\n{ctx.spec.strip()}\n</specification>')
    if ctx.phase == "fix" and ctx.fix_report:
        parts.append(f'<fix_report file="{FIX_REPORT_FILE}">\n{ctx.fix_report.strip()}\n</fix_report>')
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# the agent


class AnthropicAgent:
    """``kind: python`` entry point: ``swechain_ci.agents.anthropic:AnthropicAgent``."""

    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self.name = manifest.name
        try:
            self.options = AnthropicOptions.model_validate(manifest.options)
        except ValidationError as exc:
            raise SwechainError(describe_validation(f"agent {manifest.name}: options", exc)) from None
        if not manifest.model:
            raise SwechainError(
                f"agent {manifest.name}: the manifest names no model; set model: (e.g. claude-sonnet-4-5)"
            )
        prices = load_prices(self.options.prices, f"agent {manifest.name}: options.prices")
        if manifest.model not in prices:
            raise SwechainError(
                f"agent {manifest.name}: no price for model {manifest.model} in {PRICES_FILE} (known: "
                f"{', '.join(sorted(prices))}); add one under options.prices as "
                "{input, output, cache_write, cache_read} in dollars per million tokens"
            )
        self.price = prices[manifest.model]
        self.model: str = manifest.model
        # session id -> the conversation so far; Fix continues its step's Build conversation.
        self.conversations: dict[str, list[dict[str, Any]]] = {}

    def client(self, ctx: PhaseContext, deadline: float) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key=ctx.secrets.get("ANTHROPIC_API_KEY"),
            base_url=self.manifest.base_url or None,  # None: the SDK honours ANTHROPIC_BASE_URL
            max_retries=self.options.max_retries,
            timeout=self.options.request_timeout_s,
            middleware=[deadline_middleware(deadline)],
        )

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        return Session(self, ctx).run()


@dataclass
class Session:
    agent: AnthropicAgent
    ctx: PhaseContext
    turns: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        ctx = self.ctx
        self.started = time.monotonic()
        self.deadline = self.started + ctx.limits.wall_s
        self.trajectory = Trajectory(ctx.log.with_name(trajectory_name(ctx.phase)))
        self.log = PhaseLog(ctx.log, ctx.limits.output_bytes)
        self.tools = ContainerTools(ctx, self.agent.options.tool_output_chars)
        config = ctx.chain.config
        self.system = SYSTEM_PROMPT.format(
            package=config.package,
            import_name=config.import_name,
            code_dir=CODE_DIR,
            source_root=config.source_root,
            command_s=ctx.limits.command_s,
            spec_file=SPEC_FILE,
        )
        self.last_call: str | None = None
        self.warned: set[str] = set()
        self.repeats = 0
        self.prompt_tokens = 0
        self.counted = 0

    # -- bookkeeping ---------------------------------------------------------------------------

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def end(
        self, ended_by: str, status: str = "ok", detail: str = "", limit: str | None = None, infra: str | None = None
    ) -> AgentOutcome:
        self.agent.conversations[self.ctx.session_id] = self.messages
        outcome = AgentOutcome(
            status=status,
            ended_by=ended_by,
            limit=limit,
            infra=infra,
            detail=detail[:2000],
            turns=self.turns,
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            cache_read_tokens=self.usage.cache_read_tokens,
            cache_write_tokens=self.usage.cache_write_tokens,
            cost_usd=round(self.cost_usd, 6),
            cost_source="prices",
            prices_date=prices_date(),
            output_truncated=self.log.truncated,
        )
        self.trajectory.append(
            "end", **outcome.model_dump(exclude={"wall_s"}), elapsed_s=round(time.monotonic() - self.started, 3)
        )
        self.log.write(f"\n== session ended: {ended_by} ({status}) {detail}\n")
        return outcome

    def request_messages(self) -> tuple[Any, list[dict[str, Any]]]:
        """System and messages for the next call; with caching on, breakpoints on the
        system prompt and on the last block of the last two user messages."""
        if not self.agent.options.prompt_caching:
            return self.system, self.messages
        system = [{"type": "text", "text": self.system, "cache_control": {"type": "ephemeral"}}]
        messages = list(self.messages)
        users = [i for i, m in enumerate(messages) if m["role"] == "user"][-2:]
        for i in users:
            content = list(messages[i]["content"])
            content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}
            messages[i] = {**messages[i], "content": content}
        return system, messages

    def compact(self, force: bool = False) -> int:
        """Once the last prompt reached ``compact_at_tokens`` (or when forced: the prompt does
        not fit), the outputs of all but the last KEEP_RECENT tool-result messages are elided,
        for good (so the prompt cache holds again from there on). The task message is never
        touched. Returns how many outputs were elided."""
        limit = self.agent.options.compact_at_tokens
        if not force and (limit is None or self.prompt_tokens < limit):
            return 0
        elided = 0
        users = [i for i, m in enumerate(self.messages) if m["role"] == "user"]
        for i in users[1:-KEEP_RECENT]:
            for block in self.messages[i]["content"]:
                if block.get("type") != "tool_result":
                    continue
                shown = "".join(b.get("text", "") for b in block["content"])
                if shown != ELIDED and len(shown) > len(ELIDED):
                    block["content"] = [{"type": "text", "text": ELIDED}]
                    elided += 1
        if elided:
            self.trajectory.append("compact", turn=self.turns + 1, prompt_tokens=self.prompt_tokens, elided=elided)
            self.log.write(f"[compact] prompt of {self.prompt_tokens} tokens: {elided} old tool outputs elided\n")
        return elided

    def add_user(self, content: list[dict[str, Any]], event: str) -> None:
        message = {"role": "user", "content": content}
        self.messages.append(message)
        self.trajectory.append(event, turn=self.turns + 1, message=message)

    def resume(self, conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Continue a stored conversation: tool calls it left unanswered (a limit ended the
        session midway) get an error result, so the next user message is valid. Returns the
        blocks the next user message starts with."""
        self.messages = [dict(m) for m in conversation]
        pending: list[dict[str, Any]] = []
        if self.messages and self.messages[-1]["role"] == "user":
            pending = list(self.messages.pop()["content"])
        last = self.messages[-1] if self.messages else None
        if last and last["role"] == "assistant":
            answered = {b.get("tool_use_id") for b in pending if b.get("type") == "tool_result"}
            pending += [
                {
                    "type": "tool_result",
                    "tool_use_id": b["id"],
                    "is_error": True,
                    "content": [{"type": "text", "text": UNANSWERED}],
                }
                for b in last["content"]
                if b["type"] == "tool_use" and b["id"] not in answered
            ]
        return pending

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> AgentOutcome:
        ctx, agent = self.ctx, self.agent
        self.trajectory.append(
            "session",
            phase=ctx.phase,
            step=ctx.step_index,
            prev_version=ctx.prev_version,
            next_version=ctx.next_version,
            session_id=ctx.session_id,
            model=agent.manifest.model,
            base_url=agent.manifest.base_url,
            limits=ctx.limits.model_dump(),
            options=agent.options.model_dump(),
            price=agent.price.model_dump(),
            system=self.system,
            tools=[t["name"] for t in TOOLS],
        )
        self.log.write(
            f"== {agent.name} ({agent.manifest.model}) {ctx.phase} {ctx.prev_version} -> {ctx.next_version}\n"
        )
        try:
            client = agent.client(ctx, self.deadline)
            stored = None
            if ctx.phase == "fix" and agent.manifest.session == "resume":
                stored = agent.conversations.get(ctx.session_id) or build_conversation(ctx)
            opening = self.resume(stored) if stored else []
            if stored:
                self.trajectory.append("resume", messages=len(self.messages))
                self.log.write(f"[resume] the Build conversation of {len(self.messages)} messages continues\n")
            self.add_user([*opening, {"type": "text", "text": first_message(ctx, resumed=bool(stored))}], "request")
            with client:
                return self.loop(client)
        except Exception as exc:  # the container died, a bug: recorded, and everything so far is kept
            self.trajectory.append("error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
            return self.end("error", "crashed", f"{type(exc).__name__}: {exc}")

    def loop(self, client: anthropic.Anthropic) -> AgentOutcome:
        limits, options = self.ctx.limits, self.agent.options
        while True:
            if self.remaining() <= 0:
                return self.wall_clock("")
            if limits.turns is not None and self.turns >= limits.turns:
                return self.end("limit", detail=f"{self.turns} turns taken (limit {limits.turns})", limit="turns")
            if limits.cost_usd is not None and self.cost_usd >= limits.cost_usd:
                return self.end(
                    "limit", detail=f"${self.cost_usd:.4f} spent (limit ${limits.cost_usd})", limit="cost_usd"
                )
            self.compact()
            system, messages = self.request_messages()
            if options.count_tokens:
                fits = self.fits(client, system, messages)
                if isinstance(fits, AgentOutcome):
                    return fits
                if not fits and self.compact(force=True):
                    system, messages = self.request_messages()
                    fits = self.fits(client, system, messages)
                    if isinstance(fits, AgentOutcome):
                        return fits
                if not fits:
                    return self.end(
                        "context_window",
                        detail=(
                            f"the prompt of {self.counted} tokens does not fit {options.context_window_tokens} tokens "
                            f"less {options.max_tokens} for the reply, even with old tool outputs elided"
                        ),
                    )
            response = self.call(
                client,
                "create",
                # Bound now: the call runs (and may retry) within this turn.
                lambda system=system, messages=messages: client.messages.create(
                    model=self.agent.model,
                    max_tokens=options.max_tokens,
                    system=system,
                    tools=TOOL_PARAMS,
                    messages=as_message_params(messages),
                    timeout=min(options.request_timeout_s, max(self.remaining(), 0.001)),
                ),
            )
            if isinstance(response, AgentOutcome):
                return response
            self.turns += 1
            turn_usage = TokenUsage.of(response.usage)
            self.prompt_tokens = turn_usage.input_tokens + turn_usage.cache_read_tokens + turn_usage.cache_write_tokens
            self.usage.add(turn_usage)
            turn_cost = self.agent.price.cost(turn_usage)
            self.cost_usd += turn_cost
            content = [block_dict(b) for b in response.content]
            self.messages.append({"role": "assistant", "content": content})
            self.trajectory.append(
                "response",
                turn=self.turns,
                id=response.id,
                model=response.model,
                stop_reason=response.stop_reason,
                content=content,
                usage=turn_usage.as_dict(),
                cost_usd=round(turn_cost, 8),
                cost_total_usd=round(self.cost_usd, 8),
                usage_total=self.usage.as_dict(),
            )
            self.log_response(content, response.stop_reason, turn_cost)

            calls = [b for b in content if b["type"] == "tool_use"]
            if calls and response.stop_reason == "max_tokens":
                # The last call may be cut off mid-input: none of them is run.
                self.log.write(f"[truncated] {len(calls)} tool call(s) of a reply cut off at max_tokens not run\n")
                self.add_user(
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": c["id"],
                            "is_error": True,
                            "content": [{"type": "text", "text": TRUNCATED}],
                        }
                        for c in calls
                    ],
                    "truncated",
                )
                continue
            if calls:
                results, stop = self.run_tools(calls)
                if results:
                    self.add_user(results, "tool_results")
                if stop is not None:
                    return stop
                continue
            reason = response.stop_reason
            if reason == "max_tokens":
                self.add_user(
                    [{"type": "text", "text": "Your reply was cut off at the output limit; continue."}], "request"
                )
            elif reason == "pause_turn":
                continue  # the API asks to send the conversation again as it is
            elif reason == "refusal":
                return self.end("refusal", detail="the model refused to continue")
            elif reason == "model_context_window_exceeded":
                return self.end("context_window", detail="the model's context window is full")
            else:
                return self.end("end_turn", detail=f"the model ended its turn after {self.turns} turns")

    def note_warnings(self, caught: list[warnings.WarningMessage]) -> None:
        """The SDK's warnings (e.g. a deprecated model) go to the records once, not to stderr each
        call; any other warning raised meanwhile (say by garbage collection) is passed on."""
        for item in caught:
            message = str(item.message)
            if issubclass(item.category, ResourceWarning) or not (
                item.filename == __file__ or Path(item.filename).is_relative_to(SDK_DIR)
            ):
                warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
                continue
            if message not in self.warned:
                self.warned.add(message)
                self.trajectory.append("warning", turn=self.turns + 1, category=item.category.__name__, message=message)
                self.log.write(f"[warning] {message}\n")

    def wall_clock(self, during: str) -> AgentOutcome:
        return self.end(
            "limit", "timed_out", f"the wall clock of {self.ctx.limits.wall_s} s passed{during}", limit="wall_s"
        )

    def fits(self, client: anthropic.Anthropic, system: Any, messages: list[dict[str, Any]]) -> bool | AgentOutcome:
        """Whether the prompt and a full reply fit the context window (a free count_tokens call)."""
        options = self.agent.options
        counted = self.call(
            client,
            "count_tokens",
            lambda: client.messages.count_tokens(
                model=self.agent.model,
                system=system,
                tools=TOOL_PARAMS,
                messages=as_message_params(messages),
            ),
        )
        if isinstance(counted, AgentOutcome):
            return counted
        self.counted = counted.input_tokens
        return self.counted + options.max_tokens <= options.context_window_tokens

    def call(self, client: anthropic.Anthropic, what: str, request: Any) -> Any:
        """One API request with the SDK's retries, and on infrastructure errors (agents/triage.py)
        retried with backoff for ``infra_retry_minutes``; an AgentOutcome when the phase ends."""
        window = self.agent.options.infra_retry_minutes * 60
        first_failure: float | None = None
        delay = self.agent.options.infra_backoff_first_s
        while True:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = request()
                self.note_warnings(caught)
                return result
            except (WallClockPassed, anthropic.APITimeoutError) as exc:
                if self.remaining() <= 0 or isinstance(exc, WallClockPassed):
                    return self.wall_clock(" during a model call")
                failure: anthropic.APIError = exc
            except anthropic.APIError as exc:
                if self.remaining() <= 0:
                    return self.wall_clock(f" during a model call ({exc})")
                failure = exc
            detail = f"{type(failure).__name__}: {failure}"
            signature = classify(f"{getattr(failure, 'status_code', '')} {detail}")
            if signature is None:
                return self.api_error(failure)
            now = time.monotonic()
            first_failure = first_failure if first_failure is not None else now
            left = min(window - (now - first_failure), self.remaining())
            self.trajectory.append(
                "infra_error",
                turn=self.turns + 1,
                request=what,
                signature=signature.name,
                error=detail,
                retry_in_s=round(min(delay, max(left, 0)), 3),
            )
            if left <= 0:
                return self.end(
                    "infra",
                    "infra_error",
                    infra=signature.name,
                    detail=(
                        f"{signature.advice}; still failing after {now - first_failure:.0f} s of retries "
                        f"(infra_retry_minutes {self.agent.options.infra_retry_minutes}): {detail}"
                    ),
                )
            self.log.write(f"[infra] {signature.name}: {detail[:300]}; retrying in {min(delay, left):.0f} s\n")
            time.sleep(min(delay, left))
            delay = min(delay * 2, BACKOFF_MAX_S)

    def api_error(self, exc: Exception) -> AgentOutcome:
        detail = f"{type(exc).__name__}: {exc}"
        self.trajectory.append("error", turn=self.turns + 1, error=detail)
        return self.end("api_error", "crashed", f"after the SDK's retries: {detail}")

    def run_tools(self, calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], AgentOutcome | None]:
        """Run one response's tool calls in order; a limit may end the session midway."""
        limits = self.ctx.limits
        results: list[dict[str, Any]] = []
        for call in calls:
            key = json.dumps([call["name"], call["input"]], sort_keys=True, default=str)
            self.repeats = self.repeats + 1 if key == self.last_call else 1
            self.last_call = key
            if self.repeats >= limits.repeats:
                self.log.write(f"[repetition] {call['name']} called identically {self.repeats} times in a row\n")
                return results, self.end(
                    "repetition", detail=f"the identical {call['name']} call {self.repeats} times in a row (not run)"
                )
            if self.remaining() <= 0:
                return results, self.wall_clock("")
            timeout = min(limits.command_s, self.remaining())
            clock_bound = timeout < limits.command_s
            started = time.monotonic()
            result = self.tools.execute(call["name"], call["input"], timeout)
            elapsed = round(time.monotonic() - started, 3)
            self.log_tool(call, result, elapsed)
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call["id"],
                    "content": [{"type": "text", "text": result.text}],
                    "is_error": result.is_error,
                }
            )
            if result.timed_out and clock_bound and self.remaining() <= 0:
                return results, self.wall_clock(f" during {call['name']}")
        return results, None

    # -- the readable log ----------------------------------------------------------------------

    def log_response(self, content: list[dict[str, Any]], stop_reason: str | None, cost: float) -> None:
        lines = [f"\n-- turn {self.turns} (stop: {stop_reason}, ${cost:.4f}, total ${self.cost_usd:.4f})\n"]
        for block in content:
            if block["type"] == "text":
                lines.append(block["text"].rstrip() + "\n")
            elif block["type"] == "tool_use":
                shown = (
                    block["input"].get("command")
                    if block["name"] == "bash" and isinstance(block["input"], dict)
                    else None
                )
                lines.append(f"> {block['name']}: {shown if shown is not None else json.dumps(block['input'])[:500]}\n")
        self.log.write("".join(lines))

    def log_tool(self, call: dict[str, Any], result: ToolResult, elapsed: float) -> None:
        flag = " (error)" if result.is_error else ""
        self.log.write(f"< {call['name']}{flag} in {elapsed:.1f} s\n{result.text.rstrip()}\n")
