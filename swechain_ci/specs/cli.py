"""``swechain-ci specs``: render L1, synthesize L2-L5 (DecompSynth), fetch and import the published specs, list levels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from tabulate import tabulate

specs_app = typer.Typer(
    no_args_is_help=True,
    help="Upgrade specifications: specs/<chain>/<prev>-<next>/<level>.md.",
)


@specs_app.command("render")
def specs_render(
    chain: Annotated[str, typer.Argument(help="chain id (chains/<id>/chain.yaml) or path")],
    level: Annotated[str, typer.Option(help="the level to render; only L1 is deterministic")] = "L1",
    interface: Annotated[
        bool,
        typer.Option(
            "--interface/--no-interface",
            help="also write L1+interface: L1 plus the interface section (from the code, via ast)",
        ),
    ] = False,
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based), e.g. 9-13")] = None,
    github: Annotated[
        bool,
        typer.Option(
            "--github/--no-github",
            help="fetch the title and text of linked issues and pull requests not cached yet under "
            "specs/<chain>/linked/ from the GitHub API (GITHUB_API_URL, GITHUB_TOKEN)",
        ),
    ] = False,
) -> None:
    """Render LEVEL for every step: the release-note tasks of the target version, with the text
    of their linked issues and pull requests where cached (and, with --interface, LEVEL+interface
    with the interface changes appended)."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.settings import project_root
    from swechain_ci.specs.render import render_chain

    loaded = load_chain(chain).select_steps(steps)
    written = render_chain(loaded, level=level, github=github)
    if interface:
        written += render_chain(loaded, level=level, interface=True)
    rows = []
    for md, _, spec in written:
        notes = spec.release_notes
        rows.append(
            [
                f"{spec.prev_version} → {spec.next_version}",
                len(notes.tasks) if notes.found else "none shipped",
                notes.source_file or "-",
                "-" if spec.interface is None else ("none" if spec.interface.empty else "yes"),
                len(spec.linked),
                md.relative_to(project_root()) if md.is_relative_to(project_root()) else md,
            ]
        )
    headers = ["step", "tasks", "changelog", "interface changes", "linked texts", "written"]
    typer.echo(tabulate(rows, headers=headers, tablefmt="github"))


