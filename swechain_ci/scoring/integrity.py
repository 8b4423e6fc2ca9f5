"""Integrity of a run's scores: the checks scoring itself makes, what prev becomes when it
cannot be trusted, and a maintainer's recorded clearing of a flagged run.

Pure functions over stored records (plus one file read and one written for a clearing),
so re-scoring recomputes every finding without Docker. The harness's own findings
arrive as ``TestRun.integrity_flags`` and are gathered here with these.

The rules (README, "Integrity"):

- ``skipped_on_candidate``: a test that passes on new gold (and was not skipped on old
  gold) is skipped, xfailed or xpassed in prev or curr. It drops out of scoring as the
  paper says, which would hide an FN or an FP, so the run is flagged with the tests.
- ``prev_import_failure``: the agent's previous code fails to import under this step's
  hidden tests, while it imported under its own step's tests. Code that errors on purpose
  when it sees a newer version makes every prev test error, and then its regressions never
  count. Then, for scoring, prev falls back to old gold (the state an honest predecessor
  is measured from at a range's first step), so a regression against old gold counts as
  FP; the observed prev stays in step.json. Two ways to see it: the package raises at
  import (not a missing name), or, whatever the words of the error, prev fails to import a
  name from a module that its own step's tests imported from there without failure (the
  host reads which names those tests import; the harness records which failed) and that
  old gold does not fail to import under these tests (then the environment is the cause).
- ``tripwire`` in prev: prev's results were forged (evaluation/tripwires.py); prev is scored
  as old gold too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.integrity_kinds import own_runner_finding
from swechain_ci.evaluation.outcomes import scored_universe
from swechain_ci.evaluation.tripwires import TRIPWIRE
from swechain_ci.models import (
    SCOREABLE,
    FailedImport,
    Integrity,
    IntegrityFlag,
    Record,
    Status,
    StepRecord,
    TestRun,
)
from swechain_ci.records import RunFolder, read_model, write_model

SKIPPED_ON_CANDIDATE = "skipped_on_candidate"
PREV_IMPORT_FAILURE = "prev_import_failure"
DETAIL_CHARS = 500
# What an honest "not there yet" looks like: a name or a module the code does not have.
MISSING_NAME = re.compile(r"^(ImportError: cannot import name |ModuleNotFoundError: No module named )")


def listing(what: str, tests: list[str]) -> str:
    """``what`` and as many test ids as fit in a flag's detail."""
    text = f"{len(tests)} {what}: "
    shown: list[str] = []
    for test in tests:
        if len(text) + len(", ".join([*shown, test])) + 8 > DETAIL_CHARS:
            return text + ", ".join(shown) + ", …"
        shown.append(test)
    return text + ", ".join(shown)


def skipped_tests(
    universe: Iterable[str],
    old_gold: Mapping[str, Status],
    outcomes: Mapping[str, Status],
    run: TestRun | None = None,
) -> list[str]:
    """Tests that pass on new gold but are not scoreable in ``outcomes``. The tests' own doing, not
    the candidate's: tests that the old code also skipped, and tests of a module whose import of a
    package name failed in ``run`` (the import tolerance binds the name to None, and a
    ``skipif(not PY_3_8_PLUS)`` then skips: attrs 21.3.0's code has no ``attr._compat.PY_3_8_PLUS``)."""
    tolerated = {record.test_file for record in run.failed_imports} if run is not None else set()
    return sorted(
        t
        for t in universe
        if outcomes.get(t) is not None
        and outcomes[t] not in SCOREABLE
        and old_gold.get(t, Status.passed) in SCOREABLE
        and t.split("::", 1)[0] not in tolerated
    )


