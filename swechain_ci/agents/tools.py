"""The reference agent's four tools, run in the agent container as the agent user.

File contents cross the shell as base64, in chunks below the kernel's limit on one
argument, so no content is ever parsed by a shell.
"""

from __future__ import annotations

import base64
import shlex
import time
import uuid
from dataclasses import dataclass
from typing import Any

from swechain_ci.agents.base import PhaseContext

# Linux limits one argument (the bash -c script) to 128 KiB; stay well below it.
WRITE_CHUNK = 64 * 1024
# Files larger than this are not read whole for str_replace (bash can still edit them).
MAX_EDIT_BYTES = 8 * 1024 * 1024
FILE_OP_TIMEOUT_S = 60
MAX_LISTING_LINES = 400

# ---------------------------------------------------------------------------------------------
# tools, run in the container


@dataclass
class ToolResult:
    text: str
    is_error: bool = False
    timed_out: bool = False


class ToolError(Exception):
    """A tool failure the model gets to see (and can correct)."""


class ContainerTools:
    """The four tools over ``Workspace.shell``: everything runs in the agent container as
    the agent user, relative paths resolving against /app/code."""

    def __init__(self, ctx: PhaseContext, output_chars: int) -> None:
        self.ctx = ctx
        self.output_chars = output_chars

    def execute(self, name: str, tool_input: Any, timeout_s: float) -> ToolResult:
        handler = {"bash": self.bash, "view": self.view, "str_replace": self.str_replace, "create": self.create}.get(
            name
        )
        if handler is None:
            return ToolResult(f"error: unknown tool {name!r}; the tools are bash, view, str_replace, create", True)
        if not isinstance(tool_input, dict):
            return ToolResult(f"error: the input of {name} must be an object", True)
        try:
            return handler(tool_input, timeout_s)
        except ToolError as exc:
            return ToolResult(f"error: {exc}", True)

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _text(tool_input: dict, key: str, required: bool = True) -> str:
        value = tool_input.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str):
            raise ToolError(f"parameter {key!r} must be a string" + ("" if key in tool_input else " and is missing"))
        return value

    def _path(self, tool_input: dict) -> str:
        path = self._text(tool_input, "path")
        if not path.strip():
            raise ToolError("parameter 'path' is empty")
        if "\x00" in path:
            raise ToolError("parameter 'path' contains a NUL character")
        return f"./{path}" if path.startswith("-") else path  # never an option to find, stat or base64

    def _shell(self, command: str, timeout_s: float, output_limit: int):
        return self.ctx.workspace.shell(command, timeout_s=max(timeout_s, 1), output_limit=output_limit)

    def _read_bytes(self, path: str, timeout_s: float) -> bytes:
        q = shlex.quote(path)
        script = (
            f"if [ -d {q} ]; then echo 'is a directory'; exit 3; fi; "
            f"if [ ! -e {q} ]; then echo 'does not exist'; exit 3; fi; "
            f"size=$(stat -c %s -- {q}) || exit 3; "
            f'if [ "$size" -gt {MAX_EDIT_BYTES} ]; then echo "is $size bytes, too large for this tool; use bash"; exit 3; fi; '
            f"base64 -w0 -- {q} 2>&1 || exit 3"
        )
        done = self._shell(script, min(FILE_OP_TIMEOUT_S, timeout_s), MAX_EDIT_BYTES * 4 // 3 + 4096)
        if done.timed_out:
            raise ToolError(f"reading {path} timed out")
        if done.exit_code != 0:
            raise ToolError(f"{path} {done.output.strip()[-500:] or 'cannot be read'}")
        try:
            return base64.b64decode(done.output.strip(), validate=True)
        except ValueError:
            raise ToolError(f"{path} could not be read back intact") from None

    def _write_bytes(self, path: str, data: bytes, timeout_s: float) -> None:
        """Write through the shell as base64, in chunks below the argument limit, into a
        temporary file that then replaces the content (keeping the target's mode)."""
        q = shlex.quote(path)
        encoded = base64.b64encode(data).decode()
        chunks = [encoded[i : i + WRITE_CHUNK] for i in range(0, len(encoded), WRITE_CHUNK)] or [""]
        deadline = time.monotonic() + min(FILE_OP_TIMEOUT_S, timeout_s)
        if len(chunks) == 1:
            script = f'mkdir -p -- "$(dirname -- {q})" && printf %s {chunks[0]} | base64 -d > {q}'
            done = self._shell(script, deadline - time.monotonic(), 8192)
        else:
            tmp = f"/tmp/.swechain-write-{uuid.uuid4().hex}"
            for index, chunk in enumerate(chunks):
                redirect = ">" if index == 0 else ">>"
                done = self._shell(f"printf %s {chunk} {redirect} {tmp}", deadline - time.monotonic(), 8192)
                if done.timed_out or done.exit_code != 0:
                    self._shell(f"rm -f {tmp}", 10, 1024)
                    raise ToolError(f"writing {path} failed: {done.output.strip()[-500:]}")
            script = f'mkdir -p -- "$(dirname -- {q})" && base64 -d {tmp} > {q}; rc=$?; rm -f {tmp}; exit $rc'
            done = self._shell(script, max(deadline - time.monotonic(), 5), 8192)
        if done.timed_out:
            raise ToolError(f"writing {path} timed out")
        if done.exit_code != 0:
            raise ToolError(f"writing {path} failed: {done.output.strip()[-500:]}")

    # -- the tools -----------------------------------------------------------------------------

    def bash(self, tool_input: dict, timeout_s: float) -> ToolResult:
        command = self._text(tool_input, "command")
        if not command.strip():
            raise ToolError("parameter 'command' is empty")
        if len(command.encode()) > 100_000:
            raise ToolError("the command is too long (over 100 kB); write a script with `create` and run it")
        done = self._shell(command, timeout_s, self.output_chars)
        output = done.output
        notes = []
        if done.truncated:
            notes.append(
                f"[output cut: showed the first {len(done.output.encode())} of {done.output_bytes} bytes; "
                "redirect to a file and use head, tail or grep]"
            )
        if done.timed_out:
            notes.append(f"[command ended after {timeout_s:.0f} s without finishing; all its processes were killed]")
            status = "timed out"
        else:
            status = f"exit code {done.exit_code}"
        text = (output + ("\n" if output and not output.endswith("\n") else "") + "\n".join(notes)).rstrip("\n")
        # A non-zero exit is information (grep finding nothing), not a tool failure.
        return ToolResult(
            f"{text}\n[{status}]" if text else f"[{status}, no output]",
            is_error=done.timed_out,
            timed_out=done.timed_out,
        )

    def view(self, tool_input: dict, timeout_s: float) -> ToolResult:
        path = self._path(tool_input)
        view_range = tool_input.get("view_range")
        start, end = 1, -1
        if view_range is not None:
            if (
                not isinstance(view_range, list)
                or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
            ):
                raise ToolError("view_range must be two integers [start, end]")
            start, end = view_range
            if start < 1 or (end != -1 and end < start):
                raise ToolError(f"view_range {view_range} is invalid: start >= 1 and end >= start (or -1)")
        q = shlex.quote(path)
        script = (
            f"if [ -d {q} ]; then find {q} -maxdepth 2 -not -path '*/.*' -not -path '*/__pycache__*' "
            f"| LC_ALL=C sort | head -n {MAX_LISTING_LINES}; exit 0; fi; "
            f"if [ ! -e {q} ]; then echo 'does not exist'; exit 3; fi; "
            f"awk -v s={start} -v e={end} 'NR>=s && (e<0 || NR<=e) {{printf \"%6d\\t%s\\n\", NR, $0}}' < {q}"
        )
        done = self._shell(script, min(FILE_OP_TIMEOUT_S, timeout_s), self.output_chars)
        if done.timed_out:
            raise ToolError(f"viewing {path} timed out")
        if done.exit_code != 0:
            raise ToolError(f"{path} {done.output.strip()[-500:] or 'cannot be read'}")
        text = done.output
        if done.truncated:
            text += "\n[cut here: the output limit was reached; view a smaller view_range]"
        return ToolResult(text or "[empty]")

    def str_replace(self, tool_input: dict, timeout_s: float) -> ToolResult:
        path = self._path(tool_input)
        old = self._text(tool_input, "old_str")
        new = self._text(tool_input, "new_str", required=False)
        if not old:
            raise ToolError("old_str is empty; to write a whole file use create")
        raw = self._read_bytes(path, timeout_s)
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text; edit it with bash") from None
        positions = list(_find_all(content, old))  # overlapping ones too: each would be a different edit
        if not positions:
            raise ToolError(f"old_str does not occur in {path}; it must match exactly, whitespace included")
        if len(positions) > 1:
            lines = sorted({content.count("\n", 0, i) + 1 for i in positions[:200]})[:10]
            raise ToolError(
                f"old_str occurs {len(positions)} times in {path} (starting on lines {', '.join(map(str, lines))}"
                f"{', ...' if len(positions) > 10 else ''}); include more context to make it unique"
            )
        at = positions[0]
        updated = content[:at] + new + content[at + len(old) :]
        self._write_bytes(path, updated.encode("utf-8"), timeout_s)
        first = content.count("\n", 0, at) + 1
        shown = updated.split("\n")[max(first - 4, 0) : first + min(new.count("\n"), 30) + 3]
        snippet = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(shown, start=max(first - 3, 1)))
        return ToolResult(f"replaced 1 occurrence in {path}; the lines around it now:\n{snippet}")

    def create(self, tool_input: dict, timeout_s: float) -> ToolResult:
        path = self._path(tool_input)
        text = self._text(tool_input, "file_text")
        self._write_bytes(path, text.encode("utf-8"), timeout_s)
        return ToolResult(f"wrote {path} ({len(text.splitlines())} lines, {len(text.encode())} bytes)")


def _find_all(text: str, needle: str):
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)
