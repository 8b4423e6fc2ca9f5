"""Code trees: safe copies, safe unpacking of what an agent produced, diffs that apply."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from swechain_ci.chain import trees
from swechain_ci.errors import SwechainError


def make_tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("x = 1\n")
    (root / "pkg" / "empty.json").write_text("")
    (root / "pkg" / "alias.py").symlink_to("__init__.py")
    (root / "escape").symlink_to("/etc/passwd")
    (root / "up").symlink_to("../outside")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    return root


def test_copy_keeps_inner_links_and_empty_files_and_drops_escapes_and_junk(tmp_path):
    source = make_tree(tmp_path / "src")
    trees.copy_tree(source, tmp_path / "dst")
    dst = tmp_path / "dst"
    assert (dst / "pkg" / "empty.json").read_text() == ""
    assert os.readlink(dst / "pkg" / "alias.py") == "__init__.py"
    assert not (dst / "escape").is_symlink() and not (dst / "up").is_symlink()
    assert not (dst / ".git").exists() and not (dst / "pkg" / "__pycache__").exists()


def test_pack_leaves_out_links_that_leave_the_tree(tmp_path):
    source = make_tree(tmp_path / "src")
    with tarfile.open(fileobj=io.BytesIO(trees.pack(source, "code", uid=1001, gid=1001))) as tar:
        names = {m.name: m for m in tar}
    assert "code/pkg/alias.py" in names and names["code/pkg/alias.py"].issym()
    assert "code/escape" not in names and "code/up" not in names
    assert {m.uid for m in names.values()} == {1001}


def hostile_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:

        def add(name, data=b"", **kw):
            info = tarfile.TarInfo(name)
            for k, v in kw.items():
                setattr(info, k, v)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("code/ok.py", b"print(1)\n")
        add("code/../../evil.py", b"bad")
        add("/abs.py", b"bad")
        add("code/link_out", type=tarfile.SYMTYPE, linkname="../../etc/passwd")
        add("code/link_abs", type=tarfile.SYMTYPE, linkname="/etc/passwd")
        add("code/link_in", type=tarfile.SYMTYPE, linkname="ok.py")
        add("code/dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3)
        add("code/hard", type=tarfile.LNKTYPE, linkname="code/ok.py")
    return buffer.getvalue()


def test_unpacking_an_agents_tree_keeps_only_what_is_safe(tmp_path):
    dest = tmp_path / "out"
    left_out = trees.unpack_untrusted([hostile_tar()], dest, strip="code")
    assert sorted(p.name for p in dest.iterdir()) == ["hard", "link_in", "ok.py"]
    # A hard link is the agent's file too: a regular file with its content.
    assert (dest / "hard").read_bytes() == b"print(1)\n" and not (dest / "hard").is_symlink()
    assert not (tmp_path / "evil.py").exists()
    assert left_out == ["link_out (a link out of the tree)", "link_abs (a link out of the tree)", "dev (a device)"]


def test_unpacking_refuses_a_tree_over_the_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(trees, "MAX_TREE_BYTES", 10)
    with pytest.raises(SwechainError, match="exceeds"):
        trees.unpack_untrusted([hostile_tar()], tmp_path / "out", strip="code")


def test_diff_applies_back_and_counts_lines(tmp_path):
    before, after = tmp_path / "a", tmp_path / "b"
    for root in (before, after):
        (root / "pkg").mkdir(parents=True)
    (before / "pkg" / "m.py").write_text("a\nb\n")
    (before / "gone.txt").write_text("bye\n")
    (after / "pkg" / "m.py").write_text("a\nB\nc\n")
    (after / "pkg" / "new.json").write_text("")
    patch = trees.diff(before, after)
    stats = trees.diff_stats(patch)
    assert (stats.files, stats.added, stats.removed) == (3, 2, 2)
    trees.apply_patch(before, patch)
    assert trees.digest(before) == trees.digest(after)
    assert trees.diff(after, after) == ""
