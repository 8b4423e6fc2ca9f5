"""swechain-ci: run coding agents through a chain of a package's releases and score them as SWE-Chain does.

The workflows call this same command line; their commands are listed apart."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Annotated

import typer
from tabulate import tabulate

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import PLUMBING, ci_app
from swechain_ci.records import RunFolder
from swechain_ci.settings import state_home
from swechain_ci.specs.cli import specs_app

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__, pretty_exceptions_enable=False)
chain_app = typer.Typer(no_args_is_help=True, help="Chain definitions and their oracles.")
app.add_typer(chain_app, name="chain")
app.add_typer(specs_app, name="specs")
app.add_typer(ci_app)
agents_app = typer.Typer(no_args_is_help=True, help="Agent manifests (agents/<name>.yaml).")
app.add_typer(agents_app, name="agents")
integrity_app = typer.Typer(
    no_args_is_help=True, help="A run's integrity findings, and a maintainer's clearing of them."
)
app.add_typer(integrity_app, name="integrity")
site_app = typer.Typer(no_args_is_help=True, help="The static leaderboard site: build it, serve it.")
app.add_typer(site_app, name="site")


def _version(shown: bool) -> None:
    if shown:
        import swechain_ci

        typer.echo(f"swechain-ci {swechain_ci.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """A benchmark, run as CI, of coding agents maintaining a Python package through a chain of its releases."""


@contextlib.contextmanager
def run_folder_lock(output: Path) -> Iterator[None]:
    """One run at a time into a folder: a second is refused in one line (it would remove the first's
    containers, which share the folder's label). The lock lives in the state home, not in the folder."""
    if output.exists() and not output.is_dir():
        raise SwechainError(f"--output {output} is a file, not a folder; give a folder for the run's results")
    home = state_home()
    key = hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:24]
    try:
        (home / "locks").mkdir(parents=True, exist_ok=True)
        handle = open(home / "locks" / f"run-{key}.lock", "w")  # noqa: SIM115  (held for the whole run)
    except OSError as exc:
        raise SwechainError(
            f"cannot write the state home {home} ({exc.strerror}); set SWECHAIN_HOME to a writable folder"
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SwechainError(
                f"another swechain-ci run is writing to {output}; wait for it to end, or give another --output"
            ) from None
        yield


def print_scorecard(card) -> None:
    """The 80-column scorecard on a terminal (coloured there), the same text when piped; scorecard.md keeps
    the Markdown for GitHub."""
    from swechain_ci.scoring.terminal import render_terminal

    typer.echo(render_terminal(card, color=sys.stdout.isatty()), nl=False)


@integrity_app.command("clear")
def integrity_clear(
    output: Annotated[Path, typer.Argument(help="a flagged run's results folder")],
    by: Annotated[str, typer.Option(help="who clears it (a maintainer's name or handle)")],
    reason: Annotated[str, typer.Option(help="why its findings are not gaming")],
) -> None:
    """Clear a flagged run after review, so that leaderboards rank it. Recorded in the run folder
    (integrity-clearance.json) for exactly the findings it saw: new findings flag it again."""
    from swechain_ci.run import rescore
    from swechain_ci.scoring import integrity

    card = rescore(output)
    clearance = integrity.clear(output, card.integrity.flags, by, reason)
    card = rescore(output)
    typer.echo(
        f"cleared {clearance.flags} finding(s) of {output} by {clearance.cleared_by} at {clearance.cleared_at}; "
        f"integrity: {card.integrity.status}"
    )


def _manifests_using(path: Path) -> list[Path]:
    """The manifests that ``path`` (not itself a manifest) concerns: those naming it as their Dockerfile,
    or every one with a Dockerfile for a file under their files/ (agents.manifest.agents_concerned)."""
    from swechain_ci.agents.manifest import agents_concerned, parse_manifest

    folder = path.parent.parent if path.parent.name == "files" else path.parent
    dockerfiles: dict[str, str | None] = {}
    files: dict[str, Path] = {}
    for candidate in sorted(folder.glob("*.yaml")):
        try:
            manifest = parse_manifest(candidate)
        except SwechainError:
            continue  # a broken manifest is reported when it is itself among the changed files
        dockerfiles[candidate.stem], files[candidate.stem] = manifest.install.dockerfile, candidate
    return [files[name] for name in agents_concerned(PurePosixPath(path.relative_to(folder).as_posix()), dockerfiles)]


@agents_app.command("validate")
def agents_validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="manifests, folders, or files a manifest uses (its Dockerfile: the manifests using it are checked); default agents/"
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="also write the findings as JSON (ValidationReport), for the PR comment")
    ] = None,
) -> None:
    """Check manifests; every problem is reported with its file and field, one line each."""
    from swechain_ci.agents.manifest import agents_dir, parse_manifest
    from swechain_ci.agents.recipe import check_recipe
    from swechain_ci.models import ManifestCheck, ValidationReport
    from swechain_ci.records import write_model

    pairs: list[tuple[Path, Path]] = []  # (manifest, the path given that brought it in)
    for path in paths or [agents_dir()]:
        if path.is_dir():
            pairs += [(file, file) for file in sorted(path.glob("*.yaml"))]
        elif path.suffix in (".yaml", ".yml") or not path.exists():
            pairs.append((path, path))
        else:
            users = _manifests_using(path)
            if not users:
                typer.echo(f"note: {path} is not a manifest nor a file one uses: left out", err=True)
            pairs += [(user, path) for user in users]
    if not pairs and not report:
        raise SwechainError(f"no agent manifests found in {', '.join(str(p) for p in paths or [agents_dir()])}")
    problems, checks = [], []
    for file, because in pairs:
        try:
            manifest = parse_manifest(file)
            if manifest.install.dockerfile:
                check_recipe(
                    manifest.folder / manifest.install.dockerfile, str(file.parent / manifest.install.dockerfile)
                )
            typer.echo(f"ok: {file} ({manifest.kind} agent {manifest.name})")
            checks.append(ManifestCheck(file=str(file), because=str(because), agent=manifest.name, ok=True))
        except SwechainError as exc:
            problems.append(str(exc))
            checks.append(ManifestCheck(file=str(file), because=str(because), ok=False, error=str(exc)[:4000]))
    if report:
        write_model(report, ValidationReport(checks=checks))
    if len(problems) == 1:
        raise SwechainError(problems[0])
    for problem in problems:
        typer.echo(f"error: {problem}", err=True)
    if problems:
        raise SwechainError(f"{len(problems)} of {len(pairs)} manifests are invalid (each named above)")


