"""Per-chain environment quirks as data: requirements for some versions only, and the
target version's distribution metadata for code that runs from a path. No Docker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from swechain_ci.chain import environments
from swechain_ci.chain.definition import Chain, ChainConfig
from swechain_ci.containers.images import write_distribution_metadata
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.harness import run_hidden_tests as harness


def chain_with(tmp_path: Path, environment: dict) -> Chain:
    for version in ("1.0", "2.0", "2.1"):
        tree = tmp_path / "versions" / version
        (tree / "tests").mkdir(parents=True, exist_ok=True)
        (tree / "pyproject.toml").write_text(
            f'[project]\nname = "demo"\nversion = "{version}"\ndependencies = ["dep>=1"]\n'
        )
        (tree / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: demo\nVersion: {version}\nSummary: a demo\n")
    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "Demo",
            "import_name": "demo",
            "environment": environment,
            "versions": [
                {"version": v, "source": {"kind": "local", "path": f"versions/{v}"}} for v in ("1.0", "2.0", "2.1")
            ],
        }
    )
    return Chain(config, tmp_path)


def test_requirements_by_version_apply_only_where_the_specifier_matches(tmp_path):
    chain = chain_with(
        tmp_path,
        {
            "by_version": [
                {"versions": "<2.0", "extra": ["dep<2"]},
                {"versions": ">=2.0,<2.1", "extra": ["dep<3", "other"]},
            ]
        },
    )
    assert [r for r in environments.requirements(chain, "1.0") if r.startswith(("dep", "other"))] == ["dep>=1", "dep<2"]
    assert [r for r in environments.requirements(chain, "2.0") if r.startswith(("dep", "other"))] == [
        "dep>=1",
        "dep<3",
        "other",
    ]
    assert [r for r in environments.requirements(chain, "2.1") if r.startswith(("dep", "other"))] == ["dep>=1"]


def test_a_bad_version_specifier_is_refused(tmp_path):
    with pytest.raises(ValueError, match="version specifier"):
        chain_with(tmp_path, {"by_version": [{"versions": "2.0-ish", "extra": ["dep<2"]}]})


def test_the_target_versions_metadata_is_found_by_importlib_metadata(tmp_path):
    chain = chain_with(tmp_path, {"installed_metadata": True})
    dist = tmp_path / "dist"
    write_distribution_metadata(chain, "2.0", tmp_path / "versions" / "2.0", dist)
    probe = "import importlib.metadata as m; print(m.version('Demo'), m.metadata('demo')['Summary'])"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(dist)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["2.0", "a", "demo"]


def test_without_pkg_info_the_metadata_names_package_and_version(tmp_path):
    chain = chain_with(tmp_path, {"installed_metadata": True})
    bare = tmp_path / "bare"
    bare.mkdir()
    write_distribution_metadata(chain, "2.1", bare, tmp_path / "dist")
    assert (tmp_path / "dist" / "demo-2.1.dist-info" / "METADATA").read_text().splitlines()[1:] == [
        "Name: Demo",
        "Version: 2.1",
    ]


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
        'Requires-Dist: dep (>=1.0)\nRequires-Dist: tomli (>=2); python_version < "3.11"\n'
        'Requires-Dist: pytest (>=7); extra == "tests"\n\nlong description\n'
    )
    assert base == ["dep (>=1.0)", 'tomli (>=2); python_version < "3.11"']
    assert extras == {"tests": ["pytest>=7"]}


def test_wheels_from_sdists_must_be_exact_pins(tmp_path):
    chain = chain_with(tmp_path, {"wheels_from_sdists": ["httpretty>=1.0"]})
    with pytest.raises(SwechainError, match="not an exact pin"):
        environments.built_wheels(chain)
    assert environments.built_wheels(chain_with(tmp_path, {})) == []


def own(requirements: list[str]) -> list[str]:
    """The requirements a demo version declares, without the harness's."""
    harness = environments.requirement_lines(environments.HARNESS_REQUIREMENTS.read_text())
    return [r for r in requirements if r not in harness]


