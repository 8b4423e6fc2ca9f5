"""The runner's size, and what it gives each hidden-test run and the gold-run schedule.

A chain's ``limits`` are per pytest worker; a run with ``pytest.workers`` workers gets that
many times the CPU and memory, never more than the runner has. Gold runs go side by side
as far as the runner's CPUs and memory hold them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from swechain_ci.chain.definition import Chain, Limits
from swechain_ci.errors import SwechainError

UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def memory_bytes(text: str, what: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", text.lower())
    if not match:
        raise SwechainError(f"{what}: '{text}' is not a memory size; write it as 512m or 4g")
    return int(float(match.group(1)) * UNITS[match.group(2)])


@dataclass(frozen=True)
class RunnerSize:
    cpus: int
    memory: int  # bytes


def runner_size() -> RunnerSize:
    """``SWECHAIN_RUNNER_CPUS`` / ``SWECHAIN_RUNNER_MEMORY`` (e.g. 8, 16g), else this machine's."""
    if env := os.environ.get("SWECHAIN_RUNNER_CPUS"):
        if not env.isdigit() or int(env) < 1:
            raise SwechainError(f"SWECHAIN_RUNNER_CPUS='{env}' is not a CPU count; set it to a whole number such as 4")
        cpus = int(env)
    else:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if env := os.environ.get("SWECHAIN_RUNNER_MEMORY"):
        memory = memory_bytes(env, "SWECHAIN_RUNNER_MEMORY")
    else:
        meminfo = Path("/proc/meminfo")
        found = re.search(r"MemTotal:\s+(\d+) kB", meminfo.read_text()) if meminfo.is_file() else None
        memory = int(found.group(1)) * 1024 if found else 4 * 2**30
    return RunnerSize(cpus, memory)


def test_workers(chain: Chain, size: RunnerSize) -> int:
    """pytest-xdist workers per run: the chain's number, or 'auto', within the runner's CPUs."""
    wanted = chain.config.pytest.workers
    per_worker = chain.config.limits.cpus
    fitting = max(1, math.floor(size.cpus / per_worker))
    return fitting if wanted == "auto" else max(1, min(wanted, fitting))


def run_limits(chain: Chain, size: RunnerSize) -> Limits:
    """One run's container limits: the chain's per-worker limits times its workers, within the runner."""
    limits = chain.config.limits
    workers = test_workers(chain, size)
    per_worker = memory_bytes(limits.memory, f"{chain.folder / 'chain.yaml'}: field 'limits.memory'")
    memory = min(size.memory, per_worker * workers)
    return Limits(
        memory=f"{memory // 2**20}m", cpus=min(float(size.cpus), limits.cpus * workers), pids=limits.pids * workers
    )


def parallel_runs(chain: Chain, size: RunnerSize) -> int:
    """Gold runs side by side: ``SWECHAIN_WORKERS``, else as many as the runner's CPUs and memory hold."""
    if env := os.environ.get("SWECHAIN_WORKERS"):
        return max(1, int(env))
    limits = run_limits(chain, size)
    by_cpu = math.floor(size.cpus / limits.cpus)
    by_memory = size.memory // memory_bytes(limits.memory, "limits.memory")
    return max(1, min(by_cpu, by_memory))
