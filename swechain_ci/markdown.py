"""Untrusted text made inert wherever it is shown: Markdown (PR comments, job summaries, the
committed leaderboard) and plain one-liners (commit status descriptions).

Anything an agent, a manifest, a pull request or an artifact can influence is untrusted:
agent and chain names, versions, ``stop_reason``, details, error texts. In Markdown such a
string is shown only as a code span (or a fenced block), whose content GitHub renders
literally: no headings, links, images, HTML, @-mentions or #-references. Control characters
are replaced, and the length is bounded, so a string can neither break out of its line nor
flood the page.
"""

from __future__ import annotations

import re
import unicodedata

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
ELLIPSIS = "…"


def _printable(text: str, keep_newlines: bool = False) -> str:
    """Control, format (bidi overrides, zero-width) and separator characters other than space replaced."""
    out = []
    for char in text:
        if char == "\n" and keep_newlines:
            out.append(char)
        elif char in "\t\n\r\v\f":
            out.append(" ")
        elif char == " " or unicodedata.category(char)[0] not in "CZ":
            out.append(char)
        else:
            out.append(REPLACEMENT if unicodedata.category(char)[0] == "C" else " ")
    return "".join(out)


def _bounded(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def plain(text: object, limit: int | None = None) -> str:
    """One line of plain text: controls replaced, whitespace collapsed, at most ``limit`` characters."""
    return _bounded(" ".join(_printable(str(text)).split()), limit)


def inline(text: object, limit: int | None = 200, table: bool = False) -> str:
    """An inline code span holding ``text`` literally (one line, bounded). ``table``: inside a
    GitHub table row, where ``|`` must be escaped even in a code span (GFM renders ``\\|`` as ``|``)."""
    content = plain(text, limit)
    if not content:
        return "` `"
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * (longest + 1)
    if content.startswith("`") or content.endswith("`") or (content.startswith(" ") and content.endswith(" ")):
        content = f" {content} "  # CommonMark strips one space each side, so a backtick never joins the fence
    if table:
        content = content.replace("|", "\\|")
    return f"{fence}{content}{fence}"


def cell(text: object, limit: int | None = 200) -> str:
    """``inline`` for a table cell."""
    return inline(text, limit, table=True)


def block(text: object, limit: int | None = 4000) -> str:
    """A fenced code block holding ``text`` literally, lines kept, at most ``limit`` characters."""
    content = _bounded(_printable(str(text), keep_newlines=True), limit)
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{content}\n{fence}"
