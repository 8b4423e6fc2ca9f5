"""How long a full toy chain run takes once images exist, against one bare evaluation.

Usage: .venv/bin/python benchmarks/toy_chain.py [repeats]

Prints the median wall time of one hidden-test evaluation (a fresh container of
the target version running the toy suite), of a full oracle run of the toy
chain, and their ratio: how many evaluations' worth of time a chain run costs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from swechain_ci.chain import sources
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.evaluation import oracle
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.run import run_chain


def main(repeats: int) -> None:
    chain = load_chain("toy")
    sandbox = DockerSandbox()
    built = images.ensure_images(sandbox, chain)
    oracle.build(sandbox, chain, built)  # both timings below start from built images and oracle
    code = sources.materialize(chain, "0.2.0").code
    evaluation, chain_run = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        evaluate(sandbox, chain, built.versions["0.2.0"], code, {"swechain-ci.benchmark": "toy"})
        evaluation.append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            run_chain("toy", "oracle", Path(tmp) / "run")
            chain_run.append(time.perf_counter() - started)
    one, full = statistics.median(evaluation), statistics.median(chain_run)
    print(f"one evaluation (median of {repeats}): {one:.2f} s")
    print(f"full toy chain run, oracle agent (median of {repeats}): {full:.2f} s")
    print(f"ratio chain run / evaluation: {full / one:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
