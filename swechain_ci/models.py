"""The records of evaluation, oracle, run and score: data that crosses those stage
boundaries, defined once.

Every JSON file the pipeline writes is a pydantic model carrying ``schema_version``,
so that stored results stay readable as the format grows. Models of other stages live
beside the one module that writes them (chain.py, agents/manifest.py, diffs.py,
render.py, leaderboard.py).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Strict(BaseModel):
    """The base of every model that crosses a boundary: a field it does not know is an error."""

    model_config = ConfigDict(extra="forbid")


class StrictTyped(Strict):
    """Strict, and without coercion ("1" is not 1): for what a model or an import wrote."""

    model_config = ConfigDict(strict=True)


# Shared vocabularies, spelled once.
AgentPhase = Literal["build", "fix"]
FlagPhase = Literal["build", "fix", "prev"]
RunStatus = Literal["running", "finished", "stopped", "paused"]
AgentStatus = Literal["ok", "crashed", "timed_out", "tree_rejected", "infra_error"]
CostSource = Literal["cli", "prices"]


class Status(str, Enum):
    """The status of one hidden test in one run (SEMANTICS.md, "Test outcomes")."""

    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    xfailed = "xfailed"
    xpassed = "xpassed"


SCOREABLE = frozenset({Status.passed, Status.failed, Status.error})
BROKEN = frozenset({Status.failed, Status.error})


class Category(str, Enum):
    resolved = "resolved"
    unresolved = "unresolved"
    preserved = "preserved"
    regressed = "regressed"
    recovered = "recovered"
    unrecovered = "unrecovered"


class Record(Strict):
    schema_version: int = SCHEMA_VERSION


class FailedImport(Strict):
    test_file: str
    module: str
    names: list[str]
    error: str


class IntegrityFlag(Strict):
    """One finding that a score may have been steered (README, "Integrity").

    ``kind`` names the check (a row of the integrity table); ``location`` is ``file:line``
    in the candidate's code where the check can point at one.
    """

    kind: str
    detail: str = Field(max_length=500)
    step: int | None = None
    phase: FlagPhase | None = None
    location: str | None = None


class Integrity(Strict):
    """A run's integrity: clean, or flagged (not ranked) until a maintainer clears it."""

    status: Literal["clean", "flagged", "cleared"] = "clean"
    flags: list[IntegrityFlag] = Field(default_factory=list)
    cleared_by: str | None = None
    cleared_reason: str | None = None


class TestRun(Record):
    """One hidden-test run of one codebase, as the harness observed it.

    ``statuses`` holds what pytest reported per node id; the expansion of
    collection errors and missing tests against new gold happens in
    ``outcomes.resolve``, so the raw observation is kept as it was.
    """

    statuses: dict[str, Status] = Field(default_factory=dict)
    collection_errors: dict[str, str] = Field(default_factory=dict, description="collector node id -> its error output")
    error_messages: dict[str, str] = Field(
        default_factory=dict, description="node id -> message of a failed/error test"
    )
    failed_imports: list[FailedImport] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    execution_error: str | None = Field(None, description="why the run's report cannot be trusted or does not exist")
    collected: int | None = None
    duration_s: float = 0.0
    output_tail: str = ""
    integrity_flags: list[IntegrityFlag] = Field(default_factory=list)


class TripwireCandidate(Strict):
    """A mutated copy of a hidden test, verified on gold to fail (evaluation/tripwires.py)."""

    test_file: str = Field(description="relative to the project root, as in the hidden layer")
    qualname: str = Field(description="the original test: name, or Class.name")
    rule: str = Field(description="the row of tripwires.MUTATIONS that made it")
    first_line: int = Field(description="the original's first line (its first decorator), 1-based")
    last_line: int
    text: str = Field(description="the copy's source: the original's lines with one token changed")


class PackageImport(Strict):
    """Names a hidden test module imports from the package (``from <module> import <names>``)."""

    test_file: str
    module: str
    names: list[str]


class StepId(Strict):
    """Which step of a chain: its index and the versions it upgrades between."""

    index: int
    prev_version: str
    next_version: str


class StepGold(StepId, Record):
    """A step and its hidden tests as the oracle found them: what the oracle hands to a step's record."""

    new_gold: dict[str, Status]
    old_gold: dict[str, Status] = Field(
        default_factory=dict, description="old gold under the hidden tests (the oracle's)"
    )
    upgrade_related: list[str]
    flaky: list[str] = Field(default_factory=list)
    needs_network: list[str] = Field(default_factory=list)
    gold_integrity_flags: list[IntegrityFlag] = Field(
        default_factory=list,
        description="the harness's findings on the target's own code (its new-gold runs): not evidence against a candidate",
    )
    test_imports: list[PackageImport] = Field(
        default_factory=list, description="what the target's hidden test modules import from the package"
    )
    old_gold_failed_imports: list[FailedImport] = Field(
        default_factory=list, description="failed imports of the old-gold run (the environment's doing)"
    )

    def gold(self) -> dict[str, Any]:
        """This step's identity and gold, as fields of another StepGold (a StepRecord from its StepOracle)."""
        return {name: getattr(self, name) for name in StepGold.model_fields if name != "schema_version"}


