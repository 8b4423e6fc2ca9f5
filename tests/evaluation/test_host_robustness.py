"""The host survives whatever a container or an agent leaves: unit tests without Docker.

The same attacks as real chain runs are in tests/redteam/test_host_attacks.py.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time

import pytest

from swechain_ci.chain import trees
from swechain_ci.containers.sandbox import read_tar_files
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.evaluate import parse_untrusted


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def chunks(data: bytes, size: int = 4096):
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_the_output_folder_is_read_as_a_stream_up_to_a_cap():
    archive = tar_of({"out/result.json": b"{}", "out/big.bin": b"x" * 100_000})
    assert read_tar_files(chunks(archive), limit=200_000)["result.json"] == b"{}"
    with pytest.raises(SwechainError, match="exceeds 0 MiB"):
        read_tar_files(chunks(archive), limit=50_000)


def test_the_cap_stops_reading_before_the_whole_stream_is_consumed():
    consumed = 0

    def endless():
        nonlocal consumed
        info = tarfile.TarInfo("out/flood")
        info.size = 10**12  # a file growing as fast as the container writes it
        yield info.tobuf()
        while True:
            consumed += 65536
            yield b"x" * 65536

    with pytest.raises(SwechainError, match="exceeds"):
        read_tar_files(endless(), limit=1 << 20)
    assert consumed <= (1 << 20) + 65536


def test_an_archive_that_is_not_a_tar_is_a_clear_error():
    with pytest.raises(SwechainError, match="not a readable archive"):
        read_tar_files(chunks(b"garbage" * 1000))


@pytest.mark.parametrize(
    "files, cause",
    [
        ({"result.json": b"[]"}, "AttributeError"),
        (
            {
                "result.json": b'{"exit_code": 0}',
                "report.json": b"{}",
                "failed_imports.jsonl": b'{"test_file": "t", "module": "m", "names": [], "error": "e", "forged": 1}\n',
            },
            "ValidationError",
        ),
        ({"result.json": b'{"exit_code": 0}', "report.json": b"{}", "stream.jsonl": b'{"nodeid": "t"}\n'}, "KeyError"),
        ({"result.json": b'{"exit_code": 0, "duration_s": "soon"}', "report.json": b"{}"}, "ValidationError"),
        ({"result.json": b'{"exit_code": 0}', "report.json": b'{"tests": [{"outcome": "passed"}]}'}, "KeyError"),
        ({"result.json": b"\xff\xfe"}, "JSONDecodeError"),
        ({"result.json": b"[" * 100_000 + b"]" * 100_000}, "RecursionError"),
    ],
)
def test_malformed_harness_output_is_an_execution_error_not_a_traceback(files, cause):
    run = parse_untrusted(files, 0, False)
    assert run.execution_error.startswith(f"the harness's output is malformed ({cause}")
    assert run.statuses == {}


def test_any_file_name_hashes_packs_diffs_and_unpacks(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    weird = os.path.join(os.fsencode(tree), b"\xff\xfe.py")
    with open(weird, "w") as handle:
        handle.write("x = 1\n")
    first = trees.digest(tree)
    out = tmp_path / "u"
    trees.unpack_untrusted([trees.pack(tree, "code")], out, strip="code")
    assert os.listdir(os.fsencode(out)) == [b"\xff\xfe.py"]
    assert trees.digest(out) == first
    with open(os.path.join(os.fsencode(out), b"\xff\xfe.py"), "w") as handle:
        handle.write("x = 2\n")
    assert trees.digest(out) != first
    patch = trees.diff(tree, out)
    trees.apply_patch(tree, patch)
    assert trees.digest(tree) == trees.digest(out)


NEW_FILE = "diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+forged\n"


@pytest.mark.parametrize(
    "patch, message",
    [
        (NEW_FILE.format(p="../step.json"), "outside the code tree"),
        (NEW_FILE.format(p="../../steps/01/step.json"), "outside the code tree"),
        ("--- /dev/null\n+++ /tmp/forged.txt\n@@ -0,0 +1 @@\n+forged\n", "absolute path"),
        (NEW_FILE.format(p="out/forged.txt"), "through a link out of the code tree"),
        (
            "diff --git a/newlink b/newlink\nnew file mode 120000\n--- /dev/null\n+++ b/newlink\n@@ -0,0 +1 @@\n"
            "+/etc\n\\ No newline at end of file\n",
            "a link out of the code tree",
        ),
    ],
)
def test_patches_apply_only_inside_the_code_tree(tmp_path, patch, message):
    code = tmp_path / "run" / "work" / "code"
    code.mkdir(parents=True)
    (code / "m.py").write_text("x = 1\n")
    (code / "out").symlink_to(tmp_path / "run")
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(SwechainError, match=message):
        trees.apply_patch(code, patch)
    after = [p for p in sorted(tmp_path.rglob("*")) if not str(p).startswith(str(code))]
    assert after == [p for p in before if not str(p).startswith(str(code))], "nothing written outside the tree"
    assert not list(tmp_path.rglob("forged*")) and not list(tmp_path.rglob("step.json"))


def test_a_patch_inside_the_tree_still_applies(tmp_path):
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    trees.apply_patch(code, NEW_FILE.format(p="pkg/new.py"))
    assert (code / "pkg" / "new.py").read_text() == "forged\n"


def tar_stream(members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None):
    """A tar of ``members``, written as it is read (a 3,000-deep tree is never held whole)."""
    data = data or {}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info in members:
            content = data.get(info.name)
            if content is not None:
                info.size = len(content)
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
            if buffer.tell() > 1 << 20:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue()


def deep_members(depth: int) -> list[tarfile.TarInfo]:
    members, path = [], "code"
    for _ in range(depth):
        path += "/d"
        info = tarfile.TarInfo(path)
        info.type = tarfile.DIRTYPE
        members.append(info)
        members.append(tarfile.TarInfo(path + "/f.py"))
    return members


@pytest.mark.parametrize("depth", [1000, 3000])
def test_a_deep_tree_is_refused_at_once_and_leaves_nothing_deeper_than_the_bound(tmp_path, depth):
    dest = tmp_path / "run" / "after"
    started = time.perf_counter()
    with pytest.raises(SwechainError, match=f"more than {trees.MAX_TREE_DEPTH} folders deep"):
        trees.unpack_untrusted(tar_stream(deep_members(depth)), dest, strip="code")
    seconds = time.perf_counter() - started
    assert seconds < 5, f"{depth} deep took {seconds:.1f} s"
    deepest = max(len(p.relative_to(dest).parts) for p in dest.rglob("*"))
    assert deepest <= trees.MAX_TREE_DEPTH
    shutil.rmtree(dest)  # what the host does with a refused tree: no RecursionError, nothing left
    assert not dest.exists()


def test_a_tree_inside_the_bounds_unpacks_whole_in_linear_time(tmp_path):
    """As deep as allowed and 20,000 files wide: unpacked, each file where it was."""
    deep = deep_members(trees.MAX_TREE_DEPTH - 1)
    wide = [tarfile.TarInfo(f"code/wide/m{i}.py") for i in range(20_000)]
    started = time.perf_counter()
    left_out = trees.unpack_untrusted(tar_stream(deep + wide), tmp_path / "out", strip="code")
    seconds = time.perf_counter() - started
    assert left_out == []
    assert len(os.listdir(tmp_path / "out" / "wide")) == 20_000
    assert (tmp_path / "out" / "/".join(["d"] * (trees.MAX_TREE_DEPTH - 1)) / "f.py").is_file()
    assert seconds < 60, f"{seconds:.1f} s"


@pytest.mark.parametrize(
    "member, reason",
    [
        (tarfile.TarInfo("code/" + "n" * 300 + ".py"), "a name longer than 255 bytes"),
        (tarfile.TarInfo("code/" + "/".join(["x" * 200] * 12)), "a path longer than 2048 bytes"),
    ],
)
def test_absurd_names_are_refused_with_the_reason_never_an_oserror(tmp_path, member, reason):
    with pytest.raises(SwechainError, match=reason):
        trees.unpack_untrusted(tar_stream([member]), tmp_path / "out", strip="code")


def test_too_many_members_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(trees, "MAX_TREE_MEMBERS", 100)
    members = [tarfile.TarInfo(f"code/m{i}.py") for i in range(101)]
    with pytest.raises(SwechainError, match="more than 100 members"):
        trees.unpack_untrusted(tar_stream(members), tmp_path / "out", strip="code")


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def test_unusual_members_are_unpacked_as_files_or_left_out_with_the_reason(tmp_path):
    members = [
        tarfile.TarInfo("code/pkg/real.py"),
        special("code/pkg/hard.py", tarfile.LNKTYPE, "code/pkg/real.py"),
        special("code/pkg/hard_to_nothing.py", tarfile.LNKTYPE, "code/pkg/absent.py"),
        special("code/pkg/hard_out.py", tarfile.LNKTYPE, "/etc/passwd"),
        special("code/fifo", tarfile.FIFOTYPE),
        special("code/dev", tarfile.BLKTYPE),
        special("code/.venv/bin/python", tarfile.SYMTYPE, "/usr/bin/python3"),
    ]
    dest = tmp_path / "out"
    left_out = trees.unpack_untrusted(tar_stream(members, {"code/pkg/real.py": b"x = 1\n"}), dest, strip="code")
    assert (dest / "pkg" / "hard.py").read_bytes() == b"x = 1\n"
    assert sorted(p.name for p in (dest / "pkg").iterdir()) == ["hard.py", "real.py"]
    assert left_out == [
        "pkg/hard_to_nothing.py (a hard link to a file that is not in the tree)",
        "pkg/hard_out.py (a hard link to a file that is not in the tree)",
        "fifo (a fifo)",
        "dev (a device)",
        ".venv/bin/python (a link out of the tree)",
    ]
