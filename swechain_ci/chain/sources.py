"""Version sources, split three ways: gold code, hidden tests and protected files.

A version's source is a folder in the repository (``local``), the version's sdist
from the package index (``pypi``, PEP 691 JSON Simple API) or a tagged git checkout
(``git``). Remote sources are fetched once into the state home::

    sdists/<filename>                          downloaded sdists, hash-checked on every reuse
    releases/<project>/<version>.json          what the index said about the sdist (ReleaseInfo)
    sources/pypi/<filename>-<sha256[:16]>/     unpacked: tree/ (top-level folder stripped) + source.json
    sources/git/<sha256(url, tag)[:16]>/       checkout without .git: tree/ + source.json

Each cache folder is built in a temporary folder and renamed into place, so a
folder that exists is complete.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.version import InvalidVersion, Version
from pydantic import ConfigDict, ValidationError

from swechain_ci.chain import trees
from swechain_ci.chain.definition import Chain, GitSource, LocalSource, PypiSource
from swechain_ci.errors import SwechainError
from swechain_ci.models import Strict
from swechain_ci.records import write_bytes
from swechain_ci.settings import state_home

DEFAULT_INDEX_URL = "https://pypi.org/simple"
INDEX_ENV = "SWECHAIN_INDEX_URL"
HTTP_TIMEOUT_S = 60.0
GIT_TIMEOUT_S = 600.0
JSON_SIMPLE = "application/vnd.pypi.simple.v1+json"
# Preference order when a version has several sdists.
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".zip")
# Unpacked size limit for one source tree.
MAX_SOURCE_BYTES = 1024 * 1024 * 1024
USER_AGENT = "swechain-ci (+https://github.com/; sdist fetcher)"


@dataclass(frozen=True)
class VersionTrees:
    """One version, split. ``code`` is what an agent may see."""

    version: str
    root: Path
    code: Path
    hidden: Path
    protected: Path
    digest: str


class ReleaseInfo(Strict):
    """The sdist of one release, as the package index lists it.

    ``upload_time`` is the release date (PEP 700); ``None`` when the index does not
    report it.
    """

    model_config = ConfigDict(frozen=True)
    index: str
    project: str
    version: str
    filename: str
    url: str
    sha256: str
    upload_time: datetime | None = None
    requires_python: str | None = None
    yanked: bool = False


def chain_file(chain: Chain) -> Path:
    return chain.folder / "chain.yaml"


def _where(chain: Chain, version: str) -> str:
    return f"{chain_file(chain)}: version {version}"


# --------------------------------------------------------------------------- names and versions


def normalize_name(name: str) -> str:
    """PEP 503: lowercase, runs of ``-``, ``_`` and ``.`` become one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_version(version: str) -> str:
    """PEP 440 normal form when the version parses, else lowercase text."""
    try:
        return str(Version(version))
    except InvalidVersion:
        return version.strip().lower()


def _version_key(version: str):
    try:
        return (1, Version(version), version)
    except InvalidVersion:
        return (0, None, version)


def _sorted_versions(versions) -> list[str]:
    keyed = [_version_key(v) for v in set(versions)]
    parsed = sorted(k for k in keyed if k[0] == 1)
    other = sorted(k[2] for k in keyed if k[0] == 0)
    return other + [k[2] for k in parsed]


def sdist_suffix(filename: str) -> str | None:
    lower = filename.lower()
    return next((s for s in SDIST_SUFFIXES if lower.endswith(s)), None)


def sdist_version(filename: str, project: str) -> str | None:
    """The version in an sdist filename (``PyJWT-2.0.0.tar.gz``, ``pyjwt-2.10.0.tar.gz``).

    The name part may itself contain ``-``; the split point is the one whose name
    part normalises to the project's name, else the last ``-``.
    """
    suffix = sdist_suffix(filename)
    if suffix is None:
        return None
    stem = filename[: -len(suffix)]
    wanted = normalize_name(project)
    dashes = [i for i, ch in enumerate(stem) if ch == "-"]
    for i in dashes:
        if normalize_name(stem[:i]) == wanted:
            return stem[i + 1 :]
    return stem[dashes[-1] + 1 :] if dashes else None


