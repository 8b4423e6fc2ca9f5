"""Shared fixtures. Docker, git and pytest are real here; nothing is mocked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.nodeid import coerce_node_id

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "swechain_ci"]


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 600):
    """The real console entry point in a subprocess, as workflows call it."""
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def docker_engine():
    """A reachable Docker engine; scripts/setup starts one. Missing it is a failure, not a skip."""
    result = subprocess.run(["docker", "info"], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("no Docker engine reachable: run scripts/setup first (it starts dockerd)")


@pytest.fixture(scope="session")
def toy_oracle(docker_engine):
    result = run_cli("chain", "build", "toy")
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A project root (chains, specs, dockerfiles) that a test may change freely."""
    root = tmp_path / "project"
    for name in ("chains", "specs", "dockerfiles"):
        shutil.copytree(REPO / name, root / name)
    return root


def assert_inert(markdown: str) -> None:
    """The injected heading, image, link, mention and HTML render only as literal text inside code
    (GitHub-flavoured Markdown): with every code span and block taken out, none of it is left."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("gfm-like").render(markdown)
    assert "Owned" in html, "the text is shown"
    outside = re.sub(r"<code[^>]*>.*?</code>|<pre[^>]*>.*?</pre>", "", html, flags=re.S)
    assert "Owned" not in outside and "evil.example" not in outside and "@maintainers" not in outside
    assert "<img" not in html and "<b>" not in html and 'href="http://evil' not in html


DOCKER_GROUP = "@docker"


@pytest.hookimpl(tryfirst=True)  # before -m selects on the lanes' marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The lanes follow from what a test uses, whatever it is marked: the Docker engine makes it a
    docker test; running the workflows under act takes minutes, so it is slow. Neither is in the
    unit lane (scripts/test --unit). Under pytest-xdist (scripts/test runs two workers) the docker
    tests are one group, run in order on one worker: they share the state home's builds, the session's
    runs and the engine, as in a serial run; every other test runs beside them."""
    grouping = getattr(config.option, "loadgroup", False)  # set on an xdist worker under --dist loadgroup
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "docker_engine" in fixtures:
            item.add_marker(pytest.mark.docker)
        if "act_repo" in fixtures:
            item.add_marker(pytest.mark.slow)
        if grouping and item.get_closest_marker("docker"):
            # The group is the id's "@" suffix, which xdist's scheduler reads. xdist 3.8 writes it
            # from the xdist_group mark to Item._nodeid, which pytest 9.2 no longer reads (its ids
            # are Item._id), so the docker tests were spread over both workers and removed each
            # other's containers: the suffix is set here on the id pytest reports.
            item._id = coerce_node_id(item.nodeid + DOCKER_GROUP)
