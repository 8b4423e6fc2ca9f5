"""Text helpers: turning arbitrary text into slugs and shortening text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["shorten", "slugify", "unique_slug"]

# A "word" is a run of lowercase ASCII letters or digits; anything else separates words.
_WORD = re.compile(r"[a-z0-9]+")


def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    """Return a URL-friendly slug for *text*.

    Accented letters are first transliterated to their ASCII base letters
    (Unicode NFKD decomposition, then combining marks are dropped), so
    ``"Crème brûlée"`` becomes ``"creme-brulee"``.  The text is then
    lower-cased and split into runs of ASCII letters and digits, which are
    joined with *sep*.  Every other character (whitespace, punctuation,
    underscores, letters without an ASCII decomposition such as Cyrillic)
    acts as a word boundary and is dropped, so the slug never starts or ends
    with *sep*.

    If *max_length* is given, the slug keeps as many leading whole words as
    fit in *max_length* characters; a first word that is longer on its own is
    cut to *max_length* characters.

    >>> slugify("Hello, World!")
    'hello-world'
    >>> slugify("Hello World", sep="_")
    'hello_world'
    >>> slugify("The quick brown fox", max_length=12)
    'the-quick'

    :raises ValueError: if *sep* is empty or *max_length* is less than 1.
    """
    if not sep:
        raise ValueError("sep must be a non-empty string")
    if max_length is not None and max_length < 1:
        raise ValueError("max_length must be a positive integer")
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = _WORD.findall(ascii_text.lower())
    if max_length is not None:
        words = _fit_words(words, sep, max_length)
    return sep.join(words)


def _fit_words(words: list[str], sep: str, max_length: int) -> list[str]:
    """Return the leading *words* whose *sep*-joined length fits *max_length*."""
    kept: list[str] = []
    size = 0
    for word in words:
        extra = len(word) + (len(sep) if kept else 0)
        if size + extra > max_length:
            break
        kept.append(word)
        size += extra
    if not kept and words:
        kept = [words[0][:max_length]]
    return kept


def shorten(text: str, length: int, ellipsis: str = "...") -> str:
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
    keep = length - len(ellipsis)
    if not ellipsis or keep <= 0:
        return text[:length]
    return text[:keep] + ellipsis


def unique_slug(text: str, existing: Iterable[str], sep: str = "-") -> str:
    """Return a slug for *text* that is not already in *existing*.

    The base slug is ``slugify(text, sep)``.  If it is taken, *sep* and a
    counter are appended, starting at 2 and counting up until the slug is
    free: ``"hello-world"``, ``"hello-world-2"``, ``"hello-world-3"``, ...
    *existing* may be any iterable of strings; it is consumed once.

    >>> unique_slug("Hello, World!", ["hello-world"])
    'hello-world-2'

    :raises ValueError: if *text* produces an empty slug, or *sep* is empty.
    """
    base = slugify(text, sep)
    if not base:
        raise ValueError(f"cannot build a slug from {text!r}")
    taken = set(existing)
    candidate, counter = base, 2
    while candidate in taken:
        candidate = f"{base}{sep}{counter}"
        counter += 1
    return candidate
