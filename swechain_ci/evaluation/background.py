"""Evaluations started now and collected later, e.g. a step's ``prev`` run while the agent works."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def in_background(work: Callable[[], T]) -> Future[T]:
    """Start ``work`` on a thread of its own; ``.result()`` waits for it (and re-raises its error)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="swechain-background")
    try:
        return pool.submit(work)
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task
