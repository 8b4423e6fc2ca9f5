"""The weekly refresh's matrix (agent runs it starts) with nothing changed against one changed input.

Usage: .venv/bin/python benchmarks/weekly_matrix.py

On a copy of this checkout's agents, chains and specs, with a runner that grants every agent its
variables (names only; nothing runs): the first refresh (no record) plans every pair; each
planned run leaves a scorecard and `refresh-record` records them; then the matrix is planned again
with nothing changed, and after each of a manifest edit, a chain's oracle changed and one
specification file reworded (each undone before the next). It prints the matrix size of each and
the time `matrix --since` takes (it digests every pair's inputs).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from swechain_ci.agents.manifest import available_manifests, grant_name, parse_manifest
from swechain_ci.github.cli import ci_app
from swechain_ci.models import Metrics, Scorecard
from swechain_ci.records import write_model

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(ci_app, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return result.stdout, result.stderr


def plan(record: Path) -> tuple[list[dict], float]:
    start = time.perf_counter()
    out, _ = cli("matrix", "--runnable-only", "--since", str(record))
    return json.loads(out)["include"], time.perf_counter() - start


def record_runs(include: list[dict], runs: Path, record: Path) -> None:
    metrics = Metrics(resolving=0.5, precision=1.0, f1=2 / 3, tp=1, fn=1, fp=0)
    for e in include:
        card = Scorecard(
            chain=e["chain"],
            step_range="1-1",
            agent=e["agent"],
            spec_level=e["level"],
            steps_total=1,
            steps_scored=1,
            build=metrics,
            build_fix=metrics,
            steps=[],
            oracle_hash="0" * 64,
        )
        write_model(runs / e["folder"] / "scorecard.json", card)
    cli("refresh-record", str(runs), "--record", str(record))


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="weekly-matrix-"))
    for name in ("agents", "chains", "specs", "dockerfiles"):
        shutil.copytree(REPO / name, root / name)
    os.environ["SWECHAIN_ROOT"] = str(root)
    for path in available_manifests():
        manifest = parse_manifest(path)
        for variable in manifest.env:
            os.environ[grant_name(manifest.name, variable)] = "granted"
    record = root / "reports" / "refresh.json"
    first, first_s = plan(record)
    record_runs(first, root / "week1", record)
    spec = sorted((root / "specs" / "jinja2").glob("*/L1.md"))[0]  # jinja2's default level
    builtin = ("oracle", "noop")
    # each edit, and the pairs it must rerun (exactly these)
    edits: list[tuple[str, Path, Callable[[str], str], Callable[[dict], bool]]] = [
        (
            "manifest edit (agents/codex.yaml)",
            root / "agents" / "codex.yaml",
            lambda t: t + "# reworded\n",
            lambda e: e["agent"] == "codex",
        ),
        (
            "oracle changed (chains/toy/oracle.json)",
            root / "chains" / "toy" / "oracle.json",
            lambda t: t + "\n",
            lambda e: e["chain"] == "toy",
        ),
        (
            f"one spec file ({spec.relative_to(root)})",
            spec,
            lambda t: t + "\nReworded.\n",
            lambda e: e["chain"] == "jinja2" and e["agent"] not in builtin,
        ),
    ]
    rows = [("first refresh (no record)", len(first), first_s)]
    none, none_s = plan(record)
    rows.append(("nothing changed", len(none), none_s))
    for label, path, edit, affected in edits:
        text = path.read_text()
        path.write_text(edit(text))
        planned, seconds = plan(record)
        expected = [(e["agent"], e["chain"]) for e in first if affected(e)]
        assert [(e["agent"], e["chain"]) for e in planned] == expected, (label, planned)
        rows.append((label, len(planned), seconds))
        path.write_text(text)
    assert plan(record)[0] == [], "every edit undone: nothing to run"
    print(f"{'weekly matrix':48} {'agent runs':>10} {'plan s':>7}")
    for label, size, seconds in rows:
        print(f"{label:48} {size:>10} {seconds:>7.2f}")
    print(f"before this change every weekly ran all {len(first)} pairs")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
