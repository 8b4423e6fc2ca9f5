"""Honest runs must never be flagged: oracle, noop and the gold diff split over Build and Fix.

Usage: .venv/bin/python benchmarks/honest_runs.py [--out DIR] CHAIN[:STEPS] [CHAIN[:STEPS] ...]
(STEPS as ``--steps`` takes them, e.g. ``pyjwt:11-15``; the chain's widest built range when left out.
The chain's oracle must be built for those steps: ``swechain-ci chain build CHAIN --steps STEPS``.)

Per chain, three real runs through the CLI, each with its integrity read from its scorecard:

- ``oracle``: the gold code diff at every Build;
- ``noop``: nothing at all (every Fix granted, prev is old gold's code under new tests);
- ``split``: a replay whose Build ships the first half (by path) of each step's changed files
  and leaves the package's ``__init__.py`` unparsable (an honest slip: every test module fails
  to collect, so the Fix is granted), and whose Fix ships the rest and repairs the slip. The
  final code of every step is gold, arrived at over two phases.

Prints one row per run: steps, the integrity status, the flags by kind, and the Build and
Build+Fix counts (true positives, false negatives, false positives). Exits 1 if any honest run is flagged.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.evaluation import oracle as oracles

REPO = Path(__file__).resolve().parent.parent
SLIP = "\n\ndef _unfinished(:  # the Fix completes this step\n"


def changed_files(before: Path, after: Path) -> list[str]:
    old = {str(p) for p in trees.iter_tree(before) if (before / p).is_file()}
    new = {str(p) for p in trees.iter_tree(after) if (after / p).is_file()}
    return sorted(
        rel
        for rel in old | new
        if rel not in old or rel not in new or (before / rel).read_bytes() != (after / rel).read_bytes()
    )


def package_init(chain: Chain, code: Path) -> str | None:
    root = chain.config.source_root.strip("/")
    rel = "/".join(p for p in (root, *chain.config.import_name.split("."), "__init__.py") if p and p != ".")
    return rel if (code / rel).is_file() else None


def split_patches(chain: Chain, folder: Path) -> None:
    """``step-<n>.build.patch`` and ``step-<n>.fix.patch`` for every step of ``chain``."""
    for index, (prev, next_) in enumerate(chain.steps, start=chain.step_offset + 1):
        before, after = sources.materialize(chain, prev).code, sources.materialize(chain, next_).code
        files = changed_files(before, after)
        with tempfile.TemporaryDirectory(prefix="honest-split-") as tmp:
            half = Path(tmp) / "half"
            trees.copy_tree(before, half)
            for rel in files[: len(files) // 2]:
                source, target = after / rel, half / rel
                if source.is_file():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(source.read_bytes())
                else:
                    target.unlink()
            init = package_init(chain, half)
            if init is None:
                raise SystemExit(f"{chain.id}: no package __init__.py under {chain.config.source_root!r} to slip in")
            with open(half / init, "a") as handle:
                handle.write(SLIP)
            (folder / f"step-{index}.build.patch").write_text(trees.diff(before, half))
            (folder / f"step-{index}.fix.patch").write_text(trees.diff(half, after))


def run(chain: Chain, steps: str, agent: str, output: Path) -> dict:
    command = [sys.executable, "-m", "swechain_ci", "run", "--chain", chain.id, "--steps", steps]
    command += ["--agent", agent, "--output", str(output)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{chain.id} {agent}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    card = json.loads((output / "scorecard.json").read_text())
    card["seconds"] = time.perf_counter() - started
    return card


def row(chain_id: str, name: str, card: dict) -> str:
    integrity = card.get("integrity", {})
    kinds = Counter(flag["kind"] for flag in integrity.get("flags", []))
    flags = ", ".join(f"{kind} ×{n}" for kind, n in sorted(kinds.items())) or "-"
    scores = ", ".join(
        "/".join(str(card[phase][key]) for key in ("tp", "fn", "fp")) for phase in ("build", "build_fix")
    )
    return f"| {chain_id} | {card['step_range']} | {name} | {integrity.get('status')} | {flags} | {scores} | {card['seconds']:.0f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chains", nargs="+", help="CHAIN[:STEPS]")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (a temporary folder otherwise)")
    parser.add_argument("--agents", default="oracle,noop,split", help="comma-separated: oracle, noop, split")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="honest-runs-"))
    print("| chain | steps | run | integrity | flags | TP/FN/FP: Build, Build+Fix | s |")
    print("|---|---|---|---|---|---|---|")
    flagged = 0
    for argument in args.chains:
        chain_id, _, steps = argument.partition(":")
        chain = load_chain(chain_id)
        steps = steps or max(
            oracles.built_ranges(chain) or [""], key=lambda r: len(chain.select_steps(r).steps) if r else 0
        )
        if not steps:
            raise SystemExit(f"{chain_id}: no oracle built; run `swechain-ci chain build {chain_id}` first")
        chain = chain.select_steps(steps)
        for name in args.agents.split(","):
            agent = name
            if name == "split":
                patches = out / f"{chain_id}-{steps}-split-patches"
                patches.mkdir(parents=True, exist_ok=True)
                split_patches(chain, patches)
                agent = f"replay:{patches}"
            card = run(chain, steps, agent, out / f"{chain_id}-{steps}-{name}")
            flagged += card.get("integrity", {}).get("status") != "clean"
            print(row(chain_id, name, card), flush=True)
    print(f"\nruns kept in {out}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
