"""An agent's session state, carried from its Build to its Fix across containers and runners.

A ``session: resume`` agent keeps its session where a CLI keeps it: the agent user's home
(``~/.claude``, ``~/.codex``, ...). After Build the home is archived into the run's records;
before Fix it is put back into a fresh container. The archive comes from the agent's
container, so it is read as hostile: regular files and folders only, bounded in size and
count, every secret value the agent was given replaced, owner and modes reset.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import PurePosixPath

from swechain_ci.agents.base import Workspace
from swechain_ci.containers.sandbox import AGENT_UID

HOME = "/home/agent"
MAX_BYTES = 32 * 2**20  # the whole home, uncompressed
MAX_MEMBERS = 20_000
REDACTED = b"[redacted]"


class SessionTooLarge(Exception):
    pass


class _ChunkReader(io.RawIOBase):
    """A file over an iterator of bytes, for streaming a container's tar without holding it twice."""

    def __init__(self, chunks) -> None:
        self.chunks, self.buffer = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self.buffer:
            try:
                self.buffer = next(self.chunks)
            except StopIteration:
                return 0
        size = min(len(target), len(self.buffer))
        target[:size], self.buffer = self.buffer[:size], self.buffer[size:]
        return size


def scrub(data: bytes, secrets: dict[str, str]) -> bytes:
    for value in secrets.values():
        if len(value) >= 4:
            data = data.replace(value.encode(), REDACTED)
    return data


def export_session(workspace: Workspace, secrets: dict[str, str]) -> bytes:
    """The agent user's home as a clean tar.gz; SessionTooLarge beyond the bounds."""
    return clean_session(workspace.container.get_tree(HOME), secrets)


def clean_session(chunks, secrets: dict[str, str]) -> bytes:
    """A tar stream of ``agent/...`` (hostile) as a tar.gz of its folders and regular files only,
    secrets replaced, owned by the agent user; SessionTooLarge beyond the bounds."""
    out = io.BytesIO()
    total = members = 0
    with (
        tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks)), mode="r|") as source,
        tarfile.open(fileobj=out, mode="w:gz") as clean,
    ):
        for member in source:
            members += 1
            if members > MAX_MEMBERS:
                raise SessionTooLarge(f"more than {MAX_MEMBERS} files in {HOME}")
            name = scrub(member.name.encode(), secrets).decode(errors="replace")
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] != "agent":
                continue
            info = tarfile.TarInfo(name)
            info.uid = info.gid = AGENT_UID
            info.mtime = member.mtime
            if member.isdir():
                info.type, info.mode = tarfile.DIRTYPE, 0o700
                clean.addfile(info)
            elif member.isfile():
                total += member.size
                if total > MAX_BYTES:
                    raise SessionTooLarge(f"{HOME} holds more than {MAX_BYTES // 2**20} MiB")
                handle = source.extractfile(member)  # a regular file's: never None
                data = scrub(handle.read() if handle else b"", secrets)
                info.size, info.mode = len(data), 0o700 if member.mode & 0o100 else 0o600
                clean.addfile(info, io.BytesIO(data))
    return out.getvalue()


def import_session(workspace: Workspace, archive: bytes) -> None:
    """Put a Build's home back into the Fix's container."""
    workspace.container.remove_path(HOME)
    workspace.container.put_tree(archive, str(PurePosixPath(HOME).parent))
