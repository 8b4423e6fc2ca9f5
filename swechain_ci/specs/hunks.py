"""Diff hunks: parsed, and batched by whole files for Divide."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Literal

from pydantic import ConfigDict
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from swechain_ci.chain.diffs import unquote_git_path
from swechain_ci.errors import SwechainError
from swechain_ci.models import Strict

MAX_FILES = 20
MAX_HUNKS = 150
MAX_LINES = 3000
# Folders the reference's diff extraction leaves out wherever they sit (its config.SKIP_DIRS):
# a docs/conf.py change is no code of the release.
SKIP_DIRS = frozenset({"docs", "__pycache__", ".git", "htmlcov", ".eggs", ".pytest_cache"})


def skipped(path: str) -> bool:
    return any(part in SKIP_DIRS for part in PurePosixPath(path).parts)


class Hunk(Strict):
    """One ``@@`` hunk of a step's diff, with a stable id."""

    model_config = ConfigDict(frozen=True)
    id: str  # H1, H2, ... in diff order (test hunks: TH1, ...)
    file: str  # path relative to the tree root
    status: Literal["modified", "added", "removed", "renamed"]
    header: str  # the @@ line, section heading included
    text: str  # the hunk as in the diff, @@ line included
    lines: int  # lines of ``text``: the hunk's size for batching
    added: int
    removed: int


def parse_hunks(patch: str, prefix: str = "H", skip_dirs: bool = False) -> tuple[list[Hunk], list[str]]:
    """The hunks of a git-style patch, numbered in order, and the changed files without a hunk
    (empty files, pure renames, binaries), which no one can assign. ``skip_dirs``: files under
    :data:`SKIP_DIRS` are left out (before numbering)."""
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
        if skip_dirs and skipped(path):
            continue
        status = (
            "added"
            if patched.is_added_file
            else "removed"
            if patched.is_removed_file
            else "renamed"
            if patched.is_rename
            else "modified"
        )
        if not len(patched):
            bare.append(path)
            continue
        for piece in patched:
            text = str(piece)
            if not text.endswith("\n"):
                text += "\n"
            hunks.append(
                Hunk(
                    id=f"{prefix}{len(hunks) + 1}",
                    file=path,
                    status=status,
                    header=text.split("\n", 1)[0],
                    text=text,
                    lines=len(text.splitlines()),
                    added=piece.added,
                    removed=piece.removed,
                )
            )
    return hunks, bare


def file_changes(patch: str) -> list[str]:
    """The files a code diff renames or adds, as the reference lists them under "File Changes"
    (its SpecsExtractor.extract_file_changes), in diff order; skipped folders left out."""
    if not patch.strip():
        return []
    try:
        parsed = PatchSet(patch)
    except UnidiffParseError as exc:
        raise SwechainError(f"cannot parse a step diff: {exc}") from None
    changes = []
    for patched in parsed:
        path = unquote_git_path(patched.path)
        if skipped(path):
            continue
        if patched.is_rename:
            old = unquote_git_path(patched.source_file).removeprefix("a/")
            new = unquote_git_path(patched.target_file).removeprefix("b/")
            changes.append(f"- Rename from `{old}` to `{new}`")
        elif patched.is_added_file:
            changes.append(f"- Add file `{path}`")
    return changes


def batch_files(
    hunks: Sequence[Hunk],
    max_files: int = MAX_FILES,
    max_hunks: int = MAX_HUNKS,
    max_lines: int = MAX_LINES,
) -> list[list[Hunk]]:
    """Whole files into batches, as the reference's matching does: each changed file (all its
    hunks) is one unit sized by its lines; units go largest first (ties in diff order) into the
    first batch where files, hunks and lines stay within the limits, else into a new batch. A
    file over a limit fills a batch of its own. Batches keep the order they were opened in;
    the hunks inside a batch are in diff order."""
    order = {h.id: i for i, h in enumerate(hunks)}
    files: dict[str, list[Hunk]] = {}
    for hunk in hunks:
        files.setdefault(hunk.file, []).append(hunk)
    units = sorted(files.values(), key=lambda unit: (-sum(h.lines for h in unit), order[unit[0].id]))
    batches: list[list[Hunk]] = []
    stats: list[tuple[int, int, int]] = []  # (files, hunks, lines)
    for unit in units:
        lines = sum(h.lines for h in unit)
        for index, (n_files, n_hunks, n_lines) in enumerate(stats):
            if n_files + 1 <= max_files and n_hunks + len(unit) <= max_hunks and n_lines + lines <= max_lines:
                batches[index].extend(unit)
                stats[index] = (n_files + 1, n_hunks + len(unit), n_lines + lines)
                break
        else:
            batches.append(list(unit))
            stats.append((1, len(unit), lines))
    return [sorted(batch, key=lambda h: order[h.id]) for batch in batches]
