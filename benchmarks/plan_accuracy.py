"""How close ``swechain-ci plan`` comes to the runner time a dispatch then takes.

Usage: .venv/bin/python benchmarks/plan_accuracy.py [CHAIN:STEPS ...]   (default: toy:1-3 pyjwt:11-12)

For each chain, with its images and oracle built first (so both figures start from the same warm
runner), it asks the estimator for the oracle and noop agents on those steps from what the state
home and earlier runs recorded, then runs both and measures their wall time: the ratio
measured / estimated is the plan's accuracy (1.0 is exact; above 1 the plan was too low).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.evaluation import oracle
from swechain_ci.run import run_chain
from swechain_ci.scoring.estimate import Request, estimate, recorded
from swechain_ci.settings import state_home


def main(targets: list[str]) -> None:
    sandbox = DockerSandbox()
    history_runs = Path(tempfile.mkdtemp(prefix="plan-history-"))
    for target in targets:
        name, _, steps = target.partition(":")
        chain = load_chain(name).select_steps(steps or None)
        built = images.ensure_images(sandbox, chain)
        oracle.build(sandbox, chain, built)
        # one earlier run of each agent as the history the plan reads, as a runner has it
        for agent in ("oracle", "noop"):
            run_chain(name, agent, history_runs / f"{name}-{agent}", None, steps or None)
        history = recorded(state_home() / "gold-runs", [history_runs])
        for agent in ("oracle", "noop"):
            planned = estimate(Request(agent, chain.id, len(chain.steps), priced=False), history).runner_s or 0.0
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                run_chain(name, agent, Path(tmp) / "run", None, steps or None)
                measured = time.perf_counter() - started
            print(
                f"{name} {chain.step_range} {agent}: planned {planned:.1f} s, measured {measured:.1f} s, "
                f"measured/planned {measured / planned:.2f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or ["toy:1-3", "pyjwt:11-12"])
