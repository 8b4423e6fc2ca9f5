"""An image's key is its inputs', not its build's id: two Docker hosts that build the same inputs
get images with other ids and the same key (kept gold runs and oracles are keyed by it)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.containers.images import base_key, build_cached


class Host:
    """A Docker host as build_cached sees it: tags it has, and builds that get ids of their own."""

    ids = itertools.count()

    def __init__(self, name: str) -> None:
        self.name, self.tags = name, {}

    def image_id(self, ref: str) -> str | None:
        return self.tags.get(ref)

    def build(self, context: Path, dockerfile: str, tag: str, buildargs: dict, log: Path, network: str) -> str:
        self.tags[tag] = f"sha256:{self.name}-{next(self.ids)}"
        return self.tags[tag]


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return load_chain("toy")


def built(host: Host, toy, files: dict[str, Path], parent_id: str, parent_key: str):
    return build_cached(host, toy, "version", files, {"DEPS": parent_id}, parent_keys={"DEPS": parent_key})


def test_the_same_inputs_on_two_hosts_have_other_ids_and_one_key(toy, tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "test_a.py").write_text("def test_a():\n    pass\n")
    files = {"version": tmp_path / "tree"}
    here = built(Host("a"), toy, files, "sha256:deps-on-a", "deps-key")
    there = built(Host("b"), toy, files, "sha256:deps-on-b", "deps-key")
    assert here.id != there.id and here.key == there.key
    again = Host("a")
    first = built(again, toy, files, "sha256:deps-on-a", "deps-key")
    assert built(again, toy, files, "sha256:deps-on-a", "deps-key") == first, "an equal build is reused"


def test_other_inputs_have_another_key(toy, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_a.py").write_text("def test_a():\n    pass\n")
    files = {"version": tree}
    key = built(Host("a"), toy, files, "sha256:d", "deps-key").key
    assert built(Host("a"), toy, files, "sha256:d", "other-deps-key").key != key, "another parent"
    (tree / "test_a.py").write_text("def test_a():\n    assert False\n")
    assert built(Host("a"), toy, files, "sha256:d", "deps-key").key != key, "other files"


def test_the_base_is_keyed_by_what_it_is_made_of():
    assert base_key("3.11") == base_key("3.11")
    assert len({base_key("3.11"), base_key("3.13"), base_key("3.11", ["g++"])}) == 3