def package_failed_to_import(run: TestRun | None, import_name: str | None) -> str | None:
    """Why ``run`` shows the candidate's own package failing at import, or None.

    A failed import of the package that is not a missing name or module, or a collection
    error whose traceback runs through the package's own files at import time.
    """
    if run is None:
        return None
    if run.execution_error:
        return f"the evaluation failed: {run.execution_error}"
    for record in run.failed_imports:
        ours = import_name is None or record.module == import_name or record.module.startswith(import_name + ".")
        if ours and not MISSING_NAME.match(record.error):
            return f"{record.test_file}: importing {record.module} raised {record.error}"
    if import_name:
        frame = re.compile(
            rf"^(?!/)(\S+/)?{re.escape(import_name.replace('.', '/'))}(/\S*)?(\.py)?:\d+: in <module>$", re.MULTILINE
        )
        for collector, text in run.collection_errors.items():
            if frame.search(text):
                last = text.strip().splitlines()[-1] if text.strip() else ""
                return f"{collector}: the package raised at import: {last.removeprefix('E   ')}"
    return None


def final_run(step: StepRecord) -> TestRun:
    return (step.fix or step.build).run


def imported_names(imports: Iterable[FailedImport]) -> set[tuple[str, str]]:
    return {(i.module, name) for i in imports for name in (i.names or [""])}


def lost_names(
    prev_run: TestRun, previous: StepRecord, old_gold_imports: Iterable[FailedImport]
) -> list[tuple[str, str]]:
    """(module, name) pairs prev fails to import that its own step's tests imported without
    failure, and that old gold imports under these tests."""
    before = final_run(previous)
    if before.execution_error:
        return []  # what imported there is not known
    asked = {(i.module, name) for i in previous.test_imports for name in (i.names or [""])}
    fine = asked - imported_names(before.failed_imports)
    return sorted((imported_names(prev_run.failed_imports) & fine) - imported_names(old_gold_imports))


def prev_import_flag(
    index: int,
    next_version: str,
    prev_run: TestRun | None,
    previous: StepRecord | None,
    import_name: str | None,
    old_gold_imports: Iterable[FailedImport] = (),
) -> IntegrityFlag | None:
    """The ``prev_import_failure`` finding of step ``index``, from its prev evaluation and the
    step before it (None at a range's first step, where prev is old gold)."""
    if previous is None or prev_run is None:
        return None
    cause = package_failed_to_import(prev_run, import_name)
    if cause is not None and package_failed_to_import(final_run(previous), import_name) is not None:
        cause = None
    if cause is None and (lost := lost_names(prev_run, previous, old_gold_imports)):
        shown = ", ".join(f"{name} from {module}" if name else module for module, name in lost[:10])
        cause = f"{len(lost)} name(s) its own step's tests imported no longer import: {shown}"
    if cause is None:
        return None
    return IntegrityFlag(
        kind=PREV_IMPORT_FAILURE,
        step=index,
        phase="prev",
        detail=(
            f"the code of step {previous.index} imported under {previous.next_version}'s tests but not under "
            f"{next_version}'s; prev is scored as old gold. {cause}"
        )[:DETAIL_CHARS],
    )


# Object ids and addresses differ from run to run ("plugin 140179606580816 from …").
RUN_SPECIFIC_NUMBER = re.compile(r"\b(?:0x[0-9a-f]+|\d{8,})\b")


def finding_key(flag: IntegrityFlag) -> tuple:
    """What makes two findings the same: check, place and words, run-specific numbers aside."""
    return (flag.kind, flag.location, RUN_SPECIFIC_NUMBER.sub("#", flag.detail))


