"""The wheelhouse is reused only when its wheels' content matches the hashes recorded at download."""

from __future__ import annotations

import pytest

from swechain_ci.containers.images import wheelhouse


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_tampered_or_unlisted_wheelhouse_is_downloaded_again(home):
    folder = wheelhouse(["six==1.16.0"], "3.11")
    [wheel] = folder.glob("*.whl")
    good = wheel.read_bytes()
    assert wheelhouse(["six==1.16.0"], "3.11") == folder and wheel.read_bytes() == good, "verified: reused"
    wheel.write_bytes(b"planted")
    assert wheelhouse(["six==1.16.0"], "3.11") == folder
    assert wheel.read_bytes() == good, "a wheel whose hash does not match is never used"
    sums = folder.with_name(folder.name + ".sha256")
    sums.write_text("")  # the recorded hashes lost or emptied: the marker file alone proves nothing
    wheel.write_bytes(b"planted again")
    assert (folder / ".complete").is_file()
    wheelhouse(["six==1.16.0"], "3.11")
    assert wheel.read_bytes() == good and sums.read_text().strip().endswith(wheel.name)
