"""Images: the base image chain of fallbacks, and builds cached by their inputs."""

from __future__ import annotations

import subprocess

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.containers import images
from swechain_ci.containers.sandbox import DockerSandbox
from swechain_ci.errors import SwechainError

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
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                ref,
                "python3",
                "-c",
                "import venv, sys; print(sys.version_info[:2])",
            ],
            capture_output=True,
            text=True,
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


def test_a_family_with_debian_packages_gets_its_own_base_and_python_recipes(docker_engine, project_copy, monkeypatch):
    """The conan family adds cmake and a C++ toolchain (dockerfiles/conan/debian-packages.txt)
    and keeps python's recipes: the toy chain declared as family conan builds with both."""
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    chain_file = project_copy / "chains" / "toy" / "chain.yaml"
    chain_file.write_text(chain_file.read_text().replace("family: python", "family: conan"))
    chain = load_chain("toy").select_steps("1")
    listed = [
        line.strip()
        for line in (project_copy / "dockerfiles" / "conan" / "debian-packages.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert images.family_packages(chain) == listed and {"cmake", "make", "g++", "pkg-config"} <= set(listed)
    assert images.recipe(chain, "deps").parent.name == "python"
    sandbox = DockerSandbox()
    built = images.ensure_images(sandbox, chain)
    probe = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            built.versions["0.2.0"],
            "sh",
            "-c",
            "cmake --version | head -1 && g++ --version | head -1 && /opt/venv/bin/python -c 'import pytest'",
        ],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("cmake version 3.")
    plain = images.ensure_base(sandbox, "3.11")
    assert (
        subprocess.run(
            ["docker", "run", "--rm", "--network", "none", plain, "sh", "-c", "command -v cmake"], capture_output=True
        ).returncode
        != 0
    ), "other families' bases stay lean"


def test_an_unknown_family_is_a_one_line_error(project_copy, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    chain_file = project_copy / "chains" / "toy" / "chain.yaml"
    chain_file.write_text(chain_file.read_text().replace("family: python", "family: cobol"))
    with pytest.raises(
        SwechainError, match=r"family 'cobol' but .*dockerfiles/cobol does not exist \(families: conan, python\)"
    ):
        images.recipe(load_chain("toy"), "deps")
