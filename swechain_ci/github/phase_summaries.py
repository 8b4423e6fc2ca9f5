"""A job summary per phase of a chain run, from the run's records alone.

- build: what the agent did (status, turns, cost, wall clock, diff stats);
- evaluate: the step's table (Build, and Build+Fix once known; TP/FN/FP and categories)
  and the chain totals so far;
- fix: the Fix report the agent answered and what the agent did; evaluate-fix: the step's
  table with Build+Fix, and the chain totals;
- hand-on: the scorecard.

Agent output (details, the Fix report, which quotes test output of the agent's code) is
hostile: it is shown only inside code fences longer than any backtick run it holds.
"""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from swechain_ci.errors import SwechainError
from swechain_ci.markdown import block
from swechain_ci.models import AgentPhaseRecord, Category, Scorecard, StepRecord
from swechain_ci.records import RunFolder, StepFolder, read_model
from swechain_ci.scoring.report import metric_cells, render
from swechain_ci.scoring.score import category_tally, step_metrics

FENCED_LIMIT = 20_000


def fenced(text: str, limit: int = FENCED_LIMIT) -> str:
    """Untrusted text as a code block that it cannot close."""
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters in the run's records)"
    return block(text, limit=None)


def step_folder(output: Path, index: int) -> StepFolder:
    found = RunFolder(output).step_at(index)
    if found is None:
        raise SwechainError(f"{output} holds no records of step {index}")
    return found


def agent_table(record: AgentPhaseRecord) -> str:
    a = record.agent
    rows: list[list[object]] = [
        ["status", a.status + (f" ({a.ended_by})" if a.ended_by else "")],
        ["turns", "-" if a.turns is None else a.turns],
        ["cost $", "-" if a.cost_usd is None else f"{a.cost_usd:.2f}"],
        ["wall clock s", f"{a.wall_s:.1f}"],
        ["diff", f"{record.diff.files} files, +{record.diff.added}/-{record.diff.removed}"],
    ]
    if record.phase == "build":
        rows.append(["session", record.session])
    return tabulate(rows, headers=["", record.phase], tablefmt="github")


def step_table(record: StepRecord, finished: bool) -> str:
    """Build, and Build+Fix once known: the Fix's evaluation, or the Build's when no Fix ran."""
    phases = [("Build", record.build)]
    if record.fix or finished:
        phases.append(("Build+Fix", record.fix or record.build))
    rows = []
    for name, phase in phases:
        tally = category_tally(phase.categories)
        rows.append(
            [
                name,
                *metric_cells(step_metrics(phase.counts)),
                *(tally.get(c, 0) for c in Category),
                "yes" if phase.execution_error else "no",
            ]
        )
    headers = ["", "resolving %", "precision %", "F1 %", "TP/FN/FP", *(c.value for c in Category), "execution error"]
    return tabulate(rows, headers=headers, tablefmt="github")


def chain_totals(output: Path) -> str:
    path = RunFolder(output).scorecard
    if not path.is_file():
        return "No step is finished yet."
    card = read_model(path, Scorecard)
    rows = [["Build", *metric_cells(card.build)], ["Build+Fix", *metric_cells(card.build_fix)]]
    return f"Chain totals after {card.steps_scored} of {card.steps_total} steps:\n\n" + tabulate(
        rows, headers=["", "resolving %", "precision %", "F1 %", "TP/FN/FP"], tablefmt="github"
    )


def phase_summary(output: Path, step: int, phase: str) -> str:
    """The Markdown a phase's job writes to its summary."""
    if phase == "hand-on":
        return render(read_model(RunFolder(output).scorecard, Scorecard))
    folder = step_folder(output, step)
    title = f"## Step {step} ({folder.path.name.split('-', 1)[1].replace('-', ' → ', 1)}): {phase}"
    if phase == "build":
        record = read_model(folder.agent("build"), AgentPhaseRecord)
        return (
            "\n\n".join([title, agent_table(record), "The agent's last words:", fenced(record.agent.detail[-2000:])])
            + "\n"
        )
    finished = folder.record.is_file()
    step_record = read_model(folder.record if finished else folder.evaluation, StepRecord)
    if phase == "evaluate":
        verdict = (
            "The Build has an execution error: the one Fix is granted."
            if step_record.fix_report and not finished
            else "No Fix: the step is finished."
        )
        return "\n\n".join([title, step_table(step_record, finished), verdict, chain_totals(output)]) + "\n"
    if phase == "evaluate-fix":
        return "\n\n".join([title, step_table(step_record, finished), chain_totals(output)]) + "\n"
    fix = read_model(folder.agent("fix"), AgentPhaseRecord)
    return (
        "\n\n".join(
            [title, "The Fix report the agent answered:", fenced(step_record.fix_report or ""), agent_table(fix)]
        )
        + "\n"
    )
