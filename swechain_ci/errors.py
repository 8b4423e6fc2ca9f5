"""Errors the user can act on. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import ValidationError


class SwechainError(Exception):
    """A problem with input or environment, with a message that names the fix."""


def describe_validation(source: str, error: ValidationError) -> str:
    """One line naming the file, each bad field, and what is expected there."""
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        got = item.get("input")
        shown = "" if isinstance(got, (dict, list)) or got is None else f" (got {got!r})"
        problems.append(f"field '{where}': {item['msg']}{shown}")
    return f"{source}: " + "; ".join(problems)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for the closest known name, or nothing when none is close."""
    by_case = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_case), n=1, cutoff=0.6)
    return f" (did you mean '{by_case[close[0]]}'?)" if close and by_case[close[0]] != name else ""
