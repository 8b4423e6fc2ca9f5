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
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from swechain_ci import progress
from swechain_ci.agents import resolve_agent
from swechain_ci.agents.base import (
    FIX_REPORT_FILE,
    PROMPT_FILE,
    SPEC_FILE,
    Agent,
    PhaseContext,
    Workspace,
)
from swechain_ci.agents.image import ensure_agent_image
from swechain_ci.agents.manifest import AgentManifest, granted_secrets
from swechain_ci.agents.session import SessionTooLarge, export_session, import_session
from swechain_ci.agents.triage import InfraFailure
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.containers import images as image_builds
from swechain_ci.containers.sandbox import DockerSandbox, single_file_tar
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle as oracles
from swechain_ci.evaluation.background import in_background
from swechain_ci.evaluation.change_scan import flag_run
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import (
    has_execution_error,
    resolve,
    scored_universe,
)
from swechain_ci.github.branches import RunBranch
from swechain_ci.models import (
    AgentOutcome,
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
    TestRun,
    Usage,
)
from swechain_ci.records import RunFolder, read_model, write_bytes, write_model, write_text
from swechain_ci.scoring import integrity
from swechain_ci.scoring.fix_report import build_report
from swechain_ci.scoring.report import write_scorecard
from swechain_ci.scoring.score import categorize, count, plan, scorecard
from swechain_ci.specs.store import run_specs

PROMPTS = Path(__file__).resolve().parent / "agents" / "prompts"
ARCHIVE_DIR = "/archive"


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


