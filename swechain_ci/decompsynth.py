"""DecompSynth: specifications L2–L5 from release notes and the code diff, with an LLM.

The definition is SEMANTICS.md, "Specifications (DecompSynth), granularity L1–L5". Per step:

1. **Tasks**: the target version's release notes, one task per top-level item
   (``changelog.chain_release_notes``; ids ``T1``, ``T2``, ...).
2. **Divide**: the code diff (``diffs.read_diff(..., "code")``) is cut into hunks with
   stable ids ``H1``, ``H2``, ... in diff order (each is a file plus one ``@@`` header).
   :func:`batch_hunks` packs them into batches of at most 20 files, 150 hunks and
   3,000 diff lines (a hunk's lines include its ``@@`` line), first-fit by size: hunks
   sorted by size, largest first (ties in diff order), each placed into the first batch
   with room; a hunk above the line limit gets a batch of its own. Per batch the model
   assigns EVERY hunk to one or more task ids, or to ``doc`` (no runtime effect) or
   ``others``. Missed hunks, hunk ids not in the batch, unknown targets and answers that
   do not fit the schema are fed back in a correction message, up to 5 rounds; then the
   step fails with an error naming the batch and what is still wrong. Valid entries of
   earlier rounds are kept, and sending a hunk again replaces its entry. Batch results
   are merged.
3. **Conquer**: one specification per task from its release note and only its matched
   code hunks; the step's test hunks are shown "for reference only" (within
   :data:`TEST_CONTEXT_LINES` lines; beyond that the test hunks sharing most identifiers
   with the task come first). The answer must validate strictly as
   ``levels.TaskSpec`` (``extra="forbid"``, strict types, the task's own id, at least one
   behaviour and one acceptance criterion); up to 3 attempts, each error fed back.
4. **Complete**: code hunks assigned to ``others`` (and to no task) may become extra tasks
   (ids ``X1``, ``X2``, ...), only for observable behaviour changes (the prompt rules out
   version bumps, formatting, import order and internal refactors); "none" is a valid
   answer. Each extra task must cite its hunks; up to 3 attempts.

**Answer format.** Every request offers exactly one tool and forces it
(``tool_choice={"type": "tool", ...}``): ``assign_hunks`` (Divide),
``write_specification`` (Conquer), ``add_tasks`` (Complete). The tool's input schema is
the JSON schema of the strict pydantic model the answer is parsed with
(:class:`DivideAnswer`, ``levels.TaskSpec``, :class:`CompleteAnswer`); a correction is a
``tool_result`` with ``is_error: true`` naming every problem.

**Caching.** Each exchange (one Divide batch, one task's Conquer, one Complete batch) is
cached under ``state_home()/decompsynth/<chain>/<prev>-<next>/`` by a hash of the
model, the system prompt, the tool, the first message (which holds the tasks and hunks),
``max_tokens`` and the number of rounds allowed (no temperature is sent: anthropic 2.14
has none), with its token use and
the whole conversation. A re-run with the same inputs makes no request (and then needs
no API key).

**Record.** ``specs/<chain>/<prev>-<next>/decompsynth.json`` (:class:`DecompSynthRecord`):
model, base URL, price, the step's input hash, every hunk and its targets, the batches,
token use and cost per stage (cache reads and writes included, priced with
``agents/prices.yaml``) for everything behind the output and for this run alone, and the
task set itself. The levels are written next to it by ``levels.write_level``.

The API key comes from ``ANTHROPIC_API_KEY``; without it, a step that needs a request
stops with an error before anything is written. Nothing is ever made up.
"""

from __future__ import annotations

