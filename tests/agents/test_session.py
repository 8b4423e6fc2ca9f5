"""A resumable agent's session state, as it travels in the run's records: clean, scrubbed, bounded."""

from __future__ import annotations

import io
import tarfile

import pytest

from swechain_ci.agents import session
from swechain_ci.agents.session import SessionTooLarge, clean_session

SECRET = "sk-ant-very-secret-value"


def home_tar(files: dict[str, bytes], links: dict[str, str] | None = None) -> list[bytes]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        top = tarfile.TarInfo("agent")
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid = len(data), 0o4755, 0
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    data = buffer.getvalue()
    return [data[i : i + 1000] for i in range(0, len(data), 1000)]  # a stream in pieces, as Docker sends it


def members(archive: bytes) -> dict[str, tuple[bytes | None, int, int]]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else None, m.mode, m.uid) for m in tar}


def test_the_session_keeps_folders_and_files_with_secrets_replaced_and_owner_reset():
    chunks = home_tar(
        {
            "agent/.claude/projects/s1.jsonl": f'{{"key": "{SECRET}", "turn": 1}}'.encode(),
            f"agent/.cache/{SECRET}.txt": b"named after the secret",
        },
        links={"agent/.ssh": "/etc", "agent/escape": "../../root"},
    )
    kept = members(clean_session(chunks, {"ANTHROPIC_API_KEY": SECRET}))
    assert kept["agent/.claude/projects/s1.jsonl"][0] == b'{"key": "[redacted]", "turn": 1}'
    assert "agent/.cache/[redacted].txt" in kept and not [n for n in kept if SECRET in n]
    assert "agent/.ssh" not in kept and "agent/escape" not in kept, "links are left behind"
    assert {(mode, uid) for _, mode, uid in kept.values()} <= {(0o700, 1000), (0o600, 1000)}, "no setuid, agent-owned"


def test_paths_outside_the_home_are_left_out():
    kept = members(clean_session(home_tar({"agent/ok": b"1", "etc/passwd": b"x", "agent/../../x": b"y"}), {}))
    assert set(kept) == {"agent", "agent/ok"}


def test_a_session_over_the_bounds_is_refused(monkeypatch):
    monkeypatch.setattr(session, "MAX_BYTES", 100)
    with pytest.raises(SessionTooLarge, match="more than"):
        clean_session(home_tar({"agent/a": b"x" * 60, "agent/b": b"x" * 60}), {})
    monkeypatch.setattr(session, "MAX_MEMBERS", 2)
    with pytest.raises(SessionTooLarge, match="files"):
        clean_session(home_tar({"agent/a": b"", "agent/b": b"", "agent/c": b""}), {})
