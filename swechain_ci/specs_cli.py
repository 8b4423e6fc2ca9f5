"""``swechain-ci specs``: render deterministic specifications and list the levels present."""

from __future__ import annotations

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
        bool, typer.Option("--interface/--no-interface", help="append the interface section (from the code, via ast)")
    ] = True,
    steps: Annotated[str | None, typer.Option(help="only steps A-B (1-based), e.g. 9-13")] = None,
) -> None:
    """Render LEVEL for every step: release-note tasks of the target version, plus interface changes."""
    from swechain_ci.chain import load_chain
    from swechain_ci.render import render_chain
    from swechain_ci.settings import project_root

    loaded = load_chain(chain).select_steps(steps)
    written = render_chain(loaded, level=level, interface=interface)
    rows = []
    for md, _, spec in written:
        notes = spec.release_notes
        rows.append([
            f"{spec.prev_version} → {spec.next_version}",
            len(notes.tasks) if notes.found else "none shipped",
            notes.source_file or "-",
            "-" if spec.interface is None else ("none" if spec.interface.empty else "yes"),
            md.relative_to(project_root()) if md.is_relative_to(project_root()) else md,
        ])
    headers = ["step", "tasks", "changelog", "interface changes", "written"]
    typer.echo(tabulate(rows, headers=headers, tablefmt="github"))


@specs_app.command("list")
def specs_list(chain: Annotated[str, typer.Argument(help="chain id (chains/<id>/chain.yaml) or path")]) -> None:
    """The specification levels present for each step."""
    from swechain_ci.chain import load_chain
    from swechain_ci.specs import levels_available, spec_dir

    loaded = load_chain(chain)
    rows = []
    for index, (prev, next_) in enumerate(loaded.steps, start=loaded.step_offset + 1):
        folder = spec_dir(loaded) / f"{prev}-{next_}"
        levels = sorted(p.stem for p in folder.glob("*.md")) if folder.is_dir() else []
        rows.append([index, f"{prev} → {next_}", ", ".join(levels) or "-"])
    typer.echo(tabulate(rows, headers=["step", "upgrade", "levels"], tablefmt="github"))
    typer.echo(f"\nlevels present for every step: {', '.join(levels_available(loaded)) or 'none'}")
