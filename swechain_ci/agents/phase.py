"""An agent phase (Build or Fix) in its container: the agent at work on the code it starts from.

A fresh container holds the code at /app/code, the spec, the Fix report (Fix only) and the
prompt beside it, the earlier steps' code where the agent user cannot read it, and, for a Fix
that resumes, the Build's session. When the agent ends, every process it started is ended, its
code is taken out (a tree the harness refuses leaves the code as it was: ``tree_rejected``) and,
after a Build that may be resumed, its session. The run records what comes back.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from swechain_ci import progress
from swechain_ci.agents.base import FIX_REPORT_FILE, PROMPT_FILE, SPEC_FILE, Agent, PhaseContext, Workspace
from swechain_ci.agents.manifest import AgentManifest
from swechain_ci.agents.session import SessionTooLarge, export_session, import_session
from swechain_ci.agents.triage import InfraFailure
from swechain_ci.chain import trees
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.errors import SwechainError
from swechain_ci.models import AgentOutcome, AgentPhase

PROMPTS = Path(__file__).resolve().parent / "prompts"
ARCHIVE_DIR = "/archive"  # earlier steps' code: root's only, so the agent user cannot read it


@dataclass(frozen=True)
class AgentTask:
    """What one phase hands the agent, taken by the run from its records."""

    phase: AgentPhase
    step_index: int
    label: str  # how progress names the step: progress.step_label
    prev_version: str
    next_version: str
    spec: str
    fix_report: str | None
    earlier_code: dict[int, bytes]  # step index -> the code that step handed on (its code.tar.gz)
    session_id: str
    session_archive: bytes | None = None  # Fix: the Build's session, where it was kept
    cli_session: str | None = None  # Fix: the session id the CLI reported in Build
    resumes: AgentOutcome | None = None  # Fix: the Build's outcome, when the Fix resumes its kept session
    keep_session: bool = False  # Build: export the session for a Fix that resumes it


@dataclass(frozen=True)
class AgentResult:
    """What came out of the container: the outcome, and the session a Fix may resume."""

    outcome: AgentOutcome
    session: Literal["none", "kept", "dropped"] = "none"
    session_note: str = ""
    session_archive: bytes | None = None


@dataclass(frozen=True)
class AgentRunner:
    """One agent and the container it works in, for every phase of a run."""

    sandbox: Sandbox
    chain: Chain
    agent: Agent
    manifest: AgentManifest
    image: str
    labels: dict[str, str]
    network: str
    secrets: dict[str, str]

    def run(self, task: AgentTask, before: Path, after: Path, log: Path) -> AgentResult:
        """The phase: ``before`` is the code it starts from, ``after`` receives the code it leaves,
        ``log`` the agent's log. Raises ``InfraFailure`` when the phase is not the agent's doing."""
        container = self.sandbox.start_agent_container(
            self.image, self.chain.config.limits, self.labels, network=self.network
        )
        try:
            workspace = Workspace(container)
            ctx = self.prepare(workspace, task, before, log)
            progress.say(f"{task.label} {task.phase}: agent {self.agent.name} at work")
            outcome = run_agent(self.agent, ctx)
            container.kill_agent_processes()  # nothing the agent started outlives its phase
            if outcome.status == "infra_error":  # not the agent's doing: this phase is not recorded
                note(log, task.phase, outcome)
                raise InfraFailure(task.step_index, task.phase, outcome.infra, outcome.detail)
            outcome = take_code(workspace, outcome, before, after)
            note(log, task.phase, outcome)
            return self.result(workspace, task, outcome)
        finally:
            container.remove()

    def prepare(self, workspace: Workspace, task: AgentTask, before: Path, log: Path) -> PhaseContext:
        """The container as the agent finds it, and the context it is given."""
        workspace.push_code(before)
        workspace.put_private(
            ARCHIVE_DIR, {f"step-{index:02d}.tar.gz": code for index, code in task.earlier_code.items()}
        )
        if task.session_archive is not None:
            import_session(workspace, task.session_archive)
        workspace.put_text(SPEC_FILE, task.spec)
        if task.fix_report is not None:
            workspace.put_text(FIX_REPORT_FILE, task.fix_report)
        prompt = prompt_for(task)
        workspace.put_text(PROMPT_FILE, prompt)
        log.parent.mkdir(parents=True, exist_ok=True)
        return PhaseContext(
            phase=task.phase,
            step_index=task.step_index,
            prev_version=task.prev_version,
            next_version=task.next_version,
            spec=task.spec,
            fix_report=task.fix_report,
            prompt=prompt,
            workspace=workspace,
            chain=self.chain,
            log=log,
            session_id=task.session_id,
            limits=self.manifest.limits,
            secrets=self.secrets,
            cli_session=task.cli_session,
            resumes=task.resumes,
        )

    def result(self, workspace: Workspace, task: AgentTask, outcome: AgentOutcome) -> AgentResult:
        if not task.keep_session:
            return AgentResult(outcome)
        try:
            return AgentResult(outcome, "kept", session_archive=export_session(workspace, self.secrets))
        except SessionTooLarge as exc:
            return AgentResult(outcome, "dropped", f"{exc}: the Fix starts a new session")


def prompt_for(task: AgentTask) -> str:
    template = (PROMPTS / f"{task.phase}.md").read_text()
    return template.format(prev_version=task.prev_version, next_version=task.next_version)


def run_agent(agent: Agent, ctx: PhaseContext) -> AgentOutcome:
    started = time.monotonic()
    try:
        outcome = agent.run(ctx)
    except Exception as exc:  # an agent crash ends the chain, never the harness
        outcome = AgentOutcome(status="crashed", detail=f"{type(exc).__name__}: {exc}"[:2000])
    return outcome.model_copy(update={"wall_s": round(time.monotonic() - started, 3)})


def take_code(workspace: Workspace, outcome: AgentOutcome, before: Path, after: Path) -> AgentOutcome:
    """The agent's code into ``after``. A tree the harness refuses (e.g. over the size limit) is
    the agent's failure, and the code stays as it was."""
    try:
        left_out = workspace.pull_code(after)
    except SwechainError as exc:
        shutil.rmtree(after, ignore_errors=True)
        trees.copy_tree(before, after)
        return outcome.model_copy(update={"status": "tree_rejected", "detail": str(exc)[:2000]})
    if left_out:  # recorded beside what the agent said: the code scored is not all it left
        shown = f"left out of the code tree: {', '.join(left_out)}"[:1000]
        outcome = outcome.model_copy(update={"detail": f"{outcome.detail}\n{shown}".strip()})
    return outcome


def note(log: Path, phase: str, outcome: AgentOutcome) -> None:
    with open(log, "a") as handle:
        handle.write(f"\n[swechain-ci] {phase}: {outcome.status} {outcome.detail}\n")
