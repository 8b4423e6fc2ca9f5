"""The weekly refresh reruns what changed: a pair (agent, chain, level) runs again when one of its
inputs changed since the last refresh, or when a maintainer asks for repeats.

A pair's inputs, each a digest of files in the checkout:
- agent: the manifest (agents/<name>.yaml), the Dockerfile it names and agents/files/ (which a
  Dockerfile may copy); for the built-in agents, the package version. The image's registry
  digest is not known before the image is built: the recipe stands for it.
- oracle: the chain's committed oracle dataset (chains/<id>/oracle.json), or ``unbuilt``.
- specs: the level's specification files (specs/<chain>/*/<level>.md); the baselines read none.
- harness: swechain_ci/evaluation/harness/*.py, the code that runs the hidden tests.

The record (reports/refresh.json, committed with the leaderboard) says, per pair, the inputs of
its last runs and their scorecards, one per repeat. A pair that does not run this week is still
on the leaderboard: its kept scorecards are written back into this week's folder before the
leaderboard is built (they have no run page on the site; its run folder was last week's artifact).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from swechain_ci.models import Scorecard, Strict

RECORD_FILE: Final = "refresh.json"
RECORD_SCHEMA_VERSION: Final = 1
InputName = Literal["agent", "oracle", "specs", "harness"]
# Why a pair reruns, in the order the note gives them.
REASONS: Final[dict[InputName, str]] = {
    "agent": "the agent changed",
    "oracle": "the chain's oracle changed",
    "specs": "the specification changed",
    "harness": "the harness changed",
}


class Pair(Strict):
    agent: str
    chain: str
    level: str = Field(description="specification level the agent runs at (none for a baseline without one)")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.agent, self.chain, self.level)


class PairInputs(Strict):
    parts: dict[InputName, str] = Field(description="input -> sha256 (or a word: unbuilt, none, a version)")
    digest: str = Field(description="sha256 over the parts")


class KeptRun(Strict):
    repeat: int = Field(ge=1, description="the repeat's index: its folder is <agent>/<chain>/r<repeat>")
    scorecard: Scorecard


class PairRecord(Strict):
    pair: Pair
    inputs: PairInputs
    runs: list[KeptRun] = Field(description="the scorecards of the runs on these inputs, one per repeat")


class RefreshRecord(Strict):
    schema_version: int = RECORD_SCHEMA_VERSION
    refreshed_at: str | None = None
    pairs: list[PairRecord] = Field(default_factory=list)

    def find(self, pair: Pair) -> PairRecord | None:
        return next((p for p in self.pairs if p.pair.key == pair.key), None)


# -- inputs ---------------------------------------------------------------------------------------


def digest_files(root: Path, paths: Iterable[Path]) -> str:
    """sha256 over the files' paths (relative to ``root``) and contents, in path order."""
    sha = hashlib.sha256()
    for path in sorted(set(paths)):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return sha.hexdigest()


def combine(parts: dict[InputName, str]) -> PairInputs:
    text = "\n".join(f"{name}={parts[name]}" for name in sorted(parts))
    return PairInputs(parts=parts, digest=hashlib.sha256(text.encode()).hexdigest())


def agent_digest(root: Path, agent: str, builtin_version: str | None) -> str:
    """The agent's recipe: its manifest, the Dockerfile it names and agents/files/; a built-in
    agent is its package version (``builtin_version`` given)."""
    if builtin_version is not None:
        return f"builtin {builtin_version}"
    import yaml

    folder = root / "agents"
    manifest = folder / f"{agent}.yaml"
    files = [manifest]
    dockerfile = ((yaml.safe_load(manifest.read_text()) or {}).get("install") or {}).get("dockerfile")
    if isinstance(dockerfile, str) and (folder / dockerfile).is_file():
        files.append(folder / dockerfile)
        files += [p for p in (folder / "files").rglob("*") if p.is_file()]
    return digest_files(root, files)


def pair_inputs(root: Path, harness: Path, pair: Pair, builtin_version: str | None = None) -> PairInputs:
    """The pair's inputs: the project at ``root`` (agents/, chains/, specs/) and the ``harness``
    folder; ``builtin_version`` given, the agent is a built-in one, which reads no specification."""
    oracle = root / "chains" / pair.chain / "oracle.json"
    specs = sorted((root / "specs" / pair.chain).glob(f"*/{pair.level}.md"))
    return combine(
        {
            "agent": agent_digest(root, pair.agent, builtin_version),
            "oracle": digest_files(root, [oracle]) if oracle.is_file() else "unbuilt",
            "specs": "not read" if builtin_version is not None else digest_files(root, specs) if specs else "none",
            "harness": digest_files(harness, harness.glob("*.py")),
        }
    )


