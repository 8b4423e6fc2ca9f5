"""The paper's twelve chains, as data: ids, versions, sources, and what `chain list` shows."""

from __future__ import annotations

import re
import time

import pytest
from conftest import run_cli

from swechain_ci.chain import sources
from swechain_ci.chain.definition import ChainConfig, load_chain
from swechain_ci.errors import SwechainError

# The paper's chains: its id, and the first and last version with the number of steps.
PAPER_CHAINS = {
    "attrs": ("attrs_21.3.0_to_26.1.0", 13),
    "conan-a": ("conan_2.12.0_to_2.20.1", 16),
    "conan-b": ("conan_2.23.0_to_2.28.1", 11),
    "flask": ("flask_2.0.0_to_2.3.3", 17),
    "jinja2-2": ("jinja2_2.8_to_2.10.3", 12),
    "poetry": ("poetry_1.5.0_to_1.8.5", 10),
    "pyjwt": ("pyjwt_2.0.0_to_2.12.1", 15),
    "pytest-7": ("pytest_7.0.0_to_7.4.4", 16),
    "pytest-8": ("pytest_8.0.0_to_8.3.5", 12),
    "urllib3": ("urllib3_2.0.7_to_2.6.3", 12),
    "xarray-2022": ("xarray_2022.11.0_to_2023.7.0", 10),
    "xarray-2025": ("xarray_2025.6.0_to_2026.2.0", 11),
}


@pytest.mark.parametrize("chain_id", sorted(PAPER_CHAINS))
def test_every_paper_chain_is_declared_with_its_paper_id(chain_id):
    paper_id, steps = PAPER_CHAINS[chain_id]
    chain = load_chain(chain_id)
    assert chain.config.paper_id == paper_id
    assert len(chain.steps) == steps
    assert paper_id.endswith(f"_{chain.versions[0]}_to_{chain.versions[-1]}")


def test_skipped_versions_stay_skipped():
    """The paper's skips: poetry 1.6.1 (no change), pytest 8.1.0 (yanked) and 8.3.1 (no task)."""
    assert "1.6.1" not in load_chain("poetry").versions
    assert {"8.1.0", "8.3.1"}.isdisjoint(load_chain("pytest-8").versions)


def test_a_paper_id_that_names_other_versions_is_refused():
    with pytest.raises(ValueError, match=re.escape("names 1.0 -> 2.0, but the versions run 1.0 -> 1.1")):
        ChainConfig.model_validate(
            {
                "id": "x",
                "paper_id": "x_1.0_to_2.0",
                "package": "x",
                "import_name": "x",
                "versions": [{"version": v, "source": {"kind": "pypi"}} for v in ("1.0", "1.1")],
            }
        )


def test_chain_list_shows_every_chain_with_its_paper_id_python_and_source():
    short = run_cli("chain", "list")
    assert short.returncode == 0, short.stderr
    assert max(len(line) for line in short.stdout.splitlines()) <= 80, "the terminal table fits 80 columns"
    assert all(name in short.stdout for name in PAPER_CHAINS)
    result = run_cli("chain", "list", "--markdown")
    assert result.returncode == 0, result.stderr
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
        for line in result.stdout.splitlines()[2:]
    }
    assert set(PAPER_CHAINS) | {"toy", "jinja2"} <= set(rows)
    assert rows["jinja2-2"][1:4] == ["jinja2_2.8_to_2.10.3", "Jinja2", "3.9"]
    assert rows["conan-a"][6] == "git" and rows["flask"][6] == "pypi"
    assert rows["jinja2"][1] == "-", "the shipped 3.x Jinja2 chain is an extra, not the paper's"


@pytest.mark.parametrize("chain_id", ["jinja2-2", "conan-a", "conan-b"])
def test_an_unreachable_git_source_fails_fast_with_one_line(chain_id, monkeypatch, tmp_path):
    """No route to github.com here: the clone must fail at once and say so. git's own url
    rewriting sends the clone to a closed loopback port, so no traffic leaves the machine."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "url.http://127.0.0.1:9/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    chain = load_chain(chain_id)
    started = time.monotonic()
    with pytest.raises(SwechainError) as caught:
        sources.source_root(chain, chain.versions[0])
    message = str(caught.value)
    assert time.monotonic() - started < 30
    assert "\n" not in message
    assert "is unreachable from this machine" in message and "runner with network access" in message
    assert not any((tmp_path / "sources").rglob("*.py")), "nothing half-fetched is kept"


def test_the_package_under_test_is_never_pinned_even_when_a_test_dependency_requires_it(tmp_path, monkeypatch):
    """pytest's own chains: the harness's pytest plugins require pytest, but the pytest in the
    test image must be the candidate's code, so the resolution keeps everything else only."""
    from swechain_ci.chain import environments
    from swechain_ci.chain.definition import Chain

    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pyproject.toml").write_text('[project]\nname = "pytest"\ndependencies = ["iniconfig", "pluggy>=1.3,<2"]\n')
    config = ChainConfig.model_validate(
        {
            "id": "pytest-x",
            "package": "pytest",
            "import_name": "_pytest",
            "source_root": ".",
            "versions": [{"version": v, "source": {"kind": "local", "path": "tree"}} for v in ("8.0.0", "8.0.1")],
        }
    )
    pins = environments.pins(Chain(config, tmp_path), "8.0.0")
    names = {pin.split("==")[0] for pin in pins}
    assert {"iniconfig", "pluggy", "pytest-json-report", "pytest-timeout"} <= names
    assert "pytest" not in names
