"""Progress for long work, on stderr so that stdout stays the result.

On a terminal: bars with counts and an ETA (``task``) and a spinner with the time so far
(``status``), drawn by rich. Anywhere else (a pipe, a file, CI, ``SWECHAIN_PLAIN_PROGRESS=1``):
plain timestamped lines, one when work starts and one per item done. Messages carry names from
runs and chains, so they are printed as text, never read as rich markup.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True, highlight=False, soft_wrap=True)
_started = time.monotonic()
_lock = threading.Lock()


def live() -> bool:
    """Bars and spinners only on an interactive terminal outside CI."""
    plain = os.environ.get("SWECHAIN_PLAIN_PROGRESS") or os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS")
    return console.is_terminal and not plain


def step_label(index: int, first: int, count: int) -> str:
    """ "step 12 (1 of 2)" for a run of steps 12-13, "step 2/3" for a whole chain: the step's own
    number in the chain, and where it stands in this run."""
    return f"step {index}/{count}" if first == 1 else f"step {index} ({index - first + 1} of {count})"


def say(message: str) -> None:
    with _lock:
        console.print(f"[dim]{time.monotonic() - _started:7.1f}s[/dim] {escape(message)}")


@contextlib.contextmanager
def task(description: str, total: int) -> Iterator[Callable[[str], None]]:
    """Work of ``total`` items: yields ``done(note)``, called once per finished item (from any thread)."""
    if not live():
        say(f"{description}: 0/{total}")
        count = 0

        def line(note: str = "") -> None:
            nonlocal count
            count += 1
            say(f"{description}: {count}/{total}" + (f" ({note})" if note else ""))

        yield line
        return
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    with bar:
        ident = bar.add_task(escape(description), total=total)

        def advance(note: str = "") -> None:
            with _lock:
                bar.advance(ident)
                if note:
                    bar.console.print(f"[dim]{time.monotonic() - _started:7.1f}s[/dim] {escape(note)}")

        yield advance


@contextlib.contextmanager
def status(description: str) -> Iterator[None]:
    """One long piece of work (an image build): a spinner with the time so far, or a line."""
    started = time.monotonic()
    if not live():
        say(description)
        yield
        return
    with console.status(escape(description)):
        yield
    say(f"{description}: done in {time.monotonic() - started:.0f} s")
