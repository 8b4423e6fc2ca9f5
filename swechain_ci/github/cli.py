"""Commands the GitHub workflows call; each also works locally.

matrix        the agents x chains matrix, as JSON for ``fromJSON`` (--since: only what changed)
refresh-record   what a weekly refresh ran, into its record (and the runs it kept back beside them)
comment       the sticky scorecard comment on a pull request (one per agent)
summary       the scorecard in the job summary
status        a commit status from a run's outcome
leaderboard   leaderboard.json/.md/.png over many runs
publish-leaderboard   the leaderboard as a commit on the default branch (rebuilt on a moved head)
fetch-branch, push-branch   a run branch from/to the remote, with the job token for that one git call
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated

import typer

from swechain_ci.errors import SwechainError
from swechain_ci.models import RunRecord, Scorecard
from swechain_ci.records import RunFolder

if TYPE_CHECKING:
    from swechain_ci.agents.manifest import AgentManifest

PLUMBING = "Workflow plumbing (what the workflows call)"
ci_app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__, pretty_exceptions_enable=False)


def _note(message: str) -> None:
    typer.echo(message, err=True)


def _split(values: list[str] | None) -> list[str]:
    """Repeated options and comma- or space-separated lists alike."""
    return [item for value in values or [] for item in re.split(r"[\s,]+", value) if item]


# -- matrix ---------------------------------------------------------------------------------------


def _resolve_changed(path_text: str) -> Path | None:
    from swechain_ci.settings import project_root

    path = Path(path_text)
    if path.is_absolute() or path.exists():
        return path.resolve()
    candidate = project_root() / path
    return candidate.resolve() if candidate.exists() else None


def _changed_agents(files: list[str], manifests: dict[str, AgentManifest]) -> list[str]:
    """The registered agents whose manifest, or a file a manifest uses (its Dockerfile, or the
    files/ its Dockerfile may copy), is among ``files``."""
    from swechain_ci.agents.manifest import agents_concerned, agents_dir, parse_manifest

    folder = agents_dir().resolve()
    dockerfiles = {name: manifest.install.dockerfile for name, manifest in manifests.items()}
    chosen: list[str] = []
    for text in files:
        path = _resolve_changed(text)
        if path is None:
            _note(f"note: {text} does not exist (deleted?): left out")
            continue
        if path.is_relative_to(folder):
            names = agents_concerned(PurePosixPath(path.relative_to(folder).as_posix()), dockerfiles)
            # A manifest not registered here is validated, so that a broken one fails the matrix.
            names = [n if n in manifests else parse_manifest(path).name for n in names]
        elif path.suffix in (".yaml", ".yml") and path.parent.name == "agents":
            names = [parse_manifest(path).name]  # a manifest outside this checkout's agents/: still validated
        else:
            names = []
        if not names:
            _note(f"note: {text} is not an agent manifest or a file one uses: left out")
        chosen += [n for n in names if n not in chosen]
    return chosen


@ci_app.command("matrix", rich_help_panel=PLUMBING)
def matrix(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE",
            show_default=False,
            help="with --changed-manifests: changed files (paths, or one space/comma-separated list)",
        ),
    ] = None,
    agents: Annotated[list[str] | None, typer.Option(help="only these agents (repeat, or comma-separate)")] = None,
    chains: Annotated[list[str] | None, typer.Option(help="only these chains (repeat, or comma-separate)")] = None,
    exclude_builtin: Annotated[
        bool, typer.Option("--exclude-builtin", help="leave out the built-in agents (oracle, noop)")
    ] = False,
    runnable_only: Annotated[
        bool,
        typer.Option(
            "--runnable-only",
            help="leave out agents the runner does not grant all their env variables (SWECHAIN_SECRET_<AGENT>__<NAME>), "
            "and chains whose default level is missing",
        ),
    ] = False,
    changed_manifests: Annotated[
        bool,
        typer.Option(
            "--changed-manifests",
            help="only the agents whose manifests (or their Dockerfiles) are among FILE...; none given, none chosen",
        ),
    ] = False,
    since: Annotated[
        Path | None,
        typer.Option(
            help="a refresh record (reports/refresh.json): only the pairs whose inputs changed since, each with "
            "its level, repeat and output folder (absent: every pair is new)",
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(min=0, help="with --since: every pair runs this many more times (changed ones afresh)"),
    ] = 0,
) -> None:
    """Print {"include": [{"agent": ..., "chain": ...}, ...]} for a workflow's strategy.matrix (fromJSON)."""
    from swechain_ci.agents import BUILTIN_NAMES
    from swechain_ci.agents.manifest import available_manifests, grant_name, parse_manifest, runner_grants
    from swechain_ci.chain.definition import available_chains

    if files and not changed_manifests:
        raise SwechainError(f"matrix takes files only with --changed-manifests (got {' '.join(files)})")
    if repeats and since is None:
        raise SwechainError("--repeats counts from a refresh record: give --since reports/refresh.json too")
    manifests = {path.stem: parse_manifest(path) for path in available_manifests()}
    known = [*BUILTIN_NAMES, *manifests]
    if changed_manifests:
        changed = _changed_agents(_split(files), manifests)
        selected = [name for name in known if name in changed]
    else:
        selected = [name for name in known if not (exclude_builtin and name in BUILTIN_NAMES)]
    if agents:
        wanted = _split(agents)
        unknown = [a for a in wanted if a not in known]
        if unknown:
            raise SwechainError(f"unknown agents {', '.join(unknown)}: registered agents are {', '.join(known)}")
        selected = [a for a in selected if a in wanted]
    if runnable_only:
        runnable = []
        grants = runner_grants(os.environ)  # names only are used here
        for name in selected:
            needs = manifests[name].env if name in manifests else []
            missing = [grant_name(name, v) for v in needs if not grants.get(grant_name(name, v))]
            if missing:
                _note(f"note: {name} left out: the runner does not grant {', '.join(missing)}")
            else:
                runnable.append(name)
        selected = runnable

    all_chains = available_chains()
    chosen_chains = all_chains
    if chains:
        chosen_chains = _split(chains)
        unknown = [c for c in chosen_chains if c not in all_chains]
        if unknown:
            raise SwechainError(f"unknown chains {', '.join(unknown)}: chains are {', '.join(all_chains) or 'none'}")
    # Baselines read no specification: they run on a chain without its default level (at level none).
    specified = {c: _specified(c) for c in chosen_chains} if runnable_only else {}
    include = [
        {"agent": a, "chain": c}
        for a in selected
        for c in chosen_chains
        if a in BUILTIN_NAMES or specified.get(c, True)
    ]
    if since is not None:
        include = _refresh_runs(include, since, repeats)
    if not include:
        _note("note: the matrix is empty; guard the job with `if: fromJSON(needs.<job>.outputs.matrix).include[0]`")
    typer.echo(json.dumps({"include": include}, separators=(",", ":")))


