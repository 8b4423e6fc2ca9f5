"""Code trees on the host: copy, hash, pack into tar, unpack safely, diff, patch."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from unidiff import PatchSet

from swechain_ci.errors import SwechainError
from swechain_ci.models import DiffStats

# Never part of a codebase: VCS data, caches and packaging by-products.
JUNK_NAMES = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox"})
JUNK_SUFFIXES = (".pyc", ".pyo", ".egg-info")
MAX_TREE_BYTES = 200 * 1024 * 1024
# Bounds on the shape of a tree an agent leaves (real codebases are far inside them): deeper or
# longer paths cannot be unpacked, cleaned up or archived in bounded time and stack on every host.
MAX_TREE_DEPTH = 100
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 2048
MAX_TREE_MEMBERS = 100_000


def is_junk(relative: PurePosixPath) -> bool:
    return any(part in JUNK_NAMES or part.endswith(JUNK_SUFFIXES) for part in relative.parts)


def iter_tree(root: Path):
    """Relative paths of files and symlinks under ``root``, sorted, junk left out."""
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        rel_base = PurePosixPath(base.relative_to(root).as_posix())
        kept = []
        for d in sorted(dirnames):
            rel = rel_base / d
            if is_junk(rel):
                continue
            if (base / d).is_symlink():
                yield rel
            else:
                kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = rel_base / name
            if not is_junk(rel):
                yield rel


def link_stays_inside(root: Path, link: Path) -> bool:
    target = os.readlink(link)
    if os.path.isabs(target):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(link), target))
    return os.path.commonpath([str(root), resolved]) == str(root)


def copy_tree(source: Path, dest: Path, exclude=lambda rel: False) -> None:
    """Copy without following symlinks; links that point out of the tree are dropped."""
    dest.mkdir(parents=True, exist_ok=True)
    source = source.resolve()
    for rel in iter_tree(source):
        if exclude(rel):
            continue
        src, dst = source / rel, dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            if link_stays_inside(source, src):
                os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copy2(src, dst)


def digest(root: Path) -> str:
    """Content hash of a tree: paths, bytes, link targets and the executable bit."""
    h = hashlib.sha256()
    for rel in iter_tree(root):
        path = root / rel
        h.update(os.fsencode(str(rel)) + b"\0")  # any file name, UTF-8 or not
        if path.is_symlink():
            h.update(b"L" + os.fsencode(os.readlink(path)))
        elif path.is_file():
            h.update(b"X" if os.access(path, os.X_OK) else b"F")
            h.update(hashlib.sha256(path.read_bytes()).digest())
        h.update(b"\0")
    return h.hexdigest()


def pack(root: Path, prefix: str, uid: int = 0, gid: int = 0) -> bytes:
    """A tar of ``root`` under ``prefix``, owned by ``uid:gid``, for ``put_archive``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        top = tarfile.TarInfo(prefix)
        top.type, top.mode, top.uid, top.gid = tarfile.DIRTYPE, 0o755, uid, gid
        tar.addfile(top)
        added_dirs: set[str] = set()
        for rel in iter_tree(root):
            path = root / rel
            info = tar.gettarinfo(str(path), arcname=f"{prefix}/{rel}")
            info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
            parent_parts = rel.parts[:-1]
            for i in range(len(parent_parts)):
                # Directories are added explicitly so that they get the right owner.
                d = "/".join(parent_parts[: i + 1])
                if d not in added_dirs:
                    added_dirs.add(d)
                    dinfo = tarfile.TarInfo(f"{prefix}/{d}")
                    dinfo.type, dinfo.mode, dinfo.uid, dinfo.gid = tarfile.DIRTYPE, 0o755, uid, gid
                    tar.addfile(dinfo)
            if info.isreg():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            elif info.issym() and link_stays_inside(root.resolve(), root.resolve() / rel):
                tar.addfile(info)
    return buffer.getvalue()


