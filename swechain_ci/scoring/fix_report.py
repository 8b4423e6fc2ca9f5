"""The error report an agent receives for its one Fix attempt (SEMANTICS.md, protocol 4).

Only execution-level information: the tail of the collection error output,
the failed imports, and at most 20 distinct normalised error messages. No
test names beyond what tracebacks show, no pass counts.

The report is a channel the candidate's code can write into (its exceptions' words), so it
has a leak budget (README, "The Fix report's leak budget"): everything in it that depends on
the run, the candidate's words and the hidden tests' alike, is at most ``LEAK_BUDGET`` bytes
in all; runs of encoded data are replaced by a marker; and a failed import is listed only if
the hidden test file really makes that import (the host reads the files; the test process is
not trusted to say what it imported).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from swechain_ci.models import PackageImport, Status, TestRun

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
# Bytes of run-dependent text one report may carry, all sections together (one report per step).
LEAK_BUDGET = 4096
# The report's own words around that (headings, bullets, fences, one cut marker): the whole
# report is at most LEAK_BUDGET + FRAME_BYTES bytes.
FRAME_BYTES = 1024
# Encoded data (base32, base64, hex) in a message is not an error's words: replaced by a marker.
ENCODED_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")
ENCODED = "<data>"
CUT = "… (cut: the report's size limit)"


def looks_encoded(run: str) -> bool:
    """A run of 16+ characters of the base32/base64/hex alphabets that no identifier or word
    looks like: hex or base32 with digits, or mixed-case base64 with digits that changes case often."""
    digits = any(c.isdigit() for c in run)
    if not digits:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", run) or re.fullmatch(r"[A-Z2-7=]+", run):
        return True
    mixed = any(c.islower() for c in run) and any(c.isupper() for c in run)
    # Words change between upper, lower and digits every few characters; encoded data every other one.
    kinds = [c.isupper() - c.islower() + 2 * c.isdigit() for c in run]
    changes = sum(a != b for a, b in itertools.pairwise(kinds))
    return mixed and changes / len(run) >= 0.3


def without_encoded(text: str) -> str:
    return ENCODED_RUN.sub(lambda m: ENCODED if looks_encoded(m.group(0)) else m.group(0), text)


class Budget:
    """What is left of the report's leak budget; ``take`` cuts a text to it."""

    def __init__(self, size: int = LEAK_BUDGET) -> None:
        self.left = size

    def take(self, text: str) -> str | None:
        if self.left <= 0:
            return None
        data = text.encode()
        if len(data) <= self.left:
            self.left -= len(data)
            return text
        cut = data[: self.left].decode(errors="ignore")
        self.left = 0
        return cut + CUT


def normalise(message: str) -> str:
    for pattern, replacement in NORMALISERS:
        message = pattern.sub(replacement, message)
    return without_encoded(message).strip()


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


def imported_by_tests(run: TestRun, test_imports: Iterable[PackageImport] | None) -> list:
    """The failed imports that the hidden test files really make (all of them without ``test_imports``)."""
    if test_imports is None:
        return list(run.failed_imports)
    asked: dict[tuple[str, str], set[str]] = {}
    for made in test_imports:
        asked.setdefault((made.test_file, made.module), set()).update(made.names)
    return [
        f
        for f in run.failed_imports
        if (f.test_file, f.module) in asked and set(f.names) <= asked[(f.test_file, f.module)]
    ]


def build_report(run: TestRun, test_imports: Iterable[PackageImport] | None = None) -> str:
    """The Fix report of ``run``; ``test_imports`` (the oracle's) vouch for the failed imports listed."""
    budget = Budget()
    sections = [
        "# Hidden-test check: execution errors",
        "",
        "Your change was checked against hidden tests, which hit execution-level errors.",
        "Fix them. This is your only fix attempt.",
        "",
    ]
    if run.execution_error:
        error = budget.take(normalise(run.execution_error[:EXECUTION_ERROR_CHARS]))
        sections += ["## The test run itself failed", "", error or "", ""]
        if run.output_tail and (
            tail := budget.take(normalise(without_counts(run.output_tail)[-COLLECTION_TAIL_CHARS:]))
        ):
            sections += ["```", tail, "```", ""]
    if run.timed_out:
        sections += ["## Time limit", "", "The test run did not finish within its time limit.", ""]
    if run.collection_errors:
        distinct = list(dict.fromkeys(normalise(e) for e in run.collection_errors.values()))
        output = budget.take("\n".join(distinct)[-COLLECTION_TAIL_CHARS:])
        if output:
            sections += ["## Collection errors (tail)", "", "```", output, "```", ""]
    failed_imports = imported_by_tests(run, test_imports)
    if failed_imports and budget.left > 0:
        sections += ["## Failed imports in test modules", ""]
        seen: list[str] = []
        for failed in failed_imports:
            statement = f"from {failed.module} import {', '.join(failed.names)}"[:FAILED_IMPORT_CHARS]
            line = f"`{statement}`: {normalise(failed.error[:FAILED_IMPORT_CHARS])}"
            if line not in seen and len(seen) < MAX_FAILED_IMPORTS and (taken := budget.take(line)):
                seen.append(taken)
        sections += [*(f"- {line}" for line in seen), ""]
    messages = [m for m in (budget.take(m) for m in error_messages(run)) if m]
    if messages:
        sections += ["## Error messages", ""] + [f"- {m}" for m in messages] + [""]
    return "\n".join(sections)