def _pair(agent: str, chain_id: str):
    """The (agent, chain, level) a run of ``agent`` on the chain is: the chain's default level, or
    none for a baseline where the chain has no specification at it (as ``run`` chooses)."""
    from swechain_ci.agents import BUILTIN_NAMES
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.github.refresh import Pair
    from swechain_ci.specs.store import NO_LEVEL, levels_available

    chain = load_chain(chain_id)
    level = chain.config.default_spec_level
    if agent in BUILTIN_NAMES and level not in levels_available(chain):
        level = NO_LEVEL
    return Pair(agent=agent, chain=chain_id, level=level)


def _inputs(pair):
    import swechain_ci
    from swechain_ci.agents import BUILTIN_NAMES
    from swechain_ci.evaluation import harness
    from swechain_ci.github.refresh import pair_inputs
    from swechain_ci.settings import project_root

    folder = Path(harness.__file__).parent
    return pair_inputs(project_root(), folder, pair, swechain_ci.__version__ if pair.agent in BUILTIN_NAMES else None)


def _read_record(path: Path):
    from swechain_ci.github.refresh import RefreshRecord
    from swechain_ci.records import read_model

    if not path.is_file():
        if path.exists():
            raise SwechainError(f"{path} is not a file: give the refresh record (reports/refresh.json)")
        _note(f"note: no refresh record at {path}: every pair is new")
        return RefreshRecord()
    return read_model(path, RefreshRecord)


