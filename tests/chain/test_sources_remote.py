"""PyPI sources against the real index (pypi.org is reachable from this machine and CI).

Kept few and small: one ~90 kB sdist (PyJWT 2.10.0) downloaded once per module, and two
index look-ups for the error cases.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from packaging.version import Version

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain, ChainConfig
from swechain_ci.errors import SwechainError

PYJWT_2_10_0_SHA256 = "7628a7eb7938959ac1b26e819a1df0fd3259505627b575e4bad6d08f76db695c"


def pyjwt_chain(folder: Path, **source) -> Chain:
    config = ChainConfig.model_validate(
        {
            "id": "pyjwt",
            "package": "PyJWT",
            "import_name": "jwt",
            "source_root": ".",
            "test_folder": "tests",
            "versions": [{"version": v, "source": {"kind": "pypi", **source}} for v in ("2.10.0", "2.10.99")],
        }
    )
    return Chain(config, folder)


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("swechain-home")


@pytest.fixture(scope="module")
def pyjwt(home, tmp_path_factory):
    """PyJWT 2.10.0 materialised once from pypi.org into a module-wide state home."""
    folder = tmp_path_factory.mktemp("chain")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWECHAIN_HOME", str(home))
        patch.delenv("SWECHAIN_INDEX_URL", raising=False)
        chain = pyjwt_chain(folder)
        return chain, sources.materialize(chain, "2.10.0")


def test_pyjwt_sdist_from_pypi(pyjwt, home):
    _chain, split = pyjwt
    assert split.root == home / "sources" / "pypi" / f"pyjwt-2.10.0.tar.gz-{PYJWT_2_10_0_SHA256[:16]}" / "tree"
    # The top-level PyJWT-2.10.0/ folder is stripped; the egg-info stays in the raw tree only.
    assert sorted(p.name for p in split.root.iterdir()) == [
        ".pre-commit-config.yaml",
        ".readthedocs.yaml",
        "AUTHORS.rst",
        "CHANGELOG.rst",
        "CODE_OF_CONDUCT.md",
        "LICENSE",
        "MANIFEST.in",
        "PKG-INFO",
        "PyJWT.egg-info",
        "README.rst",
        "SECURITY.md",
        "docs",
        "jwt",
        "pyproject.toml",
        "ruff.toml",
        "setup.cfg",
        "tests",
        "tox.ini",
    ]
    assert sorted(p.name for p in split.code.iterdir()) == [
        ".pre-commit-config.yaml",
        ".readthedocs.yaml",
        "AUTHORS.rst",
        "CHANGELOG.rst",
        "CODE_OF_CONDUCT.md",
        "LICENSE",
        "MANIFEST.in",
        "PKG-INFO",
        "README.rst",
        "SECURITY.md",
        "docs",
        "jwt",
        "pyproject.toml",
        "ruff.toml",
        "setup.cfg",
        "tox.ini",
    ]
    assert files(split.code / "jwt") == [
        "__init__.py",
        "algorithms.py",
        "api_jwk.py",
        "api_jws.py",
        "api_jwt.py",
        "exceptions.py",
        "help.py",
        "jwk_set_cache.py",
        "jwks_client.py",
        "py.typed",
        "types.py",
        "utils.py",
        "warnings.py",
    ]
    assert '__version__ = "2.10.0"' in (split.code / "jwt/__init__.py").read_text()
    assert sorted(p.name for p in split.hidden.iterdir()) == ["tests"]
    assert len(files(split.hidden)) == 42
    empty = split.hidden / "tests/keys/jwk_empty.json"
    assert empty.is_file() and empty.stat().st_size == 0
    assert files(split.protected) == ["pyproject.toml", "setup.cfg", "tox.ini"]


def test_release_info_records_the_release_date(pyjwt, home, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(home))
    monkeypatch.delenv("SWECHAIN_INDEX_URL", raising=False)
    info = sources.release_info(pyjwt[0], "2.10.0")
    assert (info.filename, info.sha256, info.project, info.version) == (
        "pyjwt-2.10.0.tar.gz",
        PYJWT_2_10_0_SHA256,
        "pyjwt",
        "2.10.0",
    )
    assert info.upload_time == datetime(2024, 11, 17, 10, 19, 49, 260917, tzinfo=UTC)
    assert info.url.startswith("https://files.pythonhosted.org/") and info.url.endswith("/pyjwt-2.10.0.tar.gz")
    assert (info.requires_python, info.yanked, info.index) == (">=3.9", False, "https://pypi.org/simple")


def test_second_materialize_is_served_from_the_cache(pyjwt, home, monkeypatch):
    chain, first = pyjwt
    sdist = home / "sdists" / "pyjwt-2.10.0.tar.gz"
    before = (sdist.stat().st_ino, sdist.stat().st_mtime_ns, first.root.stat().st_ino, first.code.stat().st_ino)
    monkeypatch.setenv("SWECHAIN_HOME", str(home))
    # An unreachable index: any network access would fail.
    monkeypatch.setenv("SWECHAIN_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(SwechainError, match=re.escape("cannot reach http://127.0.0.1:9/simple/pyjwt/")):
        sources.release_info(pyjwt_chain(home, project="pyjwt"), "2.10.99")  # a look-up that is not cached
    monkeypatch.delenv("SWECHAIN_INDEX_URL")
    again = sources.materialize(chain, "2.10.0")
    assert again == first
    assert (sdist.stat().st_ino, sdist.stat().st_mtime_ns, again.root.stat().st_ino, again.code.stat().st_ino) == before
    # Without the unpacked tree, the cached sdist is re-verified and reused, not downloaded again.
    (home / "releases" / "pyjwt" / "2.10.0.json").unlink()
    assert sources.fetch_sdist(chain, "2.10.0") == sdist
    assert (sdist.stat().st_ino, sdist.stat().st_mtime_ns) == before[:2]
    assert sorted(os.listdir(home / "sdists")) == ["pyjwt-2.10.0.tar.gz"]


def test_hash_in_yaml_that_does_not_match(tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    monkeypatch.delenv("SWECHAIN_INDEX_URL", raising=False)
    chain = pyjwt_chain(tmp_path, sha256="0" * 64)
    with pytest.raises(SwechainError) as caught:
        sources.materialize(chain, "2.10.0")
    assert str(caught.value) == (
        f"{tmp_path}/chain.yaml: version 2.10.0: source.sha256 is {'0' * 64} but the index gives "
        f"{PYJWT_2_10_0_SHA256} for pyjwt-2.10.0.tar.gz; correct source.sha256 in chain.yaml"
    )
    assert not (tmp_path / "sdists").exists()


def test_version_without_an_sdist(tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    monkeypatch.delenv("SWECHAIN_INDEX_URL", raising=False)
    with pytest.raises(SwechainError) as caught:
        sources.materialize(pyjwt_chain(tmp_path), "2.10.99")
    message = str(caught.value)
    assert message.startswith(
        f"{tmp_path}/chain.yaml: version 2.10.99: https://pypi.org/simple/pyjwt/ lists no sdist of PyJWT 2.10.99; "
        "versions with an sdist (latest 10 of "
    )
    assert message.endswith("(fix the version, or use a git source)") and "\n" not in message
    listed = message.split("): ")[1].split(" (fix")[0].split(", ")
    assert len(listed) == len(set(listed)) == 10
    # The latest ten, in release order: all at or after 2.9.0, since 2.10.0 itself has an sdist.
    assert [Version(v) for v in listed] == sorted(Version(v) for v in listed)
    assert Version(listed[0]) >= Version("2.9.0")
