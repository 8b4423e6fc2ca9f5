"""The oracle as a published dataset: ``chains/<id>/oracle.json``, committed with the chain.

The oracle under the state home is a cache a build may reuse; this file is the ground truth a
review reads as a diff and a runner checks its rebuild against (``chain build --verify``).
Per step it holds every new-gold test in exactly one place:

- ``upgrade_related``: passes on new gold, fails or errors on old gold (SWE-bench's FAIL_TO_PASS),
  with its old-gold status;
- ``pass_to_pass``: scored, and passes on old gold too (PASS_TO_PASS);
- ``other_scored``: scored, neither of those (old gold skipped it, say), with the old status;
- ``excluded``: not scored, with why (not passing on new gold, flaky, needs the network).

and the step's inputs (content hashes of both versions' source trees, the target's pinned test
environment, the harness, the chain's evaluation settings) with their hash: the same inputs give
the same step on any machine, so a mismatch is a finding, not noise. Lists are sorted and the
JSON is indented, one test per line. ``format_version`` is raised when the meaning of a field
changes; README "The oracle as a dataset" documents the format.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain, parse_chain_file
from swechain_ci.containers.images import family_dir
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.outcomes import scored_universe
from swechain_ci.models import ChainOracle, Status, StepOracle, Strict
from swechain_ci.records import read_model, write_text
from swechain_ci.settings import HARNESS_DIR

DATASET_FILE = "oracle.json"
DATASET_KIND: Final = "swechain-ci oracle dataset"
DATASET_FORMAT: Final = 1
SHOWN_TESTS = 5  # tests named in a one-line mismatch; the rest are counted


class StepInputs(Strict):
    """What shapes one step's oracle, portable across machines (no image ids, no paths)."""

    prev_source: str = Field(description="content hash of the previous version's whole source tree")
    next_source: str = Field(description="content hash of the target version's whole source tree")
    environment: list[str] = Field(description="the target's pinned test requirements")
    python: str
    recipes: str = Field(description="content hash of the chain family's image recipes (dockerfiles/<family>)")
    harness: str = Field(description="content hash of the evaluation harness")
    evaluation: str = Field(description="hash of the chain's evaluation settings (split, pytest quirks, limits)")

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


class DatasetStep(Strict):
    index: int
    prev_version: str
    next_version: str
    inputs_hash: str
    inputs: StepInputs
    tests: int = Field(description="hidden tests of the target, as new gold reported them")
    upgrade_related: dict[str, Status] = Field(description="test -> its old-gold status (failed or error)")
    pass_to_pass: list[str]
    other_scored: dict[str, Status] = Field(default_factory=dict, description="test -> its old-gold status")
    excluded: dict[str, str] = Field(default_factory=dict, description="test -> why it is not scored")
    old_gold_collection_errors: list[str] = Field(
        default_factory=list, description="collectors that failed in the old-gold run"
    )


class OracleDataset(Strict):
    kind: Literal["swechain-ci oracle dataset"] = DATASET_KIND
    format_version: Literal[1] = DATASET_FORMAT
    chain: str
    package: str
    paper_id: str | None = None
    versions: list[str] = Field(description="the whole chain's versions, in order")
    steps: list[DatasetStep] = Field(description="the steps built so far, by index")


def dataset_path(chain: Chain) -> Path:
    return chain.folder / DATASET_FILE


def evaluation_settings_hash(chain: Chain) -> str:
    settings = chain.config.keyed_dump(
        {"import_name", "test_folder", "source_root", "protected_files", "pytest", "timeouts", "limits"}
    )
    settings["oracle"] = chain.config.oracle.model_dump(include={"baseline_runs", "max_failing_fraction"})
    settings["installed_metadata"] = chain.config.environment.installed_metadata
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def step_inputs(chain: Chain, oracle: ChainOracle, step: StepOracle) -> StepInputs:
    """The inputs of one built step, read from the chain and the cached source trees."""
    family = family_dir(chain)
    return StepInputs(
        prev_source=sources.materialize(chain, step.prev_version).digest,
        next_source=sources.materialize(chain, step.next_version).digest,
        environment=oracle.environments.get(step.next_version, []),
        python=chain.config.python,
        recipes=trees.digest(family) if family.is_dir() else "",
        harness=trees.digest(HARNESS_DIR),
        evaluation=evaluation_settings_hash(chain),
    )