@agents_app.command("list")
def agents_list() -> None:
    """The registered agents and the built-in ones."""
    from swechain_ci.agents import BUILTIN_NAMES
    from swechain_ci.agents.manifest import available_manifests, parse_manifest

    rows = [[name, "builtin", "-", "-", "none"] for name in BUILTIN_NAMES]
    rows.append(["replay:<folder>", "builtin", "-", "-", "none"])
    for path in available_manifests():
        m = parse_manifest(path)
        rows.append(
            [
                m.name,
                m.kind,
                m.model or "-",
                ", ".join(m.env) or "-",
                m.network.mode + (f" ({', '.join(m.network.allow)})" if m.network.allow else ""),
            ]
        )
    typer.echo(tabulate(rows, headers=["agent", "kind", "model", "needs", "network"], tablefmt="github"))


@chain_app.command("list")
def chain_list(
    markdown: Annotated[bool, typer.Option(help="every column (package, paper id) as a GitHub table")] = False,
) -> None:
    """List the chains in chains/: Python, versions, steps, source kind, built oracles, spec levels, and
    whether the SWE-Chain paper has the chain (its id is in the chain's chain.yaml, paper_id)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from swechain_ci.chain.definition import available_chains, load_chain
    from swechain_ci.evaluation.oracle import built_ranges
    from swechain_ci.specs.store import levels_available

    rows = []
    for name in available_chains():
        chain = load_chain(name)
        rows.append(
            {
                "chain": name,
                "paper id": chain.config.paper_id or "-",
                "package": chain.config.package,
                "python": chain.config.python,
                "versions": f"{chain.versions[0]} → {chain.versions[-1]}",
                "steps": str(len(chain.steps)),
                "source": ", ".join(sorted({v.source.kind for v in chain.config.versions})),
                "oracle (steps)": ", ".join(built_ranges(chain)) or "-",
                "spec levels": ", ".join(levels_available(chain)) or "-",
            }
        )
    if markdown:
        typer.echo(
            tabulate([list(r.values()) for r in rows], headers=list(rows[0]), tablefmt="github", disable_numparse=True)
        )
        return
    shown = {"chain": "chain", "python": "python", "versions": "versions", "steps": "steps", "source": "source",
             "oracle (steps)": "oracle", "spec levels": "levels"}  # fmt: skip
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption="paper ids and packages: chain list --markdown")
    for header in shown.values():
        table.add_column(header, no_wrap=header in ("chain", "versions"))
    for row in rows:
        table.add_row(*(row[key] for key in shown))
    # Fits the terminal (80 columns when not one); names come from the repository's own chains/.
    Console(highlight=False, markup=False).print(table)


@chain_app.command("build")
def chain_build(
    chain: Annotated[str, typer.Argument(help="chain id (chains/<id>/chain.yaml) or path")],
    force: Annotated[bool, typer.Option(help="rebuild the oracle even if its inputs are unchanged")] = False,
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based), e.g. 9-13")] = None,
    job_summary: Annotated[bool, typer.Option(help="also write the oracle table to $GITHUB_STEP_SUMMARY")] = False,
    verify: Annotated[
        bool,
        typer.Option(
            help="rebuild every gold run (no stored oracle or kept run is reused) and check the result against "
            "the committed chains/<id>/oracle.json instead of writing it; exit 2 on a mismatch"
        ),
    ] = False,
    write_dataset: Annotated[
        bool,
        typer.Option(
            help="record the built steps in chains/<id>/oracle.json, the committed ground truth (a review reads the "
            "change as a diff); without it the build only says how it differs"
        ),
    ] = False,
    plan_jobs: Annotated[
        bool,
        typer.Option(
            help="print the gold runs split over a pool of runners, one share per version, as a job matrix "
            '({"include": [...]}) and exit',
            rich_help_panel=PLUMBING,
        ),
    ] = False,
    gold_runs_of: Annotated[
        str | None,
        typer.Option(
            metavar="VERSION",
            help="only run (and keep) the gold runs of VERSION's tests, one runner's share; no oracle is derived",
            rich_help_panel=PLUMBING,
        ),
    ] = None,
    hand_on: Annotated[
        Path | None,
        typer.Option(help="with --gold-runs-of: copy the share's kept runs into this folder", rich_help_panel=PLUMBING),
    ] = None,
    gold_runs_from: Annotated[
        Path | None,
        typer.Option(
            help="take in the gold runs the pool's runners handed on in this folder, each verified against the "
            "inputs computed here (one made from other inputs, or not matching its recorded hash, is refused), "
            "then build the oracle from them",
            rich_help_panel=PLUMBING,
        ),
    ] = None,
) -> None:
    """Build the chain's images and oracle, and say how it differs from the committed chains/<id>/oracle.json
    (--write-dataset records it there)."""
    import json

    from swechain_ci.chain.definition import load_chain
    from swechain_ci.containers import images
    from swechain_ci.containers.sandbox import DockerSandbox
    from swechain_ci.evaluation import dataset, oracle

    loaded = load_chain(chain).select_steps(steps)
    if plan_jobs:
        typer.echo(json.dumps({"include": oracle.pool_shares(loaded)}))
        return
    if hand_on is not None and gold_runs_of is None:
        raise SwechainError("--hand-on needs --gold-runs-of VERSION: it hands on that share's gold runs")
    if gold_runs_of is not None and (gold_runs_from is not None or verify):
        raise SwechainError(
            "--gold-runs-of runs one share of the gold runs; give --gold-runs-from or --verify to the build "
            "that derives the oracle"
        )
    if verify and gold_runs_from is not None:
        raise SwechainError("--verify reruns every gold run itself; leave out --gold-runs-from")
    if gold_runs_of is not None and gold_runs_of not in loaded.versions:
        raise SwechainError(
            f"--gold-runs-of {gold_runs_of}: not a version of chain {loaded.id} steps {loaded.step_range} "
            f"(versions: {', '.join(loaded.versions)}); `chain build {loaded.id} --plan-jobs` lists the shares"
        )
    if verify:
        dataset.require(loaded)  # a missing dataset is said before any image is built
    sandbox = DockerSandbox()
    if gold_runs_of is not None:
        share_images = images.ensure_images(sandbox, loaded, only=[gold_runs_of])
        kept = oracle.gold_runs_of(sandbox, loaded, share_images, gold_runs_of, force=force)
        typer.echo(f"{len(kept)} gold runs of {gold_runs_of} kept in {oracle.gold_runs_folder(loaded)}")
        if hand_on is not None:
            oracle.hand_on(kept, hand_on)
            typer.echo(f"handed on into {hand_on}")
        return
    chain_images = images.ensure_images(sandbox, loaded)
    taken = oracle.take_handed_on(loaded, chain_images, gold_runs_from) if gold_runs_from is not None else frozenset()
    built = oracle.build(sandbox, loaded, chain_images, force=force or verify, handed_on=taken)
    table = tabulate(oracle.summary_rows(built), headers="keys", tablefmt="github")
    typer.echo(table)
    typer.echo(f"\noracle stored at {oracle.oracle_path(loaded)}")
    if verify:
        stale = dataset.verify(loaded, built)
        typer.echo(f"the rebuild of steps {loaded.step_range} reproduces {dataset.dataset_path(loaded)}")
        for line in stale:
            typer.echo(
                f"  same tests, other inputs ({line}): `chain build {loaded.id} --write-dataset` records the new inputs"
            )
    elif write_dataset:
        path, changed = dataset.publish(loaded, built)
        typer.echo(f"dataset written to {path}" + (": " if changed else " (no change in its tests)"))
        for line in changed:
            typer.echo(f"  {line}")
    else:
        # A build never changes the repository's ground truth by itself (tests and runners build too).
        committed = dataset.load(loaded)
        rebuilt = dataset.from_oracle(loaded, built)
        differences = dataset.changes(committed, rebuilt)
        stale = dataset.stale_inputs(committed, rebuilt) if committed else []
        if differences or stale:
            typer.echo(f"{dataset.dataset_path(loaded)} differs from this build (`--write-dataset` records it):")
            for line in [*differences, *(f"{line}: same tests, other inputs" for line in stale)]:
                typer.echo(f"  {line}")
        else:
            typer.echo(f"{dataset.dataset_path(loaded)} agrees with this build")
    if job_summary:
        from swechain_ci.github.reporting import write_job_summary

        sane = sum(1 for s in built.sanity if s.ok)
        write_job_summary(
            f"# Oracle of {loaded.id}, steps {loaded.step_range}\n\n{table}\n\n"
            f"{sane} of {len(built.sanity)} versions pass their sanity check.\n"
        )


@chain_app.command("export")
def chain_export(
    chain: Annotated[str, typer.Argument(help="chain id or path, with a committed chains/<id>/oracle.json")],
    output: Annotated[Path | None, typer.Option(help="file to write; standard output when unset")] = None,
) -> None:
    """The committed oracle as SWE-bench-style JSON lines: one instance per step, FAIL_TO_PASS and PASS_TO_PASS."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.evaluation import dataset
    from swechain_ci.records import write_text

    published = dataset.require(load_chain(chain))
    text = dataset.swebench_jsonl(published)
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_text(output, text)
        typer.echo(f"{len(published.steps)} instances written to {output}")