def _refresh_runs(include: list[dict[str, str]], since: Path, repeats: int) -> list[dict]:
    """The runs of a refresh: the pairs of ``include`` whose inputs changed since the record, or
    every pair with ``repeats``; a note per pair says why it runs."""
    from swechain_ci.github.refresh import plan, repeat_folder

    record = _read_record(since)
    pairs = [(pair, _inputs(pair)) for pair in (_pair(e["agent"], e["chain"]) for e in include)]
    runs = plan(pairs, record, repeats)
    for pair, repeat, reasons in runs:
        _note(f"note: {pair.agent} on {pair.chain} at {pair.level} runs (repeat {repeat}): {'; '.join(reasons)}")
    if not runs:
        _note(f"note: no input of the {len(pairs)} pairs changed since {since}: nothing to run")
    return [
        {"agent": p.agent, "chain": p.chain, "level": p.level, "repeat": k, "folder": repeat_folder(p, k)}
        for p, k, _ in runs
    ]


def _specified(chain_id: str) -> bool:
    """Whether the chain's default specification level exists for every step (else a note says
    which command writes it, and the chain is left out for every agent but the baselines rather
    than failing a job)."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.specs.store import levels_available, producing_command

    chain = load_chain(chain_id)
    level = chain.config.default_spec_level
    if level in levels_available(chain):
        return True
    _note(
        f"note: chain {chain_id} left out (but for the baselines): its default level {level} is missing; "
        f"{producing_command(chain, level)} writes it"
    )
    return False


# -- run folders ----------------------------------------------------------------------------------


def _scorecard(run_dir: Path) -> Scorecard:
    from swechain_ci.records import read_model

    path = RunFolder(run_dir).scorecard
    if not path.is_file():
        if not run_dir.is_dir():
            raise SwechainError(f"{run_dir} is not a folder: give a run's results folder")
        raise SwechainError(f"{path} does not exist: score the run first (`swechain-ci score {run_dir}`)")
    return read_model(path, Scorecard)


def _run_record(run_dir: Path) -> RunRecord:
    from swechain_ci.records import read_model

    path = RunFolder(run_dir).record
    if not path.is_file():
        raise SwechainError(f"{path} does not exist: give a run's results folder (it holds run.json)")
    return read_model(path, RunRecord)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


# -- comment, summary, status -------------------------------------------------------------------


@ci_app.command("comment", rich_help_panel=PLUMBING)
def comment(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="runs' results folders")],
    pr: Annotated[int, typer.Option("--pr", min=1, help="pull request number")],
    artifact_url: Annotated[str | None, typer.Option(help="where the full results are (linked if cut)")] = None,
    agents: Annotated[
        list[str] | None,
        typer.Option(
            help="only scorecards of these agents (the PR's changed manifests); others are refused, never posted"
        ),
    ] = None,
    status_sha: Annotated[
        str | None, typer.Option(help="also set a status swechain-ci/smoke/<agent> on this commit (the PR's head)")
    ] = None,
) -> None:
    """Create or update the sticky scorecard comment, one per agent, on a pull request.

    Several runs of one agent (e.g. one per chain, from a matrix) go into that agent's one
    comment: call this once, after the matrix, with all the run folders. Every folder must
    hold a scorecard.json valid against the Scorecard schema; its strings are shown escaped."""
    from swechain_ci.github.reporting import GitHubReporter
    from swechain_ci.scoring.report import render

    allowed = set(_split(agents)) if agents is not None else None
    by_agent: dict[str, list[Scorecard]] = {}
    for run_dir in run_dirs:
        card = _scorecard(run_dir)
        if allowed is not None and card.agent not in allowed:
            _note(
                f"note: {run_dir} is a scorecard of agent {card.agent!r}, not one of the changed manifests "
                f"({', '.join(sorted(allowed)) or 'none'}): refused, not posted"
            )
            continue
        by_agent.setdefault(card.agent, []).append(card)
    with GitHubReporter.from_env() as reporter:
        for agent, cards in by_agent.items():
            cards.sort(key=lambda c: (c.chain, c.step_range, c.spec_level))
            body = "\n\n".join(render(card) for card in cards)
            if artifact_url:
                body += f"\nFull results: [the run's artifact]({artifact_url}).\n"
            comment_id, created = reporter.upsert_comment(pr, agent, body, artifact_url)
            typer.echo(
                f"{'created' if created else 'updated'} comment {comment_id} for agent {agent} "
                f"on pull request #{pr} ({len(cards)} chain{'s' if len(cards) != 1 else ''})"
            )
            if status_sha:
                stopped = [c for c in cards if c.stop_reason]
                state = "failure" if stopped else "success"
                text = "; ".join(f"{c.chain}: {c.stop_reason}" for c in stopped) or "; ".join(
                    f"{c.chain}: B+F resolving {_percent(c.build_fix.resolving)}" for c in cards
                )
                reporter.set_commit_status(
                    status_sha, state, text, context=f"swechain-ci/smoke/{agent}", target_url=artifact_url
                )


@ci_app.command("summary", rich_help_panel=PLUMBING)
def summary(
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="runs' results folders")],
) -> None:
    """Append the scorecards to the job summary ($GITHUB_STEP_SUMMARY); locally, says it did nothing."""
    from swechain_ci.github.reporting import write_job_summary
    from swechain_ci.scoring.report import render

    markdown = "\n".join(render(_scorecard(run_dir)) for run_dir in run_dirs)
    path = write_job_summary(markdown)
    if path is not None:
        typer.echo(f"job summary appended to {path}")


def status_for(run: RunRecord, card: Scorecard | None) -> tuple[str, str]:
    """The commit status state and description a run earns."""
    state = {"finished": "success", "stopped": "failure"}.get(run.status, "error")
    if card is None:
        scores = "no scorecard"
    else:
        scores = (
            f"B+F resolving {_percent(card.build_fix.resolving)}, precision {_percent(card.build_fix.precision)}"
            f" ({card.steps_scored}/{card.steps_total} steps)"
        )
        if card.integrity.status == "flagged":
            scores += f"; integrity flagged ({len(card.integrity.flags)}), not ranked"
    if run.status == "stopped":
        return state, f"stopped: {scores}; {run.stop_reason or 'no reason recorded'}"
    if run.status == "paused":  # an infrastructure failure: not the agent's; resumable
        return "error", f"paused: {scores}; {run.stop_reason or 'no reason recorded'}"
    if run.status == "running":
        return "pending", f"continues: {scores}"
    return state, scores


@ci_app.command("status", rich_help_panel=PLUMBING)
def status(
    run_dir: Annotated[Path, typer.Argument(help="a run's results folder")],
    sha: Annotated[str, typer.Option(help="the commit (full SHA; for a PR, its head SHA)")],
    target_url: Annotated[str | None, typer.Option(help="link from the status, e.g. the workflow run")] = None,
    context: Annotated[str | None, typer.Option(help="status name; default swechain-ci/AGENT/CHAIN")] = None,
) -> None:
    """Set a commit status: success if the run finished, failure if it stopped, pending if it continues."""
    from swechain_ci.github.reporting import GitHubReporter

    run = _run_record(run_dir)
    card = _scorecard(run_dir) if RunFolder(run_dir).scorecard.is_file() else None
    state, description = status_for(run, card)
    name = context or f"swechain-ci/{run.agent}/{run.chain}"
    with GitHubReporter.from_env() as reporter:
        reporter.set_commit_status(sha, state, description, context=name, target_url=target_url)
    typer.echo(f"status {state} ({name}) on {sha[:12]}: {description}")


@ci_app.command("continue", rich_help_panel=PLUMBING)
def continue_run(
    run_dir: Annotated[Path, typer.Argument(help="a run's results folder")],
    workflow: Annotated[str, typer.Option(help="the workflow file to dispatch, e.g. chain-run.yml")],
    ref: Annotated[str, typer.Option(help="the branch or tag the workflow runs on")],
    inputs: Annotated[list[str] | None, typer.Option("--input", help="KEY=VALUE, repeatable")] = None,
) -> None:
    """Dispatch the next job of a run that paused after its step budget; nothing if it ended."""
    from swechain_ci.github.reporting import GitHubReporter, write_job_summary

    run = _run_record(run_dir)
    if run.status == "paused":  # an infrastructure failure: retrying at once would meet it again
        typer.echo(
            f"run {run.run_id} is paused by an infrastructure failure; not continued automatically: "
            f"dispatch {workflow} again with the same run id once the provider recovers"
        )
        return
    if run.status != "running":
        said = f"run {run.run_id} is {run.status}; nothing to continue"
    else:
        pairs = dict(item.partition("=")[::2] for item in inputs or [])
        with GitHubReporter.from_env() as reporter:
            reporter.dispatch_workflow(workflow, ref, pairs)
        said = f"dispatched {workflow} on {ref} to continue run {run.run_id}"
    typer.echo(said)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        write_job_summary(f"Hand-on: {said}.\n")


# -- leaderboard --------------------------------------------------------------------------------


@ci_app.command("leaderboard", rich_help_panel=PLUMBING)
def leaderboard(
    runs_dirs: Annotated[list[Path], typer.Argument(metavar="RUNS_DIR...", help="folders searched for scorecard.json")],
    output: Annotated[Path, typer.Option(help="where leaderboard.json/.md/.png go")] = Path("reports"),
    spec_level: Annotated[str | None, typer.Option(help="only scorecards at this specification level")] = None,
) -> None:
    """Per agent, the plain mean over chains of resolving, precision and F1; prints the Markdown."""
    from swechain_ci.scoring.leaderboard import (
        build_leaderboard,
        render_markdown,
        write_leaderboard,
    )

    board = build_leaderboard(runs_dirs, spec_level)
    paths = write_leaderboard(board, output)
    for s in board.superseded:
        _note(f"note: {s.agent} on {s.chain}: {s.dropped} is superseded by the later {s.kept}")
    typer.echo(render_markdown(board))
    _note("wrote " + ", ".join(str(p) for p in paths.values()))


@ci_app.command("refresh-record", rich_help_panel=PLUMBING)
def refresh_record(
    runs_dir: Annotated[Path, typer.Argument(help="this refresh's runs: AGENT/CHAIN/r<repeat>/scorecard.json")],
    record: Annotated[Path, typer.Option(help="the refresh record, updated in place")] = Path("reports/refresh.json"),
) -> None:
    """Record the pairs this refresh ran (their inputs in this checkout and their scorecards), then
    write the recorded runs it did not redo back into RUNS_DIR, so the leaderboard built from
    RUNS_DIR still has every pair. Their run folders are not kept: the site shows no run page for them."""
    from swechain_ci.agents import BUILTIN_NAMES
    from swechain_ci.agents.manifest import available_manifests
    from swechain_ci.chain.definition import available_chains
    from swechain_ci.github.refresh import Pair, forget, kept_not_rerun, record_runs
    from swechain_ci.records import read_model, write_model
    from swechain_ci.scoring.leaderboard import find_scorecards

    agents = [*BUILTIN_NAMES, *(p.stem for p in available_manifests())]
    chains = available_chains()
    old = _read_record(record)
    cards: dict[tuple[str, str, str], tuple[Pair, dict[int, Scorecard]]] = {}
    for path in find_scorecards([runs_dir]) if runs_dir.is_dir() else []:
        found = re.fullmatch(r"r([1-9][0-9]{0,3})", path.parent.name)
        card = read_model(path, Scorecard)
        if not found or card.agent not in agents or card.chain not in chains:
            _note(f"note: {path} is not a refresh's run (AGENT/CHAIN/r<repeat> of a known agent and chain): left out")
            continue
        pair = Pair(agent=card.agent, chain=card.chain, level=card.spec_level)
        cards.setdefault(pair.key, (pair, {}))[1][int(found.group(1))] = card
    ran = [(pair, _inputs(pair), by_repeat) for pair, by_repeat in cards.values()]
    new = forget(record_runs(old, ran), agents, chains)
    write_model(record, new)
    kept = kept_not_rerun(new, ran)
    for folder, card in kept:
        write_model(runs_dir / folder / "scorecard.json", card)
    typer.echo(
        f"recorded {sum(len(c) for _, _, c in ran)} runs of {len(ran)} pairs in {record}; "
        f"{len(kept)} kept runs of unchanged pairs written back into {runs_dir}"
    )


# -- agent pull requests: validation reports and smoke plans, read through the API -----------------

VALIDATION_KEY = "(manifest validation)"  # the sticky comment's marker key: never an agent name
SMOKE_KEY = "(smoke run)"


def render_validation(checks: list) -> str:
    from swechain_ci.markdown import block, cell

    failed = [c for c in checks if not c.ok]
    lines = [
        "## Agent manifest validation",
        "",
        f"{len(checks) - len(failed)} of {len(checks)} manifests valid." if checks else "No agent manifest changed.",
        "",
    ]
    if checks:
        lines += ["| manifest | changed file | agent | result |", "|---|---|---|---|"]
        lines += [
            f"| {cell(c.file, 120)} | {cell(c.because, 120)} | {cell(c.agent) if c.agent else ''} | "
            f"{'valid' if c.ok else '**invalid**'} |"
            for c in checks
        ]
        lines.append("")
    for c in failed:
        lines += [f"Problem in {cell(c.file, 120)}:", "", block(c.error or "no message", 2000), ""]
    lines += [
        "Checked by the default branch's code, on the pull request's files at its head commit. A maintainer "
        "starts a smoke run of the changed agents on the toy chain with a `/smoke <full head SHA>` comment "
        "(`CONTRIBUTING.md`).",
        "",
    ]
    return "\n".join(lines)


def _fetch_agent(reporter, name: str, sha: str, folder: Path) -> AgentManifest:
    """agents/<name>.yaml and the Dockerfile it names, read at ``sha`` through the API into
    ``folder``, as data, and validated (the recipe too); a SwechainError says what is wrong."""
    from swechain_ci.agents.manifest import parse_manifest
    from swechain_ci.agents.recipe import check_recipe

    data = reporter.file_at(f"agents/{name}.yaml", sha)
    if data is None:
        raise SwechainError(f"agents/{name}.yaml does not exist at {sha[:12]} (deleted?)")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_bytes(data[:100_000])
    manifest = parse_manifest(path)
    dockerfile = manifest.install.dockerfile
    if dockerfile:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", dockerfile):
            raise SwechainError(
                f"agents/{name}.yaml: install.dockerfile {dockerfile!r} must be a file name in agents/ (no folders)"
            )
        recipe = reporter.file_at(f"agents/{dockerfile}", sha)
        if recipe is None:
            raise SwechainError(
                f"agents/{name}.yaml names install.dockerfile {dockerfile}, which does not exist at {sha[:12]}"
            )
        (folder / dockerfile).write_bytes(recipe)
        check_recipe(folder / dockerfile, f"agents/{dockerfile}")
    return manifest


@ci_app.command("validation-comment", rich_help_panel=PLUMBING)
def validation_comment(
    head_sha: Annotated[str, typer.Option(help="workflow_run.head_sha")],
    head_repo: Annotated[str, typer.Option(help="workflow_run.head_repository.full_name")],
    target_url: Annotated[str | None, typer.Option(help="link from the status, e.g. the validation run")] = None,
) -> None:
    """Validate a pull request's changed agents with this (the default branch's) code and post the
    result as a sticky comment and a status on its head.

    The pull request is the one the API returns for the head SHA and head repository; its
    manifests and the Dockerfiles they name are read at that SHA through the API, as data. The
    pull request's own validation run (and anything it uploaded) decides nothing."""
    import tempfile

    from swechain_ci.github.reporting import GitHubReporter
    from swechain_ci.models import ManifestCheck

    with GitHubReporter.from_env() as reporter:
        pr = reporter.pull_for_head(head_sha, head_repo)
        if pr is None:
            typer.echo(f"no single open pull request has head {head_sha[:12]} from {head_repo}: nothing posted")
            return
        files = reporter.pull_files(pr)
        checks = []
        with tempfile.TemporaryDirectory(prefix="swechain-validate-") as tmp:
            for name in _smoke_agents(reporter, files, head_sha):
                file = f"agents/{name}.yaml"
                try:
                    dockerfile = _fetch_agent(reporter, name, head_sha, Path(tmp) / name).install.dockerfile
                    because = file if file in files or not dockerfile else f"agents/{dockerfile}"
                    checks.append(ManifestCheck(file=file, because=because, agent=name, ok=True))
                except SwechainError as exc:
                    checks.append(ManifestCheck(file=file, because=file, ok=False, error=str(exc)[:4000]))
        comment_id, created = reporter.upsert_comment(pr, VALIDATION_KEY, render_validation(checks))
        failed = [c for c in checks if not c.ok]
        state = "failure" if failed else "success"
        description = (
            (f"{len(failed)} invalid: " + "; ".join(c.error or "" for c in failed))
            if failed
            else f"{len(checks)} manifests valid"
        )
        reporter.set_commit_status(head_sha, state, description, context="swechain-ci/validate", target_url=target_url)
    typer.echo(f"{'created' if created else 'updated'} comment {comment_id} on pull request #{pr}; status {state}")


