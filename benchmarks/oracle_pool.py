"""An oracle build on one runner against the same build spread over two runners (chain-build.yml's pool).

Usage: .venv/bin/python benchmarks/oracle_pool.py [--chain pyjwt] [--steps 11-12] [--act]

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

``--act``: the workflow itself, `chain-build.yml` dispatched under act (jobs on the host, as on
self-hosted runners) in a copy of the repository, once with one job at a time (`--concurrent-jobs
1`: one runner) and once with two (two runners), each from a state home of its own that is warm
but has no gold run; act passes the shares' runs on through a shared folder (it has no artifact
service). Same runner size (1 CPU) and the same checks.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
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


def act_copy(work: Path) -> Path:
    """This repository as it is now, committed in a copy whose origin is a local bare repository."""
    origin, copy = work / "origin.git", work / "repo"

    def git(*args: str, cwd: Path | None = None) -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "--bare", "-b", "main", str(origin))
    git("clone", "-q", str(REPO), str(copy))
    for path in git("ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).splitlines():
        if (REPO / path).is_file():
            (copy / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, copy / path)
    git("checkout", "-q", "-B", "main", cwd=copy)
    git("add", "-A", cwd=copy)
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "benchmark", cwd=copy)
    git("remote", "set-url", "origin", str(origin), cwd=copy)
    git("push", "-q", "origin", "main", cwd=copy)
    return copy


def act_build(copy: Path, home: Path, shared: Path, chain: str, steps: str, jobs: int) -> tuple[float, str]:
    """chain-build.yml dispatched under act with at most ``jobs`` jobs at a time: its wall time and output."""
    for folder in (REPO / "tests" / "github", REPO / "tests"):  # once, however many builds
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    from github_server import FakeGitHub  # the tests' GitHub stand-in: act's checkout asks for a token
    from test_workflows_act import TOKEN, act

    payload = {"inputs": {"chain": chain, "steps": steps, "force": "false"}, "ref": "refs/heads/main"}
    runner = [f"{name}={value}" for name, value in {**RUNNER, "SWECHAIN_HOME": str(home)}.items()]
    options = [option for pair in runner for option in ("--env", pair)] + ["--concurrent-jobs", str(jobs)]
    with FakeGitHub() as github:
        github.state.add_token(TOKEN, None)
        started = time.monotonic()
        done = act(copy, shared, "workflow_dispatch", "chain-build.yml", payload, github.url, *options)
        seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"act chain-build.yml ({jobs} job(s) at a time) failed: {done.stdout[-3000:]}")
    return seconds, done.stdout


def main_act(chain: str, steps: str) -> None:
    with tempfile.TemporaryDirectory(prefix="swechain-oracle-pool-act-") as tmp:
        work = Path(tmp)
        copy = act_copy(work)
        warm = work / "warm"
        if (state_home() / "wheelhouse").is_dir():
            shutil.copytree(state_home() / "wheelhouse", warm / "wheelhouse", symlinks=True)
        warm_home(warm, copy, chain, steps)
        timings, outputs, oracles = {}, {}, {}
        for jobs in (1, 2):
            home, shared = fresh_runner(warm, work / f"home-{jobs}"), work / f"shared-{jobs}"
            shared.mkdir()
            timings[jobs], outputs[jobs] = act_build(copy, home, shared, chain, steps, jobs)
            oracles[jobs] = steps_of(home)
    shares = len(load_chain_versions(chain, steps))
    print(f"oracle of {chain} steps {steps} by chain-build.yml under act: {shares} shares (one per version)")
    print("every runner 1 CPU; both runners share this machine's 2 cores (and whatever else runs on it)")
    print(f"one runner (1 job at a time):   {timings[1]:7.1f} s")
    print(f"two runners (2 jobs at a time): {timings[2]:7.1f} s")
    print(f"ratio one/two: {timings[1] / timings[2]:.2f}x")
    verified = [re.search(r"(\d+) of (\d+) gold runs handed on and verified", outputs[j]) for j in (1, 2)]
    every = all(m is not None and m[1] == m[2] for m in verified)
    print(f"same oracle steps: {oracles[1] == oracles[2]}; final job took every run handed on, verified: {every}")


def load_chain_versions(chain: str, steps: str) -> list[str]:
    from swechain_ci.chain.definition import load_chain

    return load_chain(chain).select_steps(steps).versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", default="pyjwt")
    parser.add_argument("--steps", default="11-12")
    parser.add_argument("--act", action="store_true", help="the workflow under act, 1 job at a time against 2")
    args = parser.parse_args()
    if args.act:
        return main_act(args.chain, args.steps)
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
