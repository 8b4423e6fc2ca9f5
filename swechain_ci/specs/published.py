"""``swechain-ci specs import`` (and ``specs fetch``): the published SWE-Chain specifications.

Three layouts are read, alike:

- the dataset's ``data/*.parquet`` (``specs_chain.parquet``: columns ``chain_id``, ``prev_ver``,
  ``next_ver``, ``specs``, and ``step_id``, ``package``), through pyarrow (the extra
  ``parquet``); a chain's rows are those whose ``chain_id`` is its ``paper_id`` (chain.yaml);
- JSON lines ``<chain_id>_specs_chain.jsonl`` (what the reference's ``load_dataset.py`` makes
  of the parquet file, and what its ``synthesize.py`` writes): ``package``, ``prev_ver``,
  ``next_ver``, ``specs`` per line;
- the reference repository's ``metadata/`` folder (or one chain's folder in it):
  ``<chain_id>/<version>/synthetic/v<version>_specs.json`` (every task's specification, keyed
  by task id), ``v<version>_specs.md`` (what the paper's agents read),
  ``v<version>_tasks_code_hunks.json`` (which tasks have code) and
  ``<version>/metadata/v<version>_changelog_tasks.json`` (the release-note tasks with the text
  of their linked issues and pull requests, for L1).

``specs`` is the Markdown the reference writes (``# Upgrade Specification from A to B``, type
groups, ``### Task <n> <title>``, ``## Additional Changes``, ``## File Changes``), or task
objects with exactly the fields of ``levels.TaskSpec`` (a list, an object keyed by task id, or
either as a JSON string).

**What the agent reads.** At the level a published text holds, ``L<n>.md`` is that text, byte
for byte: the dataset's Markdown is the reference's default rendering, L3 (conceptual
expectation and constraints, no lists), the paper's level; a text with acceptance criteria and
behaviours is L5. A text with no numbered task (only "Additional Changes" and "File Changes",
e.g. PyJWT 2.12.0 -> 2.12.1) is the same at every level, so it is that text at every level.
Other levels are rendered in the reference's layout (``levels.py``): from a text, L2 (problem
statements) and, from an L5 text, L4; from task objects, every level. From the metadata
folder, L3 is ``v<version>_specs.md`` and the other levels come from the JSON, arranged as
the reference arranged them (numbered tasks, "Additional Changes", the tasks Complete added,
"File Changes", all taken from the ``.md``).

**All or nothing, per chain.** Every row of a chain is validated before any file of it is
written; a bad row stops that chain with one line naming the file, row, versions and field.
Rows that match no step of the chain are reported, not errors. Steps are matched by version
(PEP 440: ``2.0`` equals ``2.0.0``). The files are ``specs/<chain>/<prev>-<next>/L<n>.md`` and
``.json``, written by ``levels.write_level``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, ValidationError

from swechain_ci.chain.definition import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.models import Strict
from swechain_ci.specs.levels import (
    ADDITIONAL,
    FILE_CHANGES,
    GROUPS,
    IMPORT,
    SPEC_LEVELS,
    LevelSpec,
    LevelTask,
    SpecTask,
    TaskSet,
    TaskSpec,
    TaskType,
    build_level,
    check_writable,
    granularity_of,
    level_files,
    write_level,
)
from swechain_ci.specs.linked import LinkedText, from_changelog_tasks
from swechain_ci.specs.linked import store as store_linked

Shape = Literal["tasks", "markdown", "tasks+markdown"]  # what a row held
_GROUP_TYPES: dict[str, TaskType] = {title.lower(): kind for kind, title in GROUPS.items()}
_GROUP_TYPES["other changes"] = "OTHER"  # what our renderings of schema 1 called "Others"
_TITLE = re.compile(r"^#\s+Upgrade Specification from\s+(\S+)\s+to\s+(\S+)\s*$", re.IGNORECASE)
_GROUP = re.compile(r"^##\s+(.+?)\s*$")
_TASK = re.compile(r"^###\s+Task\s+(\d+)[:.]?\s*(.*?)\s*$", re.IGNORECASE)
_FIELD = re.compile(r"^-\s+\*\*([A-Za-z ]+?):?\*\*:?\s*(.*)$")
_SUBITEM = re.compile(r"^\s{2,}[-*]\s+(.*)$")
_TEXT_FIELDS = {"expectation": "expectation", "constraints": "constraints", "constraint": "constraints"}
_LIST_FIELDS = {
    "acceptance criteria": "acceptance_criteria",
    "behavioral description": "behavior",
    "behavioural description": "behavior",
    "behaviour": "behavior",
    "behavior": "behavior",
}
ROW_KEYS = ("package", "prev_ver", "next_ver", "specs")
PARQUET_KEYS = ("chain_id", "prev_ver", "next_ver", "specs")  # step_id and package are read when present


class ImportedRow(Strict):
    line: int  # line of the JSON lines file, row of the parquet file, or number of the version folder
    package: str
    prev_ver: str
    next_ver: str
    status: Literal["written", "unmatched", "duplicate"]
    step: str | None = None  # "prev-next" as the chain names it
    source: str | None = None  # where the row came from (file, row or folder, digest)
    shape: Shape | None = None
    tasks: int | None = None
    published: list[str] = []  # levels whose L<n>.md is the published text itself
    linked: int = 0  # linked issue and pull request texts cached for L1 (metadata folder)
    reason: str | None = None
    written: list[str] = []


class ImportReport(Strict):
    file: str
    chain: str
    level: str
    rows: list[ImportedRow]
    missing_steps: list[str] = []  # steps of the chain no row covers

    @property
    def unmatched(self) -> list[ImportedRow]:
        return [r for r in self.rows if r.status != "written"]


class Row(Strict):
    """One step's published specification, whatever the layout it came in."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    line: int
    where: str  # "file row 3 (2.0.1 -> 2.1.0)": how an error names it
    source: str  # provenance recorded in L<n>.json
    chain_id: str | None = None
    package: str
    prev_ver: str
    next_ver: str
    specs: Any = None  # Markdown text, or task objects
    tasks_json: Any = None  # metadata folder: v<next>_specs.json
    code_hunks: Any = None  # metadata folder: v<next>_tasks_code_hunks.json
    changelog_tasks: Any = None  # metadata folder: v<next>_changelog_tasks.json