@chain_app.command("diff")
def chain_diff(
    chain: Annotated[str, typer.Argument(help="chain id or path")],
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based)")] = None,
) -> None:
    """The three-way diff per step (code, tests, others): statistics, and where the diffs are."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.chain.diffs import chain_diffs, diff_folder

    loaded = load_chain(chain).select_steps(steps)
    rows = []
    for index, d in enumerate(chain_diffs(loaded), start=loaded.step_offset + 1):
        rows.append(
            [
                index,
                f"{d.prev_version} -> {d.next_version}",
                *(f"{p.files} files, {p.hunks} hunks, +{p.added}/-{p.removed}" for p in (d.code, d.tests, d.others)),
            ]
        )
    typer.echo(tabulate(rows, headers=["step", "upgrade", "code", "tests", "others"], tablefmt="github"))
    first, second = loaded.steps[0]
    typer.echo(f"\ndiffs in {diff_folder(loaded, first, second).parent}")


@chain_app.command("compare")
def chain_compare(
    chain: Annotated[str, typer.Argument(help="chain id or path; its oracle must be built")],
    reference: Annotated[
        Path,
        typer.Option(
            help="the reference implementation's oracle folder for this chain, or the folder above it "
            "(its chain folder is found by the chain's paper_id)"
        ),
    ],
    details: Annotated[bool, typer.Option(help="list the tests each side alone counts, with why")] = True,
    steps: Annotated[str | None, typer.Option(help="the oracle built with --steps A-B")] = None,
) -> None:
    """Agreement per step between our upgrade-related tests and the reference's, each difference explained.

    Ours is the committed chains/<id>/oracle.json where there is one, else the oracle built here."""
    from swechain_ci.chain import sources
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.evaluation import dataset, oracle
    from swechain_ci.evaluation.compare import TreeChanges, compare, tree_changes
    from swechain_ci.models import ChainOracle, StepOracle
    from swechain_ci.records import read_model

    loaded = load_chain(chain).select_steps(steps)
    published = dataset.load(loaded)
    path = oracle.oracle_path(loaded)
    if published is not None:
        wanted = range(loaded.step_offset + 1, loaded.step_offset + len(loaded.steps) + 1)
        ours = dataset.as_oracle(published)
        ours = ours.model_copy(update={"steps": [s for s in ours.steps if s.index in wanted]})
        typer.echo(f"our oracle: {dataset.dataset_path(loaded)} (the committed dataset)")
    elif path.exists():
        ours = read_model(path, ChainOracle)
        typer.echo(f"our oracle: {path} (built here; no committed dataset)")
    else:
        selection = f" --steps {steps}" if steps else ""
        raise SwechainError(
            f"no oracle for chain {loaded.id}: neither {dataset.dataset_path(loaded)} nor {path}; "
            f"run `swechain-ci chain build {loaded.id}{selection}` first"
        )
    config = loaded.config
    unread: list[str] = []

    def changes_of(step: StepOracle) -> TreeChanges:
        # The two trees show what the reference's old-code runs import that ours cannot (sources are cached).
        try:
            prev_tree, next_tree = (sources.source_root(loaded, v) for v in (step.prev_version, step.next_version))
        except SwechainError as exc:
            unread.append(f"step {step.index}: {exc}")
            return TreeChanges()
        return tree_changes(prev_tree, next_tree, loaded)

    rows = compare(
        ours,
        reference,
        config.paper_id,
        config.reference_artifacts,
        config.reference_skips,
        config.oracle.known_failures,
        changes_of,
        config.reference_environment,
    )
    table = [
        [
            r.index,
            f"{r.prev_version} -> {r.next_version}",
            len(r.both),
            len(r.only_ours),
            len(r.only_theirs),
            "n/a" if r.jaccard is None else f"{r.jaccard:.2f}",
            r.verdict,
        ]
        for r in rows
    ]
    typer.echo(
        tabulate(
            table,
            headers=["step", "upgrade", "both", "only ours", "only theirs", "Jaccard", "verdict"],
            tablefmt="github",
        )
    )
    if len(rows) < len(ours.steps):
        missing = sorted({s.index for s in ours.steps} - {r.index for r in rows})
        typer.echo(
            f"\n{len(rows)} of {len(ours.steps)} steps compared: the reference folder has no results for "
            f"step{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}"
        )
    for line in unread:
        typer.echo(f"sources not read, so the reference's kept modules and old support code are not looked for: {line}")
    if details:
        for r in rows:
            for d in r.differences:
                typer.echo(f"step {r.index} {d.side}: {d.test}: {d.cause}: {d.why}")


@app.command("run")
def run(
    chain: Annotated[str, typer.Option(help="chain id or path")],
    agent: Annotated[
        str, typer.Option(help="oracle, noop, replay:<patch folder>, an agents/<name>.yaml name or a manifest path")
    ],
    output: Annotated[
        Path | None,
        typer.Option(help="results folder; an unfinished run there resumes (default: runs/<chain>-<agent>[-<steps>])"),
    ] = None,
    spec_level: Annotated[
        str | None,
        typer.Option(
            help="specification level (default: the chain's; the baselines oracle, noop and replay: run with none "
            "when the chain has no specification at it, recorded as level none)"
        ),
    ] = None,
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based), e.g. 9-13; default all")] = None,
    git_branch: Annotated[
        str | None, typer.Option(help="commit each phase to this branch, e.g. runs/<agent>/<chain>/<id>")
    ] = None,
    git_repo: Annotated[Path, typer.Option(help="repository holding the run branch")] = Path("."),
    push: Annotated[str | None, typer.Option(help="remote to push the run branch to as commits land")] = None,
    max_steps: Annotated[int | None, typer.Option(min=1, help="run at most this many steps, then pause")] = None,
    phase: Annotated[
        str | None,
        typer.Option(
            help="run one phase only, as a workflow job does: build, evaluate, fix, evaluate-fix or hand-on "
            "(with --git-branch, the run's records come from the branch)"
        ),
    ] = None,
    step: Annotated[
        int | None, typer.Option(min=1, help="with --phase: the step it belongs to (default: the run's current step)")
    ] = None,
) -> None:
    """Run a full chain with one agent, building whatever is not built yet, and print the scorecard.

    With --phase, run one phase of the run's current step, print that phase's summary, and
    write it to the job summary and `step`/`next` to $GITHUB_OUTPUT when in GitHub Actions."""
    from swechain_ci.agents.manifest import scrub_runner_environment
    from swechain_ci.github.branches import RunBranch
    from swechain_ci.run import PHASES, Phase, run_chain, run_phase

    branch = RunBranch(git_repo, git_branch, push) if git_branch else None
    if output is None:
        name = "-".join(part for part in (chain, agent, steps) if part)
        output = Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    if phase is None:
        if step is not None:
            raise SwechainError("--step goes with --phase; drop --step to run the whole chain")
        runner = scrub_runner_environment(os.environ)  # nothing the agents run in this process finds the runner's
        with run_folder_lock(output):
            try:
                card = run_chain(chain, agent, output, spec_level, steps, branch, max_steps, environ=runner)
            except KeyboardInterrupt:
                raise SwechainError(
                    f"interrupted: every finished phase is kept in {output}; run the same command again to resume "
                    "from the first unfinished one"
                ) from None
        print_scorecard(card)
        typer.echo(f"Results in {output}")
        return
    if phase not in PHASES:
        raise SwechainError(f"--phase {phase} is not a phase: use one of {', '.join(PHASES)}")
    if max_steps is not None:
        raise SwechainError("--max-steps counts whole steps; drop it with --phase")
    from swechain_ci.github.phase_summaries import phase_summary
    from swechain_ci.github.reporting import write_job_summary, write_outputs

    runner = scrub_runner_environment(os.environ)  # the job's files and the grants are handed on, never inherited
    done = run_phase(chain, agent, output, Phase(phase), step, spec_level, steps, branch, environ=runner)
    at = done.ran or done.next
    if done.ran is not None and done.ran.step is not None:
        markdown = phase_summary(output.resolve(), done.ran.step.index, phase)
    else:
        markdown = f"## {phase}\n\n{done.summary}\n"
        if phase == Phase.HAND_ON and RunFolder(output).scorecard.is_file():
            markdown += "\n" + phase_summary(output.resolve(), 0, phase)
    typer.echo(markdown)
    write_job_summary(markdown, environ=runner)
    write_outputs({"step": str(at.step.index) if at.step else "", "next": done.next.phase}, environ=runner)


@app.command("plan")
def plan_command(
    agents: Annotated[str, typer.Option(help="agents, comma-separated (as --agent of run takes them)")],
    chains: Annotated[str, typer.Option(help="chains, comma-separated")],
    steps: Annotated[str | None, typer.Option(help="only steps A-B of each chain; default all")] = None,
    repeats: Annotated[int, typer.Option(min=1, help="runs of each (agent, chain) pair")] = 1,
    runs: Annotated[
        list[Path] | None, typer.Option(help="folders of earlier runs whose records inform the estimate")
    ] = None,
) -> None:
    """What a dispatch will cost before it starts: runner time and agent dollars per (agent, chain),
    from recorded suite times, agent phases and costs, or the manifests' limits where none are recorded."""
    from tabulate import tabulate as table

    from swechain_ci.agents import BUILTIN_NAMES, manifest_for
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.evaluation.oracle import built_ranges
    from swechain_ci.scoring.estimate import Request, estimate, recorded, total

    history = recorded(state_home() / "gold-runs", [p for p in (runs or [Path("runs")]) if p.is_dir()])
    estimates = []
    for chain_name in [c.strip() for c in chains.split(",") if c.strip()]:
        chain = load_chain(chain_name).select_steps(steps)
        built = chain.step_range in built_ranges(chain)
        for agent in [a.strip() for a in agents.split(",") if a.strip()]:
            manifest = manifest_for(agent)
            baseline = agent in BUILTIN_NAMES or agent.startswith("replay:")
            request = Request(
                agent=agent if not agent.startswith("replay:") else "replay",
                chain=chain.id,
                steps=len(chain.steps),
                versions_unbuilt=0 if built else len(chain.versions),
                limit_wall_s=None if baseline else float(manifest.limits.wall_s),
                limit_cost_usd=None if baseline else manifest.limits.cost_usd,
                priced=not baseline,
            )
            for _ in range(repeats):
                estimates.append(estimate(request, history))

    def hours(seconds: float | None) -> str:
        return "unknown" if seconds is None else f"{seconds / 3600:.2f} h"

    def dollars(value: float | None) -> str:
        return "unknown" if value is None else f"${value:,.2f}"

    rows = []
    for e in estimates[::repeats]:
        rows.append([e.request.agent, e.request.chain, e.request.steps, hours(e.runner_s), dollars(e.dollars)])
    typer.echo(table(rows, headers=["agent", "chain", "steps", "runner time", "agent $"], tablefmt="simple"))
    runner, spent = total(estimates)
    typer.echo(f"\ntotal ({repeats} run(s) of each pair): runner {hours(runner)}, agents {dollars(spent)}")
    for e in estimates[::repeats]:
        typer.echo(f"  {e.request.agent} on {e.request.chain}: " + "; ".join(e.basis))


