"""Errors the user can act on. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

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
