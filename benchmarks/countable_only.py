"""Evaluate only what can count? One step's suite with and without the tests that cannot score.

Usage: .venv/bin/python benchmarks/countable_only.py [--repeats N] CHAIN:STEP [CHAIN:STEP ...]  (e.g. urllib3:1)

A step scores only the tests that pass on new gold and are neither flaky nor network-bound
(``scored_universe``); the committed dataset (``chains/<id>/oracle.json``) lists the others with
their reason. For each step this runs the target's tests twice on each side of the step, new gold
(the target's code) and old gold (the start's code, what a noop ships), alternating, N times each (1 by default): whole, and
with every uncountable test deselected (pytest ``--deselect``). Prints the uncountable tests
by reason, the medians of the suite's own duration, and whether anything a score reads changed:
the statuses of the countable tests, and whether the run has an execution-level error (which
grants the Fix: SEMANTICS.md counts errors of *any* hidden test).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain, load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.evaluation.evaluate import evaluate
from swechain_ci.evaluation.outcomes import has_execution_error, resolve

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="+", help="CHAIN:STEP")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    sandbox = DockerSandbox()
    for argument in args.steps:
        chain_id, _, step_text = argument.partition(":")
        index = int(step_text or "1")
        whole = load_chain(chain_id)
        chain = whole.select_steps(str(index))
        dataset = json.loads((REPO / "chains" / chain_id / "oracle.json").read_text())
        step = next((s for s in dataset["steps"] if s["index"] == index), None)
        if step is None:
            sys.exit(f"{chain_id}: step {index} is not in chains/{chain_id}/oracle.json")
        excluded: dict[str, str] = step["excluded"]
        countable = [*step["upgrade_related"], *step["pass_to_pass"], *step.get("other_scored", [])]
        reasons = Counter(
            reason.split(" (")[-1].rstrip(")") if "(" in reason else reason for reason in excluded.values()
        )
        prev, next_ = chain.steps[0]
        built = images.ensure_images(sandbox, chain)
        deselecting = [arg for test in sorted(excluded) for arg in ("--deselect", test)]
        pytest_options = chain.config.pytest.model_copy(
            update={"extra_args": [*chain.config.pytest.extra_args, *deselecting]}
        )
        trimmed = Chain(chain.config.model_copy(update={"pytest": pytest_options}), chain.folder, chain.step_offset)
        print(f"{chain_id} step {index} ({prev} -> {next_}): {len(countable)} countable, {len(excluded)} not:")
        print("  " + ", ".join(f"{reason} {n}" for reason, n in reasons.most_common()))
        for side, code_of in (("new gold", next_), ("old gold", prev)):
            code = sources.materialize(chain, code_of).code
            runs: dict[str, list] = {"whole": [], "countable only": []}
            for _ in range(args.repeats):
                for name, used in (("whole", chain), ("countable only", trimmed)):
                    runs[name].append(evaluate(sandbox, used, built.versions[next_], code, {"swechain-ci.bench": "1"}))
            medians = {name: statistics.median(r.duration_s for r in found) for name, found in runs.items()}
            first, other = runs["whole"][0], runs["countable only"][0]
            same_scores = resolve(first, countable) == resolve(other, countable)
            fix_whole = has_execution_error(first, resolve(first, list(step_tests(step))))
            fix_trimmed = has_execution_error(other, resolve(other, countable))
            print(
                f"  {side}: whole {medians['whole']:.1f} s, countable only {medians['countable only']:.1f} s "
                f"({medians['whole'] / max(medians['countable only'], 0.001):.2f}x); countable statuses equal: "
                f"{same_scores}; Fix granted: whole {fix_whole}, countable only {fix_trimmed}"
            )
    return 0


def step_tests(step: dict) -> list[str]:
    return [*step["upgrade_related"], *step["pass_to_pass"], *step.get("other_scored", []), *step["excluded"]]


if __name__ == "__main__":
    sys.exit(main())
