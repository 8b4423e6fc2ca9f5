"""Progress lines for long steps, on stderr so that stdout stays the result."""

from __future__ import annotations

import time

from rich.console import Console

console = Console(stderr=True, highlight=False, soft_wrap=True)
_started = time.monotonic()


def say(message: str) -> None:
    console.print(f"[dim]{time.monotonic() - _started:7.1f}s[/dim] {message}")
