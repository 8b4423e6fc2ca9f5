"""``swechain-ci specs import``: the published SWE-Chain specifications, as distributed.

Three layouts are read:

- the dataset's ``data/specs_chain.parquet`` (columns ``chain_id``, ``step_id``, ``package``,
  ``prev_ver``, ``next_ver``, ``specs``), through pyarrow (the optional extra ``parquet``);
  rows are those whose ``chain_id`` is the chain's ``paper_id`` (chain.yaml);
- the reference repository's ``metadata/`` folder (or one chain's folder in it):
  ``<chain_id>/<version>/synthetic/v<version>_specs.json`` (every task's specification,
  keyed by task id) and ``v<version>_specs.md`` (what the paper's agents read). The JSON gives
  every level L2-L5; the Markdown says which tasks the reference listed under "Additional
  Changes" (those it matched to no code hunk) and adds the extra tasks it found there;
- JSON lines ``<chain>_specs_chain.jsonl`` (what the reference's ``load_dataset.py`` makes
  of the parquet file), one object per line with ``package``, ``prev_ver``, ``next_ver``, ``specs``.

The reference runner writes ``specs`` to the agent's specification file as it is. ``specs`` is accepted as:

- a list of task specification objects with exactly the fields of ``levels.TaskSpec``;
- an object of such objects keyed by their task id (the reference's ``v<next>_specs.json``,
  ``{"task_1": {...}, ...}``; each key must equal its ``task_id``);
- a string holding either of those as JSON;
- a string holding a specification in the reference's Markdown layout (``# Upgrade
  Specification from A to B``, ``## <type group>``, ``### Task <n> <title>``, the problem
  statement, then ``- **Expectation**:``, ``- **Constraints**:``, ``- **Acceptance
  Criteria:**`` and ``- **Behavioral Description:**`` items, ``## Additional Changes``
  and ``## File Changes``).

Structured specs are validated strictly and rendered at any level L2–L5. Markdown holds
one level already, so it renders only at levels it has the content for: L2 from any;
L3 or L4 from one with expectations and constraints but no behaviour or criteria (the
text does not say whether those are conceptual or grounded, and ``L<n>.json`` says so);
L4 or L5 from one with behaviours and criteria (L5 is grounded by definition). Linked
issue text and the "File Changes" list are not carried over.

Rows are matched to the chain's steps by its paper id (parquet, metadata folder) or by
package name (PEP 503 normalised; JSON lines), and by version, compared as PEP 440 versions (``2.0`` equals ``2.0.0``; ``2.0.post1`` does not).
Every row is validated before anything is written; rows that match no step are reported,
not errors. The files are ``specs/<chain>/<prev>-<next>/L<n>.md`` and ``.json``, written by
``levels.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from swechain_ci.chain.definition import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.levels import (
    GROUPS,
    IMPORT,
    SPEC_LEVELS,
    LevelSpec,
    LevelTask,
    SpecTask,
    TaskSet,
    TaskSpec,
    build_level,
    check_writable,
    granularity_of,
    level_files,
    write_level,
)

# The reference's group headings (and ours), lowercased -> type.
_GROUP_TYPES: dict[str, str] = {
    "new features": "FEATURE", "bug fixes": "FIX", "dependency updates": "DEPENDENCY",
    "breaking changes": "BREAKING", "typing updates": "TYPING", "documentation": "DOCUMENTATION",
    "performance improvements": "PERFORMANCE", "refactors": "REFACTOR", "others": "OTHER",
    **{title.lower(): kind for kind, title in GROUPS.items()},
}
_ADDITIONAL = {"additional changes"}
_SKIPPED = {"file changes"}
_TITLE = re.compile(r"^#\s+Upgrade Specification from\s+(\S+)\s+to\s+(\S+)\s*$", re.IGNORECASE)
_GROUP = re.compile(r"^##\s+(.+?)\s*$")
_TASK = re.compile(r"^###\s+Task\s+(\d+)[:.]?\s*(.*?)\s*$", re.IGNORECASE)
_FIELD = re.compile(r"^-\s+\*\*([A-Za-z ]+?):?\*\*:?\s*(.*)$")
_SUBITEM = re.compile(r"^\s{2,}[-*]\s+(.*)$")
_TEXT_FIELDS = {"expectation": "expectation", "constraints": "constraints", "constraint": "constraints"}
_LIST_FIELDS = {
    "acceptance criteria": "acceptance_criteria", "behavioral description": "behavior",
    "behavioural description": "behavior", "behaviour": "behavior", "behavior": "behavior",
}


class ImportedRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    line: int  # line of the JSON lines file, row of the parquet file, or number of the version folder
    package: str
    prev_ver: str
    next_ver: str
    status: Literal["written", "unmatched", "duplicate"]
    step: str | None = None  # "prev-next" as the chain names it
    source: str | None = None  # where the row came from (file, row or folder, digest)
    shape: Literal["tasks", "markdown", "tasks+markdown"] | None = None
    tasks: int | None = None
    reason: str | None = None
    written: list[str] = []


class ImportReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    chain: str
    level: str
    rows: list[ImportedRow]

    @property
    def unmatched(self) -> list[ImportedRow]:
        return [r for r in self.rows if r.status != "written"]


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
    return None, f"version {' and '.join(missing)} not in chain {chain.id} ({chain.versions[0]} .. {chain.versions[-1]})"


# --------------------------------------------------------------------------- the specs value


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
                raise SwechainError(f"{where}: the task under key {key!r} has task_id {item.get('task_id')!r}; "
                                    "they must be equal")
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


class MarkdownTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    number: int | None
    title: str
    type: str
    problem_statement: str
    expectation: str | None = None
    constraints: str | None = None
    behavior: list[str] = []
    acceptance_criteria: list[str] = []
    extra_lines: int = 0


def parse_markdown(text: str, where: str) -> tuple[list[MarkdownTask], tuple[str, str] | None]:
    """Tasks of a specification in the reference's Markdown layout, and the versions its title names."""
    tasks: list[MarkdownTask] = []
    versions = None
    mode = "start"  # start | group | additional | skipped
    group: str | None = None
    current: dict[str, Any] | None = None
    field_name: str | None = None

    def finish() -> None:
        nonlocal current, field_name
        if current is not None:
            statement = "\n".join(current.pop("statement")).strip()
            if not statement:
                raise SwechainError(f"{where}: Task {current['number']} ({current['title']}) has no problem statement")
            for key in ("expectation", "constraints"):
                if current.get(key) is not None:
                    current[key] = current[key].strip()
            tasks.append(MarkdownTask(problem_statement=statement, **current))
        current, field_name = None, None

    for number, line in enumerate(text.splitlines(), start=1):
        if m := _TITLE.match(line):
            versions = (m.group(1), m.group(2))
            continue
        if (m := _GROUP.match(line)) and not line.startswith("###"):
            finish()
            title = m.group(1).strip().lower()
            if title in _ADDITIONAL:
                mode = "additional"
            elif title in _SKIPPED:
                mode = "skipped"
            elif title in _GROUP_TYPES:
                mode, group = "group", _GROUP_TYPES[title]
            else:
                raise SwechainError(f"{where}: line {number} of the specs: unknown section {m.group(1)!r}; "
                                    f"expected one of {', '.join(GROUPS.values())}, Additional Changes, File Changes")
            continue
        if mode == "skipped":
            continue
        if mode == "additional":
            if m := re.match(r"^-\s+(.*)$", line):
                tasks.append(MarkdownTask(number=None, title="", type="OTHER", problem_statement=m.group(1).strip()))
            elif line.strip() and tasks and tasks[-1].number is None:
                tasks[-1].problem_statement += "\n" + line.strip()
            continue
        if m := _TASK.match(line):
            finish()
            if mode != "group":
                raise SwechainError(f"{where}: line {number} of the specs: a task outside a type section")
            current = {"number": int(m.group(1)), "title": m.group(2), "type": group, "statement": [],
                       "extra_lines": 0}
            continue
        if current is None:
            if line.strip() and mode == "group":
                raise SwechainError(f"{where}: line {number} of the specs: text outside a task: {line.strip()[:60]!r}")
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
            current[field_name] += "\n" + line.strip()
        else:  # anything else after the fields (the reference appends linked issue text) is not imported
            current["extra_lines"] += 1
            field_name = "-"
    finish()
    return tasks, versions