def test_by_version_names_the_requirement_file_or_dependency_group_each_range_declares(tmp_path):
    """A package that moved its test set from a requirements file (1.0) to a PEP 735 group (2.x)."""
    chain = chain_with(
        tmp_path,
        {
            "by_version": [
                {"versions": "<2.0", "requirement_files": ["dev-requirements.txt"]},
                {"versions": ">=2.0", "extras": ["dev"]},
            ]
        },
    )
    (tmp_path / "versions" / "1.0" / "dev-requirements.txt").write_text("pytest==7.4.0\n")
    for version in ("2.0", "2.1"):
        with (tmp_path / "versions" / version / "pyproject.toml").open("a") as pyproject:
            pyproject.write('[dependency-groups]\ndev = ["pytest>=8"]\n')
    assert own(environments.requirements(chain, "1.0")) == ["dep>=1", "pytest==7.4.0"]
    assert own(environments.requirements(chain, "2.0")) == ["dep>=1", "pytest>=8"]
    (tmp_path / "versions" / "2.1" / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    with pytest.raises(
        SwechainError,
        match=r"field 'environment.by_version': version 2.1 declares no extra or "
        r"dependency group 'dev' \(it has: none\)",
    ):
        environments.requirements(chain, "2.1")


def test_a_by_version_override_replaces_the_chain_wide_one_for_its_versions_only(tmp_path):
    chain = chain_with(
        tmp_path,
        {
            "override": {"dep": "dep==1.5"},
            "by_version": [{"versions": ">=2.0,<2.1", "override": {"DEP": "dep==2.0"}}],
        },
    )
    assert own(environments.requirements(chain, "1.0")) == ["dep==1.5"]
    assert own(environments.requirements(chain, "2.0")) == ["dep==2.0"]
    assert own(environments.requirements(chain, "2.1")) == ["dep==1.5"]


def test_a_by_version_entry_that_names_nothing_is_refused(tmp_path):
    with pytest.raises(ValueError, match=re.escape("the entry for versions '<2.0' names nothing")):
        chain_with(tmp_path, {"by_version": [{"versions": "<2.0"}]})


@pytest.mark.parametrize(
    ("line", "read"),
    [
        # pip splits a requirements-file line's markers at ';'; PEP 508 needs a space after a URL.
        (
            'trio @ git+https://example.org/trio@e4c8; python_version == "3.13"',
            'trio @ git+https://example.org/trio@e4c8 ; python_version == "3.13"',
        ),
        ('cryptography==41.0.4;implementation_name!="pypy"', 'cryptography==41.0.4;implementation_name!="pypy"'),
        (
            "hypercorn @ git+https://example.org/hypercorn@urllib3-changes",
            "hypercorn @ git+https://example.org/hypercorn@urllib3-changes",
        ),
    ],
)
def test_requirement_lines_are_read_as_pip_reads_them(line, read):
    assert environments.pip_requirement_line(line) == read


def test_a_url_requirement_must_be_overridden_by_a_released_version(tmp_path):
    """Pins come from the index, so a git checkout could not be reproduced in the image: the
    chain names a released version instead. One that applies only to another Python is left to pip."""
    chain = chain_with(tmp_path, {"requirement_files": ["dev-requirements.txt"]})
    for version in ("1.0", "2.0", "2.1"):
        (tmp_path / "versions" / version / "dev-requirements.txt").write_text(
            "hypercorn @ git+https://example.org/hypercorn@urllib3-changes\n"
            'cffi @ git+https://example.org/cffi@1472; python_version == "3.13"\n'
        )
    with pytest.raises(SwechainError) as caught:
        environments.requirements(chain, "1.0")
    assert str(caught.value) == (
        "version 1.0 of chain demo: hypercorn is required from git+https://example.org/hypercorn@urllib3-changes, "
        "which the package index cannot pin; name a released version for it under 'environment.override' "
        "(or a by_version entry's override) in chain.yaml"
    )
    chain = chain_with(
        tmp_path,
        {
            "requirement_files": ["dev-requirements.txt"],
            "by_version": [{"versions": ">=2.0", "override": {"hypercorn": "hypercorn==0.15.0"}}],
        },
    )
    assert own(environments.requirements(chain, "2.0")) == [
        "dep>=1",
        "hypercorn==0.15.0",
        'cffi @ git+https://example.org/cffi@1472 ; python_version == "3.13"',
    ]
    with pytest.raises(SwechainError, match="hypercorn is required from"):
        environments.requirements(chain, "1.0")


def test_a_bad_override_is_named(tmp_path):
    chain = chain_with(tmp_path, {"override": {"dep": "dep = 2"}})
    with pytest.raises(SwechainError, match=r"field 'environment.override': bad requirement 'dep = 2'"):
        environments.requirements(chain, "1.0")


def test_pip_ignores_a_url_requirement_for_another_python_without_fetching_it(tmp_path, monkeypatch):
    """Real resolution: the URL (a closed loopback port) is never contacted."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    pins = environments.resolve(
        ["iniconfig==2.0.0", 'cffi @ git+https://127.0.0.1:9/cffi@1472 ; python_version == "3.13"'], "3.11"
    )
    assert pins == ["iniconfig==2.0.0"]


UV_LOCK = """version = 1
requires-python = ">=3.9"

[[package]]
name = "Demo"
version = "2.0"
source = { editable = "." }

[[package]]
name = "pytest"
version = "8.3.4"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "sphinx"
version = "7.4.7"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version < '3.10'"]

[[package]]
name = "sphinx"
version = "8.1.3"
source = { registry = "https://pypi.org/simple" }
resolution-markers = ["python_full_version >= '3.10'"]

[[package]]
name = "hypercorn"
version = "0.15.0"
source = { git = "https://example.org/hypercorn?rev=urllib3-changes#d1719f8" }

[[package]]
name = "trio"
version = "0.27.0"
source = { registry = "https://pypi.org/simple" }
"""


def test_a_lock_file_pins_what_the_version_declares_to_the_locked_release(tmp_path):
    chain = chain_with(tmp_path, {"by_version": [{"versions": ">=2.0", "extras": ["dev"], "lock_files": ["uv.lock"]}]})
    for version in ("2.0", "2.1"):
        with (tmp_path / "versions" / version / "pyproject.toml").open("a") as pyproject:
            pyproject.write(
                '[dependency-groups]\ndev = ["pytest>=8", "trio>=0.27; python_version < \'3.13\'", "sphinx"]\n'
            )
    (tmp_path / "versions" / "2.0" / "uv.lock").write_text(UV_LOCK)
    assert environments.locked_versions(
        tmp_path / "versions" / "2.0" / "uv.lock", {"python_full_version": "3.11.2"}
    ) == {"pytest": "8.3.4", "sphinx": "8.1.3", "trio": "0.27.0"}, "index releases only, the fork for the target"
    assert own(environments.requirements(chain, "2.0")) == [
        "dep>=1",
        "pytest>=8",
        'trio>=0.27; python_version < "3.13"',
        "sphinx",
        "pytest==8.3.4",
        'trio==0.27.0 ; python_version < "3.13"',
        "sphinx==8.1.3",
    ], "a declared requirement only, under its own markers; dep is not in the lock"
    with pytest.raises(SwechainError, match=re.escape("field 'environment.by_version': 2.1 has no uv.lock")):
        environments.requirements(chain, "2.1")


# urllib3's fork of hypercorn at the commit chain.yaml names (environment.wheels_from_git).
FORK = "hypercorn==0.15.0+git.d1719f8c1570"

URLLIB3_PINS = {
    # version: pins its environment must hold (the overrides' released versions, the test set's own pins)
    "2.0.7": {"pytest==7.4.0", "tornado==6.2", "trustme==0.9.0"},
    "2.1.0": {"pytest==7.4.2", "tornado==6.3.3", "trustme==1.1.0"},
    "2.2.0": {FORK, "quart==0.20.0", "trio==0.23.1", "trustme==1.1.0"},
    "2.2.1": {FORK, "quart==0.20.0", "trio==0.23.1", "trustme==1.1.0"},
    "2.2.2": {FORK, "quart==0.20.0", "trio==0.25.0", "trustme==1.2.0"},
    "2.2.3": {FORK, "quart==0.20.0", "trio==0.26.2", "trustme==1.2.0"},
    "2.3.0": {FORK, "quart==0.20.0", "trio==0.26.2", "trustme==1.2.0"},
    # From 2.4.0, the group 'dev' at the releases each version's uv.lock records.
    **{v: {FORK, "pytest==8.3.4", "trio==0.27.0", "cryptography==44.0.2"} for v in ("2.4.0", "2.5.0")},
    **{
        v: {FORK, "pytest==8.4.2", "trio==0.31.0", "cryptography==46.0.3"} for v in ("2.6.0", "2.6.1", "2.6.2", "2.6.3")
    },
}


PIP_DOWNLOAD = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]


@pytest.fixture
def hypercorn_fork(tmp_path, monkeypatch):
    """GitHub cannot be reached from the tests: the index's hypercorn 0.15.0 (the fork's base release, the
    same requirements) relabelled as the fork's commit stands in for the wheel the host builds from it."""
    download = tmp_path / "index"
    subprocess.run(
        [*PIP_DOWNLOAD, "-d", str(download), "hypercorn==0.15.0"],
        check=True,
    )
    folder = tmp_path / "fork"
    folder.mkdir()
    (wheel,) = download.glob("*.whl")
    pin = environments.relabelled_wheel(wheel, FORK.split("+")[1], folder)
    monkeypatch.setattr(environments, "git_wheel", lambda chain, name: (pin, folder))
    return pin


