"""`chain build` on a real chain: cold and warm wall time, image disk use, and the cost
of running one step's hidden tests in a container against a bare pytest run on the host.

Usage: .venv/bin/python benchmarks/chain_build.py [CHAIN] [--steps A-B] [--skip-cold]
       .venv/bin/python benchmarks/chain_build.py CHAIN [--steps A-B] --first-build [--spec-level L1] [--no-agents]

- cold: no images of the chain and an empty state home (sdists, resolutions, wheels
  and oracle fetched and built again); the base image is kept (bootstrapping it is
  a one-off ~50 s of its own).
- warm: images and caches in place, the oracle recomputed (`--force`).
- ratio: median of 3 containerised runs of the last step's target suite on its own
  code, over the median of 3 bare `pytest` runs of the same tests and code on the
  host, in a venv with the same pinned requirements.
- first build (for chains whose suites take minutes per run): one `chain build` from the
  state as it is (images and oracle built where missing, nothing removed or forced), then
  the oracle and the noop agent over the same steps, each timed once, with their scores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "swechain_ci"]


def timed_build(chain: str, steps: list[str], env: dict, force: bool) -> float:
    started = time.perf_counter()
    checked(
        subprocess.run(
            [*CLI, "chain", "build", chain, *steps, *(["--force"] if force else [])],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
    )
    return time.perf_counter() - started


def checked(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """Stop with the command's own error line, not a traceback that hides it."""
    if done.returncode != 0:
        sys.exit(f"{' '.join(done.args[2:])} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def remove_images(chain: str) -> None:
    listed = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=True
    ).stdout.split()
    mine = [i for i in listed if i.startswith(f"swechain-ci/{chain}-")]
    if mine:
        subprocess.run(["docker", "rmi", "-f", *mine], capture_output=True, check=True)


def image_disk_use(chain: str) -> tuple[int, float]:
    """Images of the chain and their size on disk, layers shared between them counted once."""
    import docker

    client = docker.from_env()
    df = client.df()["Images"]
    mine = [i for i in df if any(t.startswith(f"swechain-ci/{chain}-") for t in (i.get("RepoTags") or []))]
    unique = sum(i["Size"] - i["SharedSize"] for i in mine if i["SharedSize"] >= 0)
    shared_base = max((i["SharedSize"] for i in mine), default=0)
    return len(mine), (unique + shared_base) / 2**20


def container_vs_bare(chain_id: str, steps: str | None) -> tuple[float, float]:
    from swechain_ci.chain import environments, sources
    from swechain_ci.chain.definition import load_chain
    from swechain_ci.containers import images
    from swechain_ci.containers.sandbox import DockerSandbox
    from swechain_ci.evaluation.evaluate import evaluate

    chain = load_chain(chain_id).select_steps(steps)
    version = chain.versions[-1]
    sandbox = DockerSandbox()
    built = images.ensure_images(sandbox, chain)
    trees = sources.materialize(chain, version)
    contained = []
    for _ in range(3):
        started = time.perf_counter()
        evaluate(sandbox, chain, built.versions[version], trees.code, {"swechain-ci.benchmark": "chain_build"})
        contained.append(time.perf_counter() - started)
    with tempfile.TemporaryDirectory() as tmp:
        venv, work = Path(tmp) / "venv", Path(tmp) / "work"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        wheels = images.wheelhouse(
            environments.pins(chain, version), chain.config.python, environments.built_wheels(chain)
        )
        subprocess.run(
            [
                str(venv / "bin" / "pip"),
                "install",
                "--quiet",
                "--no-index",
                "--find-links",
                str(wheels),
                *environments.pins(chain, version),
            ],
            check=True,
        )
        shutil.copytree(trees.code, work)
        shutil.copytree(trees.hidden, work, dirs_exist_ok=True)
        bare = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    chain.config.test_folder,
                ],
                cwd=work,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": str(work / chain.config.source_root)},
            )
            bare.append(time.perf_counter() - started)
    return statistics.median(contained), statistics.median(bare)


def timed_run(chain: str, steps: list[str], agent: str, spec_level: str, output: Path) -> tuple[float, str]:
    """One `swechain-ci run`; its wall time and the scorecard's Build line."""
    started = time.perf_counter()
    done = checked(
        subprocess.run(
            [
                *CLI,
                "run",
                "--chain",
                chain,
                "--agent",
                agent,
                *steps,
                "--spec-level",
                spec_level,
                "--output",
                str(output),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
    )
    elapsed = time.perf_counter() - started
    build = next(
        (
            line.strip()
            for line in done.stdout.splitlines()
            if [c.strip() for c in line.split("|")[1:3]] == ["chain", "Build"]
        ),
        "",
    )
    return elapsed, build


def first_build(chain: str, steps: list[str], spec_level: str, agents: bool) -> None:
    build = timed_build(chain, steps, dict(os.environ), force=False)
    print(f"chain build ({chain} {' '.join(steps) or 'all steps'}), from the state as it was: {build:.1f} s")
    count, mib = image_disk_use(chain)
    print(f"images: {count}, disk use {mib:.0f} MiB (shared layers counted once)")
    if not agents:
        return
    with tempfile.TemporaryDirectory() as runs:
        for agent in ("oracle", "noop"):
            elapsed, line = timed_run(chain, steps, agent, spec_level, Path(runs) / agent)
            print(f"run --agent {agent}: {elapsed:.1f} s  {line}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("chain", nargs="?", default="pyjwt")
    parser.add_argument("--steps")
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--first-build", action="store_true")
    parser.add_argument("--spec-level", default="L1")
    parser.add_argument("--no-agents", action="store_true", help="with --first-build: the build only")
    args = parser.parse_args()
    steps = ["--steps", args.steps] if args.steps else []
    if args.first_build:
        first_build(args.chain, steps, args.spec_level, agents=not args.no_agents)
        return
    env = dict(os.environ)
    if not args.skip_cold:
        with tempfile.TemporaryDirectory() as home:
            remove_images(args.chain)
            cold = timed_build(args.chain, steps, {**env, "SWECHAIN_HOME": home}, force=False)
            print(f"cold chain build ({args.chain} {args.steps or 'all steps'}): {cold:.1f} s")
    warm = timed_build(args.chain, steps, env, force=True)
    print(f"warm chain build, oracle recomputed: {warm:.1f} s")
    count, mib = image_disk_use(args.chain)
    print(f"images: {count}, disk use {mib:.0f} MiB (shared layers counted once)")
    contained, bare = container_vs_bare(args.chain, args.steps)
    print(
        f"one step's hidden tests: container {contained:.2f} s, bare pytest on the host {bare:.2f} s, "
        f"ratio {contained / bare:.2f}"
    )


if __name__ == "__main__":
    main()
