"""What pytest-xdist workers and side-by-side gold runs save on a real suite, in one run.

Usage: .venv/bin/python benchmarks/parallel_suites.py [chain] [repeats]   (default: sqlparse 2)

On the chain's first step (default sqlparse 0.5.0 -> 0.5.1, 460 tests on Python 3.13):
- one hidden-test run of the target's suite with 1 worker and with as many pytest-xdist
  workers as the runner has CPUs (``pytest.workers: auto``), median wall times and ratio;
- the step's oracle (every gold run) with the gold runs one at a time
  (``SWECHAIN_WORKERS=1``) and scheduled over the runner (the default), and ratio.
The runner's size is this machine's, or SWECHAIN_RUNNER_CPUS / SWECHAIN_RUNNER_MEMORY.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.containers import images
from swechain_ci.containers.runner import parallel_runs, runner_size, test_workers
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.evaluation import oracle
from swechain_ci.evaluation.evaluate import evaluate

LABELS = {"swechain-ci.benchmark": "parallel"}


def with_workers(chain: Chain, workers: int | str) -> Chain:
    quirks = chain.config.pytest.model_copy(update={"workers": workers})
    return Chain(chain.config.model_copy(update={"pytest": quirks}), chain.folder, chain.step_offset)


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main(name: str, repeats: int) -> None:
    sandbox = DockerSandbox()
    size = runner_size()
    chain = with_workers(load_chain(name).select_steps("1"), 1)
    parallel = with_workers(chain, "auto")
    target = chain.versions[1]
    code = sources.materialize(chain, target).code
    serial_images, parallel_images = images.ensure_images(sandbox, chain), images.ensure_images(sandbox, parallel)
    print(f"runner: {size.cpus} CPUs, {size.memory / 2**30:.1f} GiB; chain {name} step 1, {target}'s suite")

    def one_run(variant: Chain, built) -> None:
        run = evaluate(sandbox, variant, built.versions[target], code, LABELS)
        assert run.execution_error is None, run.execution_error

    runs = {1: [], test_workers(parallel, size): []}
    for _ in range(repeats):
        runs[1].append(timed(lambda: one_run(chain, serial_images)))
        runs[test_workers(parallel, size)].append(timed(lambda: one_run(parallel, parallel_images)))
    (_, single), (workers, multi) = ((w, statistics.median(t)) for w, t in runs.items())
    print(f"one run, 1 worker (median of {repeats}): {single:.1f} s")
    print(f"one run, {workers} pytest-xdist workers (median of {repeats}): {multi:.1f} s")
    print(f"speed-up of xdist: {single / multi:.2f}x")

    saved = os.environ.pop("SWECHAIN_WORKERS", None)
    try:
        os.environ["SWECHAIN_WORKERS"] = "1"
        one_at_a_time = timed(lambda: oracle.build(sandbox, chain, serial_images, force=True))
        del os.environ["SWECHAIN_WORKERS"]
        side = parallel_runs(chain, size)
        scheduled = timed(lambda: oracle.build(sandbox, chain, serial_images, force=True))
    finally:
        if saved is not None:
            os.environ["SWECHAIN_WORKERS"] = saved
    print(
        f"oracle of step 1 ({2 * chain.config.oracle.baseline_runs + 1} gold runs), one at a time: {one_at_a_time:.1f} s"
    )
    print(f"oracle of step 1, {side} at a time: {scheduled:.1f} s")
    print(f"speed-up of scheduling: {one_at_a_time / scheduled:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlparse", int(sys.argv[2]) if len(sys.argv) > 2 else 2)