@pytest.mark.slow
def test_every_urllib3_version_resolves(hypercorn_fork):
    """urllib3's test set moved from dev-requirements.txt to the group 'dev' at 2.4.0, and 2.2.0-2.3.0
    pin git commits (Quart is 0.20.0 throughout: the reference's image moves 2.2.x's 0.19.4 up): all
    of it is data in chains/urllib3/chain.yaml. Real sdists and resolutions (cached in the state home)."""
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("urllib3")
    assert list(URLLIB3_PINS) == chain.versions
    for version, expected in URLLIB3_PINS.items():
        pins = set(environments.pins(chain, version))
        assert expected <= pins, (version, sorted(expected - pins))
        if FORK in expected:  # the Quart/hypercorn test servers, from 2.2.0 on
            assert {"quart-trio==0.12.0", "httpx", "h2"} <= pins | {pin.split("==")[0] for pin in pins}, version
        # The reference's image adds the optional decoders to every version, and pyOpenSSL to 2.0.7.
        assert {"brotli", "zstandard", "pyopenssl"} <= {pin.split("==")[0] for pin in pins}, version


def test_an_extra_that_names_the_package_own_extras_brings_what_they_hold():
    """attrs 22.2.0: tests = zope.interface + attrs[tests-no-zope]; the package itself is never
    installed, so tests-no-zope's requirements are added in its place (nested, once each)."""
    from swechain_ci.chain.environments import with_own_extras

    extras = {
        "tests": ["zope.interface", "attrs[tests-no-zope]"],
        "tests-no-zope": ["hypothesis", "attrs[tests-mypy] ; python_version >= '3.8'", "attrs[tests]"],
        "tests-mypy": ["pytest-mypy-plugins"],
        "py2-only": ["funcsigs"],
    }
    markers = {
        "python_version": "3.9",
        "python_full_version": "3.9.2",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_system": "Linux",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": "3.9.2",
        "extra": "",
    }
    got = with_own_extras(extras["tests"], extras, "attrs", markers)
    assert [line for line in got if not line.startswith("attrs")] == [
        "zope.interface",
        "hypothesis",
        "pytest-mypy-plugins",
        "zope.interface",
    ]
    markers["python_version"] = "3.7"
    assert "pytest-mypy-plugins" not in with_own_extras(extras["tests"], extras, "attrs", markers)


