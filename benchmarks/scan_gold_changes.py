"""The static scan over every step's honest gold change: how many findings each chain raises.

Usage: .venv/bin/python benchmarks/scan_gold_changes.py CHAIN[:STEPS] [CHAIN[:STEPS] ...]
(STEPS as ``--steps`` takes them, e.g. ``pytest-8:1`` or ``attrs:1-2``; all steps when left out)

For each step vi -> vi+1 the scan compares vi's gold code with vi+1's whole gold tree (its
code diff and every other file it changes, a superset of what the oracle agent ships), as
``change_scan.scan_change`` does for a candidate. Sources come from the chain's sdists (or
git tags) through the configured index. Prints per chain the steps, files scanned, findings
and seconds, and every finding; an honest change must raise none.
"""

from __future__ import annotations

import sys
import time

from swechain_ci.chain import sources
from swechain_ci.chain.definition import load_chain
from swechain_ci.evaluation import change_scan


def main(chain_ids: list[str]) -> int:
    total = 0
    for argument in chain_ids:
        chain_id, _, steps_wanted = argument.partition(":")
        chain = load_chain(chain_id)
        chain = chain.select_steps(steps_wanted) if steps_wanted else chain
        config = chain.config
        started = time.perf_counter()
        findings, files, steps = [], 0, 0
        for prev, next_ in chain.steps:
            old, new = sources.materialize(chain, prev).code, sources.materialize(chain, next_).code
            files += sum(1 for _ in change_scan.shipped_files(new, config.test_folder))
            for flag in change_scan.scan_change(old, new, config.test_folder, config.source_root):
                findings.append(f"  {prev} -> {next_}: {flag.kind} {flag.location}: {flag.detail[:160]}")
            steps += 1
        seconds = time.perf_counter() - started
        print(f"{chain_id}: {steps} steps, {files} files scanned, {len(findings)} findings, {seconds:.1f} s")
        print("\n".join(findings), flush=True)
        total += len(findings)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
