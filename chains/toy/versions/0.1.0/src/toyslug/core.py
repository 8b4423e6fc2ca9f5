"""Core slug helpers: turning arbitrary text into slugs and shortening text."""

from __future__ import annotations

import re

__all__ = ["slugify", "truncate"]

# A "word" is a run of lowercase ASCII letters or digits; anything else separates words.
_WORD = re.compile(r"[a-z0-9]+")


def slugify(text: str, sep: str = "-") -> str:
    """Return a URL-friendly slug for *text*.

    The text is lower-cased and split into runs of ASCII letters and digits,
    which are joined with *sep*.  Every other character (whitespace,
    punctuation, underscores, non-ASCII letters) acts as a word boundary and
    is dropped, so the slug never starts or ends with *sep*.

    >>> slugify("Hello, World!")
    'hello-world'
    >>> slugify("Hello World", sep="_")
    'hello_world'

    :raises ValueError: if *sep* is empty.
    """
    if not sep:
        raise ValueError("sep must be a non-empty string")
    return sep.join(_WORD.findall(text.lower()))


def truncate(text: str, length: int, ellipsis: str = "...") -> str:
    """Shorten *text* to at most *length* characters.

    Text that already fits is returned unchanged.  Longer text is cut and
    *ellipsis* is appended to mark the cut; pass ``ellipsis=""`` for a hard
    cut.  When *length* leaves no room for any text before the ellipsis, the
    text is hard-cut to *length* characters instead.

    :raises ValueError: if *length* is negative.
    """
    if length < 0:
        raise ValueError("length must be non-negative")
    if len(text) <= length:
        return text
    keep = length - len(ellipsis) + 1
    if not ellipsis or keep <= 0:
        return text[:length]
    return text[:keep] + ellipsis