def _smoke_agents(reporter, files: list[str], sha: str) -> list[str]:
    """The agents a pull request's changed files concern: changed manifests, and the manifests
    (at the head) naming a changed Dockerfile."""
    import yaml

    from swechain_ci.agents.manifest import AgentManifest, agents_concerned

    changed = [
        PurePosixPath(path).relative_to("agents")
        for path in files
        if len(PurePosixPath(path).parts) > 1 and PurePosixPath(path).parts[0] == "agents"
    ]
    dockerfiles: dict[str, str | None] = {}
    if any(not agents_concerned(c, {}) for c in changed):  # not only manifests: which ones use them, at the head
        for manifest_name in reporter.names_at("agents", sha):
            if not manifest_name.endswith(".yaml"):
                continue
            try:
                data = yaml.safe_load(reporter.file_at(f"agents/{manifest_name}", sha) or b"")
                dockerfiles[manifest_name[: -len(".yaml")]] = AgentManifest.model_validate(data).install.dockerfile
            except Exception:  # an invalid manifest is reported when it is itself changed
                continue
    manifests_first = sorted(changed, key=lambda c: not agents_concerned(c, {}))
    return list(dict.fromkeys(n for c in manifests_first for n in agents_concerned(c, dockerfiles)))


def requested_sha(text: str) -> str:
    """The commit a smoke request names: a ``/smoke <sha>`` comment or a dispatch's ``sha`` input."""
    found = re.fullmatch(r"\s*(?:/smoke\s+)?([0-9a-fA-F]{40})(?:\s.*)?", text, flags=re.S)
    if not found:
        shown = text.strip().splitlines()[0][:60] if text.strip() else "nothing"
        raise SwechainError(
            f"the smoke request names {shown!r}, not a commit: comment `/smoke <the full 40-character SHA of "
            "the head you reviewed>` (or dispatch with that sha)"
        )
    return found.group(1).lower()