# --------------------------------------------------------------------------- versions and names


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).strip().lower()


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality (``2.0`` == ``2.0.0`` == ``v2.0``); plain text when either does not parse."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a.strip()) == Version(b.strip())
    except InvalidVersion:
        return a.strip().lower().removeprefix("v") == b.strip().lower().removeprefix("v")


def match_step(chain: Chain, prev: str, next_: str) -> tuple[tuple[str, str] | None, str | None]:
    """The chain's step for a row's versions, or ``None`` and why not."""
    found = [s for s in chain.steps if same_version(s[0], prev) and same_version(s[1], next_)]
    if len(found) == 1:
        return found[0], None
    if len(found) > 1:
        return None, f"matches several steps ({', '.join(f'{a}-{b}' for a, b in found)})"
    have_prev = [v for v in chain.versions if same_version(v, prev)]
    have_next = [v for v in chain.versions if same_version(v, next_)]
    if have_prev and have_next:
        return None, f"{have_prev[0]} and {have_next[0]} are both in chain {chain.id} but are not one step apart"
    missing = [v for v, have in ((prev, have_prev), (next_, have_next)) if not have]
    return (
        None,
        f"version {' and '.join(missing)} not in chain {chain.id} ({chain.versions[0]} .. {chain.versions[-1]})",
    )


# --------------------------------------------------------------------------- task objects


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"'{'.'.join(str(p) for p in e['loc']) or '(top level)'}': {e['msg']}" for e in exc.errors())


