"""Cross-check our oracle with the reference implementation's published oracle results.

The reference layout, per step prev -> next, in a chain folder:
``<next>/v<next>_test_results.json`` (new gold) and
``<next>/v<prev>_cross_test_results.json`` (old gold), each mapping test node
ids to ``{status, ...}``. Upgrade-related = passed in new gold, and failed or
error (or absent) in old gold.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from swechain_ci.errors import SwechainError
from swechain_ci.models import ChainOracle

BROKEN_REFERENCE = {"failed", "error"}


class StepAgreement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int
    prev_version: str
    next_version: str
    both: list[str]
    only_ours: list[str]
    only_theirs: list[str]
    jaccard: float | None


def load_results(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SwechainError(f"{path}: cannot read reference results ({exc})") from None
    return {test: entry["status"] for test, entry in data.get("results", {}).items()}


def reference_related(reference: Path, prev: str, next_: str) -> set[str]:
    new_gold = load_results(reference / next_ / f"v{next_}_test_results.json")
    old_gold = load_results(reference / next_ / f"v{prev}_cross_test_results.json")
    return {t for t, s in new_gold.items() if s == "passed" and old_gold.get(t, "failed") in BROKEN_REFERENCE}


def compare(oracle: ChainOracle, reference: Path) -> list[StepAgreement]:
    if not reference.is_dir():
        raise SwechainError(f"reference folder {reference} does not exist")
    rows = []
    for step in oracle.steps:
        theirs = reference_related(reference, step.prev_version, step.next_version)
        ours = set(step.upgrade_related)
        union = ours | theirs
        rows.append(StepAgreement(
            index=step.index, prev_version=step.prev_version, next_version=step.next_version,
            both=sorted(ours & theirs), only_ours=sorted(ours - theirs), only_theirs=sorted(theirs - ours),
            jaccard=len(ours & theirs) / len(union) if union else None,
        ))
    return rows
