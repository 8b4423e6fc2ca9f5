"""A cli agent's output on the terminal (and so in the job log under Actions) as it arrives.

The output is hostile: every line is shown behind a prefix (so no line of it starts with
``::``, which the Actions runner would take as a workflow command: ``::add-mask::``,
``::stop-commands::``...), with control characters (terminal escapes) replaced, long lines
cut, and no more bytes in all than the phase's output bound.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

PREFIX = "  agent| "
MAX_LINE_CHARS = 2000
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe_line(text: str) -> str:
    text = CONTROL.sub("\ufffd", text)
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS} characters cut]"
    return PREFIX + text


class Echo:
    """Feed it output chunks; it prints whole lines at once, ``limit`` bytes at most."""

    def __init__(self, limit: int, out: TextIO | None = None) -> None:
        self.limit = limit
        self.out = out
        self.seen = 0
        self.pending = bytearray()
        self.cut = False

    def feed(self, chunk: bytes) -> None:
        room = self.limit - self.seen
        self.seen += len(chunk)
        if room <= 0:
            self.stop()
            return
        self.pending.extend(chunk[:room])
        *lines, rest = bytes(self.pending).split(b"\n")
        self.pending = bytearray(rest[: MAX_LINE_CHARS * 4])
        self.write(lines)
        if self.seen >= self.limit:
            self.stop()

    def finish(self) -> None:
        if self.pending:
            self.write([bytes(self.pending)])
            self.pending.clear()

    def stop(self) -> None:
        self.finish()
        if not self.cut:
            self.cut = True
            self.write([f"[swechain-ci] output past {self.limit} bytes is not shown".encode()])

    def write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        out = self.out or sys.stderr
        out.write("".join(safe_line(line.decode(errors="replace").rstrip("\r")) + "\n" for line in lines))
        out.flush()
