"""DecompSynth: specifications L2–L5 from release notes and the code diff, with an LLM.

The definition is SEMANTICS.md, "Specifications (DecompSynth), granularity L1–L5". Per step:

1. **Tasks**: the target version's release notes, one task per top-level item
   (``changelog.chain_release_notes``), with the reference's ids ``task_1``, ``task_2``, ...
2. **Divide**: the code diff (``diffs.read_diff(..., "code")``) and the test diff (``"tests"``)
   are cut into hunks with stable ids (``H1``, ... and ``TH1``, ...; a hunk is a file plus one
   ``@@`` header). :func:`hunks.batch_files` packs whole files into batches of at most 20
   files, 150 hunks and 3,000 diff lines, first-fit, largest file first (ties in diff order);
   a file over a limit gets a batch of its own. Per batch the model assigns EVERY hunk to
   one or more task ids, or to ``doc`` (no runtime effect) or ``others``. Missed hunks, hunk
   ids not in the batch, unknown targets and answers that do not fit the schema are fed
   back; at most 5 requests per batch, then the step fails with an error naming the batch
   and what is still wrong. Valid entries of earlier rounds are kept, and sending a hunk
   again replaces its entry. Code and test batches are divided alike; results are merged.
3. **Conquer**: one specification per release-note task, as the reference does, from its release
   note, the text of its linked issues and pull requests (``linked.py``'s cache, also shown to
   Divide) and only its matched code hunks; its matched test hunks are shown "for reference
   only". A task with no matched code hunk is specified too, and listed under "Additional
   Changes" (problem statement only; the record lists it). The field rules are the reference's
   (grounded: public API, exception types, triggers, no snippets, paths or exact messages;
   conceptual: plain language, public API and raised types allowed, no paths or internal
   identifiers). The answer must
   validate strictly as ``levels.TaskSpec`` (``extra="forbid"``, strict types, the task's
   own id, at least one behaviour and one acceptance criterion; an unknown ``type`` becomes
   ``OTHER``, as the reference coerces it); up to 3 attempts, each error fed back.
4. **Complete**: one request with every code hunk assigned to ``others`` (with a task too, as the
   reference takes them), the test hunks assigned to ``others`` as supporting evidence, and the
   specifications already synthesized, as JSON (the reference's ``synthesized_tasks.json``).
   It may add tasks (ids ``new_task_1``, ...) only for observable behaviour changes grounded in
   the code hunks (the prompt rules out version bumps, formatting, import order and internal
   refactors); "none" is a valid answer. Each extra task must cite its code hunks (ours: the
   reference does not ask; it changes nothing the agent reads); up to 3 attempts. Without
   ``others`` code hunks there is no request. Its tasks are listed under "Additional Changes",
   problem statement only, as the reference lists them.

The code diff leaves out files under the reference's skipped folders (``docs/``, ``__pycache__``,
... : ``hunks.SKIP_DIRS``); the files it adds or renames are every level's "File Changes".

**Answer format.** Every request offers exactly one tool and forces it
(``tool_choice={"type": "tool", ...}``): ``assign_hunks`` (Divide),
``write_specification`` (Conquer), ``add_tasks`` (Complete). The tool's input schema is
the JSON schema of the strict pydantic model the answer is parsed with
(:class:`DivideAnswer`, ``levels.TaskSpec``, :class:`CompleteAnswer`); a correction is a
``tool_result`` with ``is_error: true`` naming every problem.

**Caching.** Each exchange (one Divide batch, one task's Conquer, Complete) is
cached under ``state_home()/decompsynth/<chain>/<prev>-<next>/`` by a hash of the
model, the system prompt, the tool, the first message (which holds the tasks and hunks),
``max_tokens`` and the number of rounds allowed (no temperature is sent: anthropic 2.14
has none), with its token use and
the whole conversation. A re-run with the same inputs makes no request (and then needs
no API key).

**Record.** ``specs/<chain>/<prev>-<next>/decompsynth.json`` (:class:`DecompSynthRecord`):
model, base URL, price, the step's input hash, every hunk and its targets, the batches,
token use and cost per stage (cache reads and writes included, priced with
``swechain_ci/prices.yaml``) for everything behind the output and for this run alone, and the
task set itself. The levels are written next to it by ``levels.write_level``.

The API key comes from ``ANTHROPIC_API_KEY``; without it, a step that needs a request
stops with an error before anything is written. Nothing is ever made up.
"""

from __future__ import annotations