RunDir = Annotated[Path | None, typer.Argument(help="a run's results folder", show_default=False)]
RunDirOption = Annotated[Path | None, typer.Option("--output", help="the same folder, named as run names it")]


def run_folder(positional: Path | None, option: Path | None) -> Path:
    """A run's folder, given as ``run`` takes it (--output) or positionally."""
    if positional is not None and option is not None and positional != option:
        raise SwechainError(f"two run folders given ({positional} and --output {option}); give one")
    folder = positional or option
    if folder is None:
        raise SwechainError("give the run's folder: positionally or as --output DIR, as run wrote it")
    return folder


@app.command("score")
def score(output: RunDir = None, output_option: RunDirOption = None) -> None:
    """Re-score stored results without Docker; rewrites scorecard.json and scorecard.md."""
    from swechain_ci.run import rescore

    print_scorecard(rescore(run_folder(output, output_option)))


@app.command("report")
def report(
    output: RunDir = None,
    output_option: RunDirOption = None,
    markdown: Annotated[bool, typer.Option(help="print scorecard.md, every column, as GitHub shows it")] = False,
) -> None:
    """Print a run's scorecard."""
    from swechain_ci.models import Scorecard
    from swechain_ci.records import read_model
    from swechain_ci.scoring.report import render

    card = read_model(RunFolder(run_folder(output, output_option)).scorecard, Scorecard)
    if markdown:
        typer.echo(render(card))
    else:
        print_scorecard(card)


