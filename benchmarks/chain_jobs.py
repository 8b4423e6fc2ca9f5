"""The cost of running a chain as a job per phase, against the whole chain in one job, under act.

Usage: .venv/bin/python benchmarks/chain_jobs.py

Both runs are the replay agent of tests/fixtures/replay_toy on the toy chain (three steps,
one Fix), in one copy of this repository with a bare origin, GitHub's API being the local
stand-in of tests/github_server.py, and images and oracle already built (both start warm):

- jobs: chain-run.yml as it is, dispatched again for each step as its hand-on job asks
  (3 workflow runs, 10 jobs, each with its set-up, fetch and push);
- one job: a workflow with one job that sets up, runs the whole chain with `run` and pushes.

Prints both wall times, their ratio and the overhead per job, from one run of each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from github_server import FakeGitHub  # noqa: E402

VENV_BIN = Path(sys.executable).parent
AGENT = "replay:tests/fixtures/replay_toy"
INPUTS = {"agent": AGENT, "chain": "toy", "spec_level": "", "steps": "", "run_id": "bench"}
ONE_JOB = """name: One job
on: workflow_dispatch
permissions:
  contents: read
jobs:
  run:
    runs-on: self-hosted
    timeout-minutes: 60
    permissions:
      contents: write
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
        with:
          persist-credentials: false
      - run: scripts/setup --runner
      - run: >-
          .venv/bin/swechain-ci run --chain toy --agent "replay:tests/fixtures/replay_toy"
          --output runs/one/toy/bench --git-branch runs/one/toy/bench --git-repo .
      - run: .venv/bin/swechain-ci push-branch runs/one/toy/bench
"""


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def repository_copy(root: Path) -> Path:
    origin, work = root / "origin.git", root / "work"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    git("clone", "-q", str(REPO), str(work))
    for path in git("ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).splitlines():
        if (REPO / path).is_file():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / path, work / path)
    (work / ".github" / "workflows" / "one-job.yml").write_text(ONE_JOB)
    git("checkout", "-q", "-B", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "benchmark", cwd=work)
    git("remote", "set-url", "origin", str(origin), cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    stub = root / "stub-action"
    stub.mkdir()
    (stub / "action.yml").write_text("name: not run under act\nruns:\n  using: composite\n  steps: []\n")
    return work


def act(work: Path, workflow: str, inputs: dict, api: str) -> None:
    event = work.parent / "event.json"
    event.write_text(json.dumps({"inputs": inputs, "ref": "refs/heads/main"}))
    stub = work.parent / "stub-action"
    done = subprocess.run(
        [
            str(VENV_BIN / "act"),
            "workflow_dispatch",
            "-W",
            f".github/workflows/{workflow}",
            "-e",
            str(event),
            "-P",
            "self-hosted=-self-hosted",
            "--local-repository",
            f"actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02={stub}",
            "-s",
            "GITHUB_TOKEN=bench",
            "--env",
            f"GITHUB_API_URL={api}",
            "--env",
            "GITHUB_REPOSITORY=acme/bench",
        ],
        cwd=work,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"act failed on {workflow}:\n{done.stdout[-4000:]}")


def main() -> None:
    subprocess.run([sys.executable, "-m", "swechain_ci", "chain", "build", "toy"], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="swechain-bench-") as tmp, FakeGitHub() as github:
        github.state.add_token("bench", None)
        work = repository_copy(Path(tmp))
        act(work, "one-job.yml", {}, github.url)  # warms the runner's shared virtualenv for both
        git("--git-dir", str(work.parent / "origin.git"), "branch", "-D", "runs/one/toy/bench")

        started = time.perf_counter()
        act(work, "one-job.yml", {}, github.url)
        one_job = time.perf_counter() - started

        started = time.perf_counter()
        runs, pending = 0, [INPUTS]
        while pending:
            act(work, "chain-run.yml", pending.pop(), github.url)
            runs += 1
            pending += [d["inputs"] for d in github.state.dispatches[runs - 1 :]]
        jobs = time.perf_counter() - started
    job_count = 10  # 3 steps x (build, evaluate, hand-on) + the one Fix
    print(f"toy chain, replay agent, whole chain in one job under act: {one_job:.1f} s")
    print(f"toy chain, replay agent, a job per phase under act ({runs} workflow runs, {job_count} jobs): {jobs:.1f} s")
    print(f"ratio jobs / one job: {jobs / one_job:.2f}")
    print(f"overhead per job: {(jobs - one_job) / (job_count - 1):.1f} s")


if __name__ == "__main__":
    main()
