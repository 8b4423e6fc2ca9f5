"""Specification levels L1–L5 of a task set (SEMANTICS.md, "Specifications (DecompSynth)").

A *task set* (:class:`TaskSet`) is what DecompSynth produces for one step, or what
``swechain-ci specs import`` reads: one :class:`TaskSpec` per task, with the fields the
definition names. This module renders it at a level:

======  =====================================================================
level   what each task shows
======  =====================================================================
L1      the raw release notes (the text of linked issues and pull requests
        is not available here, and the specification says so)
L2      its problem statement
L3      L2 + the *conceptual* expectation and constraints (the default)
L4      L2 + the *grounded* expectation and constraints
L5      L4 + the behaviours and the acceptance criteria
======  =====================================================================

Layout (as the reference implementation renders its specifications): tasks are grouped
by type in the order of :data:`GROUPS` and numbered 1, 2, ... across the groups, in
task-set order within a group. A task that DecompSynth matched to no code hunk is listed
under "Additional changes" with its problem statement only, at every level from L2 on.
With the interface section (``interface.render_interface``) appended, a level is named
``<level>+interface`` (its own files, never mixed with the plain level).

``specs/<chain>/<prev>-<next>/L<n>.md`` is what an agent reads; ``L<n>.json`` next to it
holds the same content as data (:class:`LevelSpec`). Only files written by
``specs synth`` or ``specs import`` are ever overwritten (first line of the Markdown,
``generated_by`` of the JSON); anything else stops the write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from swechain_ci.errors import SwechainError
from swechain_ci.records import write_text
from swechain_ci.specs.changelog import ReleaseNotes, ReleaseTask
from swechain_ci.specs.interface import InterfaceChanges, render_interface
from swechain_ci.specs.store import split_level, spec_path

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

SYNTH = "swechain-ci specs synth"
IMPORT = "swechain-ci specs import"
Generator = Literal["swechain-ci specs synth", "swechain-ci specs import"]
GENERATORS: tuple[str, ...] = (SYNTH, IMPORT)

# Headings of the type groups, in the order the reference implementation renders them.
GROUPS: dict[str, str] = {
    "FEATURE": "New features",
    "FIX": "Bug fixes",
    "DEPENDENCY": "Dependency updates",
    "BREAKING": "Breaking changes",
    "TYPING": "Typing updates",
    "DOCUMENTATION": "Documentation",
    "PERFORMANCE": "Performance improvements",
    "REFACTOR": "Refactors",
    "OTHER": "Other changes",
}
ADDITIONAL = "Additional changes"
LEVEL_TITLES: dict[str, str] = {
    "L1": "release notes",
    "L2": "problem statements",
    "L3": "conceptual",
    "L4": "grounded",
    "L5": "grounded, with behaviour and acceptance criteria",
}
LEVEL_INTROS: dict[str, str] = {
    "L2": "Each task states a problem the new version solves.",
    "L3": "Each task states a problem the new version solves, with the expected outcome and the constraints "
          "in conceptual terms.",
    "L4": "Each task states a problem the new version solves, with the expected outcome and the constraints "
          "grounded in the code.",
    "L5": "Each task states a problem the new version solves, with the expected outcome and the constraints "
          "grounded in the code, its behaviour and its acceptance criteria.",
}


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# --------------------------------------------------------------------------- the task specification


class Granular(Strict):
    """One requirement at two granularities: in terms of the code, and in terms of behaviour."""

    grounded: Text
    conceptual: Text


class SynthesizedRequirement(Strict):
    problem_statement: Text
    expectation: Granular
    constraints: Granular
    behavior: list[Text]
    acceptance_criteria: list[Text]


class TaskFields(Strict):
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


class SpecTask(Strict):
    spec: TaskSpec
    origin: Literal["release_notes", "complete", "import"]
    release_task: ReleaseTask | None = None  # the release-note item it specifies (origin release_notes)
    code_hunks: list[str] | None = None  # ids of its code hunks (decompsynth.json); None: not known


class TaskSet(Strict):
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


class LevelTask(Strict):
    number: int | None  # as numbered in the Markdown; None under "Additional changes"
    task_id: str
    title: str
    type: TaskType
    problem_statement: str
    expectation: str | None = None  # L3: conceptual; L4, L5: grounded
    constraints: str | None = None
    behavior: list[str] | None = None  # L5
    acceptance_criteria: list[str] | None = None  # L5


class LevelSpec(Strict):
    """``L<n>.json``: one step's specification at one level, as data."""

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
    interface: InterfaceChanges | None = None


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
            raise SwechainError(f"unknown or unsupported level {part.strip()!r}; use a comma-separated list of "
                                f"{', '.join(allowed)}")
        if level not in chosen:
            chosen.append(level)
    if not chosen:
        raise SwechainError(f"no level given; use a comma-separated list of {', '.join(allowed)}")
    return chosen


