"""A scripted model server for the real vendor CLIs: standard library only, so that it runs
as it is in a container without network (``python3 model_server.py SCENARIO.json``), the
agent container sharing its network namespace.

It speaks what the pinned CLIs use:
- the Anthropic Messages API (``POST /v1/messages``, also ``/messages``), streaming SSE
  (``stream: true``: Claude Code, OpenCode) or a plain JSON message, and
  ``/v1/messages/count_tokens``;
- the OpenAI Responses API (``POST /v1/responses``) as Codex uses it: SSE events
  ``response.created``, ``response.output_item.added/done``, ``response.completed``.
  A WebSocket upgrade (Codex tries one first) is refused with 426, and Codex falls back to HTTP.

The scenario (JSON) scripts each phase: ``{"phases": {"<next version>/<build|fix>": [action,
...]}, "usage": {...}}``. The phase is read from the conversation's latest task prompt (the
runner's build or fix prompt), and the number of tool calls answered since that prompt picks
the next action, so a resumed session (which sends the Build's history) continues where it
is. Actions: ``{"bash": "command"}``, ``{"read": "/path"}``, ``{"edit": ["/path", "old",
"new"]}``, ``{"text": "..."}`` (ends the turn); any of them with ``"delay_s"`` is answered that
much later. Each CLI's own tool names and argument names are taken from the tools its
request offers (``Bash``/``bash``/``shell``/``exec_command``; ``file_path``/``filePath``...).
A request without tools (a title, a summary) gets a short text. Past the last action: a text
"done" that ends the turn. Every request is appended to ``requests.jsonl`` beside the
scenario (path, headers, body) for the test to read.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ids = itertools.count(1)
PROMPT = re.compile(
    r"(Upgrade it from version|Your upgrade of /app/code from)\s+(\S+)\s+to\s+(?:version\s+)?([0-9][\w.+-]*)"
)
DEFAULT_USAGE = {"input_tokens": 1000, "output_tokens": 50, "cache_read": 200, "cache_write": 100}

CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")  # Responses API items that call a tool
TOOL_NAMES = {
    "bash": ("Bash", "bash", "shell_command", "exec_command", "shell", "local_shell"),
    "read": ("Read", "read"),
    "edit": ("Edit", "edit"),
}  # Codex has no read or edit tool: it reads with its shell and edits with apply_patch
ARGUMENT_NAMES = {
    "path": ("file_path", "filePath", "path"),
    "old": ("old_string", "oldString"),
    "new": ("new_string", "newString"),
    "command": ("command", "cmd"),
}


def texts(content: Any) -> str:
    """The text of a message's content in either API's shape."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") in ("text", "input_text")
    )


class Conversation:
    """The phase and progress a request is at, in either API's shape."""

    def __init__(self, body: dict[str, Any], api: str) -> None:
        self.api = api
        self.tools = body.get("tools") or []
        items = body.get("messages") if api == "anthropic" else body.get("input")
        items = items if isinstance(items, list) else []
        self.phase: str | None = None
        since = 0
        for item in items:
            role, kind = item.get("role"), item.get("type")
            if role == "user" and (match := PROMPT.search(texts(item.get("content")))):
                self.phase = f"{match.group(3)}/{'fix' if 'Your upgrade' in match.group(1) else 'build'}"
                since = 0
            elif (role == "assistant") if api == "anthropic" else (kind in CALL_ITEMS):
                since += 1
        self.answered = since

    def offers(self, kind: str) -> bool:
        try:
            self.tool(kind)
        except LookupError:
            return False
        return True

    def tool(self, kind: str) -> tuple[str, dict[str, Any], str]:
        """The offered tool for ``kind``: its name, its argument properties and its type."""
        offered = {}
        for tool in self.tools:
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if not isinstance(name, str):  # a hosted tool (web search) or a namespace
                continue
            schema = tool.get("input_schema") or tool.get("parameters") or {}
            offered[name] = (schema.get("properties") or {}, tool.get("type", "function"))
        for name in TOOL_NAMES[kind]:
            if name in offered:
                return name, *offered[name]
        raise LookupError(f"no {kind} tool among {sorted(offered)}")


def argument(properties: dict[str, Any], what: str) -> str:
    return next((n for n in ARGUMENT_NAMES[what] if n in properties), ARGUMENT_NAMES[what][0])


