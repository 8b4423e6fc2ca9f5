"""An oracle build on one runner against the same build spread over two runners (chain-build.yml's pool).

Usage: .venv/bin/python benchmarks/oracle_pool.py [--chain pyjwt] [--steps 11-12]

Both builds run the real CLI, from a copy of the project (so no committed oracle.json is written),
images already built and each runner's state home warm (wheelhouse, sources, trees) but with no
gold run and no oracle kept:

- one runner: `chain build CHAIN --steps S`, every gold run in one job;
- two runners: `chain build --plan-jobs`, then two runner processes each take the next version's
  share from the matrix as GitHub gives a job to an idle runner (`--gold-runs-of V --hand-on DIR`,
  each in a state home of its own), then the final job (a third state home) verifies the handed-on
  runs and derives the oracle (`--gold-runs-from DIR`), rerunning nothing.

Every runner is sized 1 CPU (SWECHAIN_RUNNER_CPUS=1; keys need runners of one size), so one runner
runs one gold run at a time. Both "runners" share this machine's 2 cores, with each other and with
whatever else runs here: the ratio is what two runners gain on one machine, a lower bound for two
machines. Prints both wall times, the ratio, and whether both oracles have the same steps.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from swechain_ci.settings import state_home  # noqa: E402

RUNNER = {"SWECHAIN_RUNNER_CPUS": "1", "SWECHAIN_RUNNER_MEMORY": "4g"}
NOT_WARM = ("gold-runs", "oracles", "logs", "locks")


def cli(home: Path, root: Path, *args: str) -> str:
    env = {**os.environ, **RUNNER, "SWECHAIN_HOME": str(home), "SWECHAIN_ROOT": str(root), "CI": "1"}
    env.pop("SWECHAIN_WORKERS", None)
    result = subprocess.run(
        [sys.executable, "-m", "swechain_ci", *args], env=env, cwd=REPO, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"swechain-ci {' '.join(args)} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout + result.stderr


def warm_home(warm: Path, root: Path, chain: str, steps: str) -> None:
    """Images, wheelhouse, sources and trees of the chain's steps, and nothing of its gold runs."""
    code = (
        "from swechain_ci.chain.definition import load_chain; from swechain_ci.chain import sources;"
        "from swechain_ci.containers import images; from swechain_ci.containers.sandbox import DockerSandbox;"
        f"c = load_chain({chain!r}).select_steps({steps!r}); images.ensure_images(DockerSandbox(), c);"
        "[sources.materialize(c, v) for v in c.versions]"
    )
    env = {**os.environ, **RUNNER, "SWECHAIN_HOME": str(warm), "SWECHAIN_ROOT": str(root)}
    subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, check=True)


def fresh_runner(warm: Path, home: Path) -> Path:
    shutil.copytree(warm, home, symlinks=True, ignore=lambda folder, names: [n for n in names if n in NOT_WARM])
    return home


def steps_of(home: Path) -> list[dict]:
    oracle = json.loads(next((home / "oracles").rglob("steps-*.json")).read_text())
    return [{k: s[k] for k in ("index", "new_gold", "old_gold", "upgrade_related")} for s in oracle["steps"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", default="pyjwt")
    parser.add_argument("--steps", default="11-12")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swechain-oracle-pool-") as tmp:
        work = Path(tmp)
        root = work / "project"
        for name in ("chains", "specs", "dockerfiles"):
            shutil.copytree(REPO / name, root / name)
        warm = work / "warm"
        if (state_home() / "wheelhouse").is_dir():  # this machine's downloads: the images already built
            shutil.copytree(state_home() / "wheelhouse", warm / "wheelhouse", symlinks=True)
        warm_home(warm, root, args.chain, args.steps)
        selection = ("--steps", args.steps)

        one = fresh_runner(warm, work / "one")
        started = time.monotonic()
        cli(one, root, "chain", "build", args.chain, *selection)
        one_runner_s = time.monotonic() - started

        runners = [fresh_runner(warm, work / f"runner-{n}") for n in (1, 2)]
        final = fresh_runner(warm, work / "final")
        handed_on = work / "handed-on"
        started = time.monotonic()
        planned = cli(final, root, "chain", "build", args.chain, *selection, "--plan-jobs")
        matrix = json.loads(planned.splitlines()[0])["include"]
        shares: queue.Queue = queue.Queue()
        for share in matrix:
            shares.put(share["version"])
        took: dict[str, list[str]] = {}

        def runner(home: Path) -> None:
            while True:
                try:
                    version = shares.get_nowait()
                except queue.Empty:
                    return
                took.setdefault(home.name, []).append(version)
                cli(home, root, "chain", "build", args.chain, *selection, "--gold-runs-of", version,
                    "--hand-on", str(handed_on / version))  # fmt: skip

        threads = [threading.Thread(target=runner, args=(home,)) for home in runners]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        shares_done_s = time.monotonic() - started
        final_out = cli(final, root, "chain", "build", args.chain, *selection, "--gold-runs-from", str(handed_on))
        two_runners_s = time.monotonic() - started
        same = steps_of(one) == steps_of(final)

    gold_runs = sum(s["gold_runs"] for s in matrix)
    print(f"oracle of {args.chain} steps {args.steps}: {gold_runs} gold runs in {len(matrix)} shares (one per version)")
    print("every runner 1 CPU; both runners share this machine's 2 cores (and whatever else runs on it)")
    print(f"one runner:  {one_runner_s:7.1f} s")
    print(
        f"two runners: {two_runners_s:7.1f} s (shares {shares_done_s:.1f} s: "
        + "; ".join(f"{name} ran {', '.join(versions)}" for name, versions in sorted(took.items()))
        + f"; final job {two_runners_s - shares_done_s:.1f} s)"
    )
    print(f"ratio one/two: {one_runner_s / two_runners_s:.2f}x")
    verified = f"{gold_runs} of {gold_runs} gold runs handed on and verified" in final_out
    print(f"same oracle steps as one runner: {same}; final job took every run handed on, verified: {verified}")


if __name__ == "__main__":
    main()