def structured_tasks(value: Any, where: str) -> list[TaskSpec]:
    """A list of task objects, or an object of them keyed by task id, validated strictly."""
    if isinstance(value, dict):

        def number(key: str) -> tuple[int, str]:
            digits = re.findall(r"\d+", key)
            return (int(digits[-1]) if digits else 0, key)

        items = []
        for key in sorted(value, key=number):
            item = value[key]
            if isinstance(item, dict) and item.get("task_id") != key:
                raise SwechainError(
                    f"{where}: the task under key {key!r} has task_id {item.get('task_id')!r}; they must be equal"
                )
            items.append(item)
    elif isinstance(value, list):
        items = value
    else:
        raise SwechainError(f"{where}: expected a list of task objects, got {type(value).__name__}")
    specs = []
    for index, item in enumerate(items):
        try:
            specs.append(TaskSpec.model_validate(item))
        except ValidationError as exc:
            raise SwechainError(f"{where}: task {index + 1}: {_describe(exc)}") from None
    ids = [s.task_id for s in specs]
    if len(set(ids)) != len(ids):
        raise SwechainError(f"{where}: task ids repeat ({', '.join(ids)})")
    return specs


# --------------------------------------------------------------------------- the Markdown


class MarkdownTask(Strict):
    number: int | None  # None: listed under "Additional Changes"
    title: str
    type: TaskType
    problem_statement: str
    expectation: str | None = None
    constraints: str | None = None
    behavior: list[str] = []
    acceptance_criteria: list[str] = []
    extra_lines: int = 0  # lines after the fields (the reference's linked issue text at include_github)


class ParsedMarkdown(Strict):
    versions: tuple[str, str] | None
    tasks: list[MarkdownTask]
    file_changes: list[str] = []

    @property
    def numbered(self) -> list[MarkdownTask]:
        return [t for t in self.tasks if t.number is not None]

    @property
    def additional(self) -> list[MarkdownTask]:
        return [t for t in self.tasks if t.number is None]


def parse_markdown(text: str, where: str) -> ParsedMarkdown:
    """A specification in the reference's Markdown layout: its tasks, versions and file changes."""
    tasks: list[MarkdownTask] = []
    file_changes: list[str] = []
    versions = None
    mode = "start"  # start | group | additional | files
    group: str | None = None
    current: dict[str, Any] | None = None
    field_name: str | None = None

    def finish() -> None:
        nonlocal current, field_name
        if current is not None:
            statement = "\n".join(current.pop("statement")).strip("\n")
            if not statement.strip():
                raise SwechainError(f"{where}: Task {current['number']} ({current['title']}) has no problem statement")
            tasks.append(MarkdownTask(problem_statement=statement, **current))
        current, field_name = None, None

    for number, line in enumerate(text.splitlines(), start=1):
        if m := _TITLE.match(line):
            versions = (m.group(1), m.group(2))
            continue
        if (m := _GROUP.match(line)) and not line.startswith("###"):
            finish()
            title = m.group(1).strip().lower()
            if title == ADDITIONAL.lower():
                mode = "additional"
            elif title == FILE_CHANGES.lower():
                mode = "files"
            elif title in _GROUP_TYPES:
                mode, group = "group", _GROUP_TYPES[title]
            else:
                raise SwechainError(
                    f"{where}: line {number}: unknown section {m.group(1)!r}; expected one of "
                    f"{', '.join(GROUPS.values())}, {ADDITIONAL}, {FILE_CHANGES}"
                )
            continue
        if mode == "files":
            if line.strip():
                file_changes.append(line)
            continue
        if mode == "additional":
            if m := re.match(r"^-\s+(.*)$", line):
                tasks.append(MarkdownTask(number=None, title="", type="OTHER", problem_statement=m.group(1)))
            elif line.strip() and tasks and tasks[-1].number is None:
                tasks[-1].problem_statement += "\n" + line
            continue
        if m := _TASK.match(line):
            finish()
            if mode != "group":
                raise SwechainError(f"{where}: line {number}: a task outside a type section")
            current = {"number": int(m.group(1)), "title": m.group(2), "type": group, "statement": []}
            continue
        if current is None:
            if line.strip() and mode == "group":
                raise SwechainError(f"{where}: line {number}: text outside a task: {line.strip()[:60]!r}")
            continue
        if m := _FIELD.match(line):
            name = m.group(1).strip().lower()
            if name in _TEXT_FIELDS:
                field_name = _TEXT_FIELDS[name]
                current[field_name] = m.group(2)
                continue
            if name in _LIST_FIELDS:
                field_name = _LIST_FIELDS[name]
                current[field_name] = []
                continue
        if field_name is None:
            current["statement"].append(line)  # the problem statement runs up to the first field
        elif not line.strip():
            if field_name in _TEXT_FIELDS.values():
                field_name = "-"  # a text field ends at a blank line
        elif field_name in ("behavior", "acceptance_criteria") and (m := _SUBITEM.match(line)):
            current[field_name].append(m.group(1).strip())
        elif field_name in ("behavior", "acceptance_criteria") and line.startswith("    ") and current[field_name]:
            current[field_name][-1] += "\n" + line.strip()
        elif field_name in _TEXT_FIELDS.values():
            current[field_name] += "\n" + line
        else:  # after the fields: the reference's linked issue text (include_github), not a field
            current["extra_lines"] = current.get("extra_lines", 0) + 1
            field_name = "-"
    finish()
    return ParsedMarkdown(versions=versions, tasks=tasks, file_changes=file_changes)