def tool_call(conversation: Conversation, action: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(tool name, arguments) for a tool action, None for a text action."""
    if "bash" in action:
        name, properties, _ = conversation.tool("bash")
        key = argument(properties, "command")
        command: Any = action["bash"]
        if (properties.get(key) or {}).get("type") == "array":
            command = ["bash", "-lc", command]
        arguments = {key: command}
        if "description" in properties:
            arguments["description"] = "scripted command"
        return name, arguments
    if "read" in action:
        if not conversation.offers("read"):  # Codex reads with its shell
            return tool_call(conversation, {"bash": f"cat {action['read']}"})
        name, properties, _ = conversation.tool("read")
        return name, {argument(properties, "path"): action["read"]}
    if "edit" in action:
        path, old, new = action["edit"]
        if not conversation.offers("edit"):  # Codex edits with apply_patch (a freeform tool)
            patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
            return "apply_patch", {"input": patch}
        name, properties, _ = conversation.tool("edit")
        return name, {
            argument(properties, "path"): path,
            argument(properties, "old"): old,
            argument(properties, "new"): new,
        }
    return None


class Scenario:
    def __init__(self, path: Path) -> None:
        self.path = path
        data = json.loads(path.read_text())
        self.phases: dict[str, list[dict[str, Any]]] = data.get("phases", {})
        self.usage = {**DEFAULT_USAGE, **data.get("usage", {})}
        self.log = path.with_name("requests.jsonl")
        self.lock = threading.Lock()

    def record(self, path: str, headers: dict[str, str], body: Any) -> None:
        with self.lock, open(self.log, "a") as out:
            out.write(json.dumps({"path": path, "headers": headers, "body": body}) + "\n")

    def next_action(self, conversation: Conversation) -> dict[str, Any]:
        if not conversation.tools:
            return {"text": "Scripted title"}
        actions = self.phases.get(conversation.phase or "", [])
        if conversation.answered < len(actions):
            return actions[conversation.answered]
        return {"text": "done"}


# -- the Anthropic Messages API --------------------------------------------------------------------


def anthropic_message(scenario: Scenario, conversation: Conversation, action: dict[str, Any], model: str) -> dict:
    call = tool_call(conversation, action)
    if call:
        content = [{"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": call[0], "input": call[1]}]
    else:
        content = [{"type": "text", "text": action.get("text", "done")}]
    usage = scenario.usage
    return {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if call else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
            "cache_creation_input_tokens": usage["cache_write"],
            "cache_read_input_tokens": usage["cache_read"],
        },
    }


def anthropic_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


# -- the OpenAI Responses API ----------------------------------------------------------------------


def openai_events(scenario: Scenario, conversation: Conversation, action: dict[str, Any], model: str) -> list:
    call = tool_call(conversation, action)
    if call and call[0] == "apply_patch":
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{next(_ids):06d}",
            "call_id": f"call_{next(_ids):06d}",
            "name": "apply_patch",
            "input": call[1]["input"],
            "status": "completed",
        }
    elif call:
        item = {
            "type": "function_call",
            "id": f"fc_{next(_ids):06d}",
            "call_id": f"call_{next(_ids):06d}",
            "name": call[0],
            "arguments": json.dumps(call[1]),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{next(_ids):06d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": action.get("text", "done"), "annotations": []}],
        }
    usage = scenario.usage
    response = {
        "id": f"resp_{next(_ids):06d}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    done = {
        **response,
        "status": "completed",
        "output": [item],
        "usage": {
            "input_tokens": usage["input_tokens"] + usage["cache_read"],
            "input_tokens_details": {"cached_tokens": usage["cache_read"]},
            "output_tokens": usage["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input_tokens"] + usage["cache_read"] + usage["output_tokens"],
        },
    }
    return [
        ("response.created", {"type": "response.created", "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]


# -- the server ------------------------------------------------------------------------------------


def handler(scenario: Scenario) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def send_events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            scenario.record(path, {k.lower(): v for k, v in self.headers.items()}, None)
            if self.headers.get("Upgrade", "").lower() == "websocket":
                self.send_json(426, {"error": {"message": "no websocket here: use HTTP", "type": "invalid_request"}})
            elif path.endswith("/models"):
                self.send_json(200, {"object": "list", "data": [], "models": []})
            else:
                self.send_json(404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"unparsed": raw[:2000].decode(errors="replace")}
            scenario.record(path, {k.lower(): v for k, v in self.headers.items()}, body)
            model = str(body.get("model", "unknown"))
            if path.endswith("/messages/count_tokens"):
                self.send_json(200, {"input_tokens": len(raw) // 4})
                return
            api = "openai" if path.endswith("/responses") else "anthropic" if path.endswith("/messages") else None
            if api is None:
                self.send_json(404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
                return
            conversation = Conversation(body, api)
            try:
                action = scenario.next_action(conversation)
                time.sleep(float(action.get("delay_s", 0)))
                if api == "openai":
                    self.send_events(openai_events(scenario, conversation, action, model))
                    return
                message = anthropic_message(scenario, conversation, action, model)
            except LookupError as exc:
                self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
                return
            except Exception as exc:  # a scenario the server cannot answer shows, never a dropped connection
                scenario.record("error", {}, {"error": f"{type(exc).__name__}: {exc}"})
                self.send_json(500, {"type": "error", "error": {"type": "api_error", "message": f"server: {exc}"}})
                return
            if body.get("stream"):
                self.send_events(anthropic_events(message))
            else:
                self.send_json(200, message)

    return Handler


def main() -> None:
    scenario = Scenario(Path(sys.argv[1]))
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8080
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(scenario))
    server.daemon_threads = True
    print(f"model server on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
