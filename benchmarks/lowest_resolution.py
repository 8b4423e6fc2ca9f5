"""`resolution: lowest` over a chain's versions: each release's pinned environment resolved from an
empty state home and pip cache, with pip's listings and lowest picks asked once per process (as now) against asked
again for every version (as before: the caches cleared between versions). Same process, same index.

Usage: .venv/bin/python benchmarks/lowest_resolution.py [CHAIN] [--versions N]

Prints both wall times and their ratio, and checks that both give the same pins.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from swechain_ci.chain import environments
from swechain_ci.chain.definition import load_chain


def resolve_all(chain_id: str, versions: list[str], per_version_caches: bool) -> tuple[float, dict[str, list[str]]]:
    chain = load_chain(chain_id)
    environments.released_versions.cache_clear()
    environments.lowest_release.cache_clear()
    with tempfile.TemporaryDirectory(prefix="swechain-bench-") as home:
        os.environ["SWECHAIN_HOME"] = home
        os.environ["PIP_CACHE_DIR"] = f"{home}/pip"  # pip's own cache empty too: neither way warms the other's
        started = time.perf_counter()
        pins = {}
        for version in versions:
            if per_version_caches:
                environments.released_versions.cache_clear()
                environments.lowest_release.cache_clear()
            pins[version] = environments.pins(chain, version)
        return time.perf_counter() - started, pins


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("chain", nargs="?", default="flask")
    parser.add_argument("--versions", type=int, default=6, help="the chain's first N versions")
    args = parser.parse_args()
    versions = load_chain(args.chain).versions[: args.versions]
    before, pins_before = resolve_all(args.chain, versions, per_version_caches=True)
    after, pins_after = resolve_all(args.chain, versions, per_version_caches=False)
    if pins_before != pins_after:
        sys.exit("the two ways resolved different pins")
    print(f"{args.chain}, {len(versions)} versions, lowest resolution from an empty state home")
    print(f"  asked again per version: {before:6.1f} s")
    print(f"  asked once per process:  {after:6.1f} s")
    print(f"  ratio: {before / after:.2f}x")


if __name__ == "__main__":
    main()
