"""DecompSynth's model calls: a forced tool call, validated, with correction rounds."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
from anthropic.types import MessageParam, ToolParam
from pydantic import ValidationError

from swechain_ci.errors import SwechainError
from swechain_ci.prices import PRICES_FILE, Price, TokenUsage, load_prices

DEFAULT_MODEL = "claude-sonnet-4-6"  # as the reference agent: the SDK lists 4-5 as end-of-life on 2026-11-30

# --------------------------------------------------------------------------- the model


def _base_url(flag: str | None) -> str | None:
    return flag or os.environ.get("ANTHROPIC_BASE_URL") or None


@dataclass
class LLM:
    """The Anthropic client DecompSynth uses, made on the first request that needs it."""

    model: str
    price: Price
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 3
    timeout_s: float = 600.0
    _client: anthropic.Anthropic | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self, what: str) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not self.api_key:
                    raise SwechainError(
                        f"{what} needs the Anthropic API and ANTHROPIC_API_KEY is not set; export it (and "
                        "ANTHROPIC_BASE_URL or --base-url for another endpoint) and run again; DecompSynth "
                        "never makes up specifications"
                    )
                self._client = anthropic.Anthropic(
                    api_key=self.api_key,
                    base_url=self.base_url,
                    max_retries=self.max_retries,
                    timeout=self.timeout_s,
                )
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def make_llm(model: str = DEFAULT_MODEL, base_url: str | None = None) -> LLM:
    prices = load_prices()
    if model not in prices:
        raise SwechainError(
            f"no price for model {model} in {PRICES_FILE} (known: {', '.join(sorted(prices))}); add one as "
            "{input, output, cache_write, cache_read} in dollars per million tokens, or pick a known model with --model"
        )
    return LLM(
        model=model,
        price=prices[model],
        base_url=_base_url(base_url),
        api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
    )


def _block(block: Any) -> dict[str, Any] | None:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return None


Check = Callable[[Any], tuple[Any, str | None]]


@dataclass
class Conversation:
    result: Any
    tokens: TokenUsage
    requests: int
    messages: list[dict[str, Any]]


def converse(
    llm: LLM,
    *,
    what: str,
    system: str,
    prompt: str,
    tool: dict[str, Any],
    check: Check,
    max_requests: int,
    max_tokens: int,
    cache_prompt: bool = False,
) -> Conversation:
    """Ask until ``check`` accepts the tool input, feeding each problem back; at most
    ``max_requests`` requests, then a SwechainError naming the last problem."""
    first: dict[str, Any] = {"type": "text", "text": prompt}
    if cache_prompt:
        first["cache_control"] = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [first]}]
    tokens = TokenUsage()
    problem = ""
    for request in range(1, max_requests + 1):
        client = llm.client(what)
        try:
            response = client.messages.create(
                model=llm.model,
                max_tokens=max_tokens,
                system=system,
                # Kept as plain JSON (cached, fed back); the SDK's TypedDicts describe the same shapes.
                tools=[cast("ToolParam", tool)],
                tool_choice={"type": "tool", "name": tool["name"]},
                messages=cast("list[MessageParam]", messages),
            )
        except anthropic.APIError as exc:
            raise SwechainError(
                f"{what}: the Anthropic API failed after the SDK's retries ({type(exc).__name__}: {exc}); run the "
                "command again (answers already received are cached)"
            ) from None
        tokens.add(TokenUsage.of(response.usage))
        content = [b for b in map(_block, response.content) if b is not None]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in content if b["type"] == "tool_use"]
        call = next((c for c in calls if c["name"] == tool["name"]), None)
        if call is None:
            problem = f"There was no call of {tool['name']}; answer by calling {tool['name']}."
        else:
            result, problem_or_none = check(call["input"])
            if problem_or_none is None:
                return Conversation(result, tokens, request, messages)
            problem = problem_or_none
        if response.stop_reason == "max_tokens":
            problem = f"Your answer was cut off at the limit of {max_tokens} output tokens; be more concise. " + problem
        if request == max_requests:
            break
        feedback: list[dict[str, Any]] = [
            {
                "type": "tool_result",
                "tool_use_id": c["id"],
                "is_error": True,
                "content": problem if c is call else f"Ignored: call {tool['name']} only.",
            }
            for c in calls
        ]
        if call is None:
            feedback.append({"type": "text", "text": problem})
        messages.append({"role": "user", "content": feedback})
    first_line = problem.strip().split("\n")
    raise SwechainError(
        f"{what}: no valid answer after {max_requests} requests; still wrong: {' '.join(first_line)} "
        "(try again, or another model with --model)"
    )


def validation_problems(exc: ValidationError) -> str:
    lines = []
    for item in exc.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        lines.append(f"- field '{where}': {item['msg']}")
    return "\n".join(lines)
