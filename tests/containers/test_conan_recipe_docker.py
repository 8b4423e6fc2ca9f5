"""conan's version image gives the functional tests the reference's tool locations
(test/conftest_user.py): a real build of the family's recipe, read back by Python."""

from __future__ import annotations

import shutil
import subprocess

from conftest import REPO


def test_the_conan_version_image_holds_the_reference_tool_locations(docker_engine, tmp_path):
    context = tmp_path / "context"
    (context / "version" / "hidden" / "test").mkdir(parents=True)
    shutil.copy(REPO / "dockerfiles" / "conan" / "version.Dockerfile", context / "Dockerfile")
    tag = "swechain-test/conan-version-recipe:latest"
    subprocess.run(
        [
            "docker",
            "build",
            "-q",
            "--network",
            "none",
            "--build-arg",
            "DEPS=swechain/base:py3.11-bookworm",
            "-t",
            tag,
            ".",
        ],
        cwd=context,
        check=True,
        capture_output=True,
    )
    try:
        read = (
            "import sys; sys.path.insert(0, '/opt/swechain/version/hidden/test'); import conftest_user as c; "
            "t = c.tools_locations; print(t['cmake']['3.19']['path']['Linux'], t['cmake']['3.16']['path']['Linux'], "
            "t['scons'], len(t['bazel']))"
        )
        out = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", tag, "python3", "-c", read],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert out.split() == ["/usr/bin", "skip-tests", "{'disabled':", "True}", "8"]
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
