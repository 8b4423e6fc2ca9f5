"""Splitting a version into gold code, hidden tests and protected files."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import tarfile
import threading
import zipfile
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain, ChainConfig
from swechain_ci.chain.sources import split
from swechain_ci.errors import SwechainError


def chain(folder: Path) -> Chain:
    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "demo",
            "import_name": "demo",
            "test_folder": "src/tests",
            "source_root": "src",
            "protected_files": ["pyproject.toml", "*.cfg"],
            "versions": [
                {"version": "1", "source": {"kind": "local", "path": "v1"}},
                {"version": "2", "source": {"kind": "local", "path": "v2"}},
            ],
        }
    )
    return Chain(config, folder)


def test_split_three_ways(tmp_path):
    root = tmp_path / "v1"
    files = {
        "pyproject.toml": "[project]\n",
        "setup.cfg": "",
        "README.md": "hi",
        "conftest.py": "# root conftest\n",
        "src/conftest.py": "# on the path\n",
        "src/demo/__init__.py": "",
        "src/demo/conftest.py": "# not on the path\n",
        "src/tests/test_a.py": "def test(): pass\n",
        "src/tests/data/empty.json": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    trees = split(chain(tmp_path), root, tmp_path / "out", "1")

    def listing(d):
        return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())

    assert listing(trees.code) == [
        "README.md",
        "pyproject.toml",
        "setup.cfg",
        "src/demo/__init__.py",
        "src/demo/conftest.py",
    ]
    assert listing(trees.hidden) == [
        "conftest.py",
        "src/conftest.py",
        "src/tests/data/empty.json",
        "src/tests/test_a.py",
    ]
    assert listing(trees.protected) == ["pyproject.toml", "setup.cfg", "src/demo/conftest.py"]


# --------------------------------------------------------------------------- remote sources, offline
# A real PEP 691 index served over HTTP from this process, real tar/zip archives and
# a real git repository: nothing here reaches the network.


def tar_gz(members: dict[str, bytes], top: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        folder = tarfile.TarInfo(top)
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes], top: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(f"{top}/{name}", data)
    return buffer.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Index:
    """A tiny package index: ``routes`` maps a URL path to (content type, body)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, bytes]] = {}
        self.requests: list[tuple[str, str]] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                index.requests.append((self.path, self.headers.get("Accept", "")))
                if self.path not in index.routes:
                    self.send_error(404)
                    return
                content_type, body = index.routes[self.path]
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def project(self, name: str, files: list[dict]) -> None:
        page = {"meta": {"api-version": "1.1"}, "name": name, "files": files, "versions": []}
        self.routes[f"/simple/{name}/"] = (sources.JSON_SIMPLE, json.dumps(page).encode())

    def file(self, path: str, data: bytes) -> None:
        self.routes[path] = ("application/octet-stream", data)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()
            self.thread.join()

    def downloads(self) -> list[str]:
        return [path for path, _ in self.requests if path.startswith("/files/")]


@pytest.fixture
def index(monkeypatch, tmp_path):
    served = Index()
    monkeypatch.setenv("SWECHAIN_INDEX_URL", served.url + "/simple/")
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    yield served
    served.stop()


def pypi_chain(folder: Path, versions: list[str], **source) -> Chain:
    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "Demo_Pkg",
            "import_name": "demo",
            "test_folder": "tests",
            "versions": [{"version": v, "source": {"kind": "pypi", **source}} for v in versions],
        }
    )
    return Chain(config, folder)


SDIST_1 = {
    "PKG-INFO": b"Metadata-Version: 2.1\n",
    "demo/__init__.py": b"VERSION = 1\n",
    "demo.egg-info/SOURCES.txt": b"demo/__init__.py\n",
    "tests/test_demo.py": b"def test(): pass\n",
    "tests/data/empty.json": b"",
}


def test_names_and_filenames():
    assert sources.normalize_name("Demo_Pkg") == "demo-pkg"
    assert sources.normalize_name("zope.interface") == "zope-interface"
    assert sources.normalize_name("A-_.-b") == "a-b"
    assert sources.sdist_version("PyJWT-2.0.0.tar.gz", "pyjwt") == "2.0.0"
    assert sources.sdist_version("pyjwt-2.10.0.tar.gz", "PyJWT") == "2.10.0"
    assert sources.sdist_version("python-dateutil-2.8.2.tar.gz", "python_dateutil") == "2.8.2"
    assert sources.sdist_version("demo_pkg-1.0.zip", "Demo-Pkg") == "1.0"
    assert sources.sdist_version("demo_pkg-1.0-py3-none-any.whl", "demo-pkg") is None
    assert sources.normalize_version("2.0.0-RC1") == sources.normalize_version("2.0.0rc1") == "2.0.0rc1"


