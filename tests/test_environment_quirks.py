"""Per-chain environment quirks as data: requirements for some versions only, and the
target version's distribution metadata for code that runs from a path. No Docker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swechain_ci.chain import environments
from swechain_ci.chain.definition import Chain, ChainConfig
from swechain_ci.containers.images import write_distribution_metadata
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.harness import run_hidden_tests as harness


def chain_with(tmp_path: Path, environment: dict) -> Chain:
    for version in ("1.0", "2.0", "2.1"):
        tree = tmp_path / "versions" / version
        (tree / "tests").mkdir(parents=True, exist_ok=True)
        (tree / "pyproject.toml").write_text(f'[project]\nname = "demo"\nversion = "{version}"\ndependencies = ["dep>=1"]\n')
        (tree / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: demo\nVersion: {version}\nSummary: a demo\n")
    config = ChainConfig.model_validate({
        "id": "demo", "package": "Demo", "import_name": "demo", "environment": environment,
        "versions": [{"version": v, "source": {"kind": "local", "path": f"versions/{v}"}} for v in ("1.0", "2.0", "2.1")],
    })
    return Chain(config, tmp_path)


def test_requirements_by_version_apply_only_where_the_specifier_matches(tmp_path):
    chain = chain_with(tmp_path, {"by_version": [
        {"versions": "<2.0", "extra": ["dep<2"]},
        {"versions": ">=2.0,<2.1", "extra": ["dep<3", "other"]},
    ]})
    assert [r for r in environments.requirements(chain, "1.0") if r.startswith(("dep", "other"))] == ["dep>=1", "dep<2"]
    assert [r for r in environments.requirements(chain, "2.0") if r.startswith(("dep", "other"))] == ["dep>=1", "dep<3", "other"]
    assert [r for r in environments.requirements(chain, "2.1") if r.startswith(("dep", "other"))] == ["dep>=1"]


def test_a_bad_version_specifier_is_refused(tmp_path):
    with pytest.raises(ValueError, match="version specifier"):
        chain_with(tmp_path, {"by_version": [{"versions": "2.0-ish", "extra": ["dep<2"]}]})


def test_the_target_versions_metadata_is_found_by_importlib_metadata(tmp_path):
    chain = chain_with(tmp_path, {"installed_metadata": True})
    dist = tmp_path / "dist"
    write_distribution_metadata(chain, "2.0", tmp_path / "versions" / "2.0", dist)
    probe = "import importlib.metadata as m; print(m.version('Demo'), m.metadata('demo')['Summary'])"
    result = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(dist)},
                            capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["2.0", "a", "demo"]


def test_without_pkg_info_the_metadata_names_package_and_version(tmp_path):
    chain = chain_with(tmp_path, {"installed_metadata": True})
    bare = tmp_path / "bare"
    bare.mkdir()
    write_distribution_metadata(chain, "2.1", bare, tmp_path / "dist")
    assert (tmp_path / "dist" / "demo-2.1.dist-info" / "METADATA").read_text().splitlines()[1:] == [
        "Name: Demo", "Version: 2.1"]


def test_the_harness_puts_the_metadata_on_the_path_only_when_the_image_has_it(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "TARGET", tmp_path)
    settings = {"source_root": "src"}
    # What follows site-packages: the source root, then the run folder (the working folder).
    assert harness.python_path(settings) == [harness.RUN / "src", harness.RUN]
    (tmp_path / "dist").mkdir()
    assert harness.python_path(settings) == [harness.RUN / "src", tmp_path / "dist", harness.RUN]


def test_pkg_info_declares_runtime_requirements_and_extras():
    base, extras = environments.pkg_info_requirements(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nProvides-Extra: tests\n"
        "Requires-Dist: dep (>=1.0)\nRequires-Dist: tomli (>=2); python_version < \"3.11\"\n"
        "Requires-Dist: pytest (>=7); extra == \"tests\"\n\nlong description\n"
    )
    assert base == ["dep (>=1.0)", 'tomli (>=2); python_version < "3.11"']
    assert extras == {"tests": ["pytest>=7"]}


def test_wheels_from_sdists_must_be_exact_pins(tmp_path):
    chain = chain_with(tmp_path, {"wheels_from_sdists": ["httpretty>=1.0"]})
    with pytest.raises(SwechainError, match="not an exact pin"):
        environments.built_wheels(chain)
    assert environments.built_wheels(chain_with(tmp_path, {})) == []
