"""Specification levels L2–L5 of a task set (SEMANTICS.md, "Specifications (DecompSynth)").

A *task set* (:class:`TaskSet`) is what DecompSynth produces for one step, or what
``swechain-ci specs import`` reads: one :class:`TaskSpec` per task, with the fields the
definition names. This module renders it at a level (L1, the release notes, is ``render.py``'s):

======  =====================================================================
level   what each numbered task shows
======  =====================================================================
L2      its problem statement (ours: the reference has no such rendering)
L3      + the *conceptual* expectation and constraints (the reference's default,
        the paper's level and the benchmark's default)
L4      + the *grounded* expectation and constraints instead
L5      L4 + the acceptance criteria and the behaviours, in that order
======  =====================================================================

Layout: the reference's (its ``synthetic/specs_extractor.py``), to the byte: ``# Upgrade
Specification from A to B``; type groups with its headings in its order (:data:`GROUPS`), tasks
numbered 1, 2, ... across them as ``### Task <n> <title>``; ``## Additional Changes`` with the
problem statement of every task matched to no code hunk and of every task Complete found;
``## File Changes`` (files the code diff adds or renames). L3 is what the reference writes from
the same task set; L2, L4 and L5 are ours in its layout (L4 and L5 are its renderer's
``--granularity grounded`` and ``--include-criteria --include-behavioral``). With the interface
section (``interface.render_interface``) appended, a level is named ``<level>+interface``.

``specs/<chain>/<prev>-<next>/L<n>.md`` is what an agent reads, with nothing added (no marker
line); ``L<n>.json`` next to it holds the same content as data (:class:`LevelSpec`), its writer
and the digest of the Markdown written. Only files whose JSON twin says ``specs synth`` or
``specs import`` wrote them, and whose Markdown still has that digest, are ever overwritten.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field

from swechain_ci.errors import SwechainError
from swechain_ci.models import StrictTyped
from swechain_ci.records import write_text
from swechain_ci.specs.changelog import ReleaseNotes, ReleaseTask
from swechain_ci.specs.interface import InterfaceChanges, render_interface
from swechain_ci.specs.store import spec_path

Level = Literal["L1", "L2", "L3", "L4", "L5"]
LEVELS: tuple[Level, ...] = ("L1", "L2", "L3", "L4", "L5")
SPEC_LEVELS: tuple[Level, ...] = ("L2", "L3", "L4", "L5")  # what DecompSynth output adds to L1
TaskType = Literal[
    "FEATURE", "FIX", "DEPENDENCY", "BREAKING", "TYPING", "DOCUMENTATION", "PERFORMANCE", "REFACTOR", "OTHER"
]
TASK_TYPES: tuple[str, ...] = TaskType.__args__  # type: ignore[attr-defined]
Rating = Literal["low", "medium", "high"]
Difficulty = Literal["easy", "medium", "hard"]
Granularity = Literal["conceptual", "grounded"]

SYNTH: Final = "swechain-ci specs synth"
IMPORT: Final = "swechain-ci specs import"
Generator = Literal["swechain-ci specs synth", "swechain-ci specs import"]
GENERATORS: tuple[str, ...] = (SYNTH, IMPORT)

# The reference's type-group headings (its synthetic/specs_extractor.py, TASK_TYPE_MAP), in its order.
GROUPS: dict[TaskType, str] = {
    "FEATURE": "New Features",
    "FIX": "Bug Fixes",
    "DEPENDENCY": "Dependency Updates",
    "BREAKING": "Breaking Changes",
    "TYPING": "Typing Updates",
    "DOCUMENTATION": "Documentation",
    "PERFORMANCE": "Performance Improvements",
    "REFACTOR": "Refactors",
    "OTHER": "Others",
}
ADDITIONAL = "Additional Changes"
FILE_CHANGES = "File Changes"
# What each level shows of a numbered task (the reference's SpecsExtractor.render flags:
# granularity, include_criteria, include_behavioral). L3 is the reference's default and the
# paper's level; L2 (no expectation or constraints) is ours.
LEVEL_FIELDS: dict[str, tuple[Granularity | None, bool]] = {
    "L2": (None, False),
    "L3": ("conceptual", False),
    "L4": ("grounded", False),
    "L5": ("grounded", True),
}


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]


# --------------------------------------------------------------------------- the task specification


class Granular(StrictTyped):
    """One requirement at two granularities: in terms of the code, and in terms of behaviour."""

    grounded: Text
    conceptual: Text


class SynthesizedRequirement(StrictTyped):
    problem_statement: Text
    expectation: Granular
    constraints: Granular
    behavior: list[Text]
    acceptance_criteria: list[Text]


class TaskFields(StrictTyped):
    """A task specification's fields of SEMANTICS.md, all but its id."""

    title: Text
    type: TaskType
    runtime_impact: bool
    description: Text
    synthesized_requirement: SynthesizedRequirement
    significance: Rating
    confidence: Rating
    difficulty: Difficulty


class TaskSpec(TaskFields):
    """One task's specification, with exactly the fields of SEMANTICS.md."""

    task_id: Text


