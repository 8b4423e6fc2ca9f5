"""A full chain run with one agent: the Build+Fix protocol, phase by phase, resumable.

Per step, the phases are:

- build: the agent works in a fresh container holding the code it starts from;
- evaluate: hidden tests of the target version on prev and on the Build, each in a fresh
  container, and the scoring; an execution error grants the one Fix;
- fix (only then): the agent answers the Fix report, resuming its Build session;
- evaluate-fix: hidden tests on the Fix;
- hand-on: after the last step, or a step whose agent failed, the run ends.

Phases pass state only through the output folder's records (and the run branch, which
carries the same files), each written last by the phase that owns it. So the local `run`
(every phase in sequence) and a workflow running each phase as its own job on any runner
give the same records, and a run cut short anywhere resumes at its first unfinished phase.

Here the phases are only put together: the agent's work in its container is the agents
stage's (agents/phase.py), the hidden-test runs the evaluation's (evaluation/step.py), their
scoring the scoring's (scoring/step.py); the record names are records.py's.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from swechain_ci import progress
from swechain_ci.agents import resolve_agent
from swechain_ci.agents.base import Agent
from swechain_ci.agents.image import ensure_agent_image
from swechain_ci.agents.manifest import AgentManifest, granted_secrets
from swechain_ci.agents.phase import AgentResult, AgentRunner, AgentTask
from swechain_ci.agents.triage import InfraFailure
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.containers import images as image_builds
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle as oracles
from swechain_ci.evaluation.step import StepEvaluation
from swechain_ci.github.branches import RunBranch
from swechain_ci.models import (
    AgentPhase,
    AgentPhaseRecord,
    ChainOracle,
    PhaseRecord,
    PrevRun,
    RunRecord,
    Scorecard,
    Status,
    StepOracle,
    StepRecord,
)
from swechain_ci.records import RunFolder, read_model, write_bytes, write_model, write_text
from swechain_ci.scoring import integrity
from swechain_ci.scoring import step as scored
from swechain_ci.scoring.report import write_scorecard
from swechain_ci.scoring.score import plan, scorecard
from swechain_ci.specs.store import run_specs


def finished_steps(output: Path) -> list[StepRecord]:
    return sorted((read_model(p, StepRecord) for p in RunFolder(output).step_records()), key=lambda s: s.index)


def open_run(output: Path, chain: Chain, agent: Agent, level: str) -> RunRecord | None:
    """The existing run in ``output`` if it is this run; refuse anything else without touching it."""
    record_path = RunFolder(output).record
    if record_path.exists():
        record = read_model(record_path, RunRecord)
        mine = (chain.id, chain.step_range, agent.name, level)
        theirs = (record.chain, record.step_range, record.agent, record.spec_level)
        if mine != theirs:
            raise SwechainError(
                f"{output} holds a run of chain {theirs[0]} steps {theirs[1]} with agent {theirs[2]} at level "
                f"{theirs[3]}; choose another --output for chain {mine[0]} steps {mine[1]} with agent {mine[2]} "
                f"at level {mine[3]}"
            )
        return record
    if output.exists() and any(output.iterdir()):
        raise SwechainError(f"{output} is not empty and holds no run.json; choose an empty or new --output folder")
    return None


def snapshot(code: Path) -> bytes:
    """The agent's codebase at the end of a step: archived where the agent cannot read it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(code, arcname="code")
    return buffer.getvalue()


def restore(archive: Path, dest: Path) -> None:
    """A codebase from the records (which a branch may have carried): decompressed as a stream, so the tree's caps hold."""
    try:
        with gzip.open(archive) as stream:
            trees.unpack_untrusted(iter(lambda: stream.read(2**20), b""), dest, strip="code")
    except (OSError, EOFError) as exc:
        raise SwechainError(
            f"{archive} is not a readable code archive ({exc}); remove its step folder to redo the step"
        ) from None