def level_task(spec: TaskSpec, level: str, number: int | None) -> LevelTask:
    """What ``level`` shows of one task (under "Additional changes": the problem statement only)."""
    req = spec.synthesized_requirement
    view = LevelTask(number=number, task_id=spec.task_id, title=spec.title, type=spec.type,
                     problem_statement=req.problem_statement)
    if number is None or level == "L2":
        return view
    granularity = granularity_of(level)
    view.expectation = getattr(req.expectation, granularity)
    view.constraints = getattr(req.constraints, granularity)
    if level == "L5":
        view.behavior = list(req.behavior)
        view.acceptance_criteria = list(req.acceptance_criteria)
    return view


def arrange(tasks: list[SpecTask]) -> tuple[list[SpecTask], list[SpecTask]]:
    """(numbered tasks in group order, additional tasks): a task with zero code hunks is additional."""
    main = [t for t in tasks if t.code_hunks is None or t.code_hunks]
    extra = [t for t in tasks if t.code_hunks is not None and not t.code_hunks]
    ordered = [t for group in GROUPS for t in main if t.spec.type == group]
    return ordered, extra


def build_level(
    task_set: TaskSet, level: str, interface: InterfaceChanges | None = None, generated_by: str = SYNTH,
    source: str | None = None, note: str | None = None,
) -> LevelSpec:
    if level not in LEVELS:
        raise SwechainError(f"unknown level {level!r}; the levels are {', '.join(LEVELS)}")
    common = dict(
        generated_by=generated_by, level=level, granularity=granularity_of(level), chain=task_set.chain,
        package=task_set.package, prev_version=task_set.prev_version, next_version=task_set.next_version,
        source=source or task_set.source, note=note, interface=interface,
    )
    if level == "L1":
        if task_set.release_notes is None:
            raise SwechainError(
                f"{task_set.package} {task_set.prev_version} -> {task_set.next_version}: this task set holds no "
                "release notes, so it has no L1; render L1 with `swechain-ci specs render`"
            )
        return LevelSpec(**common, release_notes=task_set.release_notes)
    ordered, extra = arrange(task_set.tasks)
    return LevelSpec(
        **common,
        tasks=[level_task(t.spec, level, n) for n, t in enumerate(ordered, start=1)],
        additional=[level_task(t.spec, level, None) for t in extra],
    )


# --------------------------------------------------------------------------- Markdown


def marker(generated_by: str, level: str) -> str:
    return f"<!-- generated by `{generated_by}` (level {level}); regenerate it rather than edit it -->"


def _item(label: str, text: str) -> list[str]:
    first, *rest = text.strip().split("\n")
    return [f"- **{label}:** {first}", *[f"  {line}" if line.strip() else "" for line in rest]]


def _items(label: str, items: list[str]) -> list[str]:
    lines = [f"- **{label}:**"]
    for item in items:
        first, *rest = item.strip().split("\n")
        lines += [f"  - {first}", *[f"    {line}" if line.strip() else "" for line in rest]]
    return lines