def markdown_holds(parsed: ParsedMarkdown, where: str) -> tuple[str, tuple[str, ...]]:
    """(the level a published text holds, the levels it can be written at)."""
    numbered = parsed.numbered
    if not numbered:
        return "every level", SPEC_LEVELS  # Additional Changes and File Changes only: the same at each
    fields = [t for t in numbered if t.expectation is not None and t.constraints is not None]
    lists = [t for t in fields if t.behavior and t.acceptance_criteria]
    if len(lists) == len(numbered):
        return "L5", ("L2", "L4", "L5")
    if not lists and len(fields) == len(numbered):
        return "L3", ("L2", "L3")  # the reference's default rendering: conceptual, no lists
    if not fields:
        return "L2", ("L2",)
    raise SwechainError(
        f"{where}: some tasks have expectation and constraints (or criteria and behaviours) and others not; "
        "a published specification holds one level"
    )


def markdown_level(parsed: ParsedMarkdown, level: str, where: str) -> tuple[list[LevelTask], list[LevelTask]]:
    """(numbered, additional) views of a published text's tasks at ``level``."""
    holds, can = markdown_holds(parsed, where)
    if level not in can:
        others = " or ".join(can)
        raise SwechainError(
            f"{where}: the published text holds {holds} content, so it cannot be written at {level} (use --level "
            f"{others}; L4 and L5 of a text that holds L3 need the task objects: the reference's metadata/ folder)"
        )
    views: list[LevelTask] = []
    order = {kind: i for i, kind in enumerate(GROUPS)}
    for task in sorted(parsed.numbered, key=lambda t: order[t.type]):  # stable: the published order in a group
        view = LevelTask(
            number=len(views) + 1,
            task_id=f"task_{task.number}",
            title=task.title,
            type=task.type,
            problem_statement=task.problem_statement,
        )
        if level != "L2":
            view.expectation, view.constraints = task.expectation, task.constraints
        if level == "L5":
            view.behavior, view.acceptance_criteria = task.behavior, task.acceptance_criteria
        views.append(view)
    additional = [
        LevelTask(
            number=None, task_id=f"additional_{i + 1}", title="", type="OTHER", problem_statement=t.problem_statement
        )
        for i, t in enumerate(parsed.additional)
    ]
    return views, additional


def _check_title(parsed: ParsedMarkdown, step: tuple[str, str], where: str) -> None:
    versions = parsed.versions
    if versions and not (same_version(versions[0], step[0]) and same_version(versions[1], step[1])):
        raise SwechainError(
            f"{where}: the Markdown title names {versions[0]} -> {versions[1]}, the step {step[0]} -> {step[1]}"
        )