@site_app.command("build")
def site(
    output: Annotated[Path, typer.Argument(help="a new folder for the site (or one it built before, with --force)")],
    runs: Annotated[
        list[Path] | None, typer.Argument(help="folders searched for runs (scorecard.json, run.json, steps/)")
    ] = None,
    history: Annotated[Path, typer.Option(help="weekly leaderboard snapshots (YYYY-Www.json)")] = Path(
        "reports/history"
    ),
    leaderboard: Annotated[
        Path | None,
        typer.Option(help="the current leaderboard.json; default: built from RUNS, else the latest snapshot"),
    ] = None,
    week: Annotated[str | None, typer.Option(help="the current ISO week, e.g. 2026-W49; default this week")] = None,
    llm_summary: Annotated[
        bool, typer.Option(help="add a model-written sentence per failed step (Anthropic API; cached)")
    ] = False,
    judge_failures: Annotated[
        bool,
        typer.Option(help="a model judge's SWE-Bench Pro category per failed step, from its trajectory (cached)"),
    ] = False,
    model: Annotated[str | None, typer.Option(help="model for --llm-summary and --judge-failures")] = None,
    force: Annotated[bool, typer.Option(help="replace OUTPUT when it holds a site built before")] = False,
) -> None:
    """Build the static site: leaderboard (Average and per chain), a page per run, the trend over the weeks."""
    from swechain_ci.records import read_model
    from swechain_ci.scoring.leaderboard import Leaderboard, build_leaderboard
    from swechain_ci.site.build import build_site
    from swechain_ci.site.history import check_week, load_history, this_week

    snapshots = load_history(history)
    if leaderboard is not None:
        board = read_model(leaderboard, Leaderboard)
    elif runs:
        board = build_leaderboard(runs)
    elif snapshots:
        board = snapshots[-1][1]
    else:
        raise SwechainError(
            f"nothing to show: no runs given and no snapshots in {history}; "
            "give run folders, --leaderboard or --history"
        )
    summarize = None
    if llm_summary:
        from swechain_ci.site.summary import StepSummarizer
        from swechain_ci.specs.llm import DEFAULT_MODEL, make_llm

        summarize = StepSummarizer(make_llm(model or DEFAULT_MODEL))
    judge = None
    if judge_failures:
        from swechain_ci.site.failure_judge import FailureJudge
        from swechain_ci.specs.llm import DEFAULT_MODEL, make_llm

        judge = FailureJudge(make_llm(model or DEFAULT_MODEL))
    week_shown = check_week(week) if week else this_week()
    pages = build_site(output, board, snapshots, week_shown, summarize, judge=judge, force=force)
    typer.echo(f"site written to {output}: {len(pages)} pages; see it with: swechain-ci site serve {output}")