@ci_app.command("smoke-plan", rich_help_panel=PLUMBING)
def smoke_plan(
    pr: Annotated[int, typer.Option("--pr", min=1, help="the pull request")],
    actor: Annotated[str, typer.Option(help="who asked for the smoke run (must have write access)")],
    output: Annotated[Path, typer.Option(help="where the PR's manifests (and the Dockerfiles they name) are written")],
    request: Annotated[
        str, typer.Option(help="the commit reviewed: the `/smoke <sha>` comment's body, or the dispatch's sha input")
    ],
    chains: Annotated[list[str] | None, typer.Option(help="chains to smoke on")] = None,
) -> None:
    """Check that ACTOR may start a smoke run and that the PR's head is the commit REQUEST names, then
    read the PR's changed agents/<name>.yaml and the Dockerfiles they name at that commit, through
    the API, as data; validate them; print pr=, head_sha=, agents= and matrix= lines for
    $GITHUB_OUTPUT. A failure after the permission check is posted on the pull request and as a
    status on its head."""
    from swechain_ci.github.reporting import GitHubReporter
    from swechain_ci.markdown import block

    chosen_chains = _split(chains) or ["toy"]
    with GitHubReporter.from_env() as reporter:
        permission = reporter.permission(actor)
        if permission not in ("admin", "maintain", "write"):
            raise SwechainError(
                f"{actor} has {permission} permission on {reporter.config.repository}: "
                "only maintainers with write access start smoke runs"
            )
        head, head_repo = reporter.pull_head(pr)
        try:
            sha = requested_sha(request)
            if sha != head.lower():
                raise SwechainError(
                    f"the smoke request names {sha[:12]}, but the head of pull request #{pr} is {head[:12]}: "
                    f"review {head[:12]} and comment `/smoke {head}`"
                )
            agents = _smoke_agents(reporter, reporter.pull_files(pr), sha)
            if not agents:
                raise SwechainError(
                    f"pull request #{pr} changes no agent manifest nor a Dockerfile one names: nothing to smoke"
                )
            folder = output / "agents"
            for name in agents:
                _fetch_agent(reporter, name, sha, folder)
        except SwechainError as exc:
            reporter.upsert_comment(pr, SMOKE_KEY, "## Smoke run not started\n\n" + block(str(exc), 2000) + "\n")
            reporter.set_commit_status(head, "failure", f"smoke run not started: {exc}", context="swechain-ci/smoke")
            raise
    include = [{"agent": a, "chain": c} for a in agents for c in chosen_chains]
    typer.echo(
        f"pr={pr}\nhead_sha={sha}\nhead_repo={head_repo}\nagents={','.join(agents)}\n"
        f"matrix={json.dumps({'include': include}, separators=(',', ':'))}"
    )


