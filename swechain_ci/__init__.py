"""swechain-ci: coding agents maintaining a Python package through a chain of its releases, as CI."""

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _version() -> str:
    """From a checkout, its pyproject.toml (an editable install's metadata lags behind it, and a
    runner's checkout has none); from an installed wheel, the package's metadata."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == "swechain-ci":
            return str(project["version"])
    try:
        return version("swechain-ci")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()