def test_pypi_source_through_a_pep691_index(index, tmp_path):
    v1 = tar_gz(SDIST_1, "Demo_Pkg-1.0")
    v1_yanked = b"not even an archive"
    v2_zip = zip_bytes({"demo/__init__.py": b"VERSION = 2\n", "tests/test_demo.py": b""}, "demo_pkg-2.0")
    index.project(
        "demo-pkg",
        [
            {"filename": "demo_pkg-1.0-py3-none-any.whl", "url": "/files/w.whl", "hashes": {"sha256": "0" * 64}},
            {
                "filename": "Demo_Pkg-1.0.zip",
                "url": "/files/yanked.zip",
                "hashes": {"sha256": sha(v1_yanked)},
                "yanked": "broken",
            },
            {
                "filename": "Demo_Pkg-1.0.tar.gz",
                "url": "../../files/Demo_Pkg-1.0.tar.gz",
                "hashes": {"sha256": sha(v1)},
                "upload-time": "2024-11-17T10:19:49.260917Z",
                "requires-python": ">=3.9",
            },
            {
                "filename": "demo_pkg-2.0.zip",
                "url": f"{index.url}/files/demo_pkg-2.0.zip",
                "hashes": {"sha256": sha(v2_zip)},
            },
        ],
    )
    index.file("/files/Demo_Pkg-1.0.tar.gz", v1)
    index.file("/files/demo_pkg-2.0.zip", v2_zip)
    chain = pypi_chain(tmp_path, ["1.0", "2.0"])

    info = sources.release_info(chain, "1.0")
    assert info.model_dump() == {
        "index": index.url + "/simple",
        "project": "demo-pkg",
        "version": "1.0",
        "filename": "Demo_Pkg-1.0.tar.gz",
        "url": f"{index.url}/files/Demo_Pkg-1.0.tar.gz",
        "sha256": sha(v1),
        "upload_time": datetime(2024, 11, 17, 10, 19, 49, 260917, tzinfo=UTC),
        "requires_python": ">=3.9",
        "yanked": False,
    }
    assert index.requests[0] == ("/simple/demo-pkg/", "application/vnd.pypi.simple.v1+json")

    one = sources.materialize(chain, "1.0")

    def listing(d):
        return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())

    assert listing(one.root) == [
        "PKG-INFO",
        "demo.egg-info/SOURCES.txt",
        "demo/__init__.py",
        "tests/data/empty.json",
        "tests/test_demo.py",
    ]
    assert listing(one.code) == ["PKG-INFO", "demo/__init__.py"]
    assert listing(one.hidden) == ["tests/data/empty.json", "tests/test_demo.py"]
    assert (one.hidden / "tests/data/empty.json").read_bytes() == b""
    two = sources.materialize(chain, "2.0")
    assert listing(two.code) == ["demo/__init__.py"]
    assert (two.code / "demo/__init__.py").read_text() == "VERSION = 2\n"
    assert (two.hidden / "tests/test_demo.py").read_bytes() == b""
    assert index.downloads() == ["/files/Demo_Pkg-1.0.tar.gz", "/files/demo_pkg-2.0.zip"]
    home = tmp_path / "home"
    assert (home / "sdists" / "Demo_Pkg-1.0.tar.gz").read_bytes() == v1
    record = json.loads((one.root.parent / "source.json").read_text())
    assert (record["kind"], record["filename"], record["sha256"]) == ("pypi", "Demo_Pkg-1.0.tar.gz", sha(v1))

    # Everything is cached: with the index gone, both versions still materialise.
    index.stop()
    assert sources.materialize(chain, "1.0") == one
    assert sources.release_info(chain, "2.0").filename == "demo_pkg-2.0.zip"