def markdown_level_spec(tasks: list[MarkdownTask], level: str, where: str) -> tuple[list[LevelTask], list[LevelTask],
                                                                                      str | None]:
    """(numbered, additional) views of Markdown tasks at ``level``, if the text holds that level."""
    numbered = [t for t in tasks if t.number is not None]
    has_fields = [t for t in numbered if t.expectation is not None and t.constraints is not None]
    has_lists = [t for t in has_fields if t.behavior and t.acceptance_criteria]
    if numbered and len(has_lists) == len(numbered):
        holds, can = "L5", ("L2", "L4", "L5")
    elif numbered and len(has_fields) == len(numbered):
        holds, can = "L3 or L4", ("L2", "L3", "L4")
    else:
        holds, can = "L2", ("L2",)
    if level not in can:
        raise SwechainError(
            f"{where}: the Markdown specs hold {holds} content, so they cannot be rendered at {level}; "
            f"use --level {' or '.join(can)}"
        )
    note = None
    if level in ("L3", "L4") and holds == "L3 or L4":
        note = (f"imported from Markdown as published: it does not say whether its expectations and constraints "
                f"are conceptual (L3) or grounded (L4); written as {level}, as requested")
    views: list[LevelTask] = []
    additional: list[LevelTask] = []
    order = {kind: i for i, kind in enumerate(GROUPS)}
    for task in sorted(numbered, key=lambda t: order[t.type]):  # stable: keeps the published order in a group
        view = LevelTask(number=len(views) + 1, task_id=f"task_{task.number}", title=task.title,
                         type=task.type, problem_statement=task.problem_statement)
        if level != "L2":
            view.expectation, view.constraints = task.expectation, task.constraints
        if level == "L5":
            view.behavior, view.acceptance_criteria = task.behavior, task.acceptance_criteria
        views.append(view)
    for index, task in enumerate(t for t in tasks if t.number is None):
        additional.append(LevelTask(number=None, task_id=f"additional_{index + 1}", title="", type="OTHER",
                                    problem_statement=task.problem_statement))
    return views, additional, note


