"""Image builds are bounded (memory, time, size), vendor recipes are checked before the builder
sees them, and a smoke run's builds live under names trusted runs never look up."""

from __future__ import annotations

import http.server
import subprocess
import threading
import time
from typing import ClassVar

import pytest

from swechain_ci.agents.image import ensure_agent_image
from swechain_ci.agents.manifest import parse_manifest
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import BuildLimits, DockerSandbox
from swechain_ci.errors import SwechainError

pytestmark = pytest.mark.docker


@pytest.fixture
def base(docker_engine) -> tuple[DockerSandbox, str]:
    sandbox = DockerSandbox()
    return sandbox, images.ensure_base(sandbox, "3.11")


def build(sandbox: DockerSandbox, tmp_path, recipe: str, tag: str, limits: BuildLimits):
    context = tmp_path / "context"
    context.mkdir(exist_ok=True)
    (context / "Dockerfile").write_text(recipe)
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
    try:
        return sandbox.build(context, "Dockerfile", tag, {}, tmp_path / "build.log", limits=limits)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_a_build_past_its_time_limit_is_ended(base, tmp_path):
    sandbox, image = base
    started = time.monotonic()
    with pytest.raises(SwechainError, match="took over 5 s: ended"):
        build(sandbox, tmp_path, f"FROM {image}\nRUN sleep 120\n", "swechain-ci-test/slow:1", BuildLimits(seconds=5))
    assert time.monotonic() - started < 60


def test_a_build_step_past_its_memory_limit_fails(base, tmp_path):
    sandbox, image = base
    recipe = f"FROM {image}\nRUN python3 -c 'b = bytearray(600 * 2**20); print(len(b))'\n"
    with pytest.raises(SwechainError, match="image build of swechain-ci-test/big-memory:1 failed"):
        build(sandbox, tmp_path, recipe, "swechain-ci-test/big-memory:1", BuildLimits(memory_bytes=128 * 2**20))
    # the same step within a larger limit builds: the limit, not the recipe, refused it
    build(sandbox, tmp_path, recipe, "swechain-ci-test/big-memory:2", BuildLimits(memory_bytes=2 * 2**30))


def test_an_image_over_the_size_limit_is_removed(base, tmp_path):
    sandbox, image = base
    with pytest.raises(SwechainError, match=r"over the build limit of 0\.1 GiB: removed"):
        build(
            sandbox,
            tmp_path,
            f"FROM {image}\nRUN true\n",
            "swechain-ci-test/large:1",
            BuildLimits(size_bytes=2**30 // 10),
        )
    assert sandbox.image_id("swechain-ci-test/large:1") is None


class Recorder(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Recorder.requests.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"the runner's secret\n")

    def log_message(self, *args) -> None:
        pass


def test_a_recipe_that_adds_a_url_never_reaches_the_builder(base, tmp_path, monkeypatch):
    """The review's proof of concept: ADD of a URL on the host's loopback, fetched by the daemon."""
    sandbox, _ = base
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "leak.yaml").write_text(
        "schema_version: 1\nname: leak\nkind: cli\ninstall: {dockerfile: leak.Dockerfile}\n"
        "commands: {build: 'cat /secret', fix: 'true'}\n"
    )
    (agents / "leak.Dockerfile").write_text(
        f"ARG AGENT_IMAGE\nFROM ${{AGENT_IMAGE}}\nADD http://127.0.0.1:{server.server_port}/secret /secret\n"
    )
    chain = load_chain("toy")
    try:
        with pytest.raises(
            SwechainError, match=r"leak\.Dockerfile line 3 `ADD http://127\.0\.0\.1:\d+/secret /secret`"
        ):
            ensure_agent_image(
                sandbox, chain, images.ensure_images(sandbox, chain), parse_manifest(agents / "leak.yaml")
            )
    finally:
        server.shutdown()
    assert Recorder.requests == [], "the daemon fetched nothing"


def test_a_smoke_runs_builds_are_named_apart_and_never_reused_by_trusted_runs(base, tmp_path, monkeypatch):
    sandbox, image = base
    chain = load_chain("toy")
    recipe = tmp_path / "probe.Dockerfile"
    recipe.write_text(f"ARG BASE\nFROM ${{BASE}}\nLABEL probe={time.time_ns()}\n")
    monkeypatch.setenv("SWECHAIN_NO_SECRETS", "1")
    smoke = images.build_cached(sandbox, chain, "probe", {}, {"BASE": image}, recipe_path=recipe).id
    tags = sandbox.client.images.get(smoke).tags
    try:
        assert tags and all(t.startswith("swechain-smoke/toy-probe:") for t in tags), tags
        monkeypatch.delenv("SWECHAIN_NO_SECRETS")
        trusted = images.build_cached(sandbox, chain, "probe", {}, {"BASE": image}, recipe_path=recipe).id
        trusted_tags = sandbox.client.images.get(trusted).tags
        assert any(t.startswith("swechain-ci/toy-probe:") for t in trusted_tags), "built again under its own name"
        monkeypatch.setenv("SWECHAIN_NO_SECRETS", "1")
        assert images.build_cached(sandbox, chain, "probe", {}, {"BASE": image}, recipe_path=recipe).id == trusted, (
            "a smoke run may reuse what trusted runs built"
        )
    finally:
        for tag in {*tags, *sandbox.client.images.get(trusted).tags}:
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