def test_cached_sdist_is_checked_again(index, tmp_path):
    v1 = tar_gz(SDIST_1, "Demo_Pkg-1.0")
    index.project(
        "demo-pkg", [{"filename": "Demo_Pkg-1.0.tar.gz", "url": "/files/a.tar.gz", "hashes": {"sha256": sha(v1)}}]
    )
    index.file("/files/a.tar.gz", v1)
    chain = pypi_chain(tmp_path, ["1.0", "1.1"])
    path = sources.fetch_sdist(chain, "1.0")
    inode = path.stat().st_ino
    assert sources.fetch_sdist(chain, "1.0").stat().st_ino == inode
    assert index.downloads() == ["/files/a.tar.gz"]
    path.write_bytes(b"corrupted")
    assert sources.fetch_sdist(chain, "1.0").read_bytes() == v1
    assert index.downloads() == ["/files/a.tar.gz", "/files/a.tar.gz"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["Demo_Pkg-1.0.tar.gz"]  # no temp files left


def test_download_that_does_not_match_the_index_hash(index, tmp_path):
    index.project(
        "demo-pkg", [{"filename": "Demo_Pkg-1.0.tar.gz", "url": "/files/a.tar.gz", "hashes": {"sha256": "a" * 64}}]
    )
    index.file("/files/a.tar.gz", b"other bytes")
    chain = pypi_chain(tmp_path, ["1.0", "1.1"])
    with pytest.raises(SwechainError) as caught:
        sources.materialize(chain, "1.0")
    assert str(caught.value) == (
        f"{tmp_path}/chain.yaml: version 1.0: {index.url}/files/a.tar.gz has sha256 {sha(b'other bytes')} "
        f"but {'a' * 64} was expected; the download is corrupt or the index changed (check source.sha256 in chain.yaml)"
    )
    assert list((tmp_path / "home" / "sdists").iterdir()) == []


def test_yaml_hash_must_match_the_index(index, tmp_path):
    index.project("demo-pkg", [{"filename": "Demo_Pkg-1.0.tar.gz", "url": "/f", "hashes": {"sha256": "a" * 64}}])
    chain = pypi_chain(tmp_path, ["1.0", "1.1"], sha256="b" * 64)
    with pytest.raises(
        SwechainError,
        match=f"source.sha256 is {'b' * 64} but the index gives {'a' * 64} "
        "for Demo_Pkg-1.0.tar.gz; correct source.sha256 in chain.yaml",
    ):
        sources.release_info(chain, "1.0")
    assert index.downloads() == []


def test_missing_version_names_the_versions_with_an_sdist(index, tmp_path):
    index.project(
        "demo-pkg",
        [
            {"filename": "Demo_Pkg-1.0.tar.gz", "url": "/a", "hashes": {"sha256": "a" * 64}},
            {"filename": "Demo_Pkg-1.10.tar.gz", "url": "/b", "hashes": {"sha256": "b" * 64}},
            {"filename": "Demo_Pkg-1.2.zip", "url": "/c", "hashes": {"sha256": "c" * 64}},
            {"filename": "demo_pkg-3.0-py3-none-any.whl", "url": "/d", "hashes": {"sha256": "d" * 64}},
        ],
    )
    chain = pypi_chain(tmp_path, ["3.0", "4.0"])
    with pytest.raises(SwechainError) as caught:
        sources.source_root(chain, "3.0")
    assert str(caught.value) == (
        f"{tmp_path}/chain.yaml: version 3.0: {index.url}/simple/demo-pkg/ lists no sdist of Demo_Pkg 3.0; "
        "versions with an sdist: 1.0, 1.2, 1.10 (fix the version, or use a git source)"
    )


def test_index_errors_are_one_line(index, tmp_path):
    chain = pypi_chain(tmp_path, ["1.0", "1.1"], project="Other.Name")
    with pytest.raises(SwechainError) as caught:
        sources.release_info(chain, "1.0")
    assert str(caught.value) == (
        f"{tmp_path}/chain.yaml: version 1.0: the index has no project 'Other.Name' ({index.url}/simple/other-name/ "
        "gives 404); set source.project or package in chain.yaml, or SWECHAIN_INDEX_URL"
    )
    index.routes["/simple/other-name/"] = ("text/html", b"<html></html>")
    with pytest.raises(
        SwechainError,
        match=re.escape(
            "answered text/html, not application/vnd.pypi.simple.v1+json; "
            "point SWECHAIN_INDEX_URL at an index that supports PEP 691"
        ),
    ):
        sources.release_info(chain, "1.0")


def test_unreachable_index(monkeypatch, tmp_path):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWECHAIN_INDEX_URL", "http://127.0.0.1:9/simple")
    chain = pypi_chain(tmp_path, ["1.0", "1.1"])
    with pytest.raises(SwechainError) as caught:
        sources.materialize(chain, "1.0")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}/chain.yaml: version 1.0: cannot reach http://127.0.0.1:9/simple/demo-pkg/: ")
    assert message.endswith("(check SWECHAIN_INDEX_URL and the network)") and "\n" not in message


