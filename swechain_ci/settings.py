"""Where things live: the project checkout (chains, specs, dockerfiles) and the state home."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
HARNESS_DIR = PACKAGE_DIR / "evaluation" / "harness"  # copied into every test image


def project_root() -> Path:
    """The folder holding chains/, specs/ and dockerfiles/.

    ``SWECHAIN_ROOT`` wins; then the current directory if it has chains/;
    then the checkout this package was installed from.
    """
    if env := os.environ.get("SWECHAIN_ROOT"):
        return Path(env).resolve()
    cwd = Path.cwd()
    if (cwd / "chains").is_dir() and (cwd / "dockerfiles").is_dir():
        return cwd
    return PACKAGE_DIR.parent


def state_home() -> Path:
    """Caches and built oracles, outside anything an agent sees."""
    if env := os.environ.get("SWECHAIN_HOME"):
        return Path(env).resolve()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "swechain-ci"


DEFAULT_BASE_IMAGE = "swechain/base:py{python}-{suite}"


def base_image(python: str, suite: str) -> str:
    """The image a chain on ``python`` builds on: ``SWECHAIN_BASE_IMAGE``, a template with
    ``{python}`` and ``{suite}`` (``python:{python}-slim`` where a registry works)."""
    return (
        os.environ.get("SWECHAIN_BASE_IMAGE", DEFAULT_BASE_IMAGE).replace("{python}", python).replace("{suite}", suite)
    )