def test_lowest_resolution_takes_each_requirement_and_theirs_at_the_lowest_release_with_a_wheel():
    """``resolution: lowest`` is the reference's ``uv pip install -e . --resolution lowest``: Jinja2's
    MarkupSafe follows it down too, to the lowest release with a wheel for the image's Python
    (MarkupSafe 2.0.0 has none for 3.11). Real index, cached in the state home."""
    wanted = ["Werkzeug>=2.0", "Jinja2>=3.0"]
    assert environments.lowest_releases(wanted, "3.9") == {
        "werkzeug": "2.0.0",
        "jinja2": "3.0.0",
        "markupsafe": "2.0.0",
    }
    assert environments.lowest_releases(wanted, "3.11")["markupsafe"] == "2.1.2"


def test_a_test_requirement_that_excludes_a_lowest_release_moves_it_up_and_what_it_required():
    """The reference's second install upgrades what a test requirement excludes, to the newest: no pin
    for it, and its own requirements (importlib-metadata 3.6.0's zipp 0.5.0) are no longer lowest.
    What the test requirements allow stays at its lowest (blinker 1.6.2 under a bare 'blinker')."""
    runtime = ["blinker>=1.6.2", "importlib-metadata>=3.6.0"]
    lines = [*runtime, "blinker", "importlib-metadata>=4.6"]
    result = environments.with_lowest_releases(lines, runtime, "3.9")
    assert result == [*lines, "blinker==1.6.2"]