def _task_markdown(task: LevelTask) -> list[str]:
    lines = [f"### Task {task.number}: {task.title}", "", task.problem_statement.strip(), ""]
    fields: list[str] = []
    if task.expectation is not None:
        fields += _item("Expectation", task.expectation)
    if task.constraints is not None:
        fields += _item("Constraints", task.constraints)
    if task.behavior is not None:
        fields += _items("Behaviour", task.behavior)
    if task.acceptance_criteria is not None:
        fields += _items("Acceptance criteria", task.acceptance_criteria)
    return lines + (fields + [""] if fields else [])


def render_level_markdown(spec: LevelSpec) -> str:
    """The Markdown an agent reads (``L<n>.md``)."""
    from swechain_ci.specs.render import render_release_notes

    head = (
        f"Upgrade the code from {spec.package} {spec.prev_version} to {spec.next_version}. "
    )
    follow = " The changes of the public interface follow." if spec.interface is not None else ""
    lines = [
        marker(spec.generated_by, spec.level),
        f"# {spec.package} {spec.prev_version} → {spec.next_version}: upgrade specification "
        f"({spec.level}, {LEVEL_TITLES[split_level(spec.level)[0]]})",
        "",
    ]
    if split_level(spec.level)[0] == "L1":
        assert spec.release_notes is not None
        lines += [
            head + f"The tasks are the release notes of {spec.next_version}, as written; the text of the issues "
            "and pull requests they link to is not available here." + follow,
            "",
            render_release_notes(spec.release_notes, spec.package).rstrip(),
            "",
        ]
    else:
        lines += [head + LEVEL_INTROS[split_level(spec.level)[0]] + follow, ""]
        if not spec.tasks and not spec.additional:
            lines += ["This release has no task with an observable change.", ""]
        group = None
        for task in spec.tasks:
            if task.type != group:
                group = task.type
                lines += [f"## {GROUPS[group]}", ""]
            lines += _task_markdown(task)
        if spec.additional:
            lines += [f"## {ADDITIONAL}", ""]
            for task in spec.additional:
                first, *rest = task.problem_statement.strip().split("\n")
                lines += [f"- {first}", *[f"  {line}" if line.strip() else "" for line in rest]]
            lines += [""]
    if spec.interface is not None:
        lines += [render_interface(spec.interface).rstrip(), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- files


def level_files(chain, prev: str, next_: str, level: str) -> tuple[Path, Path]:
    md = spec_path(chain, prev, next_, level)
    return md, md.with_suffix(".json")


def check_writable(md: Path, js: Path) -> None:
    """Refuse to overwrite a file that ``specs synth`` or ``specs import`` did not write."""
    if md.exists():
        first = md.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
        if not any(first.startswith(f"<!-- generated by `{g}`") for g in GENERATORS):
            raise SwechainError(
                f"{md}: exists and was not written by `{SYNTH}` or `{IMPORT}`; move it away to write this level there"
            )
    if js.exists():
        try:
            generator = json.loads(js.read_text(encoding="utf-8")).get("generated_by")
        except (ValueError, AttributeError):
            generator = None
        if generator not in GENERATORS:
            raise SwechainError(
                f"{js}: exists and was not written by `{SYNTH}` or `{IMPORT}`; move it away to write this level there"
            )


def with_interface(chain, spec: LevelSpec) -> LevelSpec:
    """``spec`` as level ``<level>+interface``: the interface section appended."""
    from swechain_ci.specs.interface import chain_interface_changes

    return spec.model_copy(update={
        "level": spec.level + "+interface",
        "interface": chain_interface_changes(chain, spec.prev_version, spec.next_version),
    })


def write_level(chain, spec: LevelSpec) -> tuple[Path, Path]:
    """``L<n>.md`` and ``L<n>.json`` of one step (atomically, each)."""
    md, js = level_files(chain, spec.prev_version, spec.next_version, spec.level)
    check_writable(md, js)
    write_text(md, render_level_markdown(spec))
    write_text(js, spec.model_dump_json(indent=2) + "\n")
    return md, js