# -- what to run ----------------------------------------------------------------------------------


def changed(pairs: Sequence[tuple[Pair, PairInputs]], record: RefreshRecord) -> list[tuple[Pair, list[str]]]:
    """The pairs whose inputs differ from the record's, each with why (a pair the record does not
    have, or has without a scorecard, is new)."""
    out: list[tuple[Pair, list[str]]] = []
    for pair, inputs in pairs:
        kept = record.find(pair)
        if kept is None or not kept.runs:
            out.append((pair, ["not run by a refresh yet" if kept is None else "its last run left no scorecard"]))
            continue
        reasons = [REASONS[name] for name in REASONS if kept.inputs.parts.get(name) != inputs.parts.get(name)]
        if reasons:
            out.append((pair, reasons))
    return out


def repeat_folder(pair: Pair, repeat: int) -> str:
    return f"{pair.agent}/{pair.chain}/r{repeat}"


def plan(
    pairs: Sequence[tuple[Pair, PairInputs]], record: RefreshRecord, repeats: int = 0
) -> list[tuple[Pair, int, list[str]]]:
    """(pair, repeat index, reasons) for each run of this refresh: a changed pair runs once (or
    ``repeats`` times) from repeat 1, its old runs replaced; with ``repeats`` an unchanged pair
    also runs ``repeats`` more times, numbered after the runs kept."""
    rerun = dict((p.key, reasons) for p, reasons in changed(pairs, record))
    runs: list[tuple[Pair, int, list[str]]] = []
    for pair, _ in pairs:
        if pair.key in rerun:
            runs += [(pair, k, rerun[pair.key]) for k in range(1, max(repeats, 1) + 1)]
        elif repeats:
            kept = record.find(pair)
            first = max((r.repeat for r in kept.runs), default=0) + 1 if kept else 1
            runs += [(pair, k, [f"repeat {k} asked"]) for k in range(first, first + repeats)]
    return runs


# -- after the runs -------------------------------------------------------------------------------


Ran = Sequence[tuple[Pair, PairInputs, dict[int, Scorecard]]]


def record_runs(record: RefreshRecord, ran: Ran, now: datetime | None = None) -> RefreshRecord:
    """The record after a refresh. ``ran``: each pair this refresh ran, its inputs, and its
    scorecards by repeat. A pair on the inputs it was recorded with keeps its runs, this
    refresh's added; a pair on new inputs keeps only this refresh's. A pair without a new
    scorecard (not run, or its run failed) is kept as it was: its changed inputs still show
    next time. Nothing ran, nothing changes (not even the time)."""
    entries = {entry.pair.key: entry for entry in record.pairs}
    for pair, inputs, cards in ran:
        if not cards:
            continue
        kept = entries.get(pair.key)
        runs = {r.repeat: r for r in kept.runs} if kept and kept.inputs.digest == inputs.digest else {}
        runs.update({k: KeptRun(repeat=k, scorecard=card) for k, card in cards.items()})
        entries[pair.key] = PairRecord(pair=pair, inputs=inputs, runs=sorted(runs.values(), key=lambda r: r.repeat))
    if not any(cards for _, _, cards in ran):
        return record
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return RefreshRecord(refreshed_at=when, pairs=[entries[key] for key in sorted(entries)])


def kept_not_rerun(record: RefreshRecord, ran: Ran) -> list[tuple[str, Scorecard]]:
    """(folder, scorecard) of the runs ``record`` (the one after this refresh) holds that this
    refresh did not make: written back beside this week's runs so the leaderboard still has them."""
    made = {(pair.key, k) for pair, _, cards in ran for k in cards}
    return [
        (repeat_folder(entry.pair, run.repeat), run.scorecard)
        for entry in record.pairs
        for run in entry.runs
        if (entry.pair.key, run.repeat) not in made
    ]


def forget(record: RefreshRecord, agents: Iterable[str], chains: Iterable[str]) -> RefreshRecord:
    """The record without the pairs of agents or chains that no longer exist."""
    agents, chains = set(agents), set(chains)
    kept = [e for e in record.pairs if e.pair.agent in agents and e.pair.chain in chains]
    return record if len(kept) == len(record.pairs) else record.model_copy(update={"pairs": kept})