@ci_app.command("publish-leaderboard", rich_help_panel=PLUMBING)
def publish_leaderboard_command(
    runs_dirs: Annotated[list[Path], typer.Argument(metavar="RUNS_DIR...", help="folders searched for scorecard.json")],
    branch: Annotated[str, typer.Option(help="the branch to commit to, e.g. the default branch")],
    remote: Annotated[str, typer.Option(help="the remote to push to")] = "origin",
    folder: Annotated[str, typer.Option(help="folder in the branch for leaderboard.json/.md/.png")] = "reports",
    repo: Annotated[Path, typer.Option(help="a clone of the repository (only its object store is used)")] = Path("."),
    week: Annotated[
        str | None, typer.Option(help="ISO week of the history snapshot (FOLDER/history/WEEK.json); default this week")
    ] = None,
    with_files: Annotated[
        list[Path] | None,
        typer.Option("--with", help="also commit this file at the same path (e.g. reports/refresh.json); repeatable"),
    ] = None,
) -> None:
    """Commit the leaderboard onto the remote branch's current head and push; nothing if its content is unchanged.

    The leaderboard is also kept as this week's history snapshot. Appends the leaderboard to the job
    summary. GITHUB_TOKEN, if set, is given to git's fetch and push only."""
    from swechain_ci.github.publish import publish_leaderboard
    from swechain_ci.github.reporting import write_job_summary
    from swechain_ci.scoring.leaderboard import build_leaderboard, render_markdown
    from swechain_ci.site.history import check_week, this_week

    board = build_leaderboard(runs_dirs)
    extra = {}
    for path in with_files or []:
        if not path.is_file() or path.is_absolute() or ".." in path.parts:
            raise SwechainError(f"--with {path}: give a file inside the checkout, by its relative path")
        extra[path.as_posix()] = path.read_bytes()
    commit = publish_leaderboard(
        board, repo, remote, branch, folder, week=check_week(week) if week else this_week(), extra_files=extra
    )
    outcome = (
        f"Published to `{branch}` as {commit[:12]}."
        if commit
        else f"Unchanged: `{branch}` already holds this leaderboard; nothing committed."
    )
    write_job_summary(render_markdown(board) + "\n" + outcome + "\n")
    typer.echo(f"leaderboard {'published: ' + commit if commit else 'unchanged'}")


