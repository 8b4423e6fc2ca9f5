"""A full chain run with one agent: the Build+Fix protocol, step by step, resumable.

Per step: evaluate prev, let the agent build, evaluate curr in a fresh
target-version container; on an execution-level error give the agent one Fix
with the error report, and evaluate again. Each finished step is written to
the output folder before the next starts, so a killed run resumes from the
first unfinished step.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
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
from swechain_ci.agents.manifest import AgentManifest
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.containers import images as image_builds
from swechain_ci.containers.sandbox import DockerSandbox, single_file_tar
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation import oracle as oracles
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import (
    has_execution_error,
    resolve,
    scored_universe,
)
from swechain_ci.github.branches import RunBranch
from swechain_ci.models import (
    AgentOutcome,
    ChainOracle,
    PhaseRecord,
    RunRecord,
    Scorecard,
    Status,
    StepOracle,
    StepRecord,
    TestRun,
)
from swechain_ci.records import read_model, write_bytes, write_model, write_text
from swechain_ci.scoring.fix_report import build_report
from swechain_ci.scoring.report import write_scorecard
from swechain_ci.scoring.score import categorize, count, scorecard
from swechain_ci.specs.store import load_specs

PROMPTS = Path(__file__).resolve().parent / "agents" / "prompts"
ARCHIVE_DIR = "/archive"


def step_dir(output: Path, step: StepOracle) -> Path:
    return output / "steps" / f"{step.index:02d}-{step.prev_version}-{step.next_version}"


def finished_steps(output: Path) -> list[StepRecord]:
    return sorted(
        (read_model(p, StepRecord) for p in output.glob("steps/*/step.json")), key=lambda s: s.index
    )


def open_run(output: Path, chain: Chain, agent: Agent, level: str) -> RunRecord | None:
    """The existing run in ``output`` if it is this run; refuse anything else without touching it."""
    record_path = output / "run.json"
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
    trees.unpack_untrusted([archive.read_bytes()], dest, strip="code")


def secrets_for(manifest: AgentManifest) -> dict[str, str]:
    """The values of the variables an agent names, from the runner's environment; never stored."""
    missing = [name for name in manifest.env if not os.environ.get(name)]
    if missing:
        raise SwechainError(
            f"agent {manifest.name} needs the environment variable(s) {', '.join(missing)}: set them "
            "(their values are passed to the agent and never stored)"
        )
    return {name: os.environ[name] for name in manifest.env}


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


