"""A stored oracle is reused only if its bytes hash to what was recorded when it was written."""

from __future__ import annotations

import json

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.evaluation.oracle import content_hash_path, oracle_path, reusable_oracle, store_oracle
from swechain_ci.models import ChainOracle
from swechain_ci.records import read_model


@pytest.mark.docker
def test_an_edited_oracle_with_the_right_inputs_hash_is_not_reused(toy_oracle, tmp_path, monkeypatch):
    built = read_model(oracle_path(load_chain("toy")), ChainOracle)
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    path = oracle_path(load_chain("toy"))
    store_oracle(path, built)
    assert reusable_oracle(path, built.inputs_hash) == built
    assert reusable_oracle(path, "other inputs") is None
    # planted: the same self-declared inputs_hash, one step that needs no tests fixed
    data = json.loads(path.read_text())
    data["steps"][0]["upgrade_related"] = []
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert reusable_oracle(path, built.inputs_hash) is None
    # an oracle from before the hashes were kept gets its hash recorded on first use
    store_oracle(path, built)
    content_hash_path(path).unlink()
    assert reusable_oracle(path, built.inputs_hash) == built and content_hash_path(path).is_file()
