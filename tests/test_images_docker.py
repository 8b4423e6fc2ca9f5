"""Images: the base image chain of fallbacks, and builds cached by their inputs."""

from __future__ import annotations

import subprocess

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox

pytestmark = pytest.mark.docker


def test_an_absent_unpullable_base_image_is_bootstrapped_from_debian(docker_engine, monkeypatch):
    ref = "swechain-ci-test/base:bootstrap-bookworm"
    subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)
    monkeypatch.setenv("SWECHAIN_BASE_IMAGE", ref)
    sandbox = DockerSandbox()
    try:
        image = images.ensure_base(sandbox, "3.11")  # not local, the pull fails here, so mmdebstrap
        assert sandbox.image_id(ref) == image
        probe = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", ref, "python3", "-c", "import venv, sys; print(sys.version_info[:2])"],
            capture_output=True, text=True,
        )
        assert probe.stdout.strip() == "(3, 11)", probe.stderr
        assert images.ensure_base(sandbox, "3.11") == image, "a local image is used as it is"
    finally:
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)


def test_images_are_reused_until_an_input_changes(docker_engine, project_copy, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    sandbox = DockerSandbox()
    chain = load_chain("toy")
    first = images.ensure_images(sandbox, chain)
    assert images.ensure_images(sandbox, chain) == first
    test_file = project_copy / "chains" / "toy" / "versions" / "0.3.0" / "tests" / "test_package.py"
    test_file.write_text(test_file.read_text() + "\n# changed\n")
    second = images.ensure_images(sandbox, load_chain("toy"))
    assert second.deps == first.deps
    assert {v for v in first.versions if first.versions[v] != second.versions[v]} == {"0.3.0"}