class ChainRun:
    def __init__(
        self, sandbox: DockerSandbox, chain: Chain, agent: Agent, manifest: AgentManifest, oracle: ChainOracle,
        chain_images: image_builds.ChainImages, output: Path, record: RunRecord, specs: dict[tuple[str, str], str],
        branch: RunBranch | None = None,
    ) -> None:
        self.sandbox, self.chain, self.agent, self.manifest, self.oracle = sandbox, chain, agent, manifest, oracle
        self.branch = branch
        self.images, self.output, self.record, self.specs = chain_images, output, record, specs
        self.labels = {"swechain-ci.run": record.run_id}
        self.evaluations: dict[tuple[str, str], TestRun] = {}
        self.secrets = secrets_for(manifest)

    def evaluate(self, version: str, code: Path) -> TestRun:
        """Evaluate once per (target version, code content) within this run."""
        key = (version, trees.digest(code))
        if key not in self.evaluations:
            self.evaluations[key] = evaluate(self.sandbox, self.chain, self.images.versions[version], code, self.labels)
        return self.evaluations[key]

    def run_agent(self, ctx: PhaseContext) -> AgentOutcome:
        started = time.monotonic()
        try:
            outcome = self.agent.run(ctx)
        except Exception as exc:  # an agent crash ends the chain, never the harness
            outcome = AgentOutcome(status="crashed", detail=f"{type(exc).__name__}: {exc}"[:2000])
        return outcome.model_copy(update={"wall_s": round(time.monotonic() - started, 3)})

    def phase(
        self, name: str, step: StepOracle, workspace: Workspace, before: Path, after: Path,
        prev_outcomes: dict[str, Status], fix_report: str | None, session_id: str,
    ) -> PhaseRecord:
        folder = step_dir(self.output, step)
        prompt = (PROMPTS / f"{name}.md").read_text().format(
            prev_version=step.prev_version, next_version=step.next_version
        )
        workspace.put_text(PROMPT_FILE, prompt)
        ctx = PhaseContext(
            phase=name, step_index=step.index, prev_version=step.prev_version, next_version=step.next_version,
            spec=self.specs[(step.prev_version, step.next_version)], fix_report=fix_report, prompt=prompt,
            workspace=workspace, chain=self.chain, log=folder / "logs" / f"agent-{name}.log",
            session_id=session_id, limits=self.manifest.limits, secrets=self.secrets,
        )
        ctx.log.parent.mkdir(parents=True, exist_ok=True)
        progress.say(f"step {step.index}/{len(self.oracle.steps)} {name}: agent {self.agent.name} at work")
        outcome = self.run_agent(ctx)
        workspace.container.kill_agent_processes()  # nothing the agent started outlives its phase
        try:
            workspace.pull_code(after)
        except SwechainError as exc:  # e.g. a tree over the size limit: the agent's failure; the code stays as it was
            outcome = outcome.model_copy(update={"status": "tree_rejected", "detail": str(exc)[:2000]})
            shutil.rmtree(after, ignore_errors=True)
            trees.copy_tree(before, after)
        with open(ctx.log, "a") as log:
            log.write(f"\n[swechain-ci] {name}: {outcome.status} {outcome.detail}\n")
        patch = trees.diff(before, after)
        write_text(folder / f"{name}.diff", patch)
        progress.say(f"step {step.index}/{len(self.oracle.steps)} {name}: hidden tests of {step.next_version}")
        run = self.evaluate(step.next_version, after)
        outcomes = resolve(run, step.new_gold)
        universe = scored_universe(step.new_gold, [*step.flaky, *step.needs_network])
        categories = categorize(step.upgrade_related, universe, prev_outcomes, outcomes)
        write_text(folder / "logs" / f"tests-{name}.log", run.output_tail)
        return PhaseRecord(
            phase=name, agent=outcome, code_sha256=trees.digest(after), diff=trees.diff_stats(patch),
            run=run, outcomes=outcomes, categories=categories, counts=count(categories),
            execution_error=has_execution_error(run, outcomes),
        )

    def step(self, step: StepOracle, workspace: Workspace, current: Path, work: Path) -> tuple[StepRecord, Path]:
        folder = step_dir(self.output, step)
        if folder.exists():
            shutil.rmtree(folder)  # a step cut short by a kill starts over
        workspace.put_text(SPEC_FILE, self.specs[(step.prev_version, step.next_version)])
        workspace.remove(FIX_REPORT_FILE)
        if step.index == self.oracle.steps[0].index:
            prev_outcomes = step.old_gold  # prev at the first step is old gold by definition
        else:
            progress.say(f"step {step.index}/{len(self.oracle.steps)}: hidden tests of {step.next_version} on prev")
            prev_outcomes = resolve(self.evaluate(step.next_version, current), step.new_gold)
        build_code = work / f"step{step.index}-build"
        # A new session each step; Fix resumes the Build session where the agent supports it.
        session = str(uuid.uuid4())
        build = self.phase("build", step, workspace, current, build_code, prev_outcomes, None, session)
        fix, report, final_code = None, None, build_code
        if build.agent.status == "ok" and build.execution_error:
            report = build_report(build.run)
            write_text(folder / "fix_report.md", report)
            workspace.put_text(FIX_REPORT_FILE, report)
            final_code = work / f"step{step.index}-fix"
            fix_session = session if self.manifest.session == "resume" else str(uuid.uuid4())
            fix = self.phase("fix", step, workspace, build_code, final_code, prev_outcomes, report, fix_session)
        record = StepRecord(
            index=step.index, prev_version=step.prev_version, next_version=step.next_version,
            spec_level=self.record.spec_level, upgrade_related=step.upgrade_related, new_gold=step.new_gold,
            flaky=step.flaky, needs_network=step.needs_network, prev_outcomes=prev_outcomes, build=build, fix=fix, fix_report=report,
        )
        archive = snapshot(final_code)
        write_bytes(folder / "code.tar.gz", archive)
        # Also inside the container, where the agent user cannot read it.
        workspace.container.put_tree(single_file_tar(f"step-{step.index:02d}.tar.gz", archive, 0, 0o600), ARCHIVE_DIR)
        write_model(folder / "step.json", record)  # written last: its presence marks the step finished
        if self.branch:
            self.write_scorecard()
            title = f"step {step.index} {{}}: {self.chain.config.package} {step.prev_version} -> {step.next_version}"
            self.branch.commit(build_code, self.output, f"{title.format('build')} ({self.agent.name})")
            if fix:
                self.branch.commit(final_code, self.output, f"{title.format('fix')} ({self.agent.name})")
        return record, final_code

    def write_scorecard(self) -> None:
        write_scorecard(self.output, scorecard(self.record, finished_steps(self.output)))

    def execute(self, max_steps: int | None = None) -> None:
        done = finished_steps(self.output)
        if done and done[-1].agent_failed:
            # A stopped chain resumes at the step whose agent failed: it was not finished.
            progress.say(f"step {done[-1].index} ended with a failed agent; running it again")
            shutil.rmtree(step_dir(self.output, self.oracle.steps[len(done) - 1]))
            done = done[:-1]
        write_model(self.output / "run.json", self.record)
        remaining = self.oracle.steps[len(done):]
        paused = max_steps is not None and len(remaining) > max_steps
        remaining = remaining[:max_steps] if paused else remaining
        removed = self.sandbox.remove_labelled(self.labels)
        if removed:
            progress.say(f"removed {removed} container(s) left by an interrupted run")
        agent_image = ensure_agent_image(self.sandbox, self.chain, self.images, self.manifest)
        container = self.sandbox.start_agent_container(
            agent_image, self.chain.config.limits, self.labels, network=agent_network(self.manifest)
        )
        try:
            workspace = Workspace(container)
            with tempfile.TemporaryDirectory(prefix="swechain-run-") as tmp:
                work = Path(tmp)
                current = work / "start"
                if done:
                    progress.say(f"resuming after step {done[-1].index}")
                    restore(step_dir(self.output, self.oracle.steps[len(done) - 1]) / "code.tar.gz", current)
                    workspace.push_code(current)
                else:
                    trees.copy_tree(sources.materialize(self.chain, self.chain.versions[0]).code, current)
                if self.branch and self.branch.head() is None:
                    self.branch.commit(current, self.output, f"start: {self.chain.config.package} {self.chain.versions[0]}")
                container.exec(["mkdir", "-m", "700", "-p", ARCHIVE_DIR], user=0)
                for step in remaining:
                    record, current = self.step(step, workspace, current, work)
                    if record.agent_failed:
                        last = record.fix or record.build
                        self.record = self.record.model_copy(update={
                            "status": "stopped",
                            "stop_reason": f"step {step.index}: agent {last.agent.status}: {last.agent.detail}"[:500],
                        })
                        write_model(self.output / "run.json", self.record)
                        if self.branch:
                            self.write_scorecard()
                            self.branch.commit(current, self.output, f"stopped: {self.record.stop_reason}"[:200])
                        return
                if paused:
                    progress.say(f"paused after {max_steps} step(s); run again to continue")
                    return
                self.record = self.record.model_copy(update={"status": "finished"})
                write_model(self.output / "run.json", self.record)
                if self.branch:
                    self.write_scorecard()
                    self.branch.commit(current, self.output, f"finished: {self.chain.id} steps {self.chain.step_range}")
        finally:
            container.remove()