# --------------------------------------------------------------------------- the import


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SwechainError(f"{path}: cannot read ({exc.strerror})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SwechainError(f"{path}:{number}: not a JSON object ({exc})") from None
        if not isinstance(row, dict):
            raise SwechainError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
        missing = [k for k in ("package", "prev_ver", "next_ver", "specs") if k not in row]
        if missing:
            raise SwechainError(f"{path}:{number}: missing {', '.join(missing)}; a row has package, prev_ver, "
                                "next_ver and specs")
        for key in ("package", "prev_ver", "next_ver"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise SwechainError(f"{path}:{number}: {key} must be a non-empty string")
        rows.append((number, row))
    if not rows:
        raise SwechainError(f"{path}: holds no rows; expected JSON lines with package, prev_ver, next_ver and specs")
    return rows


def build_row_spec(chain: Chain, step: tuple[str, str], specs: Any, level: str, where: str, source: str,
                   ) -> tuple[LevelSpec, str, int]:
    """The level spec of one row: (spec, shape, number of tasks)."""
    prev, next_ = step
    value = specs
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SwechainError(f"{where}: specs look like JSON but do not parse ({exc})") from None
    if isinstance(value, str):
        if not value.strip():
            raise SwechainError(f"{where}: specs are empty")
        tasks, versions = parse_markdown(value, where)
        if versions and not (same_version(versions[0], prev) and same_version(versions[1], next_)):
            raise SwechainError(f"{where}: the Markdown title names {versions[0]} -> {versions[1]}, "
                                f"the row {prev} -> {next_}")
        views, additional, note = markdown_level_spec(tasks, level, where)
        spec = LevelSpec(
            generated_by=IMPORT, level=level, granularity=granularity_of(level), chain=chain.id,
            package=chain.config.package, prev_version=prev, next_version=next_, source=source, note=note,
            tasks=views, additional=additional,
        )
        return spec, "markdown", len(tasks)
    task_specs = structured_tasks(value, where)
    task_set = TaskSet(
        chain=chain.id, package=chain.config.package, prev_version=prev, next_version=next_, source="import",
        release_notes=None, tasks=[SpecTask(spec=s, origin="import") for s in task_specs],
    )
    return build_level(task_set, level, generated_by=IMPORT, source=source), "tasks", len(task_specs)


def _digest(*blobs: bytes) -> str:
    import hashlib

    h = hashlib.sha256()
    for blob in blobs:
        h.update(blob)
    return h.hexdigest()[:16]


def _parquet_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SwechainError(f"{path}: reading parquet needs pyarrow; install the extra: "
                            "pip install 'swechain-ci[parquet]'") from None
    try:
        rows = pq.read_table(path, columns=["chain_id", "step_id", "package", "prev_ver", "next_ver",
                                            "specs"]).to_pylist()
    except (OSError, ValueError, KeyError) as exc:  # pyarrow's errors derive from these
        raise SwechainError(f"{path}: not the dataset's specs_chain.parquet ({str(exc).splitlines()[0]}); "
                            "expected columns chain_id, step_id, package, prev_ver, next_ver, specs") from None
    out = []
    for number, row in enumerate(rows, start=1):
        for key in ("chain_id", "package", "prev_ver", "next_ver"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise SwechainError(f"{path}: row {number}: {key} must be a non-empty string")
        out.append((number, row))
    if not out:
        raise SwechainError(f"{path}: holds no rows")
    return out


def _metadata_rows(folder: Path, chain: Chain) -> tuple[Path, list[tuple[int, dict[str, Any]]]]:
    """Rows of the reference's ``metadata/<chain_id>/<version>/synthetic/`` files for ``chain``."""
    paper_id = chain.config.paper_id
    if not paper_id:
        raise SwechainError(f"chain {chain.id} has no paper_id in {chain.folder / 'chain.yaml'}; the published "
                            "folders are named by the paper's chain id (e.g. pyjwt_2.0.0_to_2.12.1)")
    root = folder if folder.name == paper_id else folder / paper_id
    if not root.is_dir():
        raise SwechainError(f"{folder}: has no folder {paper_id} (chain {chain.id}'s paper_id); expected the "
                            "reference repository's metadata/ folder or its chain folder")
    rows = []
    from packaging.version import InvalidVersion, Version

    def order(p: Path) -> tuple[int, Any]:
        try:
            return (0, Version(p.name))
        except InvalidVersion:
            return (1, p.name)

    for number, version_dir in enumerate(sorted((d for d in root.iterdir() if d.is_dir()), key=order), start=1):
        js = version_dir / "synthetic" / f"v{version_dir.name}_specs.json"
        md = js.with_suffix(".md")
        if not js.is_file() and not md.is_file():
            continue
        previous = [v for v in chain.versions if chain.versions.index(v) > 0 and same_version(v, version_dir.name)]
        prev = chain.versions[chain.versions.index(previous[0]) - 1] if previous else "?"
        blobs = [f.read_bytes() for f in (js, md) if f.is_file()]
        names = " + ".join(f.relative_to(root.parent).as_posix() for f in (js, md) if f.is_file())
        rows.append((number, {
            "package": chain.config.package, "prev_ver": prev, "next_ver": version_dir.name,
            "json": json.loads(blobs[0]) if js.is_file() else None,
            "specs": md.read_text(encoding="utf-8") if md.is_file() else None,
            "source": f"published SWE-Chain specifications {names} (sha256 {_digest(*blobs)})",
        }))
    if not rows:
        raise SwechainError(f"{root}: holds no <version>/synthetic/v<version>_specs.json or .md")
    return root, rows


def metadata_level_spec(chain: Chain, step: tuple[str, str], tasks_json: Any, markdown: str | None, level: str,
                        where: str, source: str) -> tuple[LevelSpec, int]:
    """A level from the reference's ``v<next>_specs.json``, arranged as its ``.md`` arranges it:
    tasks numbered there are numbered, the others are "Additional changes"; extra tasks that
    only the Markdown lists (found by Complete) are added there with their problem statement."""
    prev, next_ = step
    specs = structured_tasks(tasks_json, where)
    numbered_titles: set[str] | None = None
    extra: list[LevelTask] = []
    if markdown is not None:
        parsed, versions = parse_markdown(markdown, where)
        if versions and not (same_version(versions[0], prev) and same_version(versions[1], next_)):
            raise SwechainError(f"{where}: the Markdown title names {versions[0]} -> {versions[1]}, "
                                f"the step {prev} -> {next_}")
        numbered_titles = {t.title.strip() for t in parsed if t.number is not None}
        known = {s.synthesized_requirement.problem_statement.strip() for s in specs}
        for task in parsed:
            if task.number is None and task.problem_statement.strip() not in known:
                extra.append(LevelTask(number=None, task_id=f"published_additional_{len(extra) + 1}", title="",
                                       type="OTHER", problem_statement=task.problem_statement))
    task_set = TaskSet(
        chain=chain.id, package=chain.config.package, prev_version=prev, next_version=next_, source="import",
        release_notes=None,
        tasks=[SpecTask(spec=s, origin="import",
                        code_hunks=None if numbered_titles is None or s.title.strip() in numbered_titles else [])
               for s in specs],
    )
    spec = build_level(task_set, level, generated_by=IMPORT, source=source)
    spec.additional += extra
    return spec, len(specs) + len(extra)


def import_specs(path: Path | str, chain: Chain, level: str | None = "L3", interface: bool = False,
                 levels: list[str] | None = None) -> ImportReport:
    """Validate every row of ``path`` (parquet, metadata folder or JSON lines), then write the
    rows that match a step of ``chain`` at each level (with ``interface``, also ``<level>+interface``).

    Without levels: every level L2-L5 from a metadata folder, L3 (the paper's) otherwise."""
    path = Path(path)
    if not path.exists():
        raise SwechainError(f"{path}: no such file or folder; give data/specs_chain.parquet, the reference's "
                            "metadata/ folder, or a <chain>_specs_chain.jsonl file")
    kind = "metadata" if path.is_dir() else "parquet" if path.suffix == ".parquet" else "jsonl"
    chosen = levels or ([level] if level else (list(SPEC_LEVELS) if kind == "metadata" else ["L3"]))
    bad = [lv for lv in chosen if lv not in SPEC_LEVELS]
    if bad:
        raise SwechainError(f"`{IMPORT}` writes {', '.join(SPEC_LEVELS)}, not {', '.join(bad)}; "
                            "L1 comes from `swechain-ci specs render`")
    if kind == "metadata":
        _, rows = _metadata_rows(path, chain)
    elif kind == "parquet":
        rows = _parquet_rows(path)
    else:
        rows = _read_rows(path)
    package = normalize_name(chain.config.package)
    reports: list[ImportedRow] = []
    planned: list[tuple[ImportedRow, list[LevelSpec]]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, row in rows:
        report = ImportedRow(line=number, package=row["package"], prev_ver=row["prev_ver"], next_ver=row["next_ver"],
                             status="unmatched")
        reports.append(report)
        if kind == "parquet" and row["chain_id"] != chain.config.paper_id:
            report.reason = (f"chain_id {row['chain_id']} is not chain {chain.id}'s paper_id "
                             f"{chain.config.paper_id or '(none set in chain.yaml)'}")
            continue
        if normalize_name(row["package"]) != package:
            report.reason = f"package {row['package']} is not chain {chain.id}'s package {chain.config.package}"
            continue
        step, why = match_step(chain, row["prev_ver"], row["next_ver"])
        if step is None:
            report.reason = why
            continue
        report.step = f"{step[0]}-{step[1]}"
        if step in seen:
            report.status, report.reason = "duplicate", f"same step as row {seen[step]}; not written"
            continue
        seen[step] = number
        if kind == "metadata":
            where, source = f"{path} ({row['next_ver']})", row["source"]
        elif kind == "parquet":
            where = f"{path} row {number}"
            source = (f"published SWE-Chain specifications {path.name} row {number} (chain_id {row['chain_id']}, "
                      f"step_id {row['step_id']}, sha256 {_digest(str(row['specs']).encode())})")
        else:
            where, source = f"{path}:{number}", f"imported from {path.name} line {number}"
        specs = []
        for lv in chosen:
            if kind == "metadata" and row["json"] is not None:
                spec, count = metadata_level_spec(chain, step, row["json"], row["specs"], lv, where, source)
                shape = "tasks+markdown" if row["specs"] is not None else "tasks"
            else:
                spec, shape, count = build_row_spec(chain, step, row["specs"], lv, where, source)
            specs.append(spec)
        report.status, report.shape, report.tasks, report.source = "written", shape, count, source
        planned.append((report, specs))
    if interface:
        from swechain_ci.specs.levels import with_interface

        planned = [(report, [*specs, *(with_interface(chain, s) for s in specs)]) for report, specs in planned]
    for _, specs in planned:  # refuse before writing anything
        for spec in specs:
            check_writable(*level_files(chain, spec.prev_version, spec.next_version, spec.level))
    for report, specs in planned:
        for spec in specs:
            md, js = write_level(chain, spec)
            report.written += [str(md), str(js)]
    return ImportReport(file=str(path), chain=chain.id, level=", ".join(chosen), rows=reports)