class SpecTask(StrictTyped):
    spec: TaskSpec
    origin: Literal["release_notes", "complete", "import"]
    release_task: ReleaseTask | None = None  # the release-note item it specifies (origin release_notes)
    code_hunks: list[str] | None = None  # ids of its code hunks (decompsynth.json); None: not known


class TaskSet(StrictTyped):
    """The specifications of one step: DecompSynth's output, or an import."""

    schema_version: Literal[1] = 1
    chain: str
    package: str
    prev_version: str
    next_version: str
    source: Literal["decompsynth", "import"]
    release_notes: ReleaseNotes | None  # the target version's notes (None for imports)
    tasks: list[SpecTask]


# --------------------------------------------------------------------------- a level's view


class LevelTask(StrictTyped):
    number: int | None  # as numbered in the Markdown; None under "Additional changes"
    task_id: str
    title: str
    type: TaskType
    problem_statement: str
    expectation: str | None = None  # L3: conceptual; L4, L5: grounded
    constraints: str | None = None
    behavior: list[str] | None = None  # L5
    acceptance_criteria: list[str] | None = None  # L5


class LevelSpec(StrictTyped):
    """``L<n>.json``: one step's specification at one level, as data."""

    # file_changes, markdown and markdown_sha256 were added with defaults: files of before stay readable
    schema_version: Literal[1] = 1
    generated_by: Generator
    level: str = Field(pattern=r"^L[1-5](\+interface)?$")  # "+interface": with the interface section
    granularity: Granularity | None  # of expectation and constraints (L3-L5)
    chain: str
    package: str
    prev_version: str
    next_version: str
    source: str  # where the tasks come from (DecompSynth and its model, or the imported file)
    note: str | None = None
    release_notes: ReleaseNotes | None = None  # L1 only
    tasks: list[LevelTask] = Field(default_factory=list)  # numbered, grouped by type (L2-L5)
    additional: list[LevelTask] = Field(default_factory=list)  # tasks without code: problem statement only
    file_changes: list[str] = Field(default_factory=list)  # "- Add file `p`", "- Rename from `a` to `b`"
    interface: InterfaceChanges | None = None
    # "published": L<n>.md is the dataset's own text, byte for byte; "rendered": rendered from this record.
    markdown: Literal["rendered", "published"] = "rendered"
    markdown_sha256: str | None = None  # of L<n>.md as written (a file that no longer matches is not ours)


def granularity_of(level: str) -> Granularity | None:
    return {"L3": "conceptual", "L4": "grounded", "L5": "grounded"}.get(level)  # type: ignore[return-value]


def parse_levels(text: str, allowed: tuple[str, ...] = LEVELS) -> list[str]:
    """``"L2,L3"`` -> ``["L2", "L3"]`` (case-insensitive, duplicates dropped, in the order given)."""
    chosen: list[str] = []
    for part in text.split(","):
        level = part.strip().upper()
        if not level:
            continue
        if level not in allowed:
            raise SwechainError(
                f"unknown or unsupported level {part.strip()!r}; use a comma-separated list of {', '.join(allowed)}"
            )
        if level not in chosen:
            chosen.append(level)
    if not chosen:
        raise SwechainError(f"no level given; use a comma-separated list of {', '.join(allowed)}")
    return chosen


def level_task(spec: TaskSpec, level: str, number: int | None) -> LevelTask:
    """What ``level`` shows of one task (under "Additional changes": the problem statement only)."""
    req = spec.synthesized_requirement
    view = LevelTask(
        number=number, task_id=spec.task_id, title=spec.title, type=spec.type, problem_statement=req.problem_statement
    )
    granularity, lists = LEVEL_FIELDS[level]
    if number is None or granularity is None:
        return view
    view.expectation = getattr(req.expectation, granularity)
    view.constraints = getattr(req.constraints, granularity)
    if lists:
        view.behavior = list(req.behavior)
        view.acceptance_criteria = list(req.acceptance_criteria)
    return view


def numbered(task: SpecTask) -> bool:
    """As the reference arranges a task set: a task is numbered when it has code hunks (unknown
    for an import of specifications alone); a release-note task without any, and every task
    Complete found (those have no entry in the reference's task-to-hunks map), are listed under
    "Additional Changes", problem statement only."""
    return task.origin != "complete" and (task.code_hunks is None or bool(task.code_hunks))


def arrange(tasks: list[SpecTask]) -> tuple[list[SpecTask], list[SpecTask]]:
    """(numbered tasks in group order, additional tasks in task-set order)."""
    main = [t for t in tasks if numbered(t)]
    extra = [t for t in tasks if not numbered(t)]
    ordered = [t for group in GROUPS for t in main if t.spec.type == group]
    return ordered, extra