@specs_app.command("list")
def specs_list(chain: Annotated[str, typer.Argument(help="chain id (chains/<id>/chain.yaml) or path")]) -> None:
    """The specification levels present for each step, and where each came from."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.specs.store import levels_available, provenance, spec_dir

    loaded = load_chain(chain)
    rows = []
    for index, (prev, next_) in enumerate(loaded.steps, start=loaded.step_offset + 1):
        folder = spec_dir(loaded) / f"{prev}-{next_}"
        files = sorted(folder.glob("*.md")) if folder.is_dir() else []
        rows.append([index, f"{prev} → {next_}", ", ".join(p.stem for p in files) or "-"])
        for md in files:
            rows.append(["", "", f"{md.stem}: {provenance(md)}"])
    typer.echo(tabulate(rows, headers=["step", "upgrade", "levels (and where each came from)"], tablefmt="github"))
    typer.echo(
        f"\nlevels present for every step: {', '.join(levels_available(loaded)) or 'none'}; "
        f"default level: {loaded.config.default_spec_level}"
    )


@specs_app.command("synth")
def specs_synth(
    chain: Annotated[str, typer.Argument(help="chain id (chains/<id>/chain.yaml) or path")],
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based), e.g. 9-13")] = None,
    model: Annotated[str, typer.Option(help="Anthropic model (priced in swechain_ci/prices.yaml)")] = (
        "claude-sonnet-4-6"
    ),
    base_url: Annotated[
        str | None, typer.Option(help="Messages API endpoint; default ANTHROPIC_BASE_URL, else Anthropic's")
    ] = None,
    levels: Annotated[str, typer.Option(help="levels to write, comma-separated, from L2,L3,L4,L5")] = "L2,L3,L4,L5",
    interface: Annotated[
        bool,
        typer.Option(
            "--interface/--no-interface",
            help="also write <level>+interface, with the interface section (from the code, via ast)",
        ),
    ] = False,
    jobs: Annotated[int, typer.Option(min=1, help="requests in flight at once")] = 4,
) -> None:
    """DecompSynth: L2-L5 from release notes and code hunks with an LLM (needs ANTHROPIC_API_KEY).

    Every answer is cached under the state home by its inputs: a re-run makes no request.
    Writes specs/<chain>/<prev>-<next>/L<n>.md, L<n>.json and decompsynth.json (model, tokens, cost).
    """
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.settings import project_root
    from swechain_ci.specs.decompsynth import synth_chain
    from swechain_ci.specs.levels import SPEC_LEVELS, parse_levels

    loaded = load_chain(chain).select_steps(steps)
    chosen = parse_levels(levels, SPEC_LEVELS)
    results = synth_chain(loaded, chosen, model=model, base_url=base_url, interface=interface, jobs=jobs)
    root = project_root()
    rows = []
    for record, written in results:
        tasks = record.task_set.tasks
        notes = sum(1 for t in tasks if t.origin == "release_notes")
        folder = written[0].parent if written else None
        rows.append(
            [
                f"{record.prev_version} → {record.next_version}",
                f"{notes} + {len(tasks) - notes}",
                f"{len(record.code_hunks)} in {len(record.batches)}",
                f"{record.this_run.total.requests} / {record.usage.total.requests}",
                f"${record.usage.total.cost_usd:.4f}",
                (folder.relative_to(root) if folder and folder.is_relative_to(root) else folder) or "-",
            ]
        )
    headers = ["step", "tasks (notes + extra)", "hunks in batches", "requests (now / all)", "cost", "written"]
    typer.echo(tabulate(rows, headers=headers, tablefmt="github"))
    total = sum(r.this_run.total.cost_usd or 0.0 for r, _ in results)
    typer.echo(f"\nmodel {model}; this run: ${total:.4f}; levels {', '.join(chosen)}")


def _import_table(results, unknown: list[str]) -> None:
    rows = []
    for r in results:
        status = r.error or (
            f"{r.written} of {r.steps} steps at {r.levels}"
            + (f"; no row for {', '.join(r.missing_steps)}" if r.missing_steps else "")
        )
        rows.append([r.chain, r.paper_id, "failed" if r.error else "imported", status])
    typer.echo(tabulate(rows, headers=["chain", "paper id", "result", "steps written / error"], tablefmt="github"))
    if unknown:
        typer.echo(f"\nnot a chain here (no chains/*/chain.yaml with that paper_id): {', '.join(unknown)}")
    failed = [r for r in results if r.error]
    if failed:
        from swechain_ci.errors import SwechainError

        raise SwechainError(
            f"{len(failed)} of {len(results)} chains not imported (nothing written for them); first: {failed[0].error}"
        )


@specs_app.command("fetch")
def specs_fetch(
    repo_id: Annotated[str, typer.Option(help="the dataset on the Hub (the reference's load_dataset.py)")] = "",
    revision: Annotated[str, typer.Option(help="branch, tag or commit of the dataset")] = "main",
    chains: Annotated[
        str | None, typer.Option(help="only these chains, comma-separated; default all it covers")
    ] = None,
    level: Annotated[
        str | None,
        typer.Option(help="levels to write, comma-separated, from L2,L3,L4,L5; default: what the dataset's text holds"),
    ] = None,
    interface: Annotated[bool, typer.Option("--interface/--no-interface", help="also write <level>+interface")] = False,
) -> None:
    """Download the SWE-Chain dataset with huggingface_hub (HF_ENDPOINT, HF_HUB_CACHE and
    HF_HUB_OFFLINE are honoured; the cached copy is used when the Hub is out of reach) and
    import the published specifications of every chain it covers: all steps of a chain or none."""
    from swechain_ci.specs.dataset import DATASET, fetch_dataset, import_covered
    from swechain_ci.specs.levels import SPEC_LEVELS, parse_levels

    chosen = parse_levels(level, SPEC_LEVELS) if level else None
    fetched = fetch_dataset(repo_id or DATASET, revision)
    where = (
        f"commit {fetched.commit}" if fetched.commit else f"the cached copy (Hub not reached: {fetched.offline_reason})"
    )
    typer.echo(f"{fetched.repo_id} {fetched.revision} from {fetched.endpoint}: {where}")
    wanted = [c.strip() for c in chains.split(",") if c.strip()] if chains else None
    results, unknown = [], []
    for file in fetched.files:
        typer.echo(f"  {file}")
        got, missing = import_covered(Path(file), wanted, chosen, interface)
        results += got
        unknown += missing
    _import_table(results, sorted(set(unknown)))


@specs_app.command("import")
def specs_import(
    source: Annotated[
        str,
        typer.Argument(
            help="the dataset's data/specs_chain.parquet, a <chain_id>_specs_chain.jsonl file, or the reference's "
            "metadata/ folder (or its <chain_id> folder)"
        ),
    ],
    chain: Annotated[
        str | None, typer.Option(help="chain id (chains/<id>/chain.yaml) or path; default: every chain it covers")
    ] = None,
    level: Annotated[
        str | None,
        typer.Option(
            help="levels to write, comma-separated, from L2,L3,L4,L5; default: every level the source holds "
            "(L2-L5 from task objects, L2 and L3 from the dataset's Markdown)"
        ),
    ] = None,
    interface: Annotated[
        bool,
        typer.Option(
            "--interface/--no-interface",
            help="also write <level>+interface, with the interface section (the published specs have none)",
        ),
    ] = False,
) -> None:
    """Import the published specifications: CHAIN's steps (rows that match no step are
    reported), or every chain the source covers. Nothing is written for a chain with a bad row."""
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.settings import project_root
    from swechain_ci.specs.levels import SPEC_LEVELS, parse_levels
    from swechain_ci.specs.published import import_specs

    chosen = parse_levels(level, SPEC_LEVELS) if level else None
    if chain is None:
        from swechain_ci.specs.dataset import import_covered

        _import_table(*import_covered(Path(source), None, chosen, interface))
        return
    report = import_specs(source, load_chain(chain), None, interface=interface, levels=chosen)
    root = project_root()
    rows = []
    for row in report.rows:
        where = "-"
        if row.written:
            md = Path(row.written[0])
            folder = md.parent.relative_to(root) if md.is_relative_to(root) else md.parent
            where = f"{folder}/ ({', '.join(Path(w).stem for w in row.written if w.endswith('.md'))})"
        rows.append(
            [
                row.line,
                row.package,
                f"{row.prev_ver} → {row.next_ver}",
                row.status,
                row.shape or "-",
                row.tasks if row.tasks is not None else "-",
                row.reason or where,
            ]
        )
    headers = ["row", "package", "versions", "status", "specs", "tasks", "written / reason"]
    typer.echo(tabulate(rows, headers=headers, tablefmt="github"))
    written = sum(1 for r in report.rows if r.status == "written")
    typer.echo(
        f"\n{written} of {len(report.rows)} rows written at {report.level}; {len(report.unmatched)} matched no step"
        + (f"; no row for steps {', '.join(report.missing_steps)}" if report.missing_steps else "")
    )
    linked = sum(r.linked for r in report.rows)
    if linked:
        typer.echo(
            f"{linked} linked issue and pull request texts cached under specs/{report.chain}/linked/; "
            f"`swechain-ci specs render {report.chain}` puts them in L1"
        )