def secrets_for(manifest: AgentManifest, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values the runner grants the agent (SWECHAIN_SECRET_<AGENT>__<NAME>); never stored.
    ``environ``: the runner's variables the CLI took out of this process, read over what it left."""
    return granted_secrets(manifest, {**os.environ, **(environ or {})})


def agent_network(manifest: AgentManifest) -> str:
    """The agent container's network: none, unless a cli agent's manifest asks for the runner's
    egress network. A python agent talks to its API from the harness; only its tools run in
    the container, which therefore never needs a network."""
    if manifest.network.mode == "none" or manifest.kind != "cli":
        return "none"
    network = os.environ.get("SWECHAIN_EGRESS_NETWORK")
    if not network:
        raise SwechainError(
            f"agent {manifest.name} asks for network egress to {', '.join(manifest.network.allow) or 'its API'}: "
            "set SWECHAIN_EGRESS_NETWORK to a Docker network whose proxy allows only those hosts (README, Network)"
        )
    return network


class Phase(StrEnum):
    """A step's phases, in order; a job runs one."""

    BUILD = "build"
    EVALUATE = "evaluate"
    FIX = "fix"
    EVALUATE_FIX = "evaluate-fix"
    HAND_ON = "hand-on"


PHASES = tuple(Phase)
DONE = "done"  # where a finished run stands


@dataclass(frozen=True)
class Position:
    """Where a run stands: the first unfinished phase (``step`` is None once the run is done)."""

    step: StepOracle | None
    phase: Phase | str  # a Phase, or DONE

    def key(self) -> tuple[int, int]:
        if self.step is None:
            return (10**9, 0)
        return (self.step.index, PHASES.index(Phase(self.phase)))

    def __str__(self) -> str:
        return DONE if self.step is None else f"step {self.step.index} {self.phase}"


@dataclass(frozen=True)
class PhaseOutcome:
    """What one ``run --phase`` call did: the phase it ran (None when there was nothing to do) and what comes next."""

    ran: Position | None
    next: Position
    summary: str


class RunState:
    """A run's records as its phases read and write them: the output folder, and the branch
    that carries the same files."""

    def __init__(self, chain: Chain, oracle: ChainOracle, output: Path, branch: RunBranch | None, agent: str) -> None:
        self.chain, self.oracle, self.output, self.branch, self.agent = chain, oracle, output, branch, agent
        self.folder = RunFolder(output)

    def step_label(self, step: StepOracle) -> str:
        """How progress names the step: its number in the chain and its place in this run."""
        return progress.step_label(step.index, self.oracle.steps[0].index, len(self.oracle.steps))

    @property
    def record(self) -> RunRecord:
        return read_model(self.folder.record, RunRecord)

    def update(self, **fields: object) -> None:
        write_model(self.folder.record, self.record.model_copy(update=fields))

    @property
    def labels(self) -> dict[str, str]:
        return {"swechain-ci.run": self.record.run_id}

    def first(self, step: StepOracle) -> bool:
        return step.index == self.oracle.steps[0].index

    def position(self) -> Position:
        if self.record.status != "running":  # a stopped run is reopened by load_run
            return Position(None, DONE)
        done = finished_steps(self.output)
        if done and (done[-1].agent_failed or len(done) == len(self.oracle.steps)):
            return Position(self.oracle.steps[len(done) - 1], Phase.HAND_ON)
        step = self.oracle.steps[len(done)]
        folder = self.folder.step(step)
        markers = (
            (Phase.BUILD, folder.agent("build")),
            (Phase.EVALUATE, folder.evaluation),
            (Phase.FIX, folder.agent("fix")),
        )
        for phase, marker in markers:
            if not marker.exists():
                return Position(step, phase)
        return Position(step, Phase.EVALUATE_FIX)

    def reopen(self) -> None:
        """A stopped run resumes at the step whose agent failed: that step was not finished. A
        paused run (an infrastructure failure) resumes at the phase that met it."""
        record = self.record
        if record.status == "paused":
            progress.say(f"resuming a run paused by an infrastructure failure ({record.stop_reason})"[:300])
        elif record.status != "stopped":
            return
        done = finished_steps(self.output)
        if done and done[-1].agent_failed:
            progress.say(f"step {done[-1].index} ended with a failed agent; running it again")
            shutil.rmtree(self.folder.step(self.oracle.steps[len(done) - 1]).path)
        self.update(status="running", stop_reason=None)

    def previous(self, step: StepOracle) -> StepRecord | None:
        return next((s for s in finished_steps(self.output) if s.index == step.index - 1), None)

    def write_scorecard(self) -> None:
        write_scorecard(
            self.output, scorecard(self.record, finished_steps(self.output), integrity.read_clearance(self.output))
        )

    def code(self, step: StepOracle, name: str, dest: Path) -> Path:
        """A codebase from the records: ``start`` (before ``step``), ``build``, ``fix`` or ``final``."""
        if name == "start":
            if self.first(step):
                trees.copy_tree(sources.materialize(self.chain, self.chain.versions[0]).code, dest)
                return dest
            step, name = self.oracle.steps[self.oracle.steps.index(step) - 1], "final"
        folder = self.folder.step(step)
        restore(folder.final_code if name == "final" else folder.code(name), dest)
        return dest

    def earlier_code(self, step: StepOracle) -> dict[int, bytes]:
        """The code each earlier step handed on, by step index."""
        earlier = self.oracle.steps[: self.oracle.steps.index(step)]
        return {s.index: self.folder.step(s).final_code.read_bytes() for s in earlier}

    def commit(self, code: Path, message: str) -> None:
        if self.branch:
            self.branch.commit(code, self.output, f"{message} ({self.agent})")

    def title(self, step: StepOracle, phase: str) -> str:
        return f"step {step.index} {phase}: {self.chain.config.package} {step.prev_version} -> {step.next_version}"

    def pause(self, step: StepOracle, failure: InfraFailure, work: Path) -> None:
        """An infrastructure failure: the phase is not recorded (its step is not scored), its logs
        are kept aside, and the run pauses; resuming runs that phase again."""
        folder = self.folder.step(step)
        kept = self.folder.infra_errors / f"{folder.path.name}-{failure.phase}-{time.strftime('%Y%m%dT%H%M%S')}"
        for log in (folder.agent_log(failure.phase), folder.trajectory(failure.phase)):
            if log.exists():
                kept.mkdir(parents=True, exist_ok=True)
                shutil.move(log, kept / log.name)
        reason = (
            f"step {step.index} {failure.phase}: infrastructure failure ({failure.signature}), not scored: "
            f"{failure.detail}"[:400]
            + "; resume with the same `swechain-ci run` command, or dispatch the workflow again with this run id"
        )
        self.update(status="paused", stop_reason=reason)
        progress.say(f"paused: {reason}")
        self.write_scorecard()
        if self.branch:
            self.branch.commit(
                self.code(step, "start", work / "paused"),
                self.output,
                f"paused: step {step.index} {failure.phase}: infrastructure failure",
            )


@dataclass
class EvaluationPhases:
    """The evaluate and evaluate-fix handlers: the hidden-test runs are evaluation/step.py's,
    their scoring scoring/step.py's; here they are taken from and written to the records."""

    sandbox: Sandbox
    chain: Chain
    oracle: ChainOracle
    images: image_builds.ChainImages
    state: RunState

    def evaluation(self, step: StepOracle) -> StepEvaluation:
        image = self.images.versions[step.next_version]
        return StepEvaluation(self.sandbox, self.chain, step, self.state.step_label(step), self.state.labels, image)

    def evaluate_build(self, step: StepOracle, work: Path) -> None:
        """Hidden tests on prev and on the Build. Finishes the step, or grants the one Fix
        (``evaluate.json`` and ``fix_report.md``) on an execution error."""
        folder = self.state.folder.step(step)
        for stale in (folder.evaluation, folder.fix_report):
            stale.unlink(missing_ok=True)
        tests = self.evaluation(step)
        prev_run = None
        if not self.state.first(step):  # prev at the first step is old gold by definition
            alongside = read_model(folder.prev_run, PrevRun) if folder.prev_run.is_file() else None
            prev_run = tests.prev(self.state.code(step, "start", work / "prev"), alongside)
        record = self.state.record
        prev = scored.prev_as_scored(step, prev_run, self.state.previous(step), record.import_name)
        code = self.state.code(step, "build", work / "build")
        build = self.phase_record("build", step, code, prev.scored, tests)
        step_record = scored.step_record(step, record.spec_level, prev, build)
        report = scored.fix_report(step_record)
        if report is not None:
            write_text(folder.fix_report, report)
            write_model(folder.evaluation, step_record.model_copy(update={"fix_report": report}))
        else:
            self.finish_step(step, step_record, "build")
        self.state.commit(code, self.state.title(step, "evaluate"))

    def evaluate_fix(self, step: StepOracle, work: Path) -> None:
        record = read_model(self.state.folder.step(step).evaluation, StepRecord)
        code = self.state.code(step, "fix", work / "fix")
        tests = self.evaluation(step)
        tests.runs[record.build.code_sha256] = record.build.run
        fix = self.phase_record("fix", step, code, scored.prev_of(record), tests)
        self.finish_step(step, record.model_copy(update={"fix": fix}), "fix")
        self.state.commit(code, self.state.title(step, "evaluate fix"))

    def phase_record(
        self, name: AgentPhase, step: StepOracle, code: Path, prev: dict[str, Status], tests: StepEvaluation
    ) -> PhaseRecord:
        """The agent phase ``name``'s record with its hidden-test run, scored against ``prev``."""
        folder = self.state.folder.step(step)
        agent = read_model(folder.agent(name), AgentPhaseRecord)
        ran = tests.phase(name, code, agent.code_sha256)
        write_text(folder.tests_log(name), ran.run.output_tail)
        return scored.phase_record(agent, ran, step, prev)

    def finish_step(self, step: StepOracle, record: StepRecord, final: AgentPhase) -> None:
        folder = self.state.folder.step(step)
        record = scored.finished(record, self.state.previous(step), self.state.record.import_name)
        write_bytes(folder.final_code, folder.code(final).read_bytes())
        write_model(folder.record, record)  # written last: its presence marks the step finished
        self.state.write_scorecard()


@dataclass
class AgentPhases:
    """The Build and Fix handlers: the agent's work in its container is agents/phase.py's; here
    its task is taken from the records and what it left is recorded."""

    sandbox: Sandbox
    chain: Chain
    agent: Agent
    manifest: AgentManifest
    oracle: ChainOracle
    images: image_builds.ChainImages
    specs: dict[tuple[str, str], str]
    state: RunState
    secrets: dict[str, str]
    evaluations: EvaluationPhases

    def build(self, step: StepOracle, work: Path) -> None:
        shutil.rmtree(self.state.folder.step(step).path, ignore_errors=True)  # a phase cut short starts over
        branch = self.state.branch
        if branch and branch.head() is None:
            start = self.state.code(step, "start", work / "start")
            branch.commit(start, self.state.output, f"start: {self.chain.config.package} {self.chain.versions[0]}")
        self.agent_phase("build", step, work)

    def fix(self, step: StepOracle, work: Path) -> None:
        self.agent_phase("fix", step, work)

    def agent_phase(self, name: AgentPhase, step: StepOracle, work: Path) -> None:
        """Build or Fix: the agent at work in a fresh container holding the code it starts from.
        Leaves ``agent-<name>.json`` (written last), the code archive, the diff and the log."""
        folder = self.state.folder.step(step)
        before = self.state.code(step, "start" if name == "build" else "build", work / "before")
        after = work / "after"
        prev = (
            None
            if name == "fix" or self.state.first(step)
            else self.evaluations.evaluation(step).prev_alongside(before)
        )
        runner = AgentRunner(
            self.sandbox,
            self.chain,
            self.agent,
            self.manifest,
            ensure_agent_image(self.sandbox, self.chain, self.images, self.manifest),
            self.state.labels,
            agent_network(self.manifest),
            self.secrets,
        )
        task = self.agent_task(name, step)
        result = runner.run(task, before, after, folder.agent_log(name))
        if prev is not None:
            self.keep_prev(step, prev)
        self.record_agent_phase(step, task, result, before, after)
        self.state.commit(after, self.state.title(step, name))

    def agent_task(self, name: AgentPhase, step: StepOracle) -> AgentTask:
        task = AgentTask(
            phase=name,
            step_index=step.index,
            label=self.state.step_label(step),
            prev_version=step.prev_version,
            next_version=step.next_version,
            spec=self.specs.get((step.prev_version, step.next_version), ""),  # none at level `none`
            fix_report=None,
            earlier_code=self.state.earlier_code(step),
            session_id=str(uuid.uuid4()),
            keep_session=name == "build" and self.manifest.session == "resume",
        )
        if name == "build":
            return task
        folder = self.state.folder.step(step)
        task = dataclasses.replace(task, fix_report=folder.fix_report.read_text())
        built = read_model(folder.agent("build"), AgentPhaseRecord)
        if self.manifest.session != "resume" or built.session != "kept":
            return task  # a new session where the Build's state was not kept
        return dataclasses.replace(
            task,
            session_id=built.session_id,
            cli_session=built.agent.cli_session,
            session_archive=folder.session.read_bytes(),
            resumes=built.agent,
        )

    def keep_prev(self, step: StepOracle, prev: Future[PrevRun]) -> None:
        try:
            write_model(self.state.folder.step(step).prev_run, prev.result())
        except Exception as exc:  # the evaluation phase runs it again
            progress.say(
                f"step {step.index}: the prev evaluation failed alongside the agent ({exc}); it runs again later"
            )

    def record_agent_phase(
        self, step: StepOracle, task: AgentTask, result: AgentResult, before: Path, after: Path
    ) -> None:
        folder = self.state.folder.step(step)
        if result.session_archive is not None:
            write_bytes(folder.session, result.session_archive)
        patch = trees.diff(before, after)
        write_text(folder.diff(task.phase), patch)
        write_bytes(folder.code(task.phase), snapshot(after))
        phase = AgentPhaseRecord(
            phase=task.phase,
            agent=result.outcome,
            session_id=task.session_id,
            session=result.session,
            session_note=result.session_note,
            code_sha256=trees.digest(after),
            diff=trees.diff_stats(patch),
        )
        write_model(folder.agent(task.phase), phase)


class ChainRun:
    """What every phase of a run needs, loaded once, and a handler per phase. The phases pass
    state to each other only through the run's records (``RunState``), so a job on another
    runner can take any phase."""

    def __init__(
        self,
        sandbox: Sandbox,
        chain: Chain,
        agent: Agent,
        manifest: AgentManifest,
        oracle: ChainOracle,
        chain_images: image_builds.ChainImages,
        output: Path,
        specs: dict[tuple[str, str], str],
        branch: RunBranch | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.sandbox, self.chain = sandbox, chain
        self.state = RunState(chain, oracle, output, branch, agent.name)
        self.evaluations = EvaluationPhases(sandbox, chain, oracle, chain_images, self.state)
        secrets = secrets_for(manifest, environ)
        self.agents = AgentPhases(
            sandbox, chain, agent, manifest, oracle, chain_images, specs, self.state, secrets, self.evaluations
        )

    # -- the run's end, and driving -------------------------------------------------------------

    def hand_on(self, step: StepOracle, work: Path) -> None:
        """The run's end: stopped at a failed agent, or finished after the last step."""
        last = finished_steps(self.state.output)[-1]
        if last.agent_failed:
            phase = last.fix or last.build
            reason = f"step {last.index}: agent {phase.agent.status}: {phase.agent.detail}"[:500]
            self.state.update(status="stopped", stop_reason=reason)
            message = f"stopped: {reason}"[:200]
        else:
            self.state.update(status="finished")
            message = f"finished: {self.chain.id} steps {self.chain.step_range}"
        self.state.write_scorecard()
        if self.state.branch:
            self.state.branch.commit(self.state.code(step, "final", work / "final"), self.state.output, message)

    def handler(self, phase: Phase) -> Callable[[StepOracle, Path], None]:
        """The method that runs ``phase`` of a step, in a scratch folder of its own."""
        return {
            Phase.BUILD: self.agents.build,
            Phase.EVALUATE: self.evaluations.evaluate_build,
            Phase.FIX: self.agents.fix,
            Phase.EVALUATE_FIX: self.evaluations.evaluate_fix,
            Phase.HAND_ON: self.hand_on,
        }[phase]

    def run_phase(self, position: Position) -> None:
        step = position.step
        assert step is not None
        removed = self.sandbox.remove_labelled(self.state.labels)
        if removed:
            progress.say(f"removed {removed} container(s) left by an interrupted phase")
        with tempfile.TemporaryDirectory(prefix="swechain-run-") as tmp:
            try:
                self.handler(Phase(position.phase))(step, Path(tmp))
            except InfraFailure as failure:
                self.state.pause(step, failure, Path(tmp))

    def execute(self, max_steps: int | None = None) -> None:
        """The local run: every phase in sequence, exactly as the jobs of a dispatched run."""
        done = finished_steps(self.state.output)
        first = self.state.position()
        if done and first.phase != DONE:
            progress.say(
                f"resuming after step {done[-1].index}"
                + ("" if first.phase in (Phase.BUILD, Phase.HAND_ON) else f", at {first}")
            )
        started: set[int] = set()
        finished = {s.index for s in done}
        remaining = sum(s.index not in finished for s in self.state.oracle.steps)
        with progress.task(f"{self.chain.id}: steps", remaining) as step_done:
            current: int | None = None
            while (position := self.state.position()).step is not None:
                assert position.step is not None
                if current is not None and position.step.index != current:
                    step_done(f"step {current} finished")
                current = position.step.index
                if position.phase == Phase.BUILD and max_steps is not None and len(started) >= max_steps:
                    progress.say(f"paused after {max_steps} step(s); run again to continue")
                    return
                started.add(position.step.index)
                self.run_phase(position)
            if current is not None:
                step_done(f"step {current} finished")

    def execute_phase(self, phase: Phase, step_index: int | None) -> PhaseOutcome:
        """One job's phase. A phase already done (a re-run, or a run dispatched again) is
        skipped; asking for a phase whose predecessors have not run is an error."""
        current = self.state.position()
        wanted_step = current.step.index if step_index is None and current.step else step_index
        wanted = (wanted_step if wanted_step is not None else 10**9, PHASES.index(Phase(phase)))
        if current.step is None or wanted < current.key():
            say = f"step {wanted_step} {phase}: already done (the run is at {current}); nothing to do"
            progress.say(say)
            return PhaseOutcome(None, current, say)
        if wanted > current.key():
            raise SwechainError(
                f"cannot run step {wanted_step} {phase}: the run is at {current}; run --phase {current.phase} first"
            )
        self.run_phase(current)
        return PhaseOutcome(current, self.state.position(), "")


def load_run(
    chain_name: str,
    agent_spec: str,
    output: Path,
    spec_level: str | None,
    steps: str | None,
    branch: RunBranch | None,
    from_branch: bool = False,
    environ: Mapping[str, str] | None = None,
) -> ChainRun | None:
    """Open (or start) the run in ``output``; None if it is finished. ``from_branch``: the
    branch's records replace the folder's (a job's view of the run is the branch's).
    ``environ``: the runner's variables (the agent's grants), when the CLI took them out of the process."""
    chain = load_chain(chain_name).select_steps(steps)
    agent, manifest = resolve_agent(agent_spec)
    level, specs = run_specs(chain, spec_level, reads_spec=manifest.kind != "builtin")
    secrets_for(manifest, environ)  # fail before any work when a variable or network is missing
    agent_network(manifest)
    output = output.resolve()
    folder = RunFolder(output)
    if branch and (from_branch or not folder.record.exists()):
        branch.restore_records(output, replace=from_branch)  # a run that stopped elsewhere resumes from its branch
    record = open_run(output, chain, agent, level)
    if record is not None and record.status == "finished":
        return None
    sandbox = DockerSandbox()
    chain_images = image_builds.ensure_images(sandbox, chain)
    oracle = oracles.build(sandbox, chain, chain_images)
    if record is None:
        record = RunRecord(
            run_id=uuid.uuid4().hex[:12],
            chain=chain.id,
            step_range=chain.step_range,
            agent=agent.name,
            spec_level=level,
            oracle_hash=oracle.inputs_hash,
            steps_total=len(oracle.steps),
            import_name=chain.config.import_name,
            steps_planned=plan(oracle.steps),
        )
        output.mkdir(parents=True, exist_ok=True)
        write_model(folder.record, record)
        write_model(folder.manifest, manifest)
    elif record.oracle_hash != oracle.inputs_hash:
        raise SwechainError(
            f"{output}: the chain's oracle changed since this run started (images or chain.yaml differ); "
            "start a new run in another --output folder"
        )
    elif not record.steps_planned:  # a run started before ranking plans: give it one
        write_model(
            folder.record,
            record.model_copy(update={"import_name": chain.config.import_name, "steps_planned": plan(oracle.steps)}),
        )
    run = ChainRun(sandbox, chain, agent, manifest, oracle, chain_images, output, specs, branch, environ)
    run.state.reopen()
    return run


def run_chain(
    chain_name: str,
    agent_spec: str,
    output: Path,
    spec_level: str | None = None,
    steps: str | None = None,
    branch: RunBranch | None = None,
    max_steps: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Scorecard:
    """The whole run here, phase after phase."""
    run = load_run(chain_name, agent_spec, output, spec_level, steps, branch, environ=environ)
    if run is None:
        progress.say(f"{output} holds a finished run; re-scoring it")
    else:
        run.execute(max_steps)
    return rescore(output.resolve())


def run_phase(
    chain_name: str,
    agent_spec: str,
    output: Path,
    phase: Phase,
    step: int | None = None,
    spec_level: str | None = None,
    steps: str | None = None,
    branch: RunBranch | None = None,
    environ: Mapping[str, str] | None = None,
) -> PhaseOutcome:
    """One phase, as a job runs it: the run's state comes from the branch when there is one."""
    run = load_run(chain_name, agent_spec, output, spec_level, steps, branch, branch is not None, environ)
    if run is None:
        say = f"the run in {output} is finished; nothing to do"
        progress.say(say)
        return PhaseOutcome(None, Position(None, DONE), say)
    return run.execute_phase(phase, step)


def rescore(output: Path) -> Scorecard:
    """Recompute the scorecard from stored records alone; no Docker."""
    record = read_model(RunFolder(output).record, RunRecord)
    card = scorecard(record, finished_steps(output), integrity.read_clearance(output))
    write_scorecard(output, card)
    return card