class StepOracle(StepGold):
    """Which hidden tests one step must make pass, from gold runs."""

    old_gold: dict[str, Status]  # required here: the oracle always ran it
    excluded: dict[str, str] = Field(
        default_factory=dict, description="test -> why it is not scored (not passing on new gold, flaky, network)"
    )
    old_gold_collection_errors: list[str] = Field(
        default_factory=list, description="collectors that failed in the old-gold run"
    )
    tripwires: list[TripwireCandidate] = Field(
        default_factory=list, description="mutated copies of hidden tests that fail on new gold and not pass on old"
    )
    natural_tripwires: list[str] = Field(
        default_factory=list, description="tests failing in every new-gold run and on old gold: must not pass"
    )


class VersionSanity(Record):
    version: str
    tests: int
    failed: int
    errors: int
    setup_errors: list[str]
    failing: list[str]
    ok: bool


class ChainOracle(Record):
    chain: str
    inputs_hash: str
    versions: list[str]
    environments: dict[str, list[str]] = Field(description="version -> pinned test requirements")
    steps: list[StepOracle]
    sanity: list[VersionSanity]


class Counts(Strict):
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0
    recovered: int = 0
    unrecovered: int = 0


class Metrics(Strict):
    resolving: float | None
    precision: float | None
    f1: float | None
    tp: int
    fn: int
    fp: int


class Usage(Strict):
    """Turns or requests, tokens and dollars, summed over parts (an agent's phases, DecompSynth's
    requests); a count that no part reports is null."""

    turns: int | None = None
    requests: int | None = Field(None, description="API requests, where they are counted (DecompSynth)")
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None

    @classmethod
    def total(cls, parts: list[Usage]) -> Usage:
        def summed(name: str) -> int | float | None:
            known = [getattr(p, name) for p in parts if getattr(p, name) is not None]
            return sum(known) if known else None

        totals = {name: summed(name) for name in Usage.model_fields}
        if totals["cost_usd"] is not None:
            totals["cost_usd"] = round(totals["cost_usd"], 8)
        return cls(**totals)

    @classmethod
    def zero(cls) -> Usage:
        """Nothing yet, counted: a sum that starts at 0 rather than at unknown."""
        return cls(requests=0, input_tokens=0, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0, cost_usd=0.0)

    def plus(self, other: Usage) -> Usage:
        return Usage.total([self, other])


class AgentOutcome(Usage):
    """What one agent phase did, as the harness saw it, with its own turns, tokens and dollars.

    ``infra_error``: the provider or the network failed, not the agent (agents/triage.py);
    such a phase is never scored and pauses the run."""

    status: AgentStatus = Field(
        "ok", description="tree_rejected: the code tree it left cannot be taken (e.g. over the size limit)"
    )
    ended_by: str | None = Field(None, description="e.g. end_turn, exit, limit, repetition, infra")
    limit: Literal["turns", "cost_usd", "wall_s"] | None = Field(
        None, description="the limit that ended it (ended_by: limit)"
    )
    infra: str | None = Field(None, description="the infra-failure signature that matched (agents/triage.py)")
    detail: str = ""
    wall_s: float = 0.0
    exit_code: int | None = None
    cost_source: CostSource | None = Field(
        None, description="cli: dollars the agent's CLI reported; prices: tokens priced with prices.yaml"
    )
    prices_date: str | None = Field(None, description="the date of the price table, when prices were used")
    cli_session: str | None = Field(None, description="the session id the CLI reported (its Fix resumes it)")
    output_truncated: bool = False


class DiffStats(Strict):
    files: int = 0
    added: int = 0
    removed: int = 0


class PrevRun(Record):
    """A step's prev evaluation (the code it starts from, under the next version's tests), run
    while the agent worked on the Build: ``prev-run.json``, taken by the evaluation if the code matches."""

    code_sha256: str
    run: TestRun


class AgentPhaseRecord(Record):
    """What an agent phase (build or fix) left, before its evaluation: ``agent-<phase>.json``.

    It is the hand-over between the phase that runs the agent and the phase that evaluates
    its code, which may run in another job on another runner.
    """

    phase: AgentPhase
    agent: AgentOutcome
    session_id: str
    session: Literal["none", "kept", "dropped"] = Field(
        "none", description="kept: the agent's session state is in session.tar.gz for the Fix to resume"
    )
    session_note: str = ""
    code_sha256: str
    diff: DiffStats