def test_release_info_is_for_pypi_sources_only(tmp_path):
    with pytest.raises(SwechainError, match="version 1: source kind is 'local', and only kind 'pypi' has release"):
        sources.release_info(chain(tmp_path), "1")


# --------------------------------------------------------------------------- unpacking untrusted archives


def test_unpack_tar_keeps_only_what_is_safe(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:

        def add(name, kind=tarfile.REGTYPE, data=b"", link="", mode=0o644):
            info = tarfile.TarInfo(name)
            info.type, info.size, info.linkname, info.mode = kind, len(data), link, mode
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("pkg-1.0", tarfile.DIRTYPE, mode=0o755)
        add("pkg-1.0/ok.py", data=b"print(1)\n")
        add("pkg-1.0/run.sh", data=b"#!/bin/sh\n", mode=0o755)
        add("pkg-1.0/tests/empty.json")
        add("pkg-1.0/../escape.txt", data=b"x")
        add("/abs.txt", data=b"x")
        add("pkg-1.0/inside", tarfile.SYMTYPE, link="ok.py")
        add("pkg-1.0/outside", tarfile.SYMTYPE, link="../../outside-target")
        add("pkg-1.0/etc", tarfile.SYMTYPE, link="/etc")
        add("pkg-1.0/etc/passwd", data=b"through a link")
        add("pkg-1.0/hard", tarfile.LNKTYPE, link="pkg-1.0/ok.py")
        add("pkg-1.0/hard-out", tarfile.LNKTYPE, link="/etc/passwd")
        add("pkg-1.0/dev", tarfile.CHRTYPE)
        add("pkg-1.0/fifo", tarfile.FIFOTYPE)
    archive = tmp_path / "pkg-1.0.tar.gz"
    archive.write_bytes(buffer.getvalue())
    dest = tmp_path / "out" / "tree"
    sources.unpack_archive(archive, dest)
    found = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    # The link to /etc is dropped, so etc/passwd lands in a real folder inside the tree.
    assert found == ["etc", "etc/passwd", "hard", "inside", "ok.py", "run.sh", "tests", "tests/empty.json"]
    assert not (dest / "etc").is_symlink() and (dest / "etc/passwd").read_bytes() == b"through a link"
    assert os.readlink(dest / "inside") == "ok.py"
    assert (dest / "hard").read_bytes() == b"print(1)\n"
    assert (dest / "tests/empty.json").read_bytes() == b""
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "ok.py").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pkg-1.0.tar.gz"]


def test_unpack_zip_keeps_only_what_is_safe(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("pkg-1.0/ok.py", b"print(1)\n")
        zf.writestr("pkg-1.0/data/empty.txt", b"")
        zf.writestr("pkg-1.0/../escape.txt", b"x")
        zf.writestr("/abs.txt", b"x")
        link = zipfile.ZipInfo("pkg-1.0/outside")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "../../somewhere")
        link = zipfile.ZipInfo("pkg-1.0/inside")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "ok.py")
    archive = tmp_path / "pkg-1.0.zip"
    archive.write_bytes(buffer.getvalue())
    dest = tmp_path / "out"
    sources.unpack_archive(archive, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == ["data", "data/empty.txt", "inside", "ok.py"]
    assert os.readlink(dest / "inside") == "ok.py"
    assert (dest / "data/empty.txt").read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pkg-1.0.zip"]


def test_unpack_without_a_single_top_folder_keeps_paths(tmp_path):
    archive = tmp_path / "flat.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a/x.py", b"1")
        zf.writestr("b.txt", b"2")
    sources.unpack_archive(archive, tmp_path / "out")
    assert sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file()) == [
        "a/x.py",
        "b.txt",
    ]


# --------------------------------------------------------------------------- git sources


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def tagged_repo(tmp_path) -> Path:
    repo = tmp_path / "upstream"
    (repo / "demo").mkdir(parents=True)
    (repo / "tests").mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "demo/__init__.py").write_text("VERSION = 1\n")
    (repo / "tests/test_demo.py").write_text("def test(): assert True\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "one", cwd=repo)
    git("tag", "v1.0", cwd=repo)
    (repo / "demo/__init__.py").write_text("VERSION = 2\n")
    (repo / "tests/empty.json").write_text("")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "two", cwd=repo)
    git("tag", "-a", "v2.0", "-m", "release 2.0", cwd=repo)
    (repo / "demo/__init__.py").write_text("VERSION = 3  # unreleased\n")
    git("commit", "-q", "-am", "three", cwd=repo)
    return repo