class SafeWriter:
    """Writes archive members below ``dest``, refusing anything that would leave it:
    paths through a link out of the tree, links that point out, more than ``limit`` bytes.
    What it leaves out of the tree (and why) is in ``left_out``."""

    def __init__(self, dest: Path, limit: int, what: str) -> None:
        self.dest, self.root, self.limit, self.what = dest, dest.resolve(), limit, what
        self.total = 0
        self.written: set[PurePosixPath] = set()
        self.left_out: list[str] = []

    def leave_out(self, rel: PurePosixPath, why: str) -> None:
        self.left_out.append(f"{str(rel)[:200]} ({why})")

    def target(self, rel: PurePosixPath) -> Path | None:
        target = self.dest / rel
        parent = target.parent.resolve()
        if os.path.commonpath([str(self.root), str(parent)]) != str(self.root):
            return None
        return target

    def directory(self, rel: PurePosixPath) -> None:
        target = self.target(rel)
        if target is not None and not target.is_symlink():
            target.mkdir(parents=True, exist_ok=True)

    def file(self, rel: PurePosixPath, source, size: int, executable: bool) -> None:
        target = self.target(rel)
        if target is None:
            return self.leave_out(rel, "written through a link out of the tree")
        self.total += size
        if self.total > self.limit:
            raise SwechainError(f"{self.what} exceeds {self.limit // 2**20} MiB")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            if target.is_dir() and not target.is_symlink():
                return self.leave_out(rel, "a file where a folder is")
            target.unlink()
        with open(target, "wb") as out:
            if source is not None:
                shutil.copyfileobj(source, out)
        target.chmod(0o755 if executable else 0o644)
        self.written.add(rel)

    def hard_link(self, rel: PurePosixPath, linked: PurePosixPath | None) -> None:
        """A hard link becomes a regular file with the content of the file it links to."""
        if linked is None or linked not in self.written:
            return self.leave_out(rel, "a hard link to a file that is not in the tree")
        source = self.dest / linked
        with open(source, "rb") as handle:
            self.file(rel, handle, source.stat().st_size, os.access(source, os.X_OK))

    def symlink(self, rel: PurePosixPath, link: str) -> None:
        target = self.target(rel)
        if target is None or target.exists() or target.is_symlink():
            return self.leave_out(rel, "a link over another member")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, target)
        if not link_stays_inside(self.root, self.root / rel):
            target.unlink()
            self.leave_out(rel, "a link out of the tree")

    def tar_member(self, rel: PurePosixPath, member: tarfile.TarInfo, tar: tarfile.TarFile, strip: str = "") -> None:
        """Write a folder, file, symlink or hard link member; any other kind is left out."""
        if member.isdir():
            self.directory(rel)
        elif member.isreg():
            self.file(rel, tar.extractfile(member), member.size, bool(member.mode & 0o111))
        elif member.issym():
            self.symlink(rel, member.linkname)
        elif member.islnk():
            self.hard_link(rel, member_path(member.linkname, strip))
        else:
            kind = "a device" if member.ischr() or member.isblk() else "a fifo" if member.isfifo() else "not a file"
            self.leave_out(rel, kind)


def member_path(name: str, strip: str) -> PurePosixPath | None:
    """An archive member's path inside the tree, ``strip`` (the archive's top folder) removed;
    None for the top folder itself or a path that would leave the tree."""
    path = PurePosixPath(name)
    if strip and path.parts and path.parts[0] == strip:
        path = PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else PurePosixPath(".")
    if str(path) == "." or path.is_absolute() or ".." in path.parts:
        return None
    return path


def shape_problem(rel: PurePosixPath) -> str | None:
    """Why a path is outside the bounds a tree may have (depth, name and path length), or None."""
    if len(rel.parts) > MAX_TREE_DEPTH:
        return f"more than {MAX_TREE_DEPTH} folders deep"
    if len(os.fsencode(str(rel))) > MAX_PATH_BYTES:
        return f"a path longer than {MAX_PATH_BYTES} bytes"
    if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in rel.parts):
        return f"a name longer than {MAX_NAME_BYTES} bytes"
    return None


class CappedStream(io.RawIOBase):
    """A chunk iterator read as a file, ending in a ``SwechainError`` past ``limit`` bytes."""

    def __init__(self, chunks: Iterable[bytes], limit: int, what: str) -> None:
        self.chunks, self.limit, self.what = iter(chunks), limit, what
        self.pending, self.seen = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.seen += len(chunk)
            if self.seen > self.limit:
                raise SwechainError(f"{self.what} exceeds {self.limit // 2**20} MiB; the host reads at most that")
            self.pending = chunk
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size

    def close(self) -> None:
        """Also close the source, so that a stream abandoned at the cap releases its connection."""
        close = getattr(self.chunks, "close", None)
        if close:
            close()
        super().close()


def unpack_untrusted(chunks, dest: Path, strip: str) -> list[str]:
    """Extract a tar stream that an agent produced, keeping only what is safe; returns what was
    left out, each with its reason.

    Regular files, directories and symlinks that stay inside the tree, hard links as regular
    files with their content; no devices or fifos, nothing outside ``dest``, at most
    MAX_TREE_BYTES. A tree deeper, with longer names or with more members than the bounds is
    refused whole (``SwechainError``, naming the member), as soon as it is read: the work is
    linear in the stream, and nothing deeper than the bounds is ever written.
    """
    dest.mkdir(parents=True, exist_ok=True)
    out = SafeWriter(dest, MAX_TREE_BYTES, "the agent's code tree")
    # Read as a stream: junk and headers count toward a cap too, and nothing is held whole in memory.
    stream = io.BufferedReader(CappedStream(chunks, MAX_TREE_BYTES * 2, "the agent's code tree (as an archive)"))
    members = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as tar:
            for member in tar:
                members += 1
                if members > MAX_TREE_MEMBERS:
                    raise SwechainError(f"the agent's code tree has more than {MAX_TREE_MEMBERS:,} members")
                name = member_path(member.name, strip)
                if name is None:
                    continue
                problem = shape_problem(name)
                if problem:
                    raise SwechainError(f"the agent's code tree has {problem}: {str(name)[:200]}…")
                if is_junk(name):
                    continue
                try:
                    out.tar_member(name, member, tar, strip)
                except OSError as exc:
                    raise SwechainError(
                        f"the agent's code tree cannot be unpacked at {str(name)[:200]}: {exc.strerror or exc}"
                    ) from None
    except tarfile.TarError as exc:
        raise SwechainError(f"the agent's code tree is not a readable archive ({exc})") from None
    finally:
        stream.close()
    return out.left_out


