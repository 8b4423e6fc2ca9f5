"""A scripted stand-in for the Anthropic Messages API, over real HTTP on 127.0.0.1.

It speaks the subset the SDK uses for ``client.messages.create``: ``POST /v1/messages``
answered with a ``message`` object, and ``client.messages.count_tokens``:
``POST /v1/messages/count_tokens`` answered with an estimate (a token per four characters
of the request, or ``count(body)``). A Python callable scripts it (request body ->
response), and every request is recorded with its headers, so tests can drive the real
SDK and check what it sent. ``outage(n)`` answers the next n requests (either route)
with 529 overloaded_error, as the API does under load.

    with ScriptedServer(lambda body: message([text("done")])) as server:
        anthropic.Anthropic(api_key="k", base_url=server.url).messages.create(...)
        server.requests[0].body["messages"]
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_server import LocalServer

_ids = itertools.count(1)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])


@dataclass
class Reply:
    """A response with control over status and timing; a script may return one instead of a dict."""

    body: dict[str, Any]
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Script = Callable[[dict[str, Any]], "dict[str, Any] | Reply"]


# -- response builders ---------------------------------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):06d}", "name": name, "input": tool_input}


def usage(
    input_tokens: int = 100, output_tokens: int = 20, cache_write: int = 0, cache_read: int = 0
) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def message(
    content: list[dict[str, Any]], stop_reason: str | None = None, usage_: dict[str, int] | None = None
) -> dict[str, Any]:
    """A Messages API response; stop_reason is tool_use when it calls a tool, else end_turn."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {"content": content, "stop_reason": stop_reason, "usage": usage_ or usage()}


def error_body(kind: str, text_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text_}}


# -- request helpers -----------------------------------------------------------------------------


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def turns_taken(body: dict[str, Any]) -> int:
    """How many assistant turns the conversation in this request already holds."""
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last (user) message."""
    last = body["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [b for b in content if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


# -- the server ----------------------------------------------------------------------------------


class ScriptedServer(LocalServer):
    """``POST /v1/messages`` answered by ``script(body)``; start/stop or use as a context manager."""

    def __init__(self, script: Script, count: Callable[[dict[str, Any]], int] | None = None) -> None:
        super().__init__()
        self.script = script
        self.count = count or (lambda body: len(json.dumps(body)) // 4)
        self.requests: list[Recorded] = []
        self.counts: list[Recorded] = []
        self.overloaded: list[str] = []  # the routes of the requests an outage answered
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._outage = 0

    def outage(self, requests: int) -> None:
        """Answer the next ``requests`` requests with 529 overloaded_error."""
        with self._lock:
            self._outage = requests

    def _in_outage(self, path: str) -> bool:
        with self._lock:
            if self._outage <= 0:
                return False
            self._outage -= 1
            self.overloaded.append(path)
            return True

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", f"req_{next(_ids):06d}")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                if path not in ("/v1/messages", "/v1/messages/count_tokens"):
                    self.send_json(404, error_body("not_found_error", f"no route {path}"))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self.send_json(400, error_body("invalid_request_error", "body is not JSON"))
                    return
                if server._in_outage(path):
                    self.send_json(529, error_body("overloaded_error", "Overloaded"))
                    return
                if path.endswith("/count_tokens"):
                    with server._lock:
                        server.counts.append(Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body))
                    self.send_json(200, {"input_tokens": server.count(body)})
                    return
                with server._lock:
                    server.requests.append(Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body))
                try:
                    reply = server.script(body)
                except Exception as exc:  # a broken script shows as a 500 and in .errors
                    server.errors.append(f"{type(exc).__name__}: {exc}")
                    reply = Reply(
                        error_body("api_error", f"script failed: {exc}"),
                        status=500,
                        headers={"x-should-retry": "false"},
                    )
                if not isinstance(reply, Reply):
                    reply = Reply(reply)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body
                if reply.status == 200:
                    payload = {
                        "id": f"msg_{next(_ids):06d}",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", "unknown"),
                        "stop_sequence": None,
                        **payload,
                    }
                    payload.setdefault("usage", usage())
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a time-out)
                    self.send_json(reply.status, payload, reply.headers)

        return Handler