import copy
import hashlib
import html
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from swechain_ci.chain.definition import Chain
from swechain_ci.chain.diffs import read_diff
from swechain_ci.errors import SwechainError
from swechain_ci.models import Record, Strict, StrictTyped, Usage
from swechain_ci.prices import Price, TokenUsage
from swechain_ci.records import write_model
from swechain_ci.settings import state_home
from swechain_ci.specs.changelog import ReleaseNotes, ReleaseTask, chain_release_notes
from swechain_ci.specs.hunks import (
    MAX_FILES,
    MAX_HUNKS,
    MAX_LINES,
    Hunk,
    batch_files,
    file_changes,
    parse_hunks,
)
from swechain_ci.specs.levels import (
    SYNTH,
    TASK_TYPES,
    SpecTask,
    TaskFields,
    TaskSet,
    TaskSpec,
    build_level,
    check_writable,
    level_files,
    write_level,
)
from swechain_ci.specs.linked import LinkedText, cached, linkable
from swechain_ci.specs.llm import (
    DEFAULT_MODEL,
    LLM,
    Check,
    converse,
    make_llm,
    validation_problems,
)
from swechain_ci.specs.store import spec_dir

DIVIDE_ATTEMPTS = 5  # requests per batch: the answer and four corrections, as the reference
CONQUER_ATTEMPTS = 3
COMPLETE_ATTEMPTS = 3
MAX_TOKENS = {"divide": 8192, "conquer": 4096, "complete": 8192}
CACHE_VERSION = 3  # 3: every task conquered, linked text, the reference's field rules, Complete's inputs
RECORD_FILE = "decompsynth.json"
SPECIAL_TARGETS = ("doc", "others")

Stage = Literal["divide", "conquer", "complete"]


# --------------------------------------------------------------------------- answers


class HunkAssignment(StrictTyped):
    hunk: str = Field(description="a hunk id shown in the message, e.g. H3")
    targets: list[str] = Field(min_length=1, description='task ids (task_1, ...), "doc" or "others"')


class DivideAnswer(StrictTyped):
    assignments: list[HunkAssignment]


class ExtraTask(TaskFields):
    """A task found by Complete: a task specification without an id, citing its hunks."""

    hunks: list[str] = Field(min_length=1, description="the ids of the code hunks that make this change")


class CompleteAnswer(StrictTyped):
    tasks: list[ExtraTask]


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with every ``$ref`` replaced by its definition."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _tool(name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    return {"name": name, "description": description, "input_schema": _inline_refs(model.model_json_schema())}


DIVIDE_TOOL = _tool(
    "assign_hunks",
    'Assign diff hunks to release-note tasks, to "doc" (no runtime effect) or to "others".',
    DivideAnswer,
)
CONQUER_TOOL = _tool("write_specification", "Write the specification of one task.", TaskSpec)
COMPLETE_TOOL = _tool(
    "add_tasks",
    "Add tasks for observable behaviour changes that no release-note task covers; an empty list when none.",
    CompleteAnswer,
)


# --------------------------------------------------------------------------- prompts

SYSTEM = """\
You help build the benchmark specification of one release of the Python package {package}: \
the upgrade of its code from {prev} to {next}. You read the release notes and the code diff of \
this release, and you answer only by calling the tool you are given, with exactly the fields its \
schema asks for."""

FIELD_GUIDE = """\
- title: a short title of the change.
- type: one of {types}.
- runtime_impact: true if the change alters what the package does when it runs.
- description: what changed and why, in two or three sentences.
- synthesized_requirement:
  - problem_statement: the problem a developer upgrading the code from {prev} must solve, as a goal \
("Ensure that ..."), without prescribing the implementation.
  - expectation.grounded: the outcome in precise terms, from the release note and the code diff: it may \
name public API (modules, functions, classes, parameters), exception and warning types, and what triggers \
an edge case, and the observable signals (what is returned, raised, warned or changed); no code snippets, \
patches, file paths, exact messages or implementation steps.
  - expectation.conceptual: the same outcome at a high level, in plain language, as a user-facing contract: \
it may name public API and the types returned, raised or warned; no file paths, internal identifiers, \
details only the diff shows, or implementation strategies.
  - constraints.grounded: what must keep working, or must not happen, in the precise terms of \
expectation.grounded, never as "use X" or "put it in Y"; constraints.conceptual: the same boundaries in \
the terms of expectation.conceptual.
  - behavior: the precise behaviour changes and their observable signals, from the code diff (not the \
tests), one per item (at least one).
  - acceptance_criteria: observable checks of production behaviour ("Given/When/Then" or "When ..., it \
should ..."), not test assertions, one per item (at least one).
- significance and confidence: low, medium or high; difficulty: easy, medium or hard."""