@ci_app.command("fetch-branch", rich_help_panel=PLUMBING)
def fetch_branch_command(
    branch: Annotated[str, typer.Argument(help="e.g. runs/<agent>/<chain>/<id>")],
    remote: Annotated[str, typer.Option(help="the remote")] = "origin",
    repo: Annotated[Path, typer.Option(help="the repository")] = Path("."),
) -> None:
    """Bring a branch from the remote if it exists there (GITHUB_TOKEN, if set, goes to this git call only)."""
    from swechain_ci.github.publish import fetch_branch

    sha = fetch_branch(repo, remote, branch)
    typer.echo(f"fetched {branch} at {sha[:12]}" if sha else f"{remote} has no branch {branch} yet")


@ci_app.command("push-branch", rich_help_panel=PLUMBING)
def push_branch_command(
    branch: Annotated[str, typer.Argument(help="e.g. runs/<agent>/<chain>/<id>")],
    remote: Annotated[str, typer.Option(help="the remote")] = "origin",
    repo: Annotated[Path, typer.Option(help="the repository")] = Path("."),
) -> None:
    """Push a local branch to the remote (GITHUB_TOKEN, if set, goes to this git call only); nothing if it does not exist."""
    from swechain_ci.github.publish import push_branch

    sha = push_branch(repo, remote, branch)
    typer.echo(f"pushed {branch} at {sha[:12]}" if sha else f"no local branch {branch}: nothing to push")


if __name__ == "__main__":  # pragma: no cover
    try:
        ci_app()
    except SwechainError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