def dataset_step(step: StepOracle, inputs: StepInputs) -> DatasetStep:
    """One step of the dataset from the oracle's step: every new-gold test in exactly one place."""
    scored = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
    related = set(step.upgrade_related)
    others = scored - related
    excluded = dict(step.excluded)
    for test in set(step.new_gold) - scored - set(excluded):
        excluded[test] = f"not scored ({step.new_gold[test].value} on new gold)"
    return DatasetStep(
        index=step.index,
        prev_version=step.prev_version,
        next_version=step.next_version,
        inputs_hash=inputs.digest(),
        inputs=inputs,
        tests=len(step.new_gold),
        upgrade_related={t: step.old_gold.get(t, Status.failed) for t in sorted(related)},
        pass_to_pass=sorted(t for t in others if step.old_gold.get(t) == Status.passed),
        other_scored={
            t: step.old_gold.get(t, Status.failed) for t in sorted(others) if step.old_gold.get(t) != Status.passed
        },
        excluded=dict(sorted(excluded.items())),
        old_gold_collection_errors=sorted(step.old_gold_collection_errors),
    )


NOT_PASSING = re.compile(r"\((passed|failed|error|skipped|xfailed|xpassed)[^()]*\)$")


def step_oracle(step: DatasetStep) -> StepOracle:
    """The oracle's step as far as the dataset records it (what ``chain compare`` and scoring read):
    a committed dataset can be compared and scored against without building anything."""
    new_gold = dict.fromkeys([*step.upgrade_related, *step.pass_to_pass, *step.other_scored], Status.passed)
    old_gold = {**step.upgrade_related, **dict.fromkeys(step.pass_to_pass, Status.passed), **step.other_scored}
    for test, why in step.excluded.items():
        found = NOT_PASSING.search(why)
        new_gold[test] = (
            Status(found.group(1)) if found and not why.startswith(("flaky", "needs_network")) else Status.passed
        )
    return StepOracle(
        index=step.index,
        prev_version=step.prev_version,
        next_version=step.next_version,
        new_gold=dict(sorted(new_gold.items())),
        old_gold=old_gold,
        upgrade_related=list(step.upgrade_related),
        flaky=[t for t, why in step.excluded.items() if why.startswith("flaky")],
        needs_network=[t for t, why in step.excluded.items() if why.startswith("needs_network")],
        excluded=step.excluded,
        old_gold_collection_errors=step.old_gold_collection_errors,
    )


def as_oracle(dataset: OracleDataset) -> ChainOracle:
    return ChainOracle(
        chain=dataset.chain,
        inputs_hash="",
        versions=dataset.versions,
        environments={s.next_version: s.inputs.environment for s in dataset.steps},
        steps=[step_oracle(s) for s in dataset.steps],
        sanity=[],
    )


def from_oracle(chain: Chain, oracle: ChainOracle) -> OracleDataset:
    steps = [dataset_step(step, step_inputs(chain, oracle, step)) for step in oracle.steps]
    return OracleDataset(
        chain=chain.id,
        package=chain.config.package,
        paper_id=chain.config.paper_id,
        # the whole chain's versions, also when ``chain`` is narrowed to a step range
        versions=[v.version for v in parse_chain_file(sources.chain_file(chain)).versions],
        steps=steps,
    )


def merged(existing: OracleDataset | None, built: OracleDataset) -> OracleDataset:
    """``built``'s steps over ``existing``'s: a step range builds only its own steps. A kept step
    whose versions are no longer that step of the chain (a version added or dropped) is left out."""
    versions = built.versions
    kept = {
        s.index: s
        for s in (existing.steps if existing else [])
        if 1 <= s.index < len(versions)
        and (versions[s.index - 1], versions[s.index]) == (s.prev_version, s.next_version)
    }
    kept |= {s.index: s for s in built.steps}
    return built.model_copy(update={"steps": [kept[i] for i in sorted(kept)]})


def render(dataset: OracleDataset) -> str:
    return dataset.model_dump_json(indent=1) + "\n"


def load(chain: Chain) -> OracleDataset | None:
    path = dataset_path(chain)
    return read_model(path, OracleDataset) if path.is_file() else None


def _listed(tests: set[str]) -> str:
    shown = sorted(tests)[:SHOWN_TESTS]
    more = f" and {len(tests) - SHOWN_TESTS} more" if len(tests) > SHOWN_TESTS else ""
    return ", ".join(shown) + more