def git(*args: str, cwd: Path | None = None, input: bytes | None = None) -> bytes:
    env = {
        **os.environ,
        # A tree inside some repository must not be taken for that repository.
        "GIT_CEILING_DIRECTORIES": str(cwd.resolve().parent) if cwd else "",
        "GIT_AUTHOR_NAME": "swechain-ci",
        "GIT_AUTHOR_EMAIL": "swechain-ci@localhost",
        "GIT_COMMITTER_NAME": "swechain-ci",
        "GIT_COMMITTER_EMAIL": "swechain-ci@localhost",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    result = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, env=env)
    if result.returncode != 0:
        raise SwechainError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def diff(before: Path, after: Path) -> str:
    """A git-style patch taking ``before`` to ``after`` (paths relative to the tree roots)."""
    with tempfile.TemporaryDirectory(prefix="swechain-diff-") as tmp:
        gitdir = Path(tmp) / "git"
        git("init", "-q", "--bare", str(gitdir))
        git(f"--git-dir={gitdir}", f"--work-tree={before}", "add", "-A", "--force", ".")
        git(f"--git-dir={gitdir}", f"--work-tree={before}", "commit", "-q", "--allow-empty", "-m", "before")
        git(f"--git-dir={gitdir}", f"--work-tree={after}", "add", "-A", "--force", ".")
        return git(f"--git-dir={gitdir}", "diff", "--cached", "--binary", "--no-renames", "--no-color").decode(
            errors="replace"
        )


def patch_paths(tree: Path, patch: str) -> list[str]:
    """Every path a patch touches, as ``git apply`` reads them (renames give both sides)."""
    listing = git("apply", "--numstat", "-z", "-", cwd=tree, input=patch.encode(errors="surrogateescape"))
    paths, fields = [], listing.split(b"\0")
    i = 0
    while i < len(fields):
        field = fields[i]
        if not field:
            i += 1
            continue
        columns = field.split(b"\t", 2)
        if len(columns) == 3 and columns[2]:
            paths.append(os.fsdecode(columns[2]))
            i += 1
        else:  # a rename or copy: "added\tdeleted\t" then source and destination
            paths += [os.fsdecode(f) for f in fields[i + 1 : i + 3]]
            i += 3
    return paths


def check_patch_paths(tree: Path, patch: str) -> None:
    """Refuse a patch that names a path outside ``tree``: absolute, with ``..``, or through a link."""
    for line in patch.splitlines():
        if line.startswith(("--- /", "+++ /")) and line[4:].split("\t")[0] != "/dev/null":
            raise SwechainError(
                f"the patch names an absolute path ({line[4:][:200]}); patches apply only inside the code tree"
            )
    root = tree.resolve()
    for name in patch_paths(tree, patch):
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts:
            raise SwechainError(f"the patch names {name!r}, outside the code tree; patches apply only inside it")
        parent = (tree / rel).parent
        while not parent.exists() and parent != tree:
            parent = parent.parent
        if os.path.commonpath([str(root), str(parent.resolve())]) != str(root):
            raise SwechainError(f"the patch writes {name!r} through a link out of the code tree")


def apply_patch(tree: Path, patch: str) -> None:
    """Apply a patch to a tree in place, as ``git apply`` would, only inside the tree.

    Paths are checked first, then git applies without ``--unsafe-paths`` (it refuses
    paths outside the tree and writes beyond links itself), and a link the patch made
    that points out of the tree is refused.
    """
    if not patch.strip():
        return
    check_patch_paths(tree, patch)
    git("apply", "--whitespace=nowarn", "-", cwd=tree, input=patch.encode(errors="surrogateescape"))
    root = tree.resolve()
    for rel in iter_tree(tree):
        if (tree / rel).is_symlink() and not link_stays_inside(root, root / rel):
            raise SwechainError(f"the patch makes {str(rel)!r} a link out of the code tree")


def diff_stats(patch: str) -> DiffStats:
    if not patch.strip():
        return DiffStats()
    parsed = PatchSet(patch)
    return DiffStats(files=len(parsed), added=parsed.added, removed=parsed.removed)