@site_app.command("serve")
def site_serve(
    output: Annotated[Path, typer.Argument(help="a folder the site was built into")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="port on 127.0.0.1 (0: any free one)")] = 8000,
) -> None:
    """Serve a built site on 127.0.0.1 only, as GitHub Pages would, until Ctrl-C."""
    import functools
    import http.server

    if not (output / "index.html").is_file():
        raise SwechainError(
            f"{output} holds no site (no index.html); build one with: swechain-ci site build {output} RUNS"
        )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(output))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise SwechainError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another with --port") from None
    typer.echo(f"serving {output} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.server_close()


@app.command("snapshot")
def snapshot(
    leaderboard: Annotated[Path, typer.Option(help="the leaderboard.json to keep")] = Path("reports/leaderboard.json"),
    history: Annotated[Path, typer.Option(help="where the weekly snapshots live")] = Path("reports/history"),
    week: Annotated[str | None, typer.Option(help="ISO week, e.g. 2026-W49; default this week")] = None,
) -> None:
    """Keep the leaderboard as this week's history snapshot (one per week; a second run that week replaces it)."""
    from swechain_ci.records import read_model
    from swechain_ci.scoring.leaderboard import Leaderboard
    from swechain_ci.site.history import record_snapshot

    path = record_snapshot(read_model(leaderboard, Leaderboard), history, week)
    typer.echo(f"snapshot {path}")


@app.command("alerts")
def alerts(
    runs: Annotated[
        list[Path] | None, typer.Argument(help="this week's runs; default: compare the last two snapshots")
    ] = None,
    history: Annotated[Path, typer.Option(help="weekly leaderboard snapshots (YYYY-Www.json)")] = Path(
        "reports/history"
    ),
    threshold: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            envvar="SWECHAIN_ALERT_THRESHOLD",
            help="alert when chain B+F F1 or resolving drops by more than this (0.05 = 5 points)",
        ),
    ] = 0.05,
    week: Annotated[str | None, typer.Option(help="this week (ISO, e.g. 2026-W49); default the current one")] = None,
    comment_on: Annotated[
        int | None,
        typer.Option(min=1, envvar="SWECHAIN_ALERT_ISSUE", help="report on GitHub as a comment on this issue"),
    ] = None,
    open_issue: Annotated[
        str | None,
        typer.Option(envvar="SWECHAIN_ALERT_ISSUE_TITLE", help="else report on GitHub as a new issue with this title"),
    ] = None,
    site_url: Annotated[
        str | None, typer.Option(envvar="SWECHAIN_SITE_URL", help="the published site, to link the run pages")
    ] = None,
    workflow_url: Annotated[str | None, typer.Option(help="the workflow run holding this week's run artifacts")] = None,
) -> None:
    """Compare this week's leaderboard with the latest earlier snapshot: oracle changes and drops.

    Alerts go to the job summary (call this before anything else writes it) and, if asked, to GitHub."""
    from swechain_ci.github.alerts import post_alerts
    from swechain_ci.github.reporting import GitHubReporter, write_job_summary
    from swechain_ci.scoring.leaderboard import Leaderboard, build_leaderboard
    from swechain_ci.site.history import check_week, load_history, regressions, render_alerts, this_week

    snapshots = load_history(history)
    current: tuple[str, Leaderboard] | None
    if runs:
        this = (check_week(week) if week else this_week(), build_leaderboard(runs))
        current, earlier = this, [s for s in snapshots if s[0] < this[0]]
    else:
        current, earlier = (snapshots[-1], snapshots[:-1]) if snapshots else (None, [])
    if current is None or not earlier:
        typer.echo(f"no earlier week's snapshot in {history}: nothing to compare yet")
        return
    found = regressions(earlier[-1], current, threshold)
    if not found:
        typer.echo(f"no alerts: {earlier[-1][0]} -> {current[0]}, threshold {100 * threshold:g} points")
        return
    markdown = render_alerts(found, threshold, site_url, workflow_url)
    write_job_summary(markdown)
    typer.echo(markdown)
    if comment_on is not None or open_issue is not None:
        with GitHubReporter.from_env() as reporter:
            where = post_alerts(reporter, markdown, comment_on, None if comment_on is not None else open_issue)
            typer.echo(f"alerts reported at {where}")


def main() -> None:
    """The console script: a SwechainError is one line on stderr and exit status 2."""
    try:
        app()
    except SwechainError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
