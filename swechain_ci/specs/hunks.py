"""Diff hunks: parsed, batched for divide, and picked as test context for conquer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from swechain_ci.chain.diffs import unquote_git_path
from swechain_ci.errors import SwechainError

MAX_FILES = 20
MAX_HUNKS = 150
MAX_LINES = 3000
TEST_CONTEXT_LINES = 1500

class Hunk(BaseModel):
    """One ``@@`` hunk of a step's diff, with a stable id."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str  # H1, H2, ... in diff order (test hunks: TH1, ...)
    file: str  # path relative to the tree root
    status: Literal["modified", "added", "removed", "renamed"]
    header: str  # the @@ line, section heading included
    text: str  # the hunk as in the diff, @@ line included
    lines: int  # lines of ``text``: the hunk's size for batching
    added: int
    removed: int


def parse_hunks(patch: str, prefix: str = "H") -> tuple[list[Hunk], list[str]]:
    """The hunks of a git-style patch, numbered in order, and the changed files without a hunk
    (empty files, pure renames, binaries), which no one can assign."""
    if not patch.strip():
        return [], []
    try:
        parsed = PatchSet(patch)
    except UnidiffParseError as exc:
        raise SwechainError(f"cannot parse a step diff: {exc}") from None
    hunks: list[Hunk] = []
    bare: list[str] = []
    for patched in parsed:
        path = unquote_git_path(patched.path)
        status = ("added" if patched.is_added_file else "removed" if patched.is_removed_file
                  else "renamed" if patched.is_rename else "modified")
        if not len(patched):
            bare.append(path)
            continue
        for piece in patched:
            text = str(piece)
            if not text.endswith("\n"):
                text += "\n"
            hunks.append(Hunk(
                id=f"{prefix}{len(hunks) + 1}", file=path, status=status, header=text.split("\n", 1)[0],
                text=text, lines=len(text.splitlines()), added=piece.added, removed=piece.removed,
            ))
    return hunks, bare


def batch_hunks(
    hunks: Sequence[Hunk], max_files: int = MAX_FILES, max_hunks: int = MAX_HUNKS, max_lines: int = MAX_LINES,
) -> list[list[Hunk]]:
    """First-fit by size: largest hunk first (ties in diff order), into the first batch where
    the files, hunks and lines stay within the limits, else into a new batch. A hunk longer
    than ``max_lines`` fills a batch of its own. Batches keep the order they were opened
    in; the hunks inside a batch are in diff order."""
    order = {h.id: i for i, h in enumerate(hunks)}
    batches: list[list[Hunk]] = []
    stats: list[tuple[set[str], int, int]] = []  # (files, hunks, lines)
    for hunk in sorted(hunks, key=lambda h: (-h.lines, order[h.id])):
        for index, (files, count, lines) in enumerate(stats):
            if (len(files | {hunk.file}) <= max_files and count + 1 <= max_hunks
                    and lines + hunk.lines <= max_lines):
                batches[index].append(hunk)
                stats[index] = (files | {hunk.file}, count + 1, lines + hunk.lines)
                break
        else:
            batches.append([hunk])
            stats.append(({hunk.file}, 1, hunk.lines))
    return [sorted(batch, key=lambda h: order[h.id]) for batch in batches]



IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _changed_words(text: str) -> set[str]:
    words: set[str] = set()
    for line in text.splitlines():
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            words |= set(IDENT.findall(line))
    return words


def select_test_hunks(tests: list[Hunk], note: str, code: list[Hunk], budget: int = TEST_CONTEXT_LINES,
                      ) -> tuple[list[Hunk], int]:
    """The test hunks shown with a task, and how many are left out. All of them when they fit
    in ``budget`` lines; else those sharing identifiers with the note and the task's code,
    most shared first, as long as they fit (shown in diff order)."""
    if sum(h.lines for h in tests) <= budget:
        return list(tests), 0
    words = set(IDENT.findall(note))
    for hunk in code:
        words |= _changed_words(hunk.text)
    scored = sorted(((len(_changed_words(h.text) & words), i, h) for i, h in enumerate(tests)),
                    key=lambda s: (-s[0], s[1]))
    chosen: list[tuple[int, Hunk]] = []
    used = 0
    for score, index, hunk in scored:
        if score == 0:
            break
        if used + hunk.lines <= budget:
            chosen.append((index, hunk))
            used += hunk.lines
    chosen.sort(key=lambda c: c[0])
    return [h for _, h in chosen], len(tests) - len(chosen)