def git_chain(folder: Path, url: str, tags: dict[str, str]) -> Chain:
    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "demo",
            "import_name": "demo",
            "test_folder": "tests",
            "versions": [{"version": v, "source": {"kind": "git", "url": url, "tag": t}} for v, t in tags.items()],
        }
    )
    return Chain(config, folder)


def test_git_source_checks_out_each_tag(tagged_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    url = tagged_repo.as_uri()
    assert url.startswith("file:///")
    chain = git_chain(tmp_path, url, {"1.0": "v1.0", "2.0": "v2.0"})
    one, two = sources.materialize(chain, "1.0"), sources.materialize(chain, "2.0")

    def listing(d):
        return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())

    assert listing(one.root) == ["demo/__init__.py", "tests/test_demo.py"]  # no .git
    assert listing(one.code) == ["demo/__init__.py"]
    assert (one.code / "demo/__init__.py").read_text() == "VERSION = 1\n"
    assert listing(two.hidden) == ["tests/empty.json", "tests/test_demo.py"]
    assert (two.code / "demo/__init__.py").read_text() == "VERSION = 2\n"
    record = json.loads((two.root.parent / "source.json").read_text())
    assert record == {
        "kind": "git",
        "url": url,
        "tag": "v2.0",
        "commit": git("rev-parse", "v2.0^{commit}", cwd=tagged_repo),
    }
    # Cached: the upstream may disappear.
    (tagged_repo / ".git").rename(tagged_repo / "moved.git")
    assert sources.materialize(chain, "1.0") == one


def test_git_source_with_a_missing_tag(tagged_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    chain = git_chain(tmp_path, tagged_repo.as_uri(), {"1.0": "v1.0", "9.0": "v9.0"})
    with pytest.raises(SwechainError) as caught:
        sources.source_root(chain, "9.0")
    message = str(caught.value)
    assert message.startswith(
        f"{tmp_path}/chain.yaml: version 9.0: git clone of {tagged_repo.as_uri()} at tag v9.0 failed: "
    )
    assert "v9.0" in message.split("failed: ")[1] and "\n" not in message
    assert message.endswith("(check source.url and source.tag in chain.yaml)")
    assert list((tmp_path / "home" / "sources" / "git").iterdir()) == []


def test_a_git_source_is_fetched_from_the_mirror_git_instead_of_names(tagged_repo, tmp_path, monkeypatch):
    """chain.yaml keeps the canonical URL; SWECHAIN_GIT_INSTEAD_OF points git at a mirror
    (git's own url.<base>.insteadOf), and the checkout is the tag's commit."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    canonical = "https://git.invalid/pallets/demo.git"
    mirrors = tmp_path / "mirrors" / "pallets"
    mirrors.mkdir(parents=True)
    git("clone", "-q", "--bare", str(tagged_repo), str(mirrors / "demo.git"), cwd=tmp_path)
    mirror_base = (tmp_path / "mirrors").as_uri() + "/"
    monkeypatch.setenv("SWECHAIN_GIT_INSTEAD_OF", f"/nowhere=https://other.invalid/;{mirror_base}=https://git.invalid/")
    chain = git_chain(tmp_path, canonical, {"1.0": "v1.0", "2.0": "v2.0"})
    two = sources.materialize(chain, "2.0")
    assert (two.code / "demo/__init__.py").read_text() == "VERSION = 2\n"
    record = json.loads((two.root.parent / "source.json").read_text())
    assert record == {
        "kind": "git",
        "url": canonical,
        "tag": "v2.0",
        "mirror": f"{mirror_base}pallets/demo.git",
        "commit": git("rev-parse", "v2.0^{commit}", cwd=tagged_repo),
    }


def test_a_malformed_git_mirror_setting_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWECHAIN_GIT_INSTEAD_OF", "/srv/mirror-without-a-prefix")
    chain = git_chain(tmp_path, "https://git.invalid/demo.git", {"1.0": "v1.0", "2.0": "v2.0"})
    with pytest.raises(SwechainError) as caught:
        sources.source_root(chain, "1.0")
    assert str(caught.value) == (
        "SWECHAIN_GIT_INSTEAD_OF: '/srv/mirror-without-a-prefix' is not <mirror>=<url prefix>; e.g. "
        "SWECHAIN_GIT_INSTEAD_OF=/srv/mirrors/jinja.git=https://github.com/pallets/jinja.git"
    )