def step_differences(committed: DatasetStep, rebuilt: DatasetStep) -> str | None:
    """What differs between a committed step and its rebuild, in one line; None when equal."""
    parts = []
    for field in ("upgrade_related", "pass_to_pass"):
        old, new = set(getattr(committed, field)), set(getattr(rebuilt, field))
        if new - old:
            parts.append(f"{field} gains {_listed(new - old)}")
        if old - new:
            parts.append(f"{field} loses {_listed(old - new)}")
    for field in ("upgrade_related", "other_scored", "excluded"):
        old_map, new_map = getattr(committed, field), getattr(rebuilt, field)
        changed = {t for t in set(old_map) & set(new_map) if old_map[t] != new_map[t]}
        if field != "upgrade_related":
            changed |= set(old_map) ^ set(new_map)
        if changed:
            what = "old-gold status" if field == "upgrade_related" else field
            parts.append(f"{what} differs for {_listed(changed)}")
    if committed.old_gold_collection_errors != rebuilt.old_gold_collection_errors:
        parts.append("old-gold collection errors differ")
    if not parts and committed.tests != rebuilt.tests:
        parts.append(f"{committed.tests} tests committed, {rebuilt.tests} rebuilt")
    return "; ".join(parts) or None


def changes(committed: OracleDataset | None, rebuilt: OracleDataset) -> list[str]:
    """Per rebuilt step, a line for each way it differs from the committed dataset."""
    by_index = {s.index: s for s in committed.steps} if committed else {}
    lines = []
    for step in rebuilt.steps:
        name = f"step {step.index} ({step.prev_version} -> {step.next_version})"
        old = by_index.get(step.index)
        if old is None or (old.prev_version, old.next_version) != (step.prev_version, step.next_version):
            lines.append(f"{name}: not in the committed dataset")
        elif (difference := step_differences(old, step)) is not None:
            lines.append(f"{name}: {difference}")
    return lines


def stale_inputs(committed: OracleDataset, rebuilt: OracleDataset) -> list[str]:
    """Steps that agree in content but were built from other inputs (e.g. a changed harness)."""
    by_index = {s.index: s for s in committed.steps}
    return [
        f"step {s.index}: " + ", ".join(k for k, v in s.inputs if getattr(by_index[s.index].inputs, k) != v)
        for s in rebuilt.steps
        if s.index in by_index and by_index[s.index].inputs_hash != s.inputs_hash
    ]


def publish(chain: Chain, oracle: ChainOracle) -> tuple[Path, list[str]]:
    """Write the built steps into the committed dataset; return its path and what changed."""
    rebuilt = from_oracle(chain, oracle)
    committed = load(chain)
    path = dataset_path(chain)
    write_text(path, render(merged(committed, rebuilt)))
    path.chmod(0o644)  # a file of the repository, not a private record
    return path, changes(committed, rebuilt)


def require(chain: Chain) -> OracleDataset:
    """The committed dataset, or a one-line error saying how to make it."""
    committed = load(chain)
    if committed is None:
        raise SwechainError(
            f"chain {chain.id} has no committed oracle ({dataset_path(chain)}): run `swechain-ci chain build "
            f"{chain.id} --write-dataset` and commit the file"
        )
    return committed


def verify(chain: Chain, oracle: ChainOracle) -> list[str]:
    """Check a rebuilt oracle against the committed dataset: raise with one line naming the first
    step that differs and its tests; else return the steps whose inputs changed with equal tests."""
    committed = require(chain)
    rebuilt = from_oracle(chain, oracle)
    problems = changes(committed, rebuilt)
    if problems:
        others = f" (and {len(problems) - 1} more steps differ)" if len(problems) > 1 else ""
        raise SwechainError(
            f"chain {chain.id}: the rebuild does not reproduce {dataset_path(chain)}: {problems[0]}{others}"
        )
    return stale_inputs(committed, rebuilt)


def swebench_rows(dataset: OracleDataset) -> list[dict]:
    """One instance per step in the shape SWE-bench-style harnesses read: FAIL_TO_PASS and
    PASS_TO_PASS as lists of pytest node ids."""
    return [
        {
            "instance_id": f"{dataset.chain}__{step.prev_version}-to-{step.next_version}",
            "repo": dataset.package,
            "chain": dataset.chain,
            "paper_id": dataset.paper_id,
            "step": step.index,
            "prev_version": step.prev_version,
            "version": step.next_version,
            "FAIL_TO_PASS": list(step.upgrade_related),
            "PASS_TO_PASS": step.pass_to_pass,
            "environment": step.inputs.environment,
            "python": step.inputs.python,
            "oracle_inputs_hash": step.inputs_hash,
        }
        for step in dataset.steps
    ]


def swebench_jsonl(dataset: OracleDataset) -> str:
    return "".join(json.dumps(row, sort_keys=False) + "\n" for row in swebench_rows(dataset))