DIVIDE_PROMPT = """\
Release notes of {package} {next}, one task per item:

{tasks}

{What} hunks of this batch ({count} of the release's {total} {what} hunks, batch {batch} of {batches}):

{hunks}

Call assign_hunks with an entry for EVERY hunk above. The targets of a hunk are one or more of:
- a task id ({task_ids}): the hunk implements {serves} all or part of that task; a hunk may serve several tasks;
- "doc": the hunk has no runtime effect (comments, docstrings, formatting, annotations that serve no task);
- "others": the hunk serves no task above (for example a version bump, an internal refactor, or a \
change the notes do not mention).
Use exactly the hunk ids shown ({hunk_ids}) and no other."""

CONQUER_PROMPT = """\
Task {task_id} of the release notes of {package} {next}{category}:

<release_note id="{task_id}">
{text}
</release_note>
{references}
Code hunks matched to this task: its implementation in {next}. Ground the specification in these \
hunks only.

{hunks}

Test hunks matched to this task, for reference only: they may clarify the intended behaviour, but the \
specification must not describe, name or quote tests, and no requirement may come from them alone.

{tests}

Call write_specification with the specification of this task:
- task_id: "{task_id}".
{fields}"""

COMPLETE_PROMPT = """\
These code hunks of {package} {prev} -> {next} were assigned to "others": to no task of the release notes:

{hunks}

Test hunks assigned to "others", as supporting evidence only (no task may rest on tests alone):

{tests}

Tasks already specified, as JSON keyed by task id (do not repeat them):
{known}

Decide whether any of the code hunks makes an observable behaviour change that a user of the package \
would notice and that no task above covers. For each such change add one task with add_tasks, \
citing its code hunks by the ids shown ({hunk_ids}). Do NOT add tasks for version bumps, formatting, import \
order, comments, internal refactors, or anything else without an observable effect. When nothing \
qualifies, call add_tasks with an empty list: that is a normal answer.

Fields of each task:
- hunks: the ids of the code hunks that make the change.
{fields}"""


def spec_id(task: ReleaseTask) -> str:
    """The reference's id of a release-note task: ``T3`` -> ``task_3``."""
    return f"task_{task.id.removeprefix('T')}"


def coerce_type(raw: Any) -> Any:
    """An answer's unknown ``type`` becomes ``OTHER`` (as the reference's ``TaskSpec.from_dict``)."""
    if isinstance(raw, dict) and raw.get("type") not in TASK_TYPES:
        return {**raw, "type": "OTHER"}
    return raw


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def _hunk_block(hunk: Hunk, tag: str = "hunk") -> str:
    ident = f' id="{hunk.id}"' if tag == "hunk" else ""
    status = "" if hunk.status == "modified" else f' status="{hunk.status}"'
    return f'<{tag}{ident} file="{_attr(hunk.file)}"{status}>\n{hunk.text}</{tag}>'


def _linked_blocks(texts: list[LinkedText]) -> str:
    """The linked issues' and pull requests' text, as the reference gives Divide and Conquer
    (its changelog_tasks.json, ``github[]``)."""
    return "".join(
        f'\n<linked kind="{t.kind}" number="{t.number}" title="{_attr(t.title)}">\n{t.body.strip()}\n</linked>'
        for t in texts
    )


def _note_block(task: ReleaseTask, texts: list[LinkedText]) -> str:
    category = f' category="{_attr(task.category)}"' if task.category else ""
    return f'<task id="{spec_id(task)}"{category}>\n{task.text.strip()}{_linked_blocks(texts)}\n</task>'


def _references(task: ReleaseTask, texts: list[LinkedText]) -> str:
    if not task.references:
        return ""
    known = {(t.repository, t.number) for t in texts}
    rest = [r.url or r.label for r in task.references if linkable(r) not in known]
    shown = f"Linked from this note, text not available: {'; '.join(rest)}\n" if rest else ""
    if texts:
        shown = "The issues and pull requests this note links to:" + _linked_blocks(texts) + "\n" + shown
    return shown


# --------------------------------------------------------------------------- usage, records


def priced(tokens: TokenUsage, requests: int, price: Price) -> Usage:
    return Usage(requests=requests, **tokens.as_dict(), cost_usd=round(price.cost(tokens), 8))