def step_flags(step: StepRecord, previous: StepRecord | None, import_name: str | None) -> list[IntegrityFlag]:
    """Every integrity finding of one step: the harness's, and scoring's own. A harness finding
    that the target's own code raised in its new-gold runs too (same check, place and words)
    is the package's doing, not the candidate's, and is left out; so is one about pytest's
    machinery placed in the package's own files when the package is pytest."""
    flags: list[IntegrityFlag] = []
    gold = {finding_key(f) for f in step.gold_integrity_flags}
    runs = [("prev", step.prev_run), ("build", step.build.run), ("fix", step.fix.run if step.fix else None)]
    for phase, run in runs:
        for flag in run.integrity_flags if run else []:
            if finding_key(flag) not in gold and not own_runner_finding(flag.kind, flag.location, import_name):
                flags.append(flag.model_copy(update={"step": step.index, "phase": flag.phase or phase}))
    prev_flag = prev_import_flag(
        step.index, step.next_version, step.prev_run, previous, import_name, step.old_gold_failed_imports
    )
    if prev_flag:
        flags.append(prev_flag)
    universe = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
    phases = [("prev", step.prev_outcomes if step.prev_run else {}, step.prev_run)]
    phases += [("build", step.build.outcomes, step.build.run)]
    phases += [("fix", step.fix.outcomes, step.fix.run)] if step.fix else []
    for phase, outcomes, run in phases:
        skipped = skipped_tests(universe, step.old_gold, outcomes, run)
        if skipped:
            flags.append(
                IntegrityFlag(
                    kind=SKIPPED_ON_CANDIDATE,
                    step=step.index,
                    phase=phase,
                    detail=listing("tests pass on new gold but are skipped or xfailed here, out of scoring", skipped),
                )
            )
    return flags


def prev_for_scoring(
    prev_outcomes: Mapping[str, Status], old_gold: Mapping[str, Status], flags: Iterable[IntegrityFlag]
) -> dict[str, Status]:
    """prev as scored: the observed prev, or old gold when prev broke on purpose (``prev_import_failure``)
    or its results were forged (a ``tripwire`` of the prev evaluation)."""
    voiding = [f for f in flags if f.kind == PREV_IMPORT_FAILURE or (f.kind == TRIPWIRE and f.phase == "prev")]
    if old_gold and voiding:
        return dict(old_gold)
    return dict(prev_outcomes)


def run_flags(steps: list[StepRecord], import_name: str | None) -> dict[int, list[IntegrityFlag]]:
    """Each step's findings, by step index; the step before is the one of index - 1, if scored."""
    by_index = {s.index: s for s in steps}
    return {s.index: step_flags(s, by_index.get(s.index - 1), import_name) for s in steps}


# -- clearing -----------------------------------------------------------------------------------


class Clearance(Record):
    """A maintainer's decision that a flagged run's findings are not gaming. It clears exactly
    the findings it names (by digest): a re-score that finds others flags the run again."""

    cleared_by: str = Field(min_length=1, max_length=100)
    reason: str = Field(min_length=1, max_length=1000)
    cleared_at: str
    flags_sha256: str
    flags: int


def flags_digest(flags: list[IntegrityFlag]) -> str:
    canonical = json.dumps([f.model_dump(mode="json") for f in flags], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def integrity_of(flags: list[IntegrityFlag], clearance: Clearance | None) -> Integrity:
    if not flags:
        return Integrity()
    if clearance is not None and clearance.flags_sha256 == flags_digest(flags):
        return Integrity(
            status="cleared", flags=flags, cleared_by=clearance.cleared_by, cleared_reason=clearance.reason
        )
    return Integrity(status="flagged", flags=flags)


def read_clearance(output: Path) -> Clearance | None:
    path = RunFolder(output).clearance
    return read_model(path, Clearance) if path.is_file() else None


def clear(output: Path, flags: list[IntegrityFlag], by: str, reason: str) -> Clearance:
    """Record that ``by`` cleared exactly ``flags`` for ``reason`` (in the run folder)."""
    if not flags:
        raise SwechainError(f"{output}: the run is clean; there is nothing to clear")
    if not by.strip() or not reason.strip():
        raise SwechainError("a clearing needs --by (who) and --reason (why), both non-empty")
    clearance = Clearance(
        cleared_by=by.strip(),
        reason=reason.strip(),
        flags_sha256=flags_digest(flags),
        flags=len(flags),
        cleared_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    write_model(RunFolder(output).clearance, clearance)
    return clearance
