"""The error report an agent receives for its one Fix attempt (SEMANTICS.md, protocol 4).

Only execution-level information: the tail of the collection error output,
the failed imports, and at most 20 distinct normalised error messages. No
test names beyond what tracebacks show, no pass counts.
"""

from __future__ import annotations

import re

from swechain_ci.models import Status, TestRun

COLLECTION_TAIL_CHARS = 2000
MAX_MESSAGES = 20
# Every other part is bounded too, so that no hidden test file can ride along in one.
MESSAGE_CHARS = 600
EXECUTION_ERROR_CHARS = 500
MAX_FAILED_IMPORTS = 50
FAILED_IMPORT_CHARS = 300
# Line numbers go first, so that a temp path ending in "file.py:12" still loses its number.
NORMALISERS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"\bline \d+"), "line N"),
    (re.compile(r"(\.py):\d+"), r"\1:N"),
    (re.compile(r"/tmp/[^\s'\":()]*"), "<tmp>"),
]
# Lines of pytest's summary carry pass counts, which the agent must not see.
COUNT_LINE = re.compile(r"\b\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b")


def normalise(message: str) -> str:
    for pattern, replacement in NORMALISERS:
        message = pattern.sub(replacement, message)
    return message.strip()


def without_counts(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if not COUNT_LINE.search(line))


def error_messages(run: TestRun) -> list[str]:
    distinct: list[str] = []
    for test, status in run.statuses.items():
        if status != Status.error:
            continue
        message = normalise(run.error_messages.get(test, "")[:MESSAGE_CHARS])
        if message and message not in distinct:
            distinct.append(message)
        if len(distinct) == MAX_MESSAGES:
            break
    return distinct


def build_report(run: TestRun) -> str:
    sections = [
        "# Hidden-test check: execution errors",
        "",
        "Your change was checked against hidden tests, which hit execution-level errors.",
        "Fix them. This is your only fix attempt.",
        "",
    ]
    if run.execution_error:
        sections += ["## The test run itself failed", "", normalise(run.execution_error[:EXECUTION_ERROR_CHARS]), ""]
        if run.output_tail:
            tail = without_counts(run.output_tail)[-COLLECTION_TAIL_CHARS:]
            sections += ["```", normalise(tail), "```", ""]
    if run.timed_out:
        sections += ["## Time limit", "", "The test run did not finish within its time limit.", ""]
    if run.collection_errors:
        distinct = list(dict.fromkeys(normalise(e) for e in run.collection_errors.values()))
        output = "\n".join(distinct)[-COLLECTION_TAIL_CHARS:]
        sections += ["## Collection errors (tail)", "", "```", output, "```", ""]
    if run.failed_imports:
        sections += ["## Failed imports in test modules", ""]
        seen: list[str] = []
        for failed in run.failed_imports:
            statement = f"from {failed.module} import {', '.join(failed.names)}"[:FAILED_IMPORT_CHARS]
            line = f"- `{statement}`: {normalise(failed.error[:FAILED_IMPORT_CHARS])}"
            if line not in seen and len(seen) < MAX_FAILED_IMPORTS:
                seen.append(line)
        sections += [*seen, ""]
    messages = error_messages(run)
    if messages:
        sections += ["## Error messages", ""] + [f"- {m}" for m in messages] + [""]
    return "\n".join(sections)