class ChainRun:
    """What every phase of a run needs, loaded once. The phases pass state to each other only
    through the output folder (and the run branch, which carries the same files), so a job on
    another runner can take any phase."""

    def __init__(
        self,
        sandbox: DockerSandbox,
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
        self.sandbox, self.chain, self.agent, self.manifest, self.oracle = sandbox, chain, agent, manifest, oracle
        self.branch = branch
        self.images, self.output, self.specs = chain_images, output, specs
        self.folder = RunFolder(output)
        self.secrets = secrets_for(manifest, environ)

    # -- records --------------------------------------------------------------------------------

    @property
    def record(self) -> RunRecord:
        return read_model(self.folder.record, RunRecord)

    @property
    def labels(self) -> dict[str, str]:
        return {"swechain-ci.run": self.record.run_id}

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
        write_model(self.folder.record, record.model_copy(update={"status": "running", "stop_reason": None}))

    def write_scorecard(self) -> None:
        write_scorecard(
            self.output, scorecard(self.record, finished_steps(self.output), integrity.read_clearance(self.output))
        )

    def code(self, step: StepOracle, name: str, dest: Path) -> Path:
        """A codebase from the records: ``start`` (before ``step``), ``build``, ``fix`` or ``final``."""
        if name == "start":
            if step.index == self.oracle.steps[0].index:
                trees.copy_tree(sources.materialize(self.chain, self.chain.versions[0]).code, dest)
                return dest
            step, name = self.oracle.steps[self.oracle.steps.index(step) - 1], "final"
        folder = self.folder.step(step)
        archive = folder.final_code if name == "final" else folder.code(name)
        restore(archive, dest)
        return dest

    def commit(self, code: Path, message: str) -> None:
        if self.branch:
            self.branch.commit(code, self.output, f"{message} ({self.agent.name})")

    def title(self, step: StepOracle, phase: str) -> str:
        return f"step {step.index} {phase}: {self.chain.config.package} {step.prev_version} -> {step.next_version}"

    # -- the agent's phases ---------------------------------------------------------------------

    def run_agent(self, ctx: PhaseContext) -> AgentOutcome:
        started = time.monotonic()
        try:
            outcome = self.agent.run(ctx)
        except Exception as exc:  # an agent crash ends the chain, never the harness
            outcome = AgentOutcome(status="crashed", detail=f"{type(exc).__name__}: {exc}"[:2000])
        return outcome.model_copy(update={"wall_s": round(time.monotonic() - started, 3)})

    def agent_phase(self, name: AgentPhase, step: StepOracle, work: Path) -> None:
        """Build or Fix: the agent at work in a fresh container holding the code it starts from.
        Leaves ``agent-<name>.json`` (written last), ``code-<name>.tar.gz``, ``<name>.diff`` and the log."""
        folder = self.folder.step(step)
        before = self.code(step, "start" if name == "build" else "build", work / "before")
        after = work / "after"
        fix_report, session_id, session_archive, cli_session = None, str(uuid.uuid4()), None, None
        if name == "fix":
            fix_report = folder.fix_report.read_text()
            built = read_model(folder.agent("build"), AgentPhaseRecord)
            if self.manifest.session == "resume":
                session_id = built.session_id  # a new session where the Build's state was not kept
                cli_session = built.agent.cli_session
                session_archive = folder.session.read_bytes() if built.session == "kept" else None
        prev = None
        if name == "build" and step.index != self.oracle.steps[0].index:
            # prev needs nothing from the agent: its evaluation runs while the agent works.
            progress.say(f"step {step.index}/{len(self.oracle.steps)}: hidden tests of {step.next_version} on prev")
            prev = in_background(
                lambda: evaluate(self.sandbox, self.chain, self.images.versions[step.next_version], before, self.labels)
            )
        agent_image = ensure_agent_image(self.sandbox, self.chain, self.images, self.manifest)
        container = self.sandbox.start_agent_container(
            agent_image, self.chain.config.limits, self.labels, network=agent_network(self.manifest)
        )
        try:
            workspace = Workspace(container)
            workspace.push_code(before)
            self.put_archive(workspace, step)
            if session_archive is not None:
                import_session(workspace, session_archive)
            spec = self.specs.get((step.prev_version, step.next_version), "")
            if (step.prev_version, step.next_version) in self.specs:  # a baseline may run with none
                workspace.put_text(SPEC_FILE, spec)
            if fix_report is not None:
                workspace.put_text(FIX_REPORT_FILE, fix_report)
            prompt = (
                (PROMPTS / f"{name}.md")
                .read_text()
                .format(prev_version=step.prev_version, next_version=step.next_version)
            )
            workspace.put_text(PROMPT_FILE, prompt)
            ctx = PhaseContext(
                phase=name,
                step_index=step.index,
                prev_version=step.prev_version,
                next_version=step.next_version,
                spec=spec,
                fix_report=fix_report,
                prompt=prompt,
                workspace=workspace,
                chain=self.chain,
                log=folder.agent_log(name),
                session_id=session_id,
                limits=self.manifest.limits,
                secrets=self.secrets,
                cli_session=cli_session,
            )
            ctx.log.parent.mkdir(parents=True, exist_ok=True)
            progress.say(f"step {step.index}/{len(self.oracle.steps)} {name}: agent {self.agent.name} at work")
            outcome = self.run_agent(ctx)
            workspace.container.kill_agent_processes()  # nothing the agent started outlives its phase
            if outcome.status == "infra_error":  # not the agent's doing: this phase is not recorded
                with open(ctx.log, "a") as log:
                    log.write(f"\n[swechain-ci] {name}: {outcome.status} {outcome.detail}\n")
                raise InfraFailure(step.index, name, outcome.infra, outcome.detail)
            try:
                left_out = workspace.pull_code(after)
                if left_out:  # recorded beside what the agent said: the code scored is not all it left
                    shown = f"left out of the code tree: {', '.join(left_out)}"[:1000]
                    outcome = outcome.model_copy(update={"detail": f"{outcome.detail}\n{shown}".strip()})
            except (
                SwechainError
            ) as exc:  # e.g. a tree over the size limit: the agent's failure; the code stays as it was
                outcome = outcome.model_copy(update={"status": "tree_rejected", "detail": str(exc)[:2000]})
                shutil.rmtree(after, ignore_errors=True)
                trees.copy_tree(before, after)
            with open(ctx.log, "a") as log:
                log.write(f"\n[swechain-ci] {name}: {outcome.status} {outcome.detail}\n")
            session, note = "none", ""
            if name == "build" and self.manifest.session == "resume":
                try:
                    write_bytes(folder.session, export_session(workspace, self.secrets))
                    session = "kept"
                except SessionTooLarge as exc:
                    session, note = "dropped", f"{exc}: the Fix starts a new session"
        finally:
            container.remove()
        if prev is not None:
            try:
                write_model(folder.prev_run, PrevRun(code_sha256=trees.digest(before), run=prev.result()))
            except Exception as exc:  # the evaluation phase runs it again
                progress.say(
                    f"step {step.index}: the prev evaluation failed alongside the agent ({exc}); it runs again later"
                )
        patch = trees.diff(before, after)
        write_text(folder.diff(name), patch)
        write_bytes(folder.code(name), snapshot(after))
        write_model(
            folder.agent(name),
            AgentPhaseRecord(
                phase=name,
                agent=outcome,
                session_id=session_id,
                session=session,
                session_note=note,
                code_sha256=trees.digest(after),
                diff=trees.diff_stats(patch),
            ),
        )
        self.commit(after, self.title(step, name))

    def put_archive(self, workspace: Workspace, step: StepOracle) -> None:
        """Earlier steps' code, inside the container where the agent user cannot read it."""
        workspace.container.exec(["mkdir", "-m", "700", "-p", ARCHIVE_DIR], user=0)
        for earlier in self.oracle.steps[: self.oracle.steps.index(step)]:
            archive = self.folder.step(earlier).final_code.read_bytes()
            workspace.container.put_tree(
                single_file_tar(f"step-{earlier.index:02d}.tar.gz", archive, 0, 0o600), ARCHIVE_DIR
            )

    # -- evaluation -----------------------------------------------------------------------------

    def evaluated(
        self, name: str, step: StepOracle, code: Path, prev_outcomes: dict[str, Status], runs: dict[str, TestRun]
    ) -> PhaseRecord:
        """The agent phase ``name``'s record with its hidden-test run; ``runs`` reuses a run of identical code."""
        folder = self.folder.step(step)
        agent = read_model(folder.agent(name), AgentPhaseRecord)
        if agent.code_sha256 not in runs:
            progress.say(f"step {step.index}/{len(self.oracle.steps)} {name}: hidden tests of {step.next_version}")
            runs[agent.code_sha256] = evaluate(
                self.sandbox, self.chain, self.images.versions[step.next_version], code, self.labels
            )
        gold = sources.materialize(self.chain, step.prev_version).code
        run = flag_run(
            runs[agent.code_sha256],
            gold,
            code,
            self.chain.config.test_folder,
            step.index,
            name,
            self.chain.config.source_root,
        )
        outcomes = resolve(run, step.new_gold)
        universe = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
        categories = categorize(step.upgrade_related, universe, prev_outcomes, outcomes)
        write_text(folder.tests_log(name), run.output_tail)
        return PhaseRecord(
            phase=name,
            agent=agent.agent,
            code_sha256=agent.code_sha256,
            diff=agent.diff,
            run=run,
            outcomes=outcomes,
            categories=categories,
            counts=count(categories),
            execution_error=has_execution_error(run, outcomes),
        )

    def evaluate_build(self, step: StepOracle, work: Path) -> None:
        """Hidden tests on prev and on the Build. Finishes the step, or grants the one Fix
        (``evaluate.json`` and ``fix_report.md``) on an execution error."""
        folder = self.folder.step(step)
        for stale in (folder.evaluation, folder.fix_report):
            stale.unlink(missing_ok=True)
        runs: dict[str, TestRun] = {}
        prev_run = None
        if step.index == self.oracle.steps[0].index:
            prev_outcomes = step.old_gold  # prev at the first step is old gold by definition
        else:
            prev = self.code(step, "start", work / "prev")
            ran = folder.prev_run
            ran_alongside = read_model(ran, PrevRun) if ran.is_file() else None
            if ran_alongside is not None and ran_alongside.code_sha256 == trees.digest(prev):
                prev_run = ran_alongside.run  # evaluated while the agent worked
            else:
                progress.say(f"step {step.index}/{len(self.oracle.steps)}: hidden tests of {step.next_version} on prev")
                prev_run = evaluate(
                    self.sandbox, self.chain, self.images.versions[step.next_version], prev, self.labels
                )
            runs[trees.digest(prev)] = prev_run
            prev_outcomes = resolve(prev_run, step.new_gold)
        # prev as scored: old gold where prev broke on purpose (scoring/integrity.py)
        prev_flag = integrity.prev_import_flag(
            step.index, step.next_version, prev_run, self.previous(step), self.record.import_name
        )
        scored_prev = integrity.prev_for_scoring(prev_outcomes, step.old_gold, [prev_flag] if prev_flag else [])
        code = self.code(step, "build", work / "build")
        build = self.evaluated("build", step, code, scored_prev, runs)
        record = StepRecord(
            **step.gold(),
            spec_level=self.record.spec_level,
            prev_outcomes=prev_outcomes,
            build=build,
            prev_run=prev_run,
            integrity_flags=[prev_flag] if prev_flag else [],
        )
        if build.agent.status == "ok" and build.execution_error:
            report = build_report(build.run)
            write_text(folder.fix_report, report)
            write_model(folder.evaluation, record.model_copy(update={"fix_report": report}))
        else:
            self.finish_step(step, record, "build")
        self.commit(code, self.title(step, "evaluate"))

    def evaluate_fix(self, step: StepOracle, work: Path) -> None:
        record = read_model(self.folder.step(step).evaluation, StepRecord)
        code = self.code(step, "fix", work / "fix")
        scored_prev = integrity.prev_for_scoring(record.prev_outcomes, record.old_gold, record.integrity_flags)
        fix = self.evaluated("fix", step, code, scored_prev, {record.build.code_sha256: record.build.run})
        self.finish_step(step, record.model_copy(update={"fix": fix}), "fix")
        self.commit(code, self.title(step, "evaluate fix"))

    def previous(self, step: StepOracle) -> StepRecord | None:
        return next((s for s in finished_steps(self.output) if s.index == step.index - 1), None)

    def finish_step(self, step: StepOracle, record: StepRecord, final: str) -> None:
        folder = self.folder.step(step)
        record.integrity_flags = integrity.step_flags(record, self.previous(step), self.record.import_name)
        record = record.model_copy(update={"usage": Usage.total([p.agent for p in (record.build, record.fix) if p])})
        write_bytes(folder.final_code, folder.code(final).read_bytes())
        write_model(folder.record, record)  # written last: its presence marks the step finished
        self.write_scorecard()

    def hand_on(self, step: StepOracle, work: Path) -> None:
        """The run's end: stopped at a failed agent, or finished after the last step."""
        done = finished_steps(self.output)
        last = done[-1]
        record = self.record
        if last.agent_failed:
            phase = last.fix or last.build
            record = record.model_copy(
                update={
                    "status": "stopped",
                    "stop_reason": f"step {last.index}: agent {phase.agent.status}: {phase.agent.detail}"[:500],
                }
            )
            message = f"stopped: {record.stop_reason}"[:200]
        else:
            record = record.model_copy(update={"status": "finished"})
            message = f"finished: {self.chain.id} steps {self.chain.step_range}"
        write_model(self.folder.record, record)
        self.write_scorecard()
        if self.branch:
            self.branch.commit(self.code(step, "final", work / "final"), self.output, message)

    # -- driving --------------------------------------------------------------------------------

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
        write_model(self.folder.record, self.record.model_copy(update={"status": "paused", "stop_reason": reason}))
        progress.say(f"paused: {reason}")
        self.write_scorecard()
        if self.branch:
            self.branch.commit(
                self.code(step, "start", work / "paused"),
                self.output,
                f"paused: step {step.index} {failure.phase}: infrastructure failure",
            )

    def build(self, step: StepOracle, work: Path) -> None:
        shutil.rmtree(self.folder.step(step).path, ignore_errors=True)  # a phase cut short starts over
        if self.branch and self.branch.head() is None:
            self.branch.commit(
                self.code(step, "start", work / "start"),
                self.output,
                f"start: {self.chain.config.package} {self.chain.versions[0]}",
            )
        self.agent_phase("build", step, work)

    def fix(self, step: StepOracle, work: Path) -> None:
        self.agent_phase("fix", step, work)

    def handler(self, phase: Phase) -> Callable[[StepOracle, Path], None]:
        """The method that runs ``phase`` of a step, in a scratch folder of its own."""
        return {
            Phase.BUILD: self.build,
            Phase.EVALUATE: self.evaluate_build,
            Phase.FIX: self.fix,
            Phase.EVALUATE_FIX: self.evaluate_fix,
            Phase.HAND_ON: self.hand_on,
        }[phase]

    def run_phase(self, position: Position) -> None:
        step = position.step
        assert step is not None
        removed = self.sandbox.remove_labelled(self.labels)
        if removed:
            progress.say(f"removed {removed} container(s) left by an interrupted phase")
        with tempfile.TemporaryDirectory(prefix="swechain-run-") as tmp:
            try:
                self.handler(Phase(position.phase))(step, Path(tmp))
            except InfraFailure as failure:
                self.pause(step, failure, Path(tmp))

    def execute(self, max_steps: int | None = None) -> None:
        """The local run: every phase in sequence, exactly as the jobs of a dispatched run."""
        done = finished_steps(self.output)
        first = self.position()
        if done and first.phase != DONE:
            progress.say(
                f"resuming after step {done[-1].index}"
                + ("" if first.phase in (Phase.BUILD, Phase.HAND_ON) else f", at {first}")
            )
        started: set[int] = set()
        while (position := self.position()).step is not None:
            assert position.step is not None
            if position.phase == Phase.BUILD and max_steps is not None and len(started) >= max_steps:
                progress.say(f"paused after {max_steps} step(s); run again to continue")
                return
            started.add(position.step.index)
            self.run_phase(position)

    def execute_phase(self, phase: Phase, step_index: int | None) -> PhaseOutcome:
        """One job's phase. A phase already done (a re-run, or a run dispatched again) is
        skipped; asking for a phase whose predecessors have not run is an error."""
        current = self.position()
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
        return PhaseOutcome(current, self.position(), "")


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
    run.reopen()
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