# --------------------------------------------------------------------------- one row at one level


class Planned(Strict):
    """One level of one row, ready to write."""

    spec: LevelSpec
    published: str | None  # the published text, when L<n>.md is it


def _decode(value: Any, where: str) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise SwechainError(f"{where}: specs look like JSON but do not parse ({exc})") from None
    return value


def row_levels(chain: Chain, step: tuple[str, str], row: Row, levels: list[str]) -> tuple[list[Planned], Shape, int]:
    """Every requested level of one row: (planned levels, shape, number of tasks)."""
    prev, next_ = step
    common: dict[str, Any] = dict(
        generated_by=IMPORT,
        chain=chain.id,
        package=chain.config.package,
        prev_version=prev,
        next_version=next_,
        source=row.source,
    )
    if row.tasks_json is not None:
        return _metadata_levels(chain, step, row, levels)
    value = _decode(row.specs, f"{row.where}, field specs")
    if isinstance(value, str):
        where = f"{row.where}, field specs"
        if not value.strip():
            raise SwechainError(f"{where}: empty")
        parsed = parse_markdown(value, where)
        _check_title(parsed, step, where)
        holds, _ = markdown_holds(parsed, where)
        planned = []
        for level in levels:
            views, additional = markdown_level(parsed, level, where)
            spec = LevelSpec(
                **common,
                level=level,
                granularity=granularity_of(level),
                tasks=views,
                additional=additional,
                file_changes=parsed.file_changes,
            )
            planned.append(Planned(spec=spec, published=value if holds in (level, "every level") else None))
        return planned, "markdown", len(parsed.tasks)
    task_specs = structured_tasks(value, f"{row.where}, field specs")
    task_set = TaskSet(
        chain=chain.id,
        package=chain.config.package,
        prev_version=prev,
        next_version=next_,
        source="import",
        release_notes=None,
        tasks=[SpecTask(spec=s, origin="import") for s in task_specs],
    )
    planned = [
        Planned(spec=build_level(task_set, lv, generated_by=IMPORT, source=row.source), published=None) for lv in levels
    ]
    return planned, "tasks", len(task_specs)


def _metadata_levels(
    chain: Chain, step: tuple[str, str], row: Row, levels: list[str]
) -> tuple[list[Planned], Shape, int]:
    """Levels from the reference's ``v<next>_specs.json``, arranged as its ``.md`` arranges them:
    tasks numbered there are numbered, the others are "Additional Changes", and the tasks only the
    Markdown lists (Complete's) are added there; its "File Changes" are kept. Without the ``.md``,
    ``v<next>_tasks_code_hunks.json`` says which tasks have code. L3 is the ``.md`` itself."""
    prev, next_ = step
    where = f"{row.where}, v{row.next_ver}_specs.json"
    specs = structured_tasks(row.tasks_json, where)
    numbered: set[tuple[str, str]] | None = None
    extra: list[LevelTask] = []
    file_changes: list[str] = []
    markdown = row.specs
    if markdown is not None:
        md_where = f"{row.where}, v{row.next_ver}_specs.md"
        parsed = parse_markdown(markdown, md_where)
        _check_title(parsed, step, md_where)
        numbered = {(t.title.strip(), t.problem_statement.strip()) for t in parsed.numbered}
        known = {s.synthesized_requirement.problem_statement.strip() for s in specs}
        unknown = numbered - {(s.title.strip(), s.synthesized_requirement.problem_statement.strip()) for s in specs}
        if unknown:
            title = sorted(unknown)[0][0]
            raise SwechainError(f"{md_where}: Task {title!r} is not in v{row.next_ver}_specs.json")
        extra = [
            LevelTask(
                number=None, task_id=f"complete_{i + 1}", title="", type="OTHER", problem_statement=t.problem_statement
            )
            for i, t in enumerate(t for t in parsed.additional if t.problem_statement.strip() not in known)
        ]
        file_changes = parsed.file_changes

    def hunks_of(spec: TaskSpec) -> list[str] | None:
        if numbered is not None:
            key = (spec.title.strip(), spec.synthesized_requirement.problem_statement.strip())
            return None if key in numbered else []
        if isinstance(row.code_hunks, dict):
            entries = row.code_hunks.get(spec.task_id) or []
            return [f"{e.get('diff_header')} {h}" for e in entries if isinstance(e, dict) for h in e.get("hunks", [])]
        return None

    task_set = TaskSet(
        chain=chain.id,
        package=chain.config.package,
        prev_version=prev,
        next_version=next_,
        source="import",
        release_notes=None,
        tasks=[SpecTask(spec=s, origin="import", code_hunks=hunks_of(s)) for s in specs],
    )
    planned = []
    for level in levels:
        spec = build_level(task_set, level, generated_by=IMPORT, source=row.source, file_changes=file_changes)
        spec.additional += extra
        planned.append(Planned(spec=spec, published=markdown if level == "L3" and markdown is not None else None))
    return planned, "tasks+markdown" if markdown is not None else "tasks", len(specs) + len(extra)


