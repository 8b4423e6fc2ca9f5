"""The test lanes of tests/conftest.py, checked by a real pytest-xdist run of a sample suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

SAMPLE = """
import os
import time

import pytest


def record(kind):
    with open("workers.txt", "a") as out:
        out.write(f"{kind} {os.environ['PYTEST_XDIST_WORKER']}\\n")


@pytest.mark.docker
@pytest.mark.parametrize("n", range(4))
def test_docker_{module}(n):
    time.sleep(0.05)
    record("docker")


@pytest.mark.parametrize("n", range(4))
def test_other_{module}(n):
    time.sleep(0.05)
    record("other")
"""


def test_docker_tests_run_on_one_worker_and_the_rest_beside_them(tmp_path: Path):
    for module in ("a", "b"):
        (tmp_path / f"test_{module}.py").write_text(SAMPLE.replace("{module}", module))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    docker: uses Docker\n    slow: slow\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "tests")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [line.split() for line in (tmp_path / "workers.txt").read_text().splitlines()]
    docker_workers = {worker for kind, worker in runs if kind == "docker"}
    assert len([r for r in runs if r[0] == "docker"]) == 8 and len(docker_workers) == 1, runs
    assert {worker for _, worker in runs} == {"gw0", "gw1"}, "the other tests ran beside the docker group"