class StageUsage(Strict):
    divide: Usage = Field(default_factory=Usage.zero)
    conquer: Usage = Field(default_factory=Usage.zero)
    complete: Usage = Field(default_factory=Usage.zero)
    total: Usage = Field(default_factory=Usage.zero)


class HunkRecord(Strict):
    id: str
    file: str
    status: str
    header: str
    lines: int
    added: int
    removed: int
    targets: list[str]  # task ids, "doc", "others" (as Divide assigned them)


class BatchLimits(Strict):
    max_files: int = MAX_FILES
    max_hunks: int = MAX_HUNKS
    max_lines: int = MAX_LINES


class DecompSynthRecord(Record):
    """``specs/<chain>/<prev>-<next>/decompsynth.json``: how one step's specifications were made."""

    generated_by: Literal["swechain-ci specs synth"] = SYNTH
    chain: str
    package: str
    prev_version: str
    next_version: str
    model: str
    base_url: str | None  # the --base-url given, else ANTHROPIC_BASE_URL; None: the SDK's default
    price: Price  # dollars per million tokens
    input_hash: str  # model, prompts, tools, limits, tasks, code and test hunks
    limits: BatchLimits
    code_hunks: list[HunkRecord]
    files_without_hunks: list[str]  # changed code files with no hunk to assign (empty, renamed, binary)
    test_hunks: list[HunkRecord]
    batches: list[list[str]]  # code hunk ids per Divide batch
    test_batches: list[list[str]]  # test hunk ids per Divide batch
    unmatched_tasks: list[str]  # release-note tasks Divide matched no code hunk to: under Additional Changes
    file_changes: list[str] = Field(default_factory=list)  # of the code diff, for every level
    usage: StageUsage  # every request behind this output, cached or made now
    this_run: StageUsage  # the requests this run made (all zero when everything was cached)
    cache_files: list[str]  # under state_home()/decompsynth/<chain>/<prev>-<next>/
    levels: list[str] = Field(default_factory=list)  # levels written from it
    task_set: TaskSet


class CachedExchange(Record):
    stage: str
    label: str
    key: str
    model: str
    result: Any
    requests: int
    tokens: dict[str, int]  # TokenUsage.as_dict()
    messages: list[dict[str, Any]]  # the conversation (system prompt and tool aside)


# --------------------------------------------------------------------------- the stages