def build_level(
    task_set: TaskSet,
    level: str,
    interface: InterfaceChanges | None = None,
    generated_by: Generator = SYNTH,
    source: str | None = None,
    note: str | None = None,
    file_changes: list[str] | None = None,
) -> LevelSpec:
    if level not in SPEC_LEVELS:
        raise SwechainError(
            f"a task set renders {', '.join(SPEC_LEVELS)}, not {level!r}; L1 comes from `swechain-ci specs render`"
        )
    common: dict[str, Any] = dict(
        generated_by=generated_by,
        level=level,
        granularity=granularity_of(level),
        chain=task_set.chain,
        package=task_set.package,
        prev_version=task_set.prev_version,
        next_version=task_set.next_version,
        source=source or task_set.source,
        note=note,
        interface=interface,
    )
    ordered, extra = arrange(task_set.tasks)
    return LevelSpec(
        **common,
        tasks=[level_task(t.spec, level, n) for n, t in enumerate(ordered, start=1)],
        additional=[level_task(t.spec, level, None) for t in extra],
        file_changes=list(file_changes or []),
    )


# --------------------------------------------------------------------------- Markdown


def _task_markdown(task: LevelTask) -> str:
    """One numbered task as the reference renders it (SpecsExtractor.render_task): text as it is."""
    lines = [f"### Task {task.number} {task.title}", task.problem_statement]
    if task.expectation is not None or task.acceptance_criteria is not None:
        lines.append("")  # L2 (ours) has nothing after the problem statement
    if task.expectation is not None:
        lines += [f"- **Expectation**: {task.expectation}", "", f"- **Constraints**: {task.constraints}", ""]
    if task.acceptance_criteria is not None:
        lines += ["- **Acceptance Criteria:**", *(f"  - {item}" for item in task.acceptance_criteria), ""]
    if task.behavior is not None:
        lines += ["- **Behavioral Description:**", *(f"  - {item}" for item in task.behavior), ""]
    return "\n".join(lines)


def render_level_markdown(spec: LevelSpec) -> str:
    """The Markdown an agent reads (``L<n>.md``), in the reference's layout: its title, type
    groups in its order, tasks numbered across them, "Additional Changes" (problem statements of
    the tasks without code), "File Changes"; with ``+interface``, the interface section last.
    At L3 this is byte for byte what the reference writes from the same task set."""
    sections = [f"# Upgrade Specification from {spec.prev_version} to {spec.next_version}"]
    group: str | None = None
    for task in spec.tasks:
        if task.type != group:
            group = task.type
            sections.append(f"## {GROUPS[group]}")
        sections[-1] += "\n\n" + _task_markdown(task)
    if spec.additional:
        sections.append("\n".join([f"## {ADDITIONAL}", *(f"- {t.problem_statement}" for t in spec.additional)]))
    if spec.file_changes:
        sections.append("\n".join([f"## {FILE_CHANGES}", *spec.file_changes]))
    if spec.interface is not None:
        sections.append(render_interface(spec.interface).rstrip())
    return "\n\n".join(sections)


# --------------------------------------------------------------------------- files


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def level_files(chain, prev: str, next_: str, level: str) -> tuple[Path, Path]:
    md = spec_path(chain, prev, next_, level)
    return md, md.with_suffix(".json")


def _record(js: Path) -> dict | None:
    try:
        data = json.loads(js.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_writable(md: Path, js: Path, also: tuple[str, ...] = ()) -> None:
    """Refuse to overwrite a file that ``specs synth`` or ``specs import`` (or a generator in
    ``also``) did not write: the JSON twin names its writer and the digest of the Markdown it
    wrote, so a hand-edited ``L<n>.md`` is left alone (files written before carry a marker line instead)."""
    ours = (*GENERATORS, *also)
    record = _record(js) if js.exists() else None
    if js.exists() and (record is None or record.get("generated_by") not in ours):
        raise SwechainError(
            f"{js}: exists and was not written by `{SYNTH}` or `{IMPORT}`; move it away to write this level there"
        )
    if md.exists():
        text = md.read_text(encoding="utf-8", errors="replace")
        first = text.split("\n", 1)[0]
        marked = any(first.startswith(f"<!-- generated by `{g}`") for g in ours)
        recorded = record is not None and record.get("markdown_sha256") == digest(text)
        if not (marked or recorded):
            raise SwechainError(
                f"{md}: exists and was not written by `{SYNTH}` or `{IMPORT}` (or was edited since); move it away "
                "to write this level there"
            )


def with_interface(chain, spec: LevelSpec) -> LevelSpec:
    """``spec`` as level ``<level>+interface``: the interface section appended."""
    from swechain_ci.specs.interface import chain_interface_changes

    return spec.model_copy(
        update={
            "level": spec.level + "+interface",
            "interface": chain_interface_changes(chain, spec.prev_version, spec.next_version),
        }
    )


def write_level(chain, spec: LevelSpec, published: str | None = None, also: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """``L<n>.md`` and ``L<n>.json`` of one step (atomically, each). ``published``: the text the
    agent reads, as the dataset has it (else the spec rendered)."""
    md, js = level_files(chain, spec.prev_version, spec.next_version, spec.level)
    check_writable(md, js, also)
    text = render_level_markdown(spec) if published is None else published
    spec = spec.model_copy(
        update={"markdown": "rendered" if published is None else "published", "markdown_sha256": digest(text)}
    )
    write_text(md, text)
    write_text(js, spec.model_dump_json(indent=2) + "\n")
    return md, js