# --------------------------------------------------------------------------- HTTP


def index_url() -> str:
    return (os.environ.get(INDEX_ENV) or DEFAULT_INDEX_URL).rstrip("/")


def _open(url: str, accept: str | None = None):
    headers = {"User-Agent": USER_AGENT}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    return urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S)


def _http_problem(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


def project_page(project: str, where: str) -> tuple[str, dict]:
    """The PEP 691 JSON project page: (its URL, the parsed document)."""
    url = f"{index_url()}/{normalize_name(project)}/"
    try:
        with _open(url, accept=JSON_SIMPLE) as response:
            content_type = response.headers.get("Content-Type", "")
            body = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise SwechainError(
                f"{where}: the index has no project '{project}' ({url} gives 404); "
                f"set source.project or package in chain.yaml, or {INDEX_ENV}"
            ) from None
        raise SwechainError(
            f"{where}: cannot read {url}: {_http_problem(exc)} (check {INDEX_ENV} and the network)"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SwechainError(
            f"{where}: cannot reach {url}: {_http_problem(exc)} (check {INDEX_ENV} and the network)"
        ) from None
    if "json" not in content_type.split(";")[0]:
        raise SwechainError(
            f"{where}: {url} answered {content_type or 'no content type'}, not {JSON_SIMPLE}; "
            f"point {INDEX_ENV} at an index that supports PEP 691"
        )
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise SwechainError(f"{where}: {url} did not return valid JSON: {exc}") from None
    api = str(document.get("meta", {}).get("api-version", "1.0")) if isinstance(document, dict) else ""
    if not isinstance(document, dict) or not isinstance(document.get("files"), list) or not api.startswith("1."):
        raise SwechainError(f"{where}: {url} is not a PEP 691 v1 project page (no 'files' list or api-version {api!r})")
    return url, document


# --------------------------------------------------------------------------- PyPI releases


def pypi_project(chain: Chain, source: PypiSource) -> str:
    return source.project or chain.config.package


def _pypi_source(chain: Chain, version: str) -> PypiSource:
    source = chain.version(version).source
    if not isinstance(source, PypiSource):
        raise SwechainError(
            f"{_where(chain, version)}: source kind is '{source.kind}', and only kind 'pypi' has release "
            "information (upload time, sdist hash)"
        )
    return source


def _release_cache(project: str, version: str) -> Path:
    return state_home() / "releases" / normalize_name(project) / f"{version}.json"


def _pick_sdist(chain: Chain, version: str, project: str, page_url: str, files: list) -> ReleaseInfo:
    wanted = normalize_version(version)
    candidates, with_sdist = [], set()
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
            continue
        filename = entry["filename"]
        found = sdist_version(filename, project)
        if found is None:
            continue
        with_sdist.add(found)
        if normalize_version(found) == wanted:
            candidates.append(entry)
    if not candidates:
        known = _sorted_versions(with_sdist)
        shown = ", ".join(known[-10:]) if known else "none"
        more = f" (latest {min(10, len(known))} of {len(known)})" if len(known) > 10 else ""
        raise SwechainError(
            f"{_where(chain, version)}: {page_url} lists no sdist of {project} {version}; "
            f"versions with an sdist{more}: {shown} (fix the version, or use a git source)"
        )

    def rank(entry: dict) -> tuple[int, int]:
        return (1 if entry.get("yanked") else 0, SDIST_SUFFIXES.index(sdist_suffix(entry["filename"]) or ".zip"))

    chosen = min(candidates, key=rank)
    filename = chosen["filename"]
    if filename != PurePosixPath(filename).name or filename.startswith(".") or "\\" in filename:
        raise SwechainError(f"{_where(chain, version)}: {page_url} gives an unsafe sdist filename {filename!r}")
    hashes: dict[str, Any] = chosen["hashes"] if isinstance(chosen.get("hashes"), dict) else {}
    index_hash = str(hashes.get("sha256", "")).lower() or None
    source = _pypi_source(chain, version)
    if index_hash and source.sha256 and index_hash != source.sha256:
        raise SwechainError(
            f"{_where(chain, version)}: source.sha256 is {source.sha256} but the index gives {index_hash} "
            f"for {filename}; correct source.sha256 in chain.yaml"
        )
    sha256 = index_hash or source.sha256
    if not sha256:
        raise SwechainError(
            f"{_where(chain, version)}: the index gives no sha256 for {filename}; "
            "set source.sha256 in chain.yaml to the sdist's hash"
        )
    upload = chosen.get("upload-time")
    try:
        upload_time = datetime.fromisoformat(upload) if isinstance(upload, str) else None
    except ValueError:
        upload_time = None
    requires = chosen.get("requires-python")
    return ReleaseInfo(
        index=index_url(),
        project=normalize_name(project),
        version=version,
        filename=filename,
        url=urllib.parse.urljoin(page_url, str(chosen.get("url", ""))),
        sha256=sha256,
        upload_time=upload_time,
        requires_python=requires if isinstance(requires, str) and requires else None,
        yanked=bool(chosen.get("yanked")),
    )


def release_info(chain: Chain, version: str) -> ReleaseInfo:
    """The sdist of a ``pypi`` version: filename, URL, sha256 and upload time (the release date).

    The index is asked once; its answer is kept under ``releases/`` in the state home
    (released files never change), so later calls work offline.
    """
    source = _pypi_source(chain, version)
    project = pypi_project(chain, source)
    cache = _release_cache(project, version)
    if cache.is_file():
        try:
            cached = ReleaseInfo.model_validate_json(cache.read_text())
        except (ValidationError, ValueError):
            cached = None
        if cached and cached.index == index_url() and source.sha256 in (None, cached.sha256):
            return cached
    page_url, document = project_page(project, _where(chain, version))
    info = _pick_sdist(chain, version, project, page_url, document["files"])
    write_bytes(cache, info.model_dump_json(indent=2).encode())
    return info


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_sdist(chain: Chain, version: str) -> Path:
    """The version's sdist in ``sdists/`` of the state home, downloaded if needed, hash-checked."""
    info = release_info(chain, version)
    folder = state_home() / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / info.filename
    if path.is_file():
        if _file_sha256(path) == info.sha256:
            return path
        path.unlink()  # corrupt or replaced: fetch again
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{info.filename}.")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with _open(info.url) as response:
                    for block in iter(lambda: response.read(1 << 20), b""):
                        h.update(block)
                        out.write(block)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise SwechainError(
                    f"{_where(chain, version)}: cannot download {info.url}: {_http_problem(exc)} "
                    f"(check {INDEX_ENV} and the network)"
                ) from None
        if h.hexdigest() != info.sha256:
            raise SwechainError(
                f"{_where(chain, version)}: {info.url} has sha256 {h.hexdigest()} but {info.sha256} was expected; "
                "the download is corrupt or the index changed (check source.sha256 in chain.yaml)"
            )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


# --------------------------------------------------------------------------- unpacking


def _member_path(name: str) -> PurePosixPath | None:
    """A safe relative path for an archive member, or None to skip it."""
    if not name or name.startswith("/") or "\\" in name or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return PurePosixPath(*parts)


def _common_top(names: list[PurePosixPath], dirs: set[PurePosixPath]) -> str | None:
    """The single top-level folder of an archive, if everything sits under one."""
    tops = {n.parts[0] for n in names}
    if len(tops) != 1:
        return None
    top = next(iter(tops))
    if any(len(n.parts) == 1 and n not in dirs for n in names):
        return None  # the only top-level entry is a file
    return top


def unpack_archive(archive: Path, dest: Path) -> None:
    """Unpack an sdist (tar or zip) into ``dest``, stripping its single top-level folder.

    Only regular files, folders and symlinks that stay inside the tree are kept:
    absolute paths, ``..``, devices, FIFOs and links leaving the tree are dropped.
    A hard link becomes a copy of its target when that target was already unpacked.
    Empty files are kept.
    """
    dest.mkdir(parents=True, exist_ok=True)
    out = trees.SafeWriter(dest, MAX_SOURCE_BYTES, f"{archive} unpacked")
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = [(i, p) for i in zf.infolist() if (p := _member_path(i.filename)) is not None]
            dirs = {p for i, p in infos if i.is_dir()}
            top = _common_top([p for _, p in infos], dirs)
            for info, path in infos:
                rel = _strip(path, top)
                if rel is None:
                    continue
                mode = info.external_attr >> 16
                if info.is_dir():
                    out.directory(rel)
                elif stat.S_ISLNK(mode):
                    out.symlink(rel, zf.read(info).decode("utf-8", errors="replace"))
                elif stat.S_IFMT(mode) in (0, stat.S_IFREG):  # no type bits: a plain file
                    with zf.open(info) as handle:
                        out.file(rel, handle, info.file_size, bool(mode & 0o111))
        return
    try:
        tar = tarfile.open(archive, mode="r:*")  # noqa: SIM115 - closed by the with below, after the error case
    except (tarfile.TarError, OSError) as exc:
        raise SwechainError(
            f"{archive}: not a readable tar or zip archive ({exc}); delete it to fetch it again"
        ) from None
    with tar:
        members = [(m, p) for m in tar.getmembers() if (p := _member_path(m.name)) is not None]
        dirs = {p for m, p in members if m.isdir()}
        top = _common_top([p for _, p in members], dirs)
        for member, path in members:
            rel = _strip(path, top)
            if rel is None:
                continue
            out.tar_member(rel, member, tar, top or "")  # devices, FIFOs and anything else: dropped


def _strip(rel: PurePosixPath, top: str | None) -> PurePosixPath | None:
    if top is None:
        return rel
    if len(rel.parts) == 1:
        return None  # the top-level folder itself
    return PurePosixPath(*rel.parts[1:])


# --------------------------------------------------------------------------- cache folders


def _build_cached(folder: Path, build, record: dict) -> Path:
    """``folder/tree`` built by ``build(tree_path)`` in a temporary folder, renamed into place."""
    tree = folder / "tree"
    if (folder / "source.json").is_file() and tree.is_dir():
        return tree
    if folder.exists():
        shutil.rmtree(folder)  # left over from an older layout or a crash
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        build(tmp / "tree")
        (tmp / "source.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / "source.json").is_file():  # not a concurrent build that won
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return tree


def _pypi_root(chain: Chain, version: str) -> Path:
    info = release_info(chain, version)
    folder = state_home() / "sources" / "pypi" / f"{info.filename}-{info.sha256[:16]}"

    def build(tree: Path) -> None:
        unpack_archive(fetch_sdist(chain, version), tree)

    return _build_cached(folder, build, {"kind": "pypi", **info.model_dump(mode="json")})


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


# git's messages when the remote cannot be reached at all (as opposed to a wrong url or tag).
UNREACHABLE_SIGNATURES = (
    "Could not resolve host",
    "Failed to connect",
    "Connection refused",
    "Network is unreachable",
    "Connection timed out",
    "Temporary failure in name resolution",
    "Could not connect to server",
)


GIT_INSTEAD_OF_ENV = "SWECHAIN_GIT_INSTEAD_OF"


def git_instead_of() -> list[tuple[str, str]]:
    """``SWECHAIN_GIT_INSTEAD_OF``: mirrors for git sources, as git's own ``url.<base>.insteadOf``.

    Entries ``<mirror>=<prefix>`` separated by newlines or ``;``: a source URL starting with
    ``<prefix>`` is fetched from ``<mirror>`` instead (a local clone, a file:// URL or a closer
    host). chain.yaml keeps the canonical URL; the checkout is the same commit either way, and the
    source record names the mirror it came from. The user's own git config is not read (builds stay
    hermetic), so this variable is the way to give git a mirror.
    """
    raw = os.environ.get(GIT_INSTEAD_OF_ENV, "")
    pairs = []
    for entry in re.split(r"[;\n]", raw):
        if not entry.strip():
            continue
        mirror, sep, prefix = entry.strip().rpartition("=")
        if not sep or not mirror or not prefix:
            raise SwechainError(
                f"{GIT_INSTEAD_OF_ENV}: '{entry.strip()}' is not <mirror>=<url prefix>; e.g. "
                f"{GIT_INSTEAD_OF_ENV}=/srv/mirrors/jinja.git=https://github.com/pallets/jinja.git"
            )
        pairs.append((mirror, prefix))
    return pairs


def mirrored_url(url: str) -> str | None:
    """The mirror git will fetch ``url`` from, by git's rule (the longest matching prefix wins)."""
    matches = [(prefix, mirror) for mirror, prefix in git_instead_of() if url.startswith(prefix)]
    if not matches:
        return None
    prefix, mirror = max(matches, key=lambda pair: len(pair[0]))
    return mirror + url[len(prefix) :]


def instead_of_options() -> list[str]:
    """git's ``-c url.<mirror>.insteadOf=<prefix>`` options for ``SWECHAIN_GIT_INSTEAD_OF``."""
    return [option for mirror, prefix in git_instead_of() for option in ("-c", f"url.{mirror}.insteadOf={prefix}")]


def git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",  # never wait for credentials
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_LFS_SKIP_SMUDGE": "1",
        # Give up on a remote that sends nothing for 30 s instead of waiting for GIT_TIMEOUT_S.
        "GIT_HTTP_LOW_SPEED_LIMIT": "1",
        "GIT_HTTP_LOW_SPEED_TIME": "30",
    }


def _git_root(chain: Chain, version: str, source: GitSource) -> Path:
    key = hashlib.sha256(f"{source.url}\0{source.tag}".encode()).hexdigest()[:16]
    folder = state_home() / "sources" / "git" / key
    record = {"kind": "git", "url": source.url, "tag": source.tag}
    where = _where(chain, version)

    def build(tree: Path) -> None:
        if source.url.startswith("-") or source.tag.startswith("-"):
            raise SwechainError(f"{where}: source url and tag must not start with '-'")
        mirror = mirrored_url(source.url)
        if mirror is not None:
            record["mirror"] = mirror
        instead = instead_of_options()
        command = [
            "git",
            "-c",
            "advice.detachedHead=false",
            *instead,
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--no-tags",
            "--branch",
            source.tag,
            "--",
            source.url,
            str(tree),
        ]
        try:
            result = subprocess.run(command, capture_output=True, env=git_env(), timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise SwechainError(
                f"{where}: git clone of {source.url} at {source.tag} took over {GIT_TIMEOUT_S:.0f}s"
            ) from None
        except FileNotFoundError:
            raise SwechainError(f"{where}: git is not installed; install git to use git sources") from None
        if result.returncode != 0:
            problem = _one_line(result.stderr.decode(errors="replace")) or f"exit code {result.returncode}"
            if any(signature in problem for signature in UNREACHABLE_SIGNATURES):
                raise SwechainError(
                    f"{where}: the source {source.url} is unreachable from this machine ({problem}); "
                    f"build this chain on a runner with network access, or give git a reachable mirror with "
                    f"{GIT_INSTEAD_OF_ENV}=<mirror>=<url prefix>"
                )
            via = f" (from the mirror {mirror}, {GIT_INSTEAD_OF_ENV})" if mirror else ""
            raise SwechainError(
                f"{where}: git clone of {source.url}{via} at tag {source.tag} failed: {problem} "
                f"(check source.url and source.tag in chain.yaml{', and the mirror' if mirror else ''})"
            )
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, env=git_env())
        record["commit"] = head.stdout.decode().strip()
        shutil.rmtree(tree / ".git")

    return _build_cached(folder, build, record)


# --------------------------------------------------------------------------- the entry points


def source_root(chain: Chain, version: str) -> Path:
    """The version's full source tree (sdist unpacked, or checkout without ``.git``)."""
    source = chain.version(version).source
    if isinstance(source, LocalSource):
        path = (chain.folder / source.path).resolve()
        if not path.is_dir():
            raise SwechainError(f"{_where(chain, version)}: source path {path} is not a folder")
        return path
    if isinstance(source, PypiSource):
        return _pypi_root(chain, version)
    if isinstance(source, GitSource):
        return _git_root(chain, version, source)
    raise SwechainError(f"{_where(chain, version)}: unsupported source kind {source.kind!r}")


def is_hidden(rel: PurePosixPath, test_folder: str) -> bool:
    """The test folder, and the conftest.py files on the path to it."""
    folder = PurePosixPath(test_folder)
    if rel == folder or folder in rel.parents:
        return True
    if rel.name == "conftest.py":
        return rel.parent == PurePosixPath(".") or rel.parent in folder.parents
    return False


def is_protected(rel: PurePosixPath, chain: Chain) -> bool:
    """Per-chain build/config files, and every conftest.py: a candidate never supplies them."""
    if rel.name == "conftest.py":
        return True
    return any(fnmatch.fnmatch(str(rel), pattern) for pattern in chain.config.protected_files)


def split(chain: Chain, root: Path, dest: Path, version: str) -> VersionTrees:
    test_folder = chain.config.test_folder
    if not (root / test_folder).is_dir():
        raise SwechainError(
            f"{root}: version {version} has no test folder '{test_folder}' (set test_folder in chain.yaml)"
        )
    check_source_root(chain, root, version)
    if dest.exists():
        shutil.rmtree(dest)
    trees.copy_tree(root, dest / "code", exclude=lambda rel: is_hidden(rel, test_folder))
    trees.copy_tree(root, dest / "hidden", exclude=lambda rel: not is_hidden(rel, test_folder))
    trees.copy_tree(
        root,
        dest / "protected",
        exclude=lambda rel: is_hidden(rel, test_folder) or not is_protected(rel, chain),
    )
    return VersionTrees(version, root, dest / "code", dest / "hidden", dest / "protected", trees.digest(root))


def split_key(chain: Chain, content: str) -> str:
    """What shapes a version's split trees: its content and the chain's split configuration."""
    config = chain.config.model_dump(include={"test_folder", "protected_files", "source_root", "import_name"})
    return hashlib.sha256((content + json.dumps(config, sort_keys=True)).encode()).hexdigest()


def check_source_root(chain: Chain, root: Path, version: str) -> None:
    """The import package must be where ``source_root`` says; else name where it is."""
    config = chain.config
    package = config.import_name

    def holds(folder: Path) -> bool:
        return (
            (folder / package / "__init__.py").is_file()
            or (folder / f"{package}.py").is_file()
            or ((folder / package).is_dir() and any((folder / package).glob("*.py")))
        )

    if holds(root / config.source_root):
        return
    found = sorted(
        str(candidate.parent.relative_to(root))
        for candidate in root.glob(f"**/{package}")
        if candidate.is_dir() and holds(candidate.parent) and config.test_folder not in candidate.parts
    ) + sorted(str(c.parent.relative_to(root)) for c in root.glob(f"**/{package}.py"))
    hint = (
        f"it is under '{found[0]}': set source_root: {found[0]}"
        if found
        else (f"no folder holds it: check import_name ('{package}') and source_root")
    )
    raise SwechainError(
        f"{_where(chain, version)}: field 'source_root': '{config.source_root}' holds no import package "
        f"'{package}'; {hint} in chain.yaml"
    )


def materialize(chain: Chain, version: str) -> VersionTrees:
    """The split trees of one version, cached under the state home by content and split configuration."""
    root = source_root(chain, version)
    content = trees.digest(root)
    dest = state_home() / "trees" / chain.id / f"{version}-{split_key(chain, content)[:16]}"
    if not (dest / ".complete").exists():
        # Pool runners sharing one state home (several runner services, act's jobs) split a version
        # at the same time: one splits, the others wait and reuse its trees.
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest.with_name(dest.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (dest / ".complete").exists():
                split(chain, root, dest, version)
                (dest / ".complete").write_text(content)
    return VersionTrees(version, root, dest / "code", dest / "hidden", dest / "protected", content)
