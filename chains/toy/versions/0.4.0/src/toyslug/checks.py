"""Validation helpers for slugs."""

from __future__ import annotations

import re

__all__ = ["is_slug"]

_WORD = "[a-z0-9]+"


def is_slug(text: str, sep: str = "-") -> bool:
    """Return ``True`` if *text* is a well-formed slug.

    A well-formed slug is one or more runs of lowercase ASCII letters and
    digits joined by single occurrences of *sep*, which is exactly what
    ``slugify(..., sep=sep)`` produces for non-empty output.

    >>> is_slug("hello-world")
    True
    >>> is_slug("hello_world", sep="_")
    True
    >>> is_slug("Hello World")
    False

    :raises ValueError: if *sep* is empty.
    """
    if not sep:
        raise ValueError("sep must be a non-empty string")
    pattern = f"{_WORD}(?:{re.escape(sep)}{_WORD})*"
    return re.fullmatch(pattern, text) is not None