import copy
import hashlib
import html
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anthropic
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from swechain_ci.agents.anthropic import PRICES_FILE, Price, TokenUsage, load_prices
from swechain_ci.changelog import ReleaseNotes, ReleaseTask, chain_release_notes
from swechain_ci.chain import Chain
from swechain_ci.diffs import read_diff, unquote_git_path
from swechain_ci.errors import SwechainError
from swechain_ci.levels import (
    SYNTH, TASK_TYPES, SpecTask, Strict, TaskFields, TaskSet, TaskSpec,
    build_level, check_writable, level_files, write_level,
)
from swechain_ci.models import Record
from swechain_ci.records import write_model
from swechain_ci.settings import state_home
from swechain_ci.specs import spec_dir

DEFAULT_MODEL = "claude-sonnet-4-6"  # as the reference agent: the SDK lists 4-5 as end-of-life on 2026-11-30
MAX_FILES = 20
MAX_HUNKS = 150
MAX_LINES = 3000
DIVIDE_CORRECTIONS = 5  # correction rounds after the first answer
CONQUER_ATTEMPTS = 3
COMPLETE_ATTEMPTS = 3
TEST_CONTEXT_LINES = 1500
MAX_TOKENS = {"divide": 8192, "conquer": 4096, "complete": 8192}
CACHE_VERSION = 1
RECORD_FILE = "decompsynth.json"
SPECIAL_TARGETS = ("doc", "others")

Stage = Literal["divide", "conquer", "complete"]


# --------------------------------------------------------------------------- hunks and batches


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


# --------------------------------------------------------------------------- answers


class HunkAssignment(Strict):
    hunk: str = Field(description="a hunk id shown in the message, e.g. H3")
    targets: list[str] = Field(min_length=1, description='task ids (T1, ...), "doc" or "others"')


class DivideAnswer(Strict):
    assignments: list[HunkAssignment]


class ExtraTask(TaskFields):
    """A task found by Complete: a task specification without an id, citing its hunks."""

    hunks: list[str] = Field(min_length=1, description="the ids of the hunks that make this change")


class CompleteAnswer(Strict):
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
    "Assign code hunks to release-note tasks, to \"doc\" (no runtime effect) or to \"others\".",
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
  - expectation.conceptual: the expected outcome as observable behaviour, without naming code.
  - expectation.grounded: the same outcome grounded in the code: the modules, functions, classes, \
parameters, exceptions and values involved, as the code diff shows them.
  - constraints.conceptual and constraints.grounded: what must keep working or must not be done, \
in behavioural terms and in terms of the code.
  - behavior: the observable behaviours after the change, one per item (at least one).
  - acceptance_criteria: checkable statements of the form "When ..., ... should ...", one per item \
(at least one).
- significance and confidence: low, medium or high; difficulty: easy, medium or hard."""

DIVIDE_PROMPT = """\
Release notes of {package} {next}, one task per item:

{tasks}