# --------------------------------------------------------------------------- reading the layouts


def _digest(*blobs: bytes) -> str:
    h = hashlib.sha256()
    for blob in blobs:
        h.update(blob)
    return h.hexdigest()[:16]


def _string_fields(row: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in keys:
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise SwechainError(f"{where}: field {key} must be a non-empty string, got {row.get(key)!r:.40}")


def jsonl_rows(path: Path) -> list[Row]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SwechainError(f"{path}: cannot read ({exc.strerror})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SwechainError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(row, dict):
            raise SwechainError(f"{where}: expected a JSON object, got {type(row).__name__}")
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise SwechainError(f"{where}: missing {', '.join(missing)}; a row has {', '.join(ROW_KEYS)}")
        _string_fields(row, ("package", "prev_ver", "next_ver"), where)
        rows.append(
            Row(
                line=number,
                where=f"{where} ({row['prev_ver']} -> {row['next_ver']})",
                source=f"imported from {path.name} line {number}",
                package=row["package"],
                prev_ver=row["prev_ver"],
                next_ver=row["next_ver"],
                specs=row["specs"],
            )
        )
    if not rows:
        raise SwechainError(f"{path}: holds no rows; expected JSON lines with {', '.join(ROW_KEYS)}")
    return rows


def parquet_rows(path: Path) -> list[Row]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SwechainError(
            f"{path}: reading parquet needs pyarrow; install the extra: pip install 'swechain-ci[parquet]'"
        ) from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        raise SwechainError(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None
    missing = [k for k in PARQUET_KEYS if k not in table.column_names]
    if missing:
        raise SwechainError(
            f"{path}: has no column {', '.join(missing)}; the dataset's specs_chain.parquet has "
            f"{', '.join(PARQUET_KEYS)} (and step_id, package)"
        )
    rows = []
    for number, row in enumerate(table.to_pylist(), start=1):
        where = f"{path} row {number}"
        _string_fields(row, ("chain_id", "prev_ver", "next_ver"), where)
        where += f" ({row['chain_id']} {row['prev_ver']} -> {row['next_ver']})"
        step_id = row.get("step_id")
        rows.append(
            Row(
                line=number,
                where=where,
                chain_id=row["chain_id"],
                package=str(row.get("package") or row["chain_id"].split("_")[0]),
                prev_ver=row["prev_ver"],
                next_ver=row["next_ver"],
                specs=row["specs"],
                source=(
                    f"published SWE-Chain specifications {path.name} row {number} (chain_id {row['chain_id']}, "
                    f"step_id {step_id}, sha256 {_digest(str(row['specs']).encode())})"
                ),
            )
        )
    if not rows:
        raise SwechainError(f"{path}: holds no rows")
    return rows


def _version_order(name: str) -> tuple[int, Any]:
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(name))
    except InvalidVersion:
        return (1, name)


def _read_json(path: Path, where: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SwechainError(f"{where}: {path.name} is not JSON ({exc})") from None


def metadata_rows(root: Path, chain: Chain) -> list[Row]:
    """Rows of one chain folder of the reference's ``metadata/``: one per version folder with specs.
    The previous version is the chain's version before it (the folder holds only the target's)."""
    chain_id = root.name
    folders = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: _version_order(d.name))
    rows = []
    for number, folder in enumerate(folders, start=1):
        version = folder.name
        js = folder / "synthetic" / f"v{version}_specs.json"
        md = js.with_suffix(".md")
        if not js.is_file() and not md.is_file():
            continue
        index = next((i for i, v in enumerate(chain.versions) if same_version(v, version)), 0)
        prev = chain.versions[index - 1] if index > 0 else "?"
        where = f"{root}/{version}"
        hunks = folder / "synthetic" / f"v{version}_tasks_code_hunks.json"
        notes = folder / "metadata" / f"v{version}_changelog_tasks.json"
        files = [f for f in (js, md) if f.is_file()]
        names = " + ".join(f.relative_to(root.parent).as_posix() for f in files)
        rows.append(
            Row(
                line=number,
                where=where,
                chain_id=chain_id,
                package=chain_id.split("_")[0],
                prev_ver=prev,
                next_ver=version,
                specs=md.read_text(encoding="utf-8") if md.is_file() else None,
                tasks_json=_read_json(js, where) if js.is_file() else None,
                code_hunks=_read_json(hunks, where) if hunks.is_file() else None,
                changelog_tasks=_read_json(notes, where) if notes.is_file() else None,
                source=f"published SWE-Chain specifications {names} (sha256 {_digest(*(f.read_bytes() for f in files))})",
            )
        )
    if not rows:
        raise SwechainError(f"{root}: holds no <version>/synthetic/v<version>_specs.json or .md")
    return rows


def source_kind(path: Path) -> Literal["metadata", "parquet", "jsonl"]:
    if not path.exists():
        raise SwechainError(
            f"{path}: no such file or folder; give the dataset's data/specs_chain.parquet, a "
            "<chain_id>_specs_chain.jsonl file, or the reference's metadata/ folder (or `swechain-ci specs fetch`)"
        )
    return "metadata" if path.is_dir() else "parquet" if path.suffix == ".parquet" else "jsonl"


def read_rows(path: Path, chain: Chain) -> list[Row]:
    """The rows of ``path`` that could belong to ``chain`` (all of them, for JSON lines)."""
    kind = source_kind(path)
    if kind == "parquet":
        return parquet_rows(path)
    if kind == "jsonl":
        return jsonl_rows(path)
    paper_id = chain.config.paper_id
    if not paper_id:
        raise SwechainError(
            f"chain {chain.id} has no paper_id in {chain.folder / 'chain.yaml'}; the published folders are named "
            "by the paper's chain id (e.g. pyjwt_2.0.0_to_2.12.1)"
        )
    root = path if path.name == paper_id else path / paper_id
    if not root.is_dir():
        raise SwechainError(
            f"{path}: has no folder {paper_id} (chain {chain.id}'s paper_id); expected the reference "
            "repository's metadata/ folder or its chain folder"
        )
    return metadata_rows(root, chain)


def chain_ids(path: Path) -> list[str]:
    """The paper chain ids a source covers."""
    kind = source_kind(path)
    if kind == "parquet":
        return sorted({r.chain_id for r in parquet_rows(path) if r.chain_id})
    if kind == "jsonl":
        return [path.name.removesuffix(".jsonl").removesuffix("_specs_chain")]
    if any((d / "synthetic").is_dir() for d in path.iterdir() if d.is_dir()):
        return [path.name]
    return sorted(d.name for d in path.iterdir() if d.is_dir() and not d.name.startswith("."))


# --------------------------------------------------------------------------- the import


def import_specs(
    path: Path | str, chain: Chain, level: str | None = None, interface: bool = False, levels: list[str] | None = None
) -> ImportReport:
    """Validate every row of ``path`` for ``chain``, then write the rows that match its steps at
    each level (with ``interface``, also ``<level>+interface``); nothing is written if any row fails.

    Levels by default: L2-L5 from task objects (the metadata folder), L2 and L3 from published
    Markdown (every level from a text with no numbered task)."""
    path = Path(path)
    kind = source_kind(path)
    chosen = levels or ([level] if level else None)
    bad = [lv for lv in chosen or [] if lv not in SPEC_LEVELS]
    if bad:
        raise SwechainError(
            f"`{IMPORT}` writes {', '.join(SPEC_LEVELS)}, not {', '.join(bad)}; L1 comes from `swechain-ci specs render`"
        )
    rows = read_rows(path, chain)
    package = normalize_name(chain.config.package)
    reports: list[ImportedRow] = []
    planned: list[tuple[ImportedRow, list[Planned]]] = []
    seen: dict[tuple[str, str], int] = {}
    linked_texts: list[LinkedText] = []
    for row in rows:
        report = ImportedRow(
            line=row.line, package=row.package, prev_ver=row.prev_ver, next_ver=row.next_ver, status="unmatched"
        )
        if kind == "parquet" and row.chain_id != chain.config.paper_id:
            report.reason = (
                f"chain_id {row.chain_id} is not chain {chain.id}'s paper_id "
                f"{chain.config.paper_id or '(none set in chain.yaml)'}"
            )
            reports.append(report)
            continue
        if kind == "jsonl" and normalize_name(row.package) != package:
            report.reason = f"package {row.package} is not chain {chain.id}'s package {chain.config.package}"
            reports.append(report)
            continue
        reports.append(report)
        step, why = match_step(chain, row.prev_ver, row.next_ver)
        if step is None:
            report.reason = why
            continue
        report.step = f"{step[0]}-{step[1]}"
        if step in seen:
            report.status, report.reason = "duplicate", f"same step as row {seen[step]}; not written"
            continue
        seen[step] = row.line
        row_chosen = chosen or _default_levels(row)
        levels_of_row, shape, count = row_levels(chain, step, row, row_chosen)
        report.status, report.shape, report.tasks, report.source = "written", shape, count, row.source
        report.published = [p.spec.level for p in levels_of_row if p.published is not None]
        if row.changelog_tasks is not None:
            texts = from_changelog_tasks(row.changelog_tasks, row.where)
            linked_texts += texts
            report.linked = len(texts)
        planned.append((report, levels_of_row))
    if interface:
        from swechain_ci.specs.interface import render_interface
        from swechain_ci.specs.levels import with_interface

        def plus(p: Planned) -> Planned:
            spec = with_interface(chain, p.spec)
            assert spec.interface is not None
            text = None if p.published is None else p.published + "\n\n" + render_interface(spec.interface).rstrip()
            return Planned(spec=spec, published=text)

        planned = [(report, [*ps, *(plus(p) for p in ps)]) for report, ps in planned]
    for _, ps in planned:  # refuse before writing anything
        for p in ps:
            check_writable(*level_files(chain, p.spec.prev_version, p.spec.next_version, p.spec.level))
    for report, ps in planned:
        for p in ps:
            md, js = write_level(chain, p.spec, p.published)
            report.written += [str(md), str(js)]
    for text in linked_texts:  # for L1 (`specs render`)
        store_linked(chain, text)
    written_levels = sorted({Path(w).stem for r in reports for w in r.written if w.endswith(".md")})
    missing = [f"{a}-{b}" for a, b in chain.steps if (a, b) not in seen]
    return ImportReport(
        file=str(path), chain=chain.id, level=", ".join(written_levels) or "-", rows=reports, missing_steps=missing
    )


def _default_levels(row: Row) -> list[str]:
    if row.tasks_json is not None:
        return list(SPEC_LEVELS)
    value = row.specs
    if isinstance(value, str) and value.lstrip()[:1] not in ("[", "{"):
        where = f"{row.where}, field specs"
        return list(markdown_holds(parse_markdown(value, where), where)[1])
    return list(SPEC_LEVELS)