def test_flask_runs_each_release_on_the_werkzeug_it_declares_at_its_lowest():
    """Flask declares only Werkzeug's floor; the reference installs that floor, which is the Werkzeug
    of each release's series (chains/flask/chain.yaml, resolution: lowest)."""
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("flask")
    expected = {
        "2.0.0": "2.0.0",
        "2.1.0": "2.0.0",
        "2.2.0": "2.2.0",
        "2.2.2": "2.2.2",
        "2.3.2": "2.3.3",
        "2.3.3": "2.3.7",
    }
    for version, werkzeug in expected.items():
        pins = set(environments.pins(chain, version))
        assert f"werkzeug=={werkzeug}" in pins, (version, sorted(p for p in pins if p.startswith("werkzeug")))
        assert "pytest==6.2.4" in pins


@pytest.mark.parametrize("chain_id", ["xarray-2022", "xarray-2025"])
def test_the_xarray_chains_install_the_back_ends_the_reference_installs(chain_id):
    """Without them ~6,000 (2022) and ~8,500 (2025) of xarray's tests skip: not the paper's suite.
    The reference's images (dockerfiles/xarray-22.Dockerfile, xarray-26.Dockerfile) install these;
    the first and last version of each chain resolve with them (real index, cached)."""
    from swechain_ci.chain.definition import load_chain

    chain = load_chain(chain_id)
    back_ends = {"dask", "netcdf4", "zarr", "bottleneck", "matplotlib", "numbagg", "pint", "sparse", "flox"}
    for version in (chain.versions[0], chain.versions[-1]):
        names = {pin.split("==")[0] for pin in environments.pins(chain, version)}
        assert back_ends <= names, (version, sorted(back_ends - names))
    assert chain.config.pytest.env["DASK_NUM_WORKERS"] == "1"


