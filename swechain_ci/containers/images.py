"""Images per chain: base -> dependencies -> one per version (the agent image builds on them).

Every image is tagged with a hash of its inputs (recipe, parent image, files),
so it is built once and rebuilt only when an input changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from packaging.utils import canonicalize_name

from swechain_ci import progress
from swechain_ci.chain import environments as environments_of
from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import Chain
from swechain_ci.chain.environments import find_links_options
from swechain_ci.chain.interpreters import interpreter
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.errors import SwechainError
from swechain_ci.settings import HARNESS_DIR, base_image, project_root, state_home

DEBIAN_PACKAGES = "python3,python3-venv,python3-pip,git,ca-certificates"
IMAGE_NAMESPACE = "swechain-ci"
SMOKE_IMAGE_NAMESPACE = "swechain-smoke"


@dataclass(frozen=True)
class ChainImages:
    """Per version: the image to run (``versions``, its id on this Docker host) and the key of its
    inputs (``keys``: the same on every runner that builds it from the same inputs, whatever id
    its build got), which is what kept gold runs and oracles are keyed by."""

    deps: dict[str, str]
    versions: dict[str, str]
    environments: dict[str, list[str]]
    keys: dict[str, str]

    @property
    def fingerprint(self) -> str:
        joined = "".join(f"{v}={k}" for v, k in sorted(self.keys.items()))
        return hashlib.sha256(joined.encode()).hexdigest()


class Built(NamedTuple):
    """An image built (or reused): its id here, and the key of its inputs with every parent image
    named by its own key (portable: another runner's build of the same inputs has the same key)."""

    id: str
    key: str


def ensure_base(sandbox: Sandbox, python: str, extra_packages: Sequence[str] = ()) -> str:
    """The base image for ``python``: a local one if present, else a pull, else a Debian bootstrap.

    ``extra_packages`` (a family's Debian packages, e.g. a C++ toolchain) make a base of their
    own, tagged with their hash, so that other chains' bases stay lean.
    """
    suite = interpreter(python).debian_suite
    ref = base_image(python, suite)
    if extra_packages:
        ref += "-with-" + hashlib.sha256(" ".join(sorted(extra_packages)).encode()).hexdigest()[:12]
    if image := sandbox.image_id(ref):
        return image
    progress.say(f"base image {ref} not present; pulling")
    if image := sandbox.pull(ref):
        return image
    if shutil.which("mmdebstrap") is None:
        raise SwechainError(
            f"base image {ref} is neither present nor pullable, and mmdebstrap is missing to bootstrap it: "
            f"install it (apt-get install mmdebstrap) or set SWECHAIN_BASE_IMAGE to an image you have"
        )
    progress.say(f"bootstrapping {ref} (Python {python}) from Debian {suite} with mmdebstrap (about a minute)")
    with tempfile.TemporaryDirectory(prefix="swechain-base-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        result = subprocess.run(
            [
                "mmdebstrap",
                "--variant=minbase",
                f"--include={','.join([DEBIAN_PACKAGES, *extra_packages])}",
                suite,
                str(rootfs),
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise SwechainError(f"mmdebstrap failed: {result.stderr.strip().splitlines()[-1:]}")
        return sandbox.import_image(rootfs, ref)


def _wheel_hashes(folder: Path) -> dict[str, str]:
    return {p.name: file_digest(p) for p in sorted(folder.glob("*.whl"))}


def _write_sums(sums: Path, hashes: dict[str, str]) -> None:
    sums.write_text("".join(f"{digest}  {name}\n" for name, digest in hashes.items()))


def _wheelhouse_verifies(folder: Path, sums: Path) -> bool:
    """True if the folder holds exactly the wheels ``sums`` lists, each with that content."""
    if not sums.is_file() or not folder.is_dir():
        return False
    recorded = dict(line.split("  ", 1)[::-1] for line in sums.read_text().splitlines() if "  " in line)
    return recorded == _wheel_hashes(folder)


def wheelhouse(pins: list[str], python: str, find_links: list[Path] | None = None) -> Path:
    """Wheels for ``pins`` downloaded on the host (or built there, ``find_links``), so that image
    builds need no network.

    Reused only when every wheel's content matches ``<key>.sha256``, written beside the
    folder at download time (the folder's ``.complete`` is kept for stable image tags but
    trusted for nothing); otherwise downloaded again, whole, into a fresh folder. A folder
    from before these hashes existed has them recorded on first use."""
    target = interpreter(python)
    key = hashlib.sha256(("\n".join(pins) + python + " ".join(target.platforms)).encode()).hexdigest()[:16]
    folder = state_home() / "wheelhouse" / key
    sums = folder.with_name(f"{key}.sha256")
    if _wheelhouse_verifies(folder, sums):
        return folder
    if not sums.exists() and (folder / ".complete").is_file():
        _write_sums(sums, _wheel_hashes(folder))  # a wheelhouse from an earlier swechain-ci
        return folder
    progress.say(f"downloading {len(pins)} pinned test requirements into the wheelhouse {folder}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--dest",
            str(staging),
            "--only-binary=:all:",
            "--python-version",
            python,
            "--implementation",
            "cp",
            *target.platform_options(),
            *find_links_options(find_links or []),
            *pins,
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        tail = " ".join(result.stderr.strip().splitlines()[-2:])
        shutil.rmtree(staging, ignore_errors=True)
        raise SwechainError(f"pip download of test requirements failed: {tail} (is PyPI reachable?)")
    (staging / ".complete").write_text("\n".join(pins))
    hashes = _wheel_hashes(staging)
    if folder.exists():  # tampered or half-written: set aside, never reused
        folder.rename(folder.with_name(f".{key}-unverified-{staging.name}"))
    staging.rename(folder)
    _write_sums(sums, hashes)
    return folder


def family_dir(chain: Chain) -> Path:
    folder = project_root() / "dockerfiles" / chain.config.family
    if not folder.is_dir():
        raise SwechainError(
            f"chain {chain.id} has family '{chain.config.family}' but {folder} does not exist "
            f"(families: {', '.join(sorted(p.name for p in folder.parent.iterdir() if p.is_dir()))})"
        )
    return folder


def family_packages(chain: Chain) -> list[str]:
    """The Debian packages the family's images need besides Python (``debian-packages.txt``)."""
    listed = family_dir(chain) / "debian-packages.txt"
    if not listed.is_file():
        return []
    return [line.split("#", 1)[0].strip() for line in listed.read_text().splitlines() if line.split("#", 1)[0].strip()]


def recipe(chain: Chain, name: str) -> Path:
    """The family's recipe, else the plain Python one: a family holds only what differs."""
    for folder in (family_dir(chain), project_root() / "dockerfiles" / "python"):
        if (folder / f"{name}.Dockerfile").is_file():
            return folder / f"{name}.Dockerfile"
    raise SwechainError(f"missing image recipe {name}.Dockerfile in {family_dir(chain)} or dockerfiles/python")


def image_namespaces() -> tuple[str, ...]:
    """Where images are looked up, the last where new ones are built. A run without secrets (the
    smoke run of a proposed agent, ``SWECHAIN_NO_SECRETS``) reuses trusted images but builds under
    names of its own, which trusted runs never look up: nothing a smoke build fetched or made is
    reused by a trusted run."""
    return (IMAGE_NAMESPACE, SMOKE_IMAGE_NAMESPACE) if os.environ.get("SWECHAIN_NO_SECRETS") else (IMAGE_NAMESPACE,)


def build_cached(
    sandbox: Sandbox,
    chain: Chain,
    kind: str,
    files: dict[str, Path],
    buildargs: dict[str, str],
    recipe_path: Path | None = None,
    network: str = "none",
    parent_keys: dict[str, str] | None = None,
) -> Built:
    """Build ``dockerfiles/<family>/<kind>.Dockerfile`` (or ``recipe_path``) over ``files``,
    reusing a build with equal inputs. ``parent_keys``: for the build arguments that name a parent
    image by its id here, that parent's key (for the portable key)."""
    recipe_path = recipe_path or recipe(chain, kind)
    recipe_bytes = recipe_path.read_bytes()
    file_digests = {
        name: trees.digest(path) if path.is_dir() else file_digest(path) for name, path in sorted(files.items())
    }

    def key_of(args: dict[str, str]) -> str:
        h = hashlib.sha256(recipe_bytes)
        for arg, value in sorted(args.items()):
            h.update(f"{arg}={value}".encode())
        for name, digest in file_digests.items():
            h.update(name.encode() + digest.encode())
        return h.hexdigest()

    local = key_of(buildargs)
    portable = key_of({**buildargs, **(parent_keys or {})})
    name = f"{chain.id}-{kind}:py{chain.config.python}-{local[:16]}"
    *trusted, own = image_namespaces()
    for namespace in (*trusted, own):
        if image := sandbox.image_id(f"{namespace}/{name}"):
            return Built(image, portable)
    tag = f"{own}/{name}"
    with progress.status(f"building image {tag}"), tempfile.TemporaryDirectory(prefix="swechain-context-") as tmp:
        context = Path(tmp)
        shutil.copy(recipe_path, context / "Dockerfile")
        for name, path in files.items():
            if path.is_dir():
                trees.copy_tree(path, context / name)
            else:
                shutil.copy(path, context / name)
        log = state_home() / "logs" / "images" / f"{chain.id}-{kind}-{local[:16]}.log"
        return Built(sandbox.build(context, "Dockerfile", tag, buildargs, log, network=network), portable)


def file_digest(path: Path) -> str:
    """A file's sha256, read in blocks (a wheel may be large)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def base_key(python: str, extra_packages: Sequence[str] = ()) -> str:
    """The base image's key: what it is made of (its reference names the Python, the Debian suite
    and any extra packages). Runners that bootstrap it from the same suite take theirs as equal;
    a pool that wants bit-equal bases gives every runner the same one (SWECHAIN_BASE_IMAGE)."""
    suite = interpreter(python).debian_suite
    return hashlib.sha256(f"{base_image(python, suite)}\0{' '.join(sorted(extra_packages))}".encode()).hexdigest()


def ensure_deps(sandbox: Sandbox, chain: Chain, base: Built, pins: list[str]) -> Built:
    with tempfile.TemporaryDirectory(prefix="swechain-reqs-") as tmp:
        req_file = Path(tmp) / "requirements.txt"
        req_file.write_text("\n".join(pins) + "\n")
        return build_cached(
            sandbox,
            chain,
            "deps",
            {
                "requirements.txt": req_file,
                "wheels": wheelhouse(pins, chain.config.python, environments_of.built_wheels(chain)),
                "harness": HARNESS_DIR,
            },
            {"BASE": base.id, "PYTHON": chain.config.python},
            parent_keys={"BASE": base.key},
        )


def write_distribution_metadata(chain: Chain, version: str, root: Path, dest: Path) -> None:
    """A ``.dist-info`` folder for the code under test, which runs from a path, not installed.

    The harness puts ``dest`` on the path, so ``importlib.metadata`` finds the target
    version's metadata: the sdist's PKG-INFO, or name and version where there is none.
    """
    name = canonicalize_name(chain.config.package).replace("-", "_")
    info = dest / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    pkg_info = root / "PKG-INFO"
    if pkg_info.is_file():
        shutil.copyfile(pkg_info, info / "METADATA")
    else:
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {chain.config.package}\nVersion: {version}\n")


def ensure_version(sandbox: Sandbox, chain: Chain, deps: Built, version: str) -> Built:
    split = sources.materialize(chain, version)
    with tempfile.TemporaryDirectory(prefix="swechain-version-") as tmp:
        staged = Path(tmp) / "version"
        trees.copy_tree(split.hidden, staged / "hidden")
        trees.copy_tree(split.protected, staged / "protected")
        if chain.config.environment.installed_metadata:
            write_distribution_metadata(chain, version, split.root, staged / "dist")
        return build_cached(
            sandbox, chain, "version", {"version": staged}, {"DEPS": deps.id}, parent_keys={"DEPS": deps.key}
        )


def ensure_images(sandbox: Sandbox, chain: Chain, only: Sequence[str] | None = None) -> ChainImages:
    """Every version's image (or those of ``only``, a pool runner's share); versions whose environments
    resolve alike share a dependency image."""
    packages = family_packages(chain)
    base = Built(ensure_base(sandbox, chain.config.python, packages), base_key(chain.config.python, packages))
    environments = {v: environments_of.pins(chain, v) for v in chain.versions if only is None or v in only}
    by_pins: dict[tuple[str, ...], Built] = {}
    deps: dict[str, Built] = {}
    for version, pins in environments.items():
        if tuple(pins) not in by_pins:
            by_pins[tuple(pins)] = ensure_deps(sandbox, chain, base, pins)
        deps[version] = by_pins[tuple(pins)]
    versions = {v: ensure_version(sandbox, chain, deps[v], v) for v in environments}
    return ChainImages(
        deps={v: d.id for v, d in deps.items()},
        versions={v: b.id for v, b in versions.items()},
        environments=environments,
        keys={v: b.key for v, b in versions.items()},
    )