@dataclass
class Step:
    chain: Chain
    prev: str
    next_: str
    llm: LLM
    jobs: int = 4
    limits: BatchLimits = field(default_factory=BatchLimits)
    used: list[tuple[Stage, str, TokenUsage, int, bool]] = field(
        default_factory=list
    )  # stage, file, tokens, requests, fresh
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def label(self) -> str:
        return f"DecompSynth {self.chain.id} {self.prev} -> {self.next_}"

    @property
    def cache_dir(self) -> Path:
        return state_home() / "decompsynth" / self.chain.id / f"{self.prev}-{self.next_}"

    @property
    def system(self) -> str:
        return SYSTEM.format(package=self.chain.config.package, prev=self.prev, next=self.next_)

    def fields(self) -> str:
        return FIELD_GUIDE.format(types=", ".join(TASK_TYPES), prev=self.prev)

    def exchange(
        self,
        stage: Stage,
        label: str,
        prompt: str,
        tool: dict[str, Any],
        check_factory: Callable[[], Check],
        revalidate: Callable[[Any], Any],
        max_requests: int,
        cache_prompt: bool = False,
    ) -> Any:
        """One exchange, from the cache when the same inputs were answered before."""
        max_tokens = MAX_TOKENS[stage]
        key = hashlib.sha256(
            json.dumps(
                {
                    "cache_version": CACHE_VERSION,
                    "stage": stage,
                    "model": self.llm.model,
                    "system": self.system,
                    "tool": tool,
                    "prompt": prompt,
                    "max_tokens": max_tokens,
                    "max_requests": max_requests,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()
        path = self.cache_dir / f"{stage}-{label}-{key[:16]}.json"
        if path.is_file():
            try:
                entry = CachedExchange.model_validate_json(path.read_text(encoding="utf-8"))
                if entry.key == key:
                    result = revalidate(entry.result)
                    self._note(stage, path, TokenUsage(**entry.tokens), entry.requests, fresh=False)
                    return result
            except (ValidationError, ValueError, TypeError, KeyError):
                pass  # unreadable or outdated: asked again
        conversation = converse(
            self.llm,
            what=f"{self.label}, {stage} {label}",
            system=self.system,
            prompt=prompt,
            tool=tool,
            check=check_factory(),
            max_requests=max_requests,
            max_tokens=max_tokens,
            cache_prompt=cache_prompt,
        )
        result = conversation.result
        write_model(
            path,
            CachedExchange(
                stage=stage,
                label=label,
                key=key,
                model=self.llm.model,
                result=result,
                requests=conversation.requests,
                tokens=conversation.tokens.as_dict(),
                messages=conversation.messages,
            ),
        )
        self._note(stage, path, conversation.tokens, conversation.requests, fresh=True)
        return result

    def _note(self, stage: Stage, path: Path, tokens: TokenUsage, requests: int, fresh: bool) -> None:
        with self._lock:
            self.used.append((stage, path.name, tokens, requests, fresh))

    def map(self, function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if self.jobs <= 1 or len(items) <= 1:
            return [function(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.jobs, len(items))) as pool:
            return list(pool.map(function, items))

    # -- Divide ------------------------------------------------------------------------------------

    def linked(self, task: ReleaseTask) -> list[LinkedText]:
        """The cached text of the task's linked issues and pull requests (``linked.py``)."""
        texts = [cached(self.chain, r) for r in task.references]
        return list({(t.repository, t.number): t for t in texts if t is not None}.values())

    def divide(
        self, tasks: list[ReleaseTask], hunks: list[Hunk], batches: list[list[Hunk]], what: Literal["code", "test"]
    ) -> dict[str, list[str]]:
        task_ids = [spec_id(t) for t in tasks]
        allowed = [*task_ids, *SPECIAL_TARGETS]
        notes = "\n\n".join(_note_block(t, self.linked(t)) for t in tasks) or (
            f"(The release notes of {self.next_} list no task.)"
        )

        def one(numbered: tuple[int, list[Hunk]]) -> dict[str, list[str]]:
            number, batch = numbered
            ids = [h.id for h in batch]
            prompt = DIVIDE_PROMPT.format(
                package=self.chain.config.package,
                next=self.next_,
                tasks=notes,
                count=len(batch),
                total=len(hunks),
                batch=number,
                batches=len(batches),
                hunks="\n\n".join(_hunk_block(h) for h in batch),
                task_ids=", ".join(task_ids) or "none in this release",
                hunk_ids=", ".join(ids),
                what=what,
                What=what.capitalize(),
                serves="" if what == "code" else "(tests)",
            )

            def revalidate(result: Any) -> dict[str, list[str]]:
                if not isinstance(result, dict) or list(result) != ids:
                    raise ValueError("stale")
                if any(not v or any(t not in allowed for t in v) for v in result.values()):
                    raise ValueError("stale")
                return result

            label = f"{'b' if what == 'code' else 't'}{number}"
            return self.exchange(
                "divide",
                label,
                prompt,
                DIVIDE_TOOL,
                lambda: divide_check(ids, allowed),
                revalidate,
                DIVIDE_ATTEMPTS,
                cache_prompt=True,
            )

        merged: dict[str, list[str]] = {}
        for result in self.map(one, list(enumerate(batches, start=1))):
            merged.update(result)
        return {h.id: merged[h.id] for h in hunks}

    # -- Conquer -----------------------------------------------------------------------------------

    def conquer(self, task: ReleaseTask, code: list[Hunk], tests: list[Hunk]) -> TaskSpec:
        test_text = (
            "\n\n".join(_hunk_block(h, "test_hunk") for h in tests) or "(No test hunk was matched to this task.)"
        )
        hunk_text = "\n\n".join(_hunk_block(h) for h in code) or (
            "(No code hunk was matched to this task: it may have no runtime effect, or be implemented outside "
            "the Python code. Specify it from its release note all the same.)"
        )
        ident = spec_id(task)
        prompt = CONQUER_PROMPT.format(
            task_id=ident,
            package=self.chain.config.package,
            next=self.next_,
            category=f" (category: {task.category})" if task.category else "",
            text=task.text.strip(),
            references=_references(task, self.linked(task)),
            hunks=hunk_text,
            tests=test_text,
            fields=self.fields(),
        )
        result = self.exchange(
            "conquer",
            ident,
            prompt,
            CONQUER_TOOL,
            lambda: conquer_check(ident),
            lambda r: TaskSpec.model_validate(r).model_dump(mode="json"),
            CONQUER_ATTEMPTS,
        )
        return TaskSpec.model_validate(result)

    # -- Complete ----------------------------------------------------------------------------------

    def complete(self, others: list[Hunk], test_others: list[Hunk], known: list[TaskSpec]) -> list[ExtraTask]:
        if not others:
            return []
        ids = [h.id for h in others]
        # The synthesized specifications themselves, as the reference's synthesized_tasks.json.
        known_text = json.dumps({t.task_id: t.model_dump(mode="json") for t in known}, indent=2, ensure_ascii=False)
        prompt = COMPLETE_PROMPT.format(
            package=self.chain.config.package,
            prev=self.prev,
            next=self.next_,
            hunks="\n\n".join(_hunk_block(h) for h in others),
            tests="\n\n".join(_hunk_block(h, "test_hunk") for h in test_others) or "(none)",
            known=known_text,
            hunk_ids=", ".join(ids),
            fields=self.fields(),
        )

        def revalidate(result: Any) -> list[dict[str, Any]]:
            answer = CompleteAnswer.model_validate({"tasks": result})
            if any(h not in ids for t in answer.tasks for h in t.hunks):
                raise ValueError("stale")
            return result

        result = self.exchange(
            "complete", "others", prompt, COMPLETE_TOOL, lambda: complete_check(ids), revalidate, COMPLETE_ATTEMPTS
        )
        return [ExtraTask.model_validate(t) for t in result]


def divide_check(ids: list[str], allowed: list[str]) -> Check:
    """Validation of assign_hunks answers for one batch, keeping the valid entries across rounds."""
    state: dict[str, list[str]] = {}

    def check(raw: Any) -> tuple[Any, str | None]:
        try:
            answer = DivideAnswer.model_validate(raw)
        except ValidationError as exc:
            return None, (
                "The input of assign_hunks does not fit its schema:\n"
                + validation_problems(exc)
                + '\nCall assign_hunks again with {"assignments": [{"hunk": ..., "targets": [...]}]}.'
            )
        invented: list[str] = []
        unknown: list[str] = []
        for entry in answer.assignments:
            if entry.hunk not in ids:
                invented.append(entry.hunk)
                continue
            bad = [t for t in entry.targets if t not in allowed]
            if bad:
                unknown.append(f"{entry.hunk} -> {', '.join(bad)}")
                continue
            state[entry.hunk] = list(dict.fromkeys(entry.targets))
        missing = [h for h in ids if h not in state]
        if not (invented or unknown or missing):
            return {h: state[h] for h in ids}, None
        lines = []
        if invented:
            lines.append(
                f"Not hunks of this batch (entries dropped): {', '.join(dict.fromkeys(invented))}. "
                f"The hunks of this batch are {', '.join(ids)}."
            )
        if unknown:
            lines.append(
                f"Unknown targets (entries dropped): {'; '.join(unknown)}. The targets are {', '.join(allowed)}."
            )
        if missing:
            lines.append(f"Not assigned: {', '.join(missing)}. Every hunk of the batch must be assigned.")
        lines.append(
            "Call assign_hunks again with entries for these hunks. The valid entries you sent are kept; "
            "an entry for a hunk replaces its earlier one."
        )
        return None, "\n".join(lines)

    return check


def conquer_check(task_id: str) -> Check:
    def check(raw: Any) -> tuple[Any, str | None]:
        try:
            spec = TaskSpec.model_validate(coerce_type(raw))
        except ValidationError as exc:
            return None, (
                "The specification does not fit the schema of write_specification:\n"
                + validation_problems(exc)
                + "\nCall write_specification again with the complete, corrected specification."
            )
        problems = []
        if spec.task_id != task_id:
            problems.append(f"- task_id is {spec.task_id!r}; it must be {task_id!r}")
        if not spec.synthesized_requirement.behavior:
            problems.append("- synthesized_requirement.behavior is empty; give at least one behaviour")
        if not spec.synthesized_requirement.acceptance_criteria:
            problems.append("- synthesized_requirement.acceptance_criteria is empty; give at least one criterion")
        if problems:
            return None, (
                "The specification is not valid:\n"
                + "\n".join(problems)
                + "\nCall write_specification again with the complete, corrected specification."
            )
        return spec.model_dump(mode="json"), None

    return check


def complete_check(ids: list[str]) -> Check:
    def check(raw: Any) -> tuple[Any, str | None]:
        if isinstance(raw, dict) and isinstance(raw.get("tasks"), list):
            raw = {**raw, "tasks": [coerce_type(t) for t in raw["tasks"]]}
        try:
            answer = CompleteAnswer.model_validate(raw)
        except ValidationError as exc:
            return None, (
                "The input of add_tasks does not fit its schema:\n"
                + validation_problems(exc)
                + "\nCall add_tasks again with all tasks, corrected (or an empty list)."
            )
        problems = []
        for index, task in enumerate(answer.tasks):
            bad = [h for h in task.hunks if h not in ids]
            if bad:
                problems.append(
                    f"- tasks.{index} cites {', '.join(bad)}, which are not among the hunks shown ({', '.join(ids)})"
                )
            if not task.synthesized_requirement.behavior or not task.synthesized_requirement.acceptance_criteria:
                problems.append(f"- tasks.{index} needs at least one behaviour and one acceptance criterion")
        if problems:
            return None, (
                "Not valid:\n"
                + "\n".join(problems)
                + "\nCall add_tasks again with all tasks, corrected (or an empty list)."
            )
        return [t.model_dump(mode="json") for t in answer.tasks], None

    return check


# --------------------------------------------------------------------------- one step


@dataclass
class StepInputs:
    notes: ReleaseNotes
    code: list[Hunk]
    bare: list[str]
    tests: list[Hunk]
    batches: list[list[Hunk]]
    test_batches: list[list[Hunk]]
    file_changes: list[str]  # "- Add file `p`", "- Rename from `a` to `b`" (the reference's File Changes)


def step_inputs(chain: Chain, prev: str, next_: str, limits: BatchLimits) -> StepInputs:
    notes = chain_release_notes(chain, next_)
    patch = read_diff(chain, prev, next_, "code")
    code, bare = parse_hunks(patch, "H", skip_dirs=True)  # docs/ and the like: no code, as the reference
    tests, _ = parse_hunks(read_diff(chain, prev, next_, "tests"), "TH")
    size = (limits.max_files, limits.max_hunks, limits.max_lines)
    return StepInputs(
        notes, code, bare, tests, batch_files(code, *size), batch_files(tests, *size), file_changes(patch)
    )


def hunk_record(hunk: Hunk, targets: list[str]) -> HunkRecord:
    return HunkRecord(
        id=hunk.id,
        file=hunk.file,
        status=hunk.status,
        header=hunk.header,
        lines=hunk.lines,
        added=hunk.added,
        removed=hunk.removed,
        targets=targets,
    )


def input_hash(step: Step, inputs: StepInputs) -> str:
    data = {
        "cache_version": CACHE_VERSION,
        "model": step.llm.model,
        "system": SYSTEM,
        "prompts": [DIVIDE_PROMPT, CONQUER_PROMPT, COMPLETE_PROMPT, FIELD_GUIDE],
        "tools": [DIVIDE_TOOL, CONQUER_TOOL, COMPLETE_TOOL],
        "limits": step.limits.model_dump(),
        "max_tokens": MAX_TOKENS,
        "tasks": [t.model_dump(mode="json") for t in inputs.notes.tasks],
        "file_changes": inputs.file_changes,
        "code": [h.model_dump() for h in inputs.code],
        "tests": [h.model_dump() for h in inputs.tests],
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def synthesize_step(
    chain: Chain, prev: str, next_: str, llm: LLM, jobs: int = 4, limits: BatchLimits | None = None
) -> DecompSynthRecord:
    """Divide, Conquer and Complete for one step; the record holds the task set."""
    step = Step(chain, prev, next_, llm, jobs=jobs, limits=limits or BatchLimits())
    inputs = step_inputs(chain, prev, next_, step.limits)
    tasks = inputs.notes.tasks

    code_targets = step.divide(tasks, inputs.code, inputs.batches, "code") if inputs.code else {}
    test_targets = step.divide(tasks, inputs.tests, inputs.test_batches, "test") if inputs.tests else {}
    code_of = {t.id: [h for h in inputs.code if spec_id(t) in code_targets[h.id]] for t in tasks}
    tests_of = {t.id: [h for h in inputs.tests if spec_id(t) in test_targets[h.id]] for t in tasks}

    def others(hunks: list[Hunk], targets: dict[str, list[str]]) -> list[Hunk]:
        return [h for h in hunks if "others" in targets[h.id]]  # every one, as the reference

    # Every task is specified, as the reference does; one without code hunks is listed under
    # Additional Changes (levels.arrange).
    specs = step.map(lambda t: step.conquer(t, code_of[t.id], tests_of[t.id]), tasks)
    extra = step.complete(others(inputs.code, code_targets), others(inputs.tests, test_targets), specs)

    spec_tasks = [
        SpecTask(spec=spec, origin="release_notes", release_task=task, code_hunks=[h.id for h in code_of[task.id]])
        for task, spec in zip(tasks, specs, strict=True)
    ]
    for number, found in enumerate(extra, start=1):
        fields = found.model_dump(mode="json", exclude={"hunks"})
        spec = TaskSpec.model_validate({"task_id": f"new_task_{number}", **fields})
        spec_tasks.append(SpecTask(spec=spec, origin="complete", code_hunks=list(found.hunks)))

    usage, this_run = StageUsage(), StageUsage()
    for stage, _, tokens, requests, fresh in step.used:
        cost = priced(tokens, requests, llm.price)
        for into in (usage, this_run) if fresh else (usage,):
            setattr(into, stage, getattr(into, stage).plus(cost))
            into.total = into.total.plus(cost)

    return DecompSynthRecord(
        chain=chain.id,
        package=chain.config.package,
        prev_version=prev,
        next_version=next_,
        model=llm.model,
        base_url=llm.base_url,
        price=llm.price,
        input_hash=input_hash(step, inputs),
        limits=step.limits,
        code_hunks=[hunk_record(h, code_targets[h.id]) for h in inputs.code],
        files_without_hunks=inputs.bare,
        test_hunks=[hunk_record(h, test_targets[h.id]) for h in inputs.tests],
        batches=[[h.id for h in b] for b in inputs.batches],
        test_batches=[[h.id for h in b] for b in inputs.test_batches],
        unmatched_tasks=[spec_id(t) for t in tasks if not code_of[t.id]],
        file_changes=inputs.file_changes,
        usage=usage,
        this_run=this_run,
        cache_files=sorted({name for _, name, *_ in step.used}),
        task_set=TaskSet(
            chain=chain.id,
            package=chain.config.package,
            prev_version=prev,
            next_version=next_,
            source="decompsynth",
            release_notes=inputs.notes,
            tasks=spec_tasks,
        ),
    )


# --------------------------------------------------------------------------- files


def record_path(chain: Chain, prev: str, next_: str) -> Path:
    return spec_dir(chain) / f"{prev}-{next_}" / RECORD_FILE


def check_step_writable(chain: Chain, prev: str, next_: str, levels: Sequence[str]) -> None:
    path = record_path(chain, prev, next_)
    if path.exists():
        try:
            generator = json.loads(path.read_text(encoding="utf-8")).get("generated_by")
        except (ValueError, AttributeError):
            generator = None
        if generator != SYNTH:
            raise SwechainError(f"{path}: exists and was not written by `{SYNTH}`; move it away to synthesize here")
    for level in levels:
        check_writable(*level_files(chain, prev, next_, level))


def write_step(
    chain: Chain,
    record: DecompSynthRecord,
    levels: Sequence[str],
    interface: bool = False,
) -> list[Path]:
    """The record and the levels of one step (with ``interface``, also ``<level>+interface``);
    returns the Markdown files written."""
    from swechain_ci.specs.levels import with_interface

    source = f"DecompSynth ({record.model}) from the release notes and the code diff"
    written = []
    for level in levels:
        spec = build_level(record.task_set, level, generated_by=SYNTH, source=source, file_changes=record.file_changes)
        written.append(write_level(chain, spec)[0])
        if interface:
            written.append(write_level(chain, with_interface(chain, spec))[0])
    record.levels = list(levels)
    write_model(record_path(chain, record.prev_version, record.next_version), record)
    return written


def synth_chain(
    chain: Chain,
    levels: Sequence[str],
    model: str = DEFAULT_MODEL,
    base_url: str | None = None,
    interface: bool = False,
    jobs: int = 4,
) -> list[tuple[DecompSynthRecord, list[Path]]]:
    """Every step of ``chain``: all steps are synthesized first (each exchange cached as it
    arrives), then written, so an error leaves no step half-written."""
    bad = [level for level in levels if level not in ("L2", "L3", "L4", "L5")]
    if bad:
        raise SwechainError(f"`{SYNTH}` writes L2-L5, not {', '.join(bad)}; L1 comes from `swechain-ci specs render`")
    for prev, next_ in chain.steps:
        check_step_writable(chain, prev, next_, levels)
    llm = make_llm(model, base_url)
    try:
        records = [synthesize_step(chain, prev, next_, llm, jobs=jobs) for prev, next_ in chain.steps]
    finally:
        llm.close()
    return [(record, write_step(chain, record, levels, interface)) for record in records]