@pytest.mark.parametrize(
    ("hosts", "refused"),
    [
        ({"evil.example": "10.0.0.1"}, "loopback only"),
        ({"metadata": "169.254.169.254"}, "loopback only"),
        ({"x": "not-an-address"}, "loopback only"),
        ({"a..b": "127.0.0.1"}, "not a host name"),
        ({"bad name": "127.0.0.1"}, "not a host name"),
    ],
)
def test_a_chain_maps_host_names_to_loopback_only(hosts, refused):
    """`pytest.hosts` writes the test container's /etc/hosts: a chain cannot point a name at anything
    but loopback (the containers have no network, and a name never leads off the machine)."""
    from pydantic import ValidationError

    from swechain_ci.chain.definition import PytestQuirks

    assert PytestQuirks(hosts={"localhost.": "127.0.0.1", "ip6.localhost": "::1"}).hosts["localhost."] == "127.0.0.1"
    with pytest.raises(ValidationError, match=refused):
        PytestQuirks(hosts=hosts)


def test_a_malformed_requirement_in_a_lowest_release_is_a_one_line_error(monkeypatch, tmp_path):
    """Old releases' metadata can hold requirements packaging cannot read: named, never a traceback."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    monkeypatch.setattr(environments, "lowest_release", lambda name, spec, python: ("1.0", ["ok>=1", "bad req ("]))
    with pytest.raises(SwechainError, match=r"bad requirement 'bad req \(' .*environment.override"):
        environments.lowest_releases(["demo>=1"], "3.11")
    with pytest.raises(SwechainError) as raised:
        environments.lowest_releases(["demo>=1"], "3.11")
    assert "\n" not in str(raised.value)


def test_the_stand_in_for_the_package_requires_what_the_chain_makes_of_its_requirements(tmp_path):
    import zipfile

    chain = chain_with(
        tmp_path, {"own_in_resolution": True, "by_version": [{"versions": ">=2.0", "override": {"dep": "dep<2"}}]}
    )
    requirement, folder = environments.own_stand_in(chain, "2.0")
    assert requirement == "demo==2.0+undertest"
    (wheel,) = folder.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("demo-2.0+undertest.dist-info/METADATA").decode()
    assert "Name: demo\nVersion: 2.0+undertest\n" in metadata
    assert [line for line in metadata.splitlines() if line.startswith("Requires-Dist")] == ["Requires-Dist: dep<2"]
    assert environments.own_stand_in(chain, "1.0")[0] == "demo==1.0+undertest"


def test_poetry_resolves_its_export_plugin_against_the_version_under_test():
    """poetry-plugin-export requires poetry; the index's poetry 1.8.4 raises virtualenv's floor over the
    reference's cap, which the chain's override lowers again for the version under test. Real index."""
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("poetry")
    for version in ("1.8.4", "1.8.5"):
        names = dict(pin.split("==") for pin in environments.pins(chain, version))
        assert "poetry" not in names, version  # the candidate's code is the package
        assert names["poetry-plugin-export"] == "1.8.0" and names["poetry-core"] == "1.9.1", version
        assert Version(names["virtualenv"]) < Version("20.26"), version


def test_pytest_7_takes_the_reference_environment():
    """The reference's image: pytest's own requirements at their lowest (tomli 1.0.0), its test tools
    moving pluggy (below 1.4), py and iniconfig up, and its Pygments per release. Real index."""
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("pytest-7")
    for version in ("7.0.0", "7.2.0", "7.2.1", "7.4.4"):
        names = dict(pin.split("==") for pin in environments.pins(chain, version))
        assert "pytest" not in names, version  # the candidate's code is the runner
        assert (names["pluggy"], names["attrs"], names["hypothesis"], names["setuptools"], names["tomli"]) == (
            "1.3.0",
            "21.4.0",
            "6.68.0",
            "65.7.0",
            "1.0.0",
        ), version
        assert Version(names["py"]) >= Version("1.10") and Version(names["iniconfig"]) >= Version("1.1"), version
        assert {"numpy", "twisted", "pexpect", "asynctest", "xmlschema"} <= set(names), version
        pygments = Version(names["pygments"])
        assert pygments < Version("2.14") if Version(version) <= Version("7.2.0") else pygments < Version("2.19")


def test_a_git_test_dependency_must_name_a_commit(tmp_path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="40-hex commit"):
        chain_with(tmp_path, {"wheels_from_git": {"hypercorn": "git+https://github.com/urllib3/hypercorn@main"}})
    with pytest.raises(ValidationError, match="40-hex commit"):
        chain_with(tmp_path, {"wheels_from_git": {"x": "git+ssh://host/x@" + "a" * 40}})


def test_a_relabelled_wheel_installs_under_its_local_version(tmp_path):
    import zipfile

    built = tmp_path / "demo_dep-1.2-py3-none-any.whl"
    with zipfile.ZipFile(built, "w") as archive:
        archive.writestr("demo_dep/__init__.py", "FORK = True\n")
        archive.writestr("demo_dep-1.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-dep\nVersion: 1.2\n")
        archive.writestr(
            "demo_dep-1.2.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr("demo_dep-1.2.dist-info/RECORD", "")
    out = tmp_path / "out"
    out.mkdir()
    assert environments.relabelled_wheel(built, "git.0123456789ab", out) == "demo-dep==1.2+git.0123456789ab"
    (wheel,) = out.glob("*.whl")
    assert wheel.name == "demo_dep-1.2+git.0123456789ab-py3-none-any.whl"
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    assert (target / "demo_dep" / "__init__.py").read_text() == "FORK = True\n"
    assert (
        "Version: 1.2+git.0123456789ab" in (target / "demo_dep-1.2+git.0123456789ab.dist-info" / "METADATA").read_text()
    )


def test_a_git_test_dependency_is_built_from_its_mirror_and_pinned_where_a_version_requires_it(tmp_path, monkeypatch):
    """urllib3 2.2.0 on require urllib3's fork of hypercorn from git; the chain names the commit, the host
    builds it (from a mirror: SWECHAIN_GIT_INSTEAD_OF) and every requirement of that name gets its pin.
    pip builds the checkout with setuptools from the real index."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    fork = tmp_path / "fork"
    (fork / "forkdep").mkdir(parents=True)
    (fork / "forkdep" / "__init__.py").write_text("")
    (fork / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "forkdep"\nversion = "0.15.0"\n'
    )
    git = ["git", "-C", str(fork), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "--quiet", str(fork)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "fork"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setenv("SWECHAIN_GIT_INSTEAD_OF", f"{fork}=https://github.com/example/forkdep")
    chain = chain_with(
        tmp_path,
        {
            "wheels_from_git": {"ForkDep": f"git+https://github.com/example/forkdep@{commit}"},
            "by_version": [{"versions": ">=2.0", "extra": ["forkdep @ git+https://github.com/example/forkdep@main"]}],
        },
    )
    pin = f"forkdep==0.15.0+git.{commit[:12]}"
    assert pin in environments.requirements(chain, "2.0")
    assert not [r for r in environments.requirements(chain, "1.0") if "forkdep" in r]
    (folder,) = environments.built_wheels(chain)
    assert [w.name for w in folder.glob("*.whl")] == [f"forkdep-0.15.0+git.{commit[:12]}-py3-none-any.whl"]
    monkeypatch.setenv("SWECHAIN_GIT_INSTEAD_OF", f"{tmp_path / 'nowhere'}=https://github.com/example/forkdep")
    assert environments.git_wheel(chain, "ForkDep")[0] == pin  # built once, kept in the state home


def test_an_unreachable_git_test_dependency_is_a_one_line_error_naming_the_mirror_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWECHAIN_GIT_INSTEAD_OF", f"{tmp_path / 'missing'}=https://github.com/example/forkdep")
    chain = chain_with(tmp_path, {"wheels_from_git": {"forkdep": "git+https://github.com/example/forkdep@" + "a" * 40}})
    with pytest.raises(SwechainError, match="SWECHAIN_GIT_INSTEAD_OF can name a mirror") as raised:
        environments.built_wheels(chain)
    assert "\n" not in str(raised.value)
