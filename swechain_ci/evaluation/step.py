"""The evaluation of a step: the target version's hidden tests on prev and on each agent
phase's code, every run in a fresh container, flagged by the change scan and resolved
against the oracle's new gold. A run of code already run (same digest) is reused, and prev's
run taken while the agent worked is used when its code is the one evaluated."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from swechain_ci import progress
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.evaluation import tripwires
from swechain_ci.evaluation.background import in_background
from swechain_ci.evaluation.change_scan import flag_run
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import has_execution_error, resolve
from swechain_ci.models import PrevRun, Status, StepOracle, TestRun


@dataclass(frozen=True)
class PhaseTests:
    """An agent phase's code under the hidden tests: the run (flags included), resolved."""

    run: TestRun
    outcomes: dict[str, Status]
    execution_error: bool


@dataclass
class StepEvaluation:
    """The hidden-test runs of one step, which ``runs`` keeps by code digest."""

    sandbox: Sandbox
    chain: Chain
    step: StepOracle
    label: str  # how progress names the step: progress.step_label
    labels: dict[str, str]
    image: str  # the test image of the step's target version
    runs: dict[str, TestRun] = field(default_factory=dict)

    def tests(self, code: Path, planting: tripwires.Planting | None = None) -> TestRun:
        """A candidate's run, with tripwires planted afresh (``planting``, else new ones)."""
        planting = planting or tripwires.for_step(self.chain, self.step)
        return evaluate(self.sandbox, self.chain, self.image, code, self.labels, planting=planting)

    def say_prev(self) -> None:
        progress.say(f"{self.label}: hidden tests of {self.step.next_version} on prev")

    def prev_alongside(self, code: Path) -> Future[PrevRun]:
        """prev needs nothing from the agent: its run starts now, on a thread, while the agent works."""
        self.say_prev()
        planting = tripwires.for_step(self.chain, self.step)  # here: sources are materialized by one thread
        return in_background(lambda: PrevRun(code_sha256=trees.digest(code), run=self.tests(code, planting)))

    def prev(self, code: Path, alongside: PrevRun | None) -> TestRun:
        """prev's run: the one taken while the agent worked if it ran this code, else a new one."""
        digest = trees.digest(code)
        if alongside is not None and alongside.code_sha256 == digest:
            run = alongside.run
        else:
            self.say_prev()
            run = self.tests(code)
        self.runs[digest] = run
        return run

    def phase(self, name: str, code: Path, code_sha256: str) -> PhaseTests:
        """Agent phase ``name``'s code (whose digest the agent's record gives) under the hidden tests."""
        if code_sha256 not in self.runs:
            progress.say(f"{self.label} {name}: hidden tests of {self.step.next_version}")
            self.runs[code_sha256] = self.tests(code)
        config = self.chain.config
        versions = (self.step.prev_version, self.step.next_version, self.chain.versions[0])
        golds = [sources.materialize(self.chain, v).code for v in versions]
        run = flag_run(
            self.runs[code_sha256], golds, code, config.test_folder, self.step.index, name, config.source_root
        )
        outcomes = resolve(run, self.step.new_gold)
        return PhaseTests(run, outcomes, has_execution_error(run, outcomes))
