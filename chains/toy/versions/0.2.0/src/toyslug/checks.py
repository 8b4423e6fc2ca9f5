"""Validation helpers for slugs."""

from __future__ import annotations

import re

__all__ = ["is_slug"]

_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def is_slug(text: str) -> bool:
    """Return ``True`` if *text* is a well-formed slug.

    A well-formed slug is one or more runs of lowercase ASCII letters and
    digits joined by single hyphens, which is exactly what
    :func:`toyslug.slugify` produces for non-empty output with the default
    separator.

    >>> is_slug("hello-world")
    True
    >>> is_slug("Hello World")
    False
    """
    return _SLUG.fullmatch(text) is not None