Code hunks of this batch ({count} of the release's {total} code hunks, batch {batch} of {batches}):

{hunks}

Call assign_hunks with an entry for EVERY hunk above. The targets of a hunk are one or more of:
- a task id ({task_ids}): the hunk implements all or part of that task; a hunk may serve several tasks;
- "doc": the hunk has no runtime effect (comments, docstrings, formatting, annotations that serve no task);
- "others": the hunk changes code that runs but serves no task above (for example a version bump, an \
internal refactor, or a change the notes do not mention).
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

Test changes of this release, for reference only: they may clarify the intended behaviour, but the \
specification must not describe, name or quote tests.

{tests}

Call write_specification with the specification of this task:
- task_id: "{task_id}".
{fields}"""

COMPLETE_PROMPT = """\
These code hunks of {package} {prev} -> {next} change code that runs but were matched to no task \
of the release notes:

{hunks}

Tasks already specified (do not repeat them):
{known}

Decide whether any of these hunks makes an observable behaviour change that a user of the package \
would notice and that no task above covers. For each such change add one task with add_tasks, \
citing its hunks by the ids shown ({hunk_ids}). Do NOT add tasks for version bumps, formatting, import \
order, comments, internal refactors, or anything else without an observable effect. When nothing \
qualifies, call add_tasks with an empty list: that is a normal answer.

Fields of each task:
- hunks: the ids of the hunks that make the change.
{fields}"""


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def _hunk_block(hunk: Hunk, tag: str = "hunk") -> str:
    ident = f' id="{hunk.id}"' if tag == "hunk" else ""
    status = "" if hunk.status == "modified" else f' status="{hunk.status}"'
    return f'<{tag}{ident} file="{_attr(hunk.file)}"{status}>\n{hunk.text}</{tag}>'


def _note_block(task: ReleaseTask) -> str:
    category = f' category="{_attr(task.category)}"' if task.category else ""
    return f'<task id="{task.id}"{category}>\n{task.text.strip()}\n</task>'


def _references(task: ReleaseTask) -> str:
    if not task.references:
        return ""
    shown = "; ".join(r.url or r.label for r in task.references)
    return f"Linked from this note (their text is not available): {shown}\n"


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


# --------------------------------------------------------------------------- usage, records


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cost_usd = round(self.cost_usd + other.cost_usd, 8)


def priced(tokens: TokenUsage, requests: int, price: Price) -> Usage:
    return Usage(requests=requests, **tokens.as_dict(), cost_usd=round(price.cost(tokens), 8))


class StageUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    divide: Usage = Field(default_factory=Usage)
    conquer: Usage = Field(default_factory=Usage)
    complete: Usage = Field(default_factory=Usage)
    total: Usage = Field(default_factory=Usage)


class HunkRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    file: str
    status: str
    header: str
    lines: int
    added: int
    removed: int
    targets: list[str]  # task ids, "doc", "others" (as Divide assigned them)


class BatchLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
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
    test_hunks: int
    batches: list[list[str]]  # hunk ids per Divide batch
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


# --------------------------------------------------------------------------- the model


def _base_url(flag: str | None) -> str | None:
    return flag or os.environ.get("ANTHROPIC_BASE_URL") or None


@dataclass
class LLM:
    """The Anthropic client DecompSynth uses, made on the first request that needs it."""

    model: str
    price: Price
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 3
    timeout_s: float = 600.0
    _client: anthropic.Anthropic | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self, what: str) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not self.api_key:
                    raise SwechainError(
                        f"{what} needs the Anthropic API and ANTHROPIC_API_KEY is not set; export it (and "
                        "ANTHROPIC_BASE_URL or --base-url for another endpoint) and run again; DecompSynth "
                        "never makes up specifications"
                    )
                self._client = anthropic.Anthropic(
                    api_key=self.api_key, base_url=self.base_url, max_retries=self.max_retries, timeout=self.timeout_s,
                )
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def make_llm(model: str = DEFAULT_MODEL, base_url: str | None = None) -> LLM:
    prices = load_prices()
    if model not in prices:
        raise SwechainError(
            f"no price for model {model} in {PRICES_FILE} (known: {', '.join(sorted(prices))}); add one as "
            "{input, output, cache_write, cache_read} in dollars per million tokens, or pick a known model with --model"
        )
    return LLM(model=model, price=prices[model], base_url=_base_url(base_url),
               api_key=os.environ.get("ANTHROPIC_API_KEY") or None)


def _block(block: Any) -> dict[str, Any] | None:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return None


Check = Callable[[Any], tuple[Any, str | None]]


@dataclass
class Conversation:
    result: Any
    tokens: TokenUsage
    requests: int
    messages: list[dict[str, Any]]


def converse(llm: LLM, *, what: str, system: str, prompt: str, tool: dict[str, Any], check: Check,
             max_requests: int, max_tokens: int, cache_prompt: bool = False) -> Conversation:
    """Ask until ``check`` accepts the tool input, feeding each problem back; at most
    ``max_requests`` requests, then a SwechainError naming the last problem."""
    first: dict[str, Any] = {"type": "text", "text": prompt}
    if cache_prompt:
        first["cache_control"] = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [first]}]
    tokens = TokenUsage()
    problem = ""
    for request in range(1, max_requests + 1):
        client = llm.client(what)
        try:
            response = client.messages.create(
                model=llm.model, max_tokens=max_tokens, system=system, tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]}, messages=messages,
            )
        except anthropic.APIError as exc:
            raise SwechainError(
                f"{what}: the Anthropic API failed after the SDK's retries ({type(exc).__name__}: {exc}); run the "
                "command again (answers already received are cached)"
            ) from None
        tokens.add(TokenUsage.of(response.usage))
        content = [b for b in map(_block, response.content) if b is not None]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in content if b["type"] == "tool_use"]
        call = next((c for c in calls if c["name"] == tool["name"]), None)
        if call is None:
            problem = f"There was no call of {tool['name']}; answer by calling {tool['name']}."
        else:
            result, problem_or_none = check(call["input"])
            if problem_or_none is None:
                return Conversation(result, tokens, request, messages)
            problem = problem_or_none
        if response.stop_reason == "max_tokens":
            problem = (f"Your answer was cut off at the limit of {max_tokens} output tokens; be more concise. "
                       + problem)
        if request == max_requests:
            break
        feedback: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": c["id"], "is_error": True,
             "content": problem if c is call else f"Ignored: call {tool['name']} only."}
            for c in calls
        ]
        if call is None:
            feedback.append({"type": "text", "text": problem})
        messages.append({"role": "user", "content": feedback})
    first_line = problem.strip().split("\n")
    raise SwechainError(
        f"{what}: no valid answer after {max_requests} requests; still wrong: {' '.join(first_line)} "
        "(try again, or another model with --model)"
    )


def _problems(exc: ValidationError) -> str:
    lines = []
    for item in exc.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        lines.append(f"- field '{where}': {item['msg']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the stages


@dataclass
class Step:
    chain: Chain
    prev: str
    next_: str
    llm: LLM
    jobs: int = 4
    limits: BatchLimits = field(default_factory=BatchLimits)
    used: list[tuple[Stage, str, TokenUsage, int, bool]] = field(default_factory=list)  # stage, file, tokens, requests, fresh
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

    def exchange(self, stage: Stage, label: str, prompt: str, tool: dict[str, Any], check_factory: Callable[[], Check],
                 revalidate: Callable[[Any], Any], max_requests: int, cache_prompt: bool = False) -> Any:
        """One exchange, from the cache when the same inputs were answered before."""
        max_tokens = MAX_TOKENS[stage]
        key = hashlib.sha256(json.dumps({
            "cache_version": CACHE_VERSION, "stage": stage, "model": self.llm.model, "system": self.system,
            "tool": tool, "prompt": prompt, "max_tokens": max_tokens, "max_requests": max_requests,
        }, sort_keys=True).encode()).hexdigest()
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
            self.llm, what=f"{self.label}, {stage} {label}", system=self.system, prompt=prompt, tool=tool,
            check=check_factory(), max_requests=max_requests, max_tokens=max_tokens, cache_prompt=cache_prompt,
        )
        result = conversation.result
        write_model(path, CachedExchange(
            stage=stage, label=label, key=key, model=self.llm.model, result=result, requests=conversation.requests,
            tokens=conversation.tokens.as_dict(), messages=conversation.messages,
        ))
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

    def divide(self, tasks: list[ReleaseTask], hunks: list[Hunk], batches: list[list[Hunk]]) -> dict[str, list[str]]:
        task_ids = [t.id for t in tasks]
        allowed = [*task_ids, *SPECIAL_TARGETS]
        notes = "\n\n".join(_note_block(t) for t in tasks) or f"(The release notes of {self.next_} list no task.)"

        def one(numbered: tuple[int, list[Hunk]]) -> dict[str, list[str]]:
            number, batch = numbered
            ids = [h.id for h in batch]
            prompt = DIVIDE_PROMPT.format(
                package=self.chain.config.package, next=self.next_, tasks=notes, count=len(batch), total=len(hunks),
                batch=number, batches=len(batches), hunks="\n\n".join(_hunk_block(h) for h in batch),
                task_ids=", ".join(task_ids) or "none in this release", hunk_ids=", ".join(ids),
            )

            def revalidate(result: Any) -> dict[str, list[str]]:
                if not isinstance(result, dict) or list(result) != ids:
                    raise ValueError("stale")
                if any(not v or any(t not in allowed for t in v) for v in result.values()):
                    raise ValueError("stale")
                return result

            return self.exchange("divide", f"b{number}", prompt, DIVIDE_TOOL,
                                 lambda: divide_check(ids, allowed), revalidate, 1 + DIVIDE_CORRECTIONS,
                                 cache_prompt=True)

        merged: dict[str, list[str]] = {}
        for result in self.map(one, list(enumerate(batches, start=1))):
            merged.update(result)
        return {h.id: merged[h.id] for h in hunks}

    # -- Conquer -----------------------------------------------------------------------------------

    def conquer(self, task: ReleaseTask, code: list[Hunk], tests: list[Hunk]) -> TaskSpec:
        shown, left_out = select_test_hunks(tests, task.text, code)
        test_text = "\n\n".join(_hunk_block(h, "test_hunk") for h in shown) or "(This release changes no test.)"
        if left_out:
            test_text += f"\n\n({left_out} more test hunks are not shown.)"
        hunk_text = "\n\n".join(_hunk_block(h) for h in code) or (
            "(No code hunk was matched to this task: it may have no runtime effect, or be implemented outside "
            "the Python code.)"
        )
        prompt = CONQUER_PROMPT.format(
            task_id=task.id, package=self.chain.config.package, next=self.next_,
            category=f" (category: {task.category})" if task.category else "", text=task.text.strip(),
            references=_references(task), hunks=hunk_text, tests=test_text, fields=self.fields(),
        )
        result = self.exchange("conquer", task.id, prompt, CONQUER_TOOL, lambda: conquer_check(task.id),
                               lambda r: TaskSpec.model_validate(r).model_dump(mode="json"), CONQUER_ATTEMPTS)
        return TaskSpec.model_validate(result)

    # -- Complete ----------------------------------------------------------------------------------

    def complete(self, others: list[Hunk], known: list[TaskSpec]) -> list[ExtraTask]:
        if not others:
            return []
        batches = batch_hunks(others, self.limits.max_files, self.limits.max_hunks, self.limits.max_lines)
        known_text = "\n".join(f"- {t.task_id}: {t.title}" for t in known) or "(none)"

        def one(numbered: tuple[int, list[Hunk]]) -> list[ExtraTask]:
            number, batch = numbered
            ids = [h.id for h in batch]
            prompt = COMPLETE_PROMPT.format(
                package=self.chain.config.package, prev=self.prev, next=self.next_,
                hunks="\n\n".join(_hunk_block(h) for h in batch), known=known_text, hunk_ids=", ".join(ids),
                fields=self.fields(),
            )

            def revalidate(result: Any) -> list[dict[str, Any]]:
                answer = CompleteAnswer.model_validate({"tasks": result})
                if any(h not in ids for t in answer.tasks for h in t.hunks):
                    raise ValueError("stale")
                return result

            result = self.exchange("complete", f"b{number}", prompt, COMPLETE_TOOL, lambda: complete_check(ids),
                                   revalidate, COMPLETE_ATTEMPTS)
            return [ExtraTask.model_validate(t) for t in result]

        return [t for found in self.map(one, list(enumerate(batches, start=1))) for t in found]


def divide_check(ids: list[str], allowed: list[str]) -> Check:
    """Validation of assign_hunks answers for one batch, keeping the valid entries across rounds."""
    state: dict[str, list[str]] = {}

    def check(raw: Any) -> tuple[Any, str | None]:
        try:
            answer = DivideAnswer.model_validate(raw)
        except ValidationError as exc:
            return None, ("The input of assign_hunks does not fit its schema:\n" + _problems(exc)
                          + "\nCall assign_hunks again with {\"assignments\": [{\"hunk\": ..., \"targets\": [...]}]}.")
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
            lines.append(f"Not hunks of this batch (entries dropped): {', '.join(dict.fromkeys(invented))}. "
                         f"The hunks of this batch are {', '.join(ids)}.")
        if unknown:
            lines.append(f"Unknown targets (entries dropped): {'; '.join(unknown)}. "
                         f"The targets are {', '.join(allowed)}.")
        if missing:
            lines.append(f"Not assigned: {', '.join(missing)}. Every hunk of the batch must be assigned.")
        lines.append("Call assign_hunks again with entries for these hunks. The valid entries you sent are kept; "
                     "an entry for a hunk replaces its earlier one.")
        return None, "\n".join(lines)

    return check


def conquer_check(task_id: str) -> Check:
    def check(raw: Any) -> tuple[Any, str | None]:
        try:
            spec = TaskSpec.model_validate(raw)
        except ValidationError as exc:
            return None, ("The specification does not fit the schema of write_specification:\n" + _problems(exc)
                          + "\nCall write_specification again with the complete, corrected specification.")
        problems = []
        if spec.task_id != task_id:
            problems.append(f"- task_id is {spec.task_id!r}; it must be {task_id!r}")
        if not spec.synthesized_requirement.behavior:
            problems.append("- synthesized_requirement.behavior is empty; give at least one behaviour")
        if not spec.synthesized_requirement.acceptance_criteria:
            problems.append("- synthesized_requirement.acceptance_criteria is empty; give at least one criterion")
        if problems:
            return None, ("The specification is not valid:\n" + "\n".join(problems)
                          + "\nCall write_specification again with the complete, corrected specification.")
        return spec.model_dump(mode="json"), None

    return check


def complete_check(ids: list[str]) -> Check:
    def check(raw: Any) -> tuple[Any, str | None]:
        try:
            answer = CompleteAnswer.model_validate(raw)
        except ValidationError as exc:
            return None, ("The input of add_tasks does not fit its schema:\n" + _problems(exc)
                          + "\nCall add_tasks again with all tasks, corrected (or an empty list).")
        problems = []
        for index, task in enumerate(answer.tasks):
            bad = [h for h in task.hunks if h not in ids]
            if bad:
                problems.append(f"- tasks.{index} cites {', '.join(bad)}, which are not among the hunks shown "
                                f"({', '.join(ids)})")
            if not task.synthesized_requirement.behavior or not task.synthesized_requirement.acceptance_criteria:
                problems.append(f"- tasks.{index} needs at least one behaviour and one acceptance criterion")
        if problems:
            return None, ("Not valid:\n" + "\n".join(problems)
                          + "\nCall add_tasks again with all tasks, corrected (or an empty list).")
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


def step_inputs(chain: Chain, prev: str, next_: str, limits: BatchLimits) -> StepInputs:
    notes = chain_release_notes(chain, next_)
    code, bare = parse_hunks(read_diff(chain, prev, next_, "code"), "H")
    tests, _ = parse_hunks(read_diff(chain, prev, next_, "tests"), "TH")
    return StepInputs(notes, code, bare, tests, batch_hunks(code, limits.max_files, limits.max_hunks, limits.max_lines))


def input_hash(step: Step, inputs: StepInputs) -> str:
    data = {
        "cache_version": CACHE_VERSION, "model": step.llm.model, "system": SYSTEM,
        "prompts": [DIVIDE_PROMPT, CONQUER_PROMPT, COMPLETE_PROMPT, FIELD_GUIDE],
        "tools": [DIVIDE_TOOL, CONQUER_TOOL, COMPLETE_TOOL], "limits": step.limits.model_dump(),
        "max_tokens": MAX_TOKENS,
        "tasks": [t.model_dump(mode="json") for t in inputs.notes.tasks],
        "code": [h.model_dump() for h in inputs.code], "tests": [h.model_dump() for h in inputs.tests],
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def synthesize_step(chain: Chain, prev: str, next_: str, llm: LLM, jobs: int = 4,
                    limits: BatchLimits | None = None) -> DecompSynthRecord:
    """Divide, Conquer and Complete for one step; the record holds the task set."""
    step = Step(chain, prev, next_, llm, jobs=jobs, limits=limits or BatchLimits())
    inputs = step_inputs(chain, prev, next_, step.limits)
    tasks = inputs.notes.tasks

    targets = step.divide(tasks, inputs.code, inputs.batches) if inputs.code else {}
    by_task = {t.id: [h for h in inputs.code if t.id in targets[h.id]] for t in tasks}
    others = [h for h in inputs.code
              if "others" in targets[h.id] and not any(t in targets[h.id] for t in by_task)]

    specs = step.map(lambda t: step.conquer(t, by_task[t.id], inputs.tests), list(tasks))
    extra = step.complete(others, specs)

    spec_tasks = [
        SpecTask(spec=spec, origin="release_notes", release_task=task, code_hunks=[h.id for h in by_task[task.id]])
        for task, spec in zip(tasks, specs, strict=True)
    ]
    for number, found in enumerate(extra, start=1):
        fields = found.model_dump(mode="json", exclude={"hunks"})
        spec = TaskSpec.model_validate({"task_id": f"X{number}", **fields})
        spec_tasks.append(SpecTask(spec=spec, origin="complete", code_hunks=list(found.hunks)))

    usage, this_run = StageUsage(), StageUsage()
    for stage, _, tokens, requests, fresh in step.used:
        cost = priced(tokens, requests, llm.price)
        for into in (usage, this_run) if fresh else (usage,):
            getattr(into, stage).add(cost)
            into.total.add(cost)

    return DecompSynthRecord(
        chain=chain.id, package=chain.config.package, prev_version=prev, next_version=next_, model=llm.model,
        base_url=llm.base_url, price=llm.price, input_hash=input_hash(step, inputs), limits=step.limits,
        code_hunks=[HunkRecord(id=h.id, file=h.file, status=h.status, header=h.header, lines=h.lines, added=h.added,
                               removed=h.removed, targets=targets[h.id]) for h in inputs.code],
        files_without_hunks=inputs.bare, test_hunks=len(inputs.tests),
        batches=[[h.id for h in b] for b in inputs.batches], usage=usage, this_run=this_run,
        cache_files=sorted({name for _, name, *_ in step.used}),
        task_set=TaskSet(chain=chain.id, package=chain.config.package, prev_version=prev, next_version=next_,
                         source="decompsynth", release_notes=inputs.notes, tasks=spec_tasks),
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


def write_step(chain: Chain, record: DecompSynthRecord, levels: Sequence[str], interface: bool = True,
               ) -> list[Path]:
    """The record and the levels of one step; returns the Markdown files written."""
    from swechain_ci.interface import chain_interface_changes

    changes = chain_interface_changes(chain, record.prev_version, record.next_version) if interface else None
    source = f"DecompSynth ({record.model}) from the release notes and the code diff"
    written = []
    for level in levels:
        spec = build_level(record.task_set, level, changes, generated_by=SYNTH, source=source)
        written.append(write_level(chain, spec)[0])
    record.levels = list(levels)
    write_model(record_path(chain, record.prev_version, record.next_version), record)
    return written


def synth_chain(chain: Chain, levels: Sequence[str], model: str = DEFAULT_MODEL, base_url: str | None = None,
                interface: bool = True, jobs: int = 4) -> list[tuple[DecompSynthRecord, list[Path]]]:
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