def run_chain(
    chain_name: str, agent_spec: str, output: Path, spec_level: str | None = None, steps: str | None = None,
    branch: RunBranch | None = None, max_steps: int | None = None,
) -> Scorecard:
    chain = load_chain(chain_name).select_steps(steps)
    agent, manifest = resolve_agent(agent_spec)
    level = spec_level or chain.config.default_spec_level
    specs = load_specs(chain, level)
    secrets_for(manifest)  # fail before any work when a variable or network is missing
    agent_network(manifest)
    output = output.resolve()
    if branch and not (output / "run.json").exists():
        branch.restore_records(output)  # a run that stopped elsewhere resumes from its branch
    record = open_run(output, chain, agent, level)
    if record is not None and record.status == "finished":
        progress.say(f"{output} holds a finished run; re-scoring it")
        return rescore(output)
    sandbox = DockerSandbox()
    chain_images = image_builds.ensure_images(sandbox, chain)
    oracle = oracles.build(sandbox, chain, chain_images)
    if record is None:
        record = RunRecord(
            run_id=uuid.uuid4().hex[:12], chain=chain.id, step_range=chain.step_range, agent=agent.name, spec_level=level,
            oracle_hash=oracle.inputs_hash, steps_total=len(oracle.steps),
        )
        output.mkdir(parents=True, exist_ok=True)
        write_model(output / "run.json", record)
        write_model(output / "agent.json", manifest)
    elif record.oracle_hash != oracle.inputs_hash:
        raise SwechainError(
            f"{output}: the chain's oracle changed since this run started (images or chain.yaml differ); "
            "start a new run in another --output folder"
        )
    else:
        record = record.model_copy(update={"status": "running", "stop_reason": None})
    ChainRun(sandbox, chain, agent, manifest, oracle, chain_images, output, record, specs, branch).execute(max_steps)
    return rescore(output)


def rescore(output: Path) -> Scorecard:
    """Recompute the scorecard from stored records alone; no Docker."""
    record = read_model(output / "run.json", RunRecord)
    card = scorecard(record, finished_steps(output))
    write_scorecard(output, card)
    return card