class PhaseRecord(Strict):
    phase: AgentPhase
    agent: AgentOutcome
    code_sha256: str
    diff: DiffStats
    run: TestRun
    outcomes: dict[str, Status]
    categories: dict[str, Category]
    counts: Counts
    execution_error: bool = Field(description="whether this evaluation triggers Fix")


class StepRecord(StepGold):
    """Everything needed to re-score one step without Docker."""

    spec_level: str
    prev_outcomes: dict[str, Status] = Field(
        description="prev as observed; scoring may fall back to old_gold (integrity)"
    )
    build: PhaseRecord
    fix: PhaseRecord | None = None
    fix_report: str | None = None
    prev_run: TestRun | None = Field(None, description="the prev evaluation (none at a range's first step: old gold)")
    integrity_flags: list[IntegrityFlag] = Field(
        default_factory=list,
        description="every integrity finding of this step (harness and scoring); recomputed on re-scoring",
    )
    usage: Usage | None = Field(None, description="the agent's turns, tokens and dollars over Build and Fix")

    @property
    def agent_failed(self) -> bool:
        last = self.fix or self.build
        return last.agent.status != "ok"


class RunRecord(Record):
    """The identity of a run folder; a resumed run must match it."""

    run_id: str
    chain: str
    step_range: str = Field(description="the chain's steps this run covers, e.g. 1-15")
    agent: str
    spec_level: str
    oracle_hash: str
    steps_total: int
    status: RunStatus = Field(
        "running", description="paused: an infrastructure failure; resuming runs the paused step again"
    )
    stop_reason: str | None = None
    import_name: str | None = Field(None, description="the package's import name, for integrity checks")
    steps_planned: list[PlannedStep] = Field(
        default_factory=list, description="every step of the range, so that ranking can count the ones never scored"
    )


class PlannedStep(StepId):
    """A step of a run's range, with what ranking charges when it is never scored."""

    upgrade_related: int = Field(
        description="upgrade-related tests in the scored universe (flaky and network ones out)"
    )


class StepScore(StepId):
    upgrade_related: int
    fix_ran: bool
    build: Metrics
    build_fix: Metrics
    categories_build: dict[Category, int]
    categories_build_fix: dict[Category, int]
    agent_status: str
    cost_usd: float | None = None
    usage: Usage | None = None
    wall_s: float = 0.0
    failure_modes_build: dict[str, int] = Field(
        default_factory=dict, description="failure mode -> unresolved and regressed tests (scoring/failure_modes.py)"
    )
    failure_modes_build_fix: dict[str, int] = Field(default_factory=dict)


class Scorecard(Record):
    chain: str
    step_range: str = Field(description="the chain's steps the run covers, e.g. 1-15")
    agent: str
    spec_level: str
    steps_total: int
    steps_scored: int
    stop_reason: str | None = None
    build: Metrics
    build_fix: Metrics
    cost_usd: float | None = Field(None, description="the agent's cost over the scored steps, where known")
    usage: Usage | None = Field(None, description="the agent's turns, tokens and dollars over the scored steps")
    status: RunStatus | None = Field(None, description="the run's status")
    steps: list[StepScore]
    oracle_hash: str | None = Field(None, description="the chain oracle the run was scored against")
    failure_modes_build: dict[str, int] = Field(default_factory=dict, description="the steps' failure modes, summed")
    failure_modes_build_fix: dict[str, int] = Field(default_factory=dict)
    ranking: Ranking | None = Field(
        None, description="the figures a leaderboard ranks by; null for runs without a plan"
    )
    integrity: Integrity = Field(default_factory=Integrity)


class Ranking(Strict):
    """The paper's figures with every step of the range that was never scored counted as
    unresolved: its upgrade-related tests are FN (no TP, no FP), so stopping early never pays."""

    build: Metrics
    build_fix: Metrics
    steps_unscored: list[int] = Field(description="indexes of the range's steps never scored")
    fn_added: int = Field(description="upgrade-related tests of those steps, counted as FN")


class ManifestCheck(Strict):
    """One agent manifest as `agents validate` found it, for the pull request's comment."""

    file: str = Field(max_length=300, description="the manifest, relative to the repository")
    because: str = Field(max_length=300, description="the changed file that brought it in (it, or its Dockerfile)")
    agent: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=100)
    ok: bool
    error: str | None = Field(None, max_length=4000)


class ValidationReport(Record):
    """What a pull request's validation job hands to the comment workflow (an artifact: untrusted)."""

    checks: list[ManifestCheck] = Field(max_length=200)
