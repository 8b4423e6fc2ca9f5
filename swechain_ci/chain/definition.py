"""Chain definitions: ``chains/<id>/chain.yaml``, validated, with quirks as data."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import Field, field_validator, model_validator

from swechain_ci.chain.interpreters import INTERPRETERS
from swechain_ci.errors import SwechainError, did_you_mean
from swechain_ci.models import Strict
from swechain_ci.records import read_yaml_model
from swechain_ci.settings import project_root

VERSION_PATTERN = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+!_-]*$")


class LocalSource(Strict):
    """A version kept as a source tree in the repository, relative to the chain folder."""

    kind: Literal["local"]
    path: str


class PypiSource(Strict):
    """The version's sdist from the package index (``SWECHAIN_INDEX_URL``, default PyPI)."""

    kind: Literal["pypi"]
    project: str | None = Field(None, description="index project name, if not the chain's package")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="expected sdist hash")


class GitSource(Strict):
    """A tagged checkout of a git repository."""

    kind: Literal["git"]
    url: str
    tag: str


VersionSource = Annotated[LocalSource | PypiSource | GitSource, Field(discriminator="kind")]


class ChainVersion(Strict):
    version: str
    source: VersionSource

    @field_validator("version")
    @classmethod
    def _version_shape(cls, value: str) -> str:
        if not VERSION_PATTERN.match(value):
            raise ValueError("expected a version string such as 1.2.0")
        return value


class RemovedOption(Strict):
    """A pytest option dropped from the target's ``addopts`` before running."""

    name: str = Field(pattern=r"^-")
    takes_value: bool = False


class RenamedSection(Strict):
    """A config section renamed before running, e.g. setup.cfg [pytest] -> [tool:pytest]."""

    file: str
    old: str
    new: str


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)
# What the harness fixes for every run (evaluation/harness/run_hidden_tests.py), and what would let a
# chain change how Python or the dynamic loader start.
HARNESS_ENV = frozenset({"PATH", "HOME", "TMPDIR", "LANG"})
HARNESS_ENV_PREFIXES = ("PYTHON", "PYTEST_", "SWECHAIN_", "LD_")


class PytestQuirks(Strict):
    remove_options: list[RemovedOption] = Field(default_factory=list)
    rename_sections: list[RenamedSection] = Field(default_factory=list)
    extra_args: list[str] = Field(default_factory=list)
    workers: int | Literal["auto"] = Field(
        1,
        description="pytest-xdist workers in each run's container ('auto': as many as the runner's CPUs); "
        "limits are per worker",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="environment variables the tests run with, as the package's own CI sets them "
        "(urllib3: CI=1 gives its socket tests the time-outs they use on CI); the harness's own stay fixed",
    )

    hosts: dict[str, str] = Field(
        default_factory=dict,
        description="host names the tests' container resolves, to loopback addresses only (the test "
        "container's /etc/hosts): urllib3's tests need 'localhost.' as the reference's image maps it",
    )

    ipv6_loopback: bool = Field(
        False,
        description="the tests' container's loopback has its IPv6 address ::1, as in a container on "
        "Docker's default network (the reference's): urllib3 2.3.0 on binds its test servers to "
        "localhost's IPv4 and IPv6 addresses; without it they cannot start",
    )

    @field_validator("hosts")
    @classmethod
    def _loopback_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, address in value.items():
            if not HOST_NAME.fullmatch(name):
                raise ValueError(f"'{name}' is not a host name (letters, digits, '-' and '.')")
            try:
                loopback = ipaddress.ip_address(address).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise ValueError(f"'{name}' maps to '{address}': a test container's names resolve to loopback only")
        return value

    @field_validator("env")
    @classmethod
    def _not_the_harness_variables(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"'{name}' is not an environment variable name (letters, digits and _)")
            if name in HARNESS_ENV or name.startswith(HARNESS_ENV_PREFIXES):
                raise ValueError(
                    f"'{name}' is reserved: the harness controls PATH, HOME, TMPDIR, LANG and the "
                    f"PYTHON*, PYTEST_*, SWECHAIN_* and LD_* variables of every run"
                )
        return value

    @field_validator("workers")
    @classmethod
    def _positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("expected 1 or more workers, or 'auto'")
        return value

    @field_validator("remove_options", mode="before")
    @classmethod
    def _flags_as_strings(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value


class Timeouts(Strict):
    test_s: int = Field(60, gt=0, description="one hidden test")
    run_s: int = Field(600, gt=0, description="one whole hidden-test run")


class Limits(Strict):
    memory: str = "2g"
    cpus: float = Field(1.0, gt=0)
    pids: int = Field(512, gt=0)


class DeclaredTest(Strict):
    """A test declared in the versions ``versions`` (a PEP 440 specifier; all when unset), with why."""

    test: str
    versions: str | None = Field(None, description="e.g. '<2.11.0': from 2.11.0 on the declaration lapses")
    reason: str

    @field_validator("versions")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier:
                raise ValueError(f"'{value}' is not a version range; write it as '<2.11.0' or '>=1.0,<2.0'") from None
        return value

    def applies_to(self, version: str) -> bool:
        if self.versions is None:
            return True
        try:
            return SpecifierSet(self.versions).contains(Version(version), prereleases=True)
        except InvalidVersion:
            return True  # a version PEP 440 cannot order: keep the declaration


class NetworkTest(DeclaredTest):
    """A test that needs the internet."""

    reason: str = "needs the internet"


class FlakyTest(DeclaredTest):
    """A test whose outcome is random here: two new-gold runs can agree on it by chance."""

    reason: str = "fails at random here"


def _declared_in(entries: Sequence[DeclaredTest], version: str) -> dict[str, str]:
    return {entry.test: entry.reason for entry in entries if entry.applies_to(version)}


class OracleSettings(Strict):
    baseline_runs: int = Field(2, ge=1, description="new-gold runs; differing outcomes mark flaky tests")
    max_failing_fraction: float = Field(0.0025, ge=0, le=1)
    known_failures: dict[str, list[str]] = Field(
        default_factory=dict, description="version -> tests allowed to fail its own suite"
    )
    needs_network: list[NetworkTest] = Field(
        default_factory=list,
        description="tests that need the internet (a node id, or {test, versions, reason}): not scored where they apply",
    )
    flaky: list[FlakyTest] = Field(
        default_factory=list,
        description="tests that fail at random here (a node id, or {test, versions, reason}): flaky where they "
        "apply, as a test whose outcome changed between new-gold runs is",
    )

    @field_validator("needs_network", "flaky", mode="before")
    @classmethod
    def _names_as_entries(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"test": v} if isinstance(v, str) else v for v in value]
        return value

    def network_tests(self, version: str) -> dict[str, str]:
        """Tests that need the internet in ``version``, with why."""
        return _declared_in(self.needs_network, version)

    def flaky_tests(self, version: str) -> dict[str, str]:
        """Tests declared flaky in ``version``, with why."""
        return _declared_in(self.flaky, version)


class VersionedRequirements(Strict):
    """Environment fields for only the chain versions a specifier matches, added to the chain-wide
    ones: the extras or requirement files a range of versions declares its test set in, a
    dependency's upper bound that the version's era kept without declaring it, or an override
    of a requirement only those versions pin."""

    versions: str = Field(description="a PEP 440 specifier on the chain version, e.g. '>=2.0,<2.1'")
    extras: list[str] = Field(default_factory=list, description="the versions' own extras or dependency groups")
    requirement_files: list[str] = Field(default_factory=list, description="requirements files in those trees")
    lock_files: list[str] = Field(
        default_factory=list,
        description="uv.lock files in those trees: each requirement the version declares "
        "is pinned to the version its lock records",
    )
    override: dict[str, str] = Field(
        default_factory=dict,
        description="name -> requirement used instead, over the chain-wide override",
    )
    extra: list[str] = Field(default_factory=list, description="pip requirements added for those versions")

    @field_validator("versions")
    @classmethod
    def _specifier(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"expected a version specifier such as '>=2.0,<2.1': {exc}") from None
        return value

    @model_validator(mode="after")
    def _says_something(self) -> VersionedRequirements:
        if not (self.extras or self.requirement_files or self.lock_files or self.override or self.extra):
            raise ValueError(
                f"the entry for versions '{self.versions}' names nothing: give it extras, requirement_files, "
                "lock_files, override or extra"
            )
        return self


# A test dependency from a git checkout: the repository and the full commit (a branch would move).
GIT_WHEEL_URL = re.compile(r"git\+(?:https|file)://[^\s@]+@[0-9a-f]{40}")


class Environment(Strict):
    """How a version's test environment is derived from what the version declares."""

    extras: list[str] = Field(default_factory=list, description="the version's own extras to install")
    requirement_files: list[str] = Field(default_factory=list, description="requirements files in the version tree")
    drop: list[str] = Field(default_factory=list, description="requirement names left out, e.g. coverage")
    override: dict[str, str] = Field(default_factory=dict, description="name -> requirement used instead")
    extra: list[str] = Field(default_factory=list, description="extra test dependencies (pip requirements)")
    by_version: list[VersionedRequirements] = Field(
        default_factory=list,
        description="extras, requirement files, overrides and extra requirements for the versions a specifier matches",
    )
    wheels_from_sdists: list[str] = Field(
        default_factory=list,
        description="exact pins (name==version) of pure-Python test dependencies published only as sdists: "
        "built into wheels on the host, like the chain's own sdists are unpacked there",
    )
    wheels_from_git: dict[str, str] = Field(
        default_factory=dict,
        description="name -> git+<repository URL>@<full commit> for pure-Python test dependencies required from a "
        "git checkout (a fork the index does not have): built into a wheel on the host, versioned "
        "<its version>+git.<commit>, and pinned wherever a version requires that name",
    )
    installed_metadata: bool = Field(
        False,
        description="give the code under test the target version's distribution metadata (its sdist's "
        "PKG-INFO), for packages that read their own version or metadata through importlib.metadata",
    )
    own_in_resolution: bool = Field(
        False,
        description="resolve with the package itself at the version under test, requiring what this chain "
        "makes of its requirements, instead of a release from the index: for a test dependency that requires "
        "the package (poetry-plugin-export requires poetry), as the reference's editable install satisfies it",
    )
    resolution: Literal["highest", "lowest"] = Field(
        "highest",
        description="'lowest': the package's own runtime requirements, and theirs, at the lowest releases "
        "they allow (the SWE-Chain reference's `uv pip install -e . --resolution lowest`); a test requirement "
        "that excludes such a release moves it up, as the reference's second install does",
    )

    @field_validator("wheels_from_git")
    @classmethod
    def _git_at_a_commit(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not GIT_WHEEL_URL.fullmatch(url):
                raise ValueError(
                    f"{name}: {url!r} is not git+<https or file URL>@<40-hex commit> (a branch or tag moves; "
                    "a commit is what the image can reproduce)"
                )
        return value


class ReferenceArtifact(Strict):
    """A known artifact of the SWE-Chain reference's harness on this package, for `chain compare`:
    a test the reference counts as upgrade-related because its old-gold run failed with a message
    holding ``signature``, while the old code passes here."""

    signature: str = Field(min_length=8, description="text of the reference's old-gold failure message")
    reason: str = Field(min_length=8, description="why that failure is the reference's, not the old code's")


class ReferenceTests(Strict):
    """Tests a known difference from the SWE-Chain reference's environment touches, with why, for `chain compare`."""

    tests: list[str] = Field(min_length=1, description="node ids or their prefixes (a module, a class)")
    reason: str = Field(min_length=8, description="what differs, and why ours is as it is")


class ReferenceSkip(ReferenceTests):
    """Tests the target's own suite skips here and not in the reference (its Python, an optional dependency)."""


class ReferenceEnvironment(ReferenceTests):
    """Tests the old code fails here and passes in the reference's old-gold run, by a difference that
    hides the old code's bug there (it runs the tests as root, whom a directory without permissions
    does not stop)."""


class ChainConfig(Strict):
    schema_version: Literal[1] = 1
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    package: str
    import_name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    family: str = Field("python", description="image recipes in dockerfiles/<family>/")
    python: str = Field("3.11", description="the interpreter: picks the base image, wheels and resolution")
    source_root: str = Field(".", description="folder of the code tree that holds the import package")
    test_folder: str = "tests"
    changelog: str | None = Field(
        None,
        description="the release tree's changelog when it is not at a usual name (pytest: doc/en/changelog.rst)",
    )
    protected_files: list[str] = Field(
        default_factory=lambda: ["pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini"]
    )
    versions: list[ChainVersion] = Field(min_length=2)
    pytest: PytestQuirks = Field(default_factory=PytestQuirks)
    environment: Environment = Field(default_factory=Environment)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    limits: Limits = Field(default_factory=Limits)
    oracle: OracleSettings = Field(default_factory=OracleSettings)
    paper_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="the SWE-Chain paper's chain id (e.g. pyjwt_2.0.0_to_2.12.1): its published specifications' chain_id",
    )
    reference_artifacts: list[ReferenceArtifact] = Field(
        default_factory=list,
        description="failure messages of the reference's old-gold runs that come from its harness, "
        "not from the old code (chain compare explains those differences)",
    )
    reference_skips: list[ReferenceSkip] = Field(
        default_factory=list,
        description="tests skipped here where the reference runs them, by a known difference of environment "
        "(chain compare explains those differences)",
    )
    reference_environment: list[ReferenceEnvironment] = Field(
        default_factory=list,
        description="tests the old code fails here and passes in the reference's old-gold run, by a known "
        "difference of environment (chain compare explains those differences)",
    )
    default_spec_level: str = Field(
        "L3",
        pattern=r"^(L[1-5](\+interface)?|[a-z][a-z0-9_-]*)$",
        description="L1-L5, optionally with +interface, or a hand-written level such as manual",
    )
    ci_steps: str | None = Field(
        None, pattern=r"^\d+(-\d+)?$", description="steps CI runs end to end, e.g. 9-13; all when unset"
    )

    @field_validator("python", mode="before")
    @classmethod
    def _quoted(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            # YAML reads python: 3.10 as the number 3.1
            raise ValueError(f'{value!r} was read as a number; quote the version, e.g. python: "3.11"')
        return value

    @field_validator("python")
    @classmethod
    def _known_interpreter(cls, value: str) -> str:
        if value not in INTERPRETERS:
            raise ValueError(f"Python {value} has no base image here; use one of {', '.join(INTERPRETERS)}")
        return value

    @field_validator("test_folder", "source_root", "changelog")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.startswith("/") or ".." in Path(value).parts:
            raise ValueError("expected a path relative to the package root, without '..'")
        return value.strip("/") or "."

    @model_validator(mode="after")
    def _paper_id_names_the_versions(self) -> ChainConfig:
        """``<package>_<start>_to_<end>`` must name this chain's first and last versions."""
        if self.paper_id and "_to_" in self.paper_id:
            head, end = self.paper_id.rsplit("_to_", 1)
            start = head.rsplit("_", 1)[-1]
            if (start, end) != (self.versions[0].version, self.versions[-1].version):
                raise ValueError(
                    f"paper_id {self.paper_id} names {start} -> {end}, but the versions run "
                    f"{self.versions[0].version} -> {self.versions[-1].version}"
                )
        return self

    @model_validator(mode="after")
    def _unique_versions(self) -> ChainConfig:
        seen = [v.version for v in self.versions]
        duplicates = sorted({v for v in seen if seen.count(v) > 1})
        if duplicates:
            raise ValueError(f"versions listed more than once: {', '.join(duplicates)}")
        return self

    def keyed_dump(self, include: set[str]) -> dict:
        """The fields ``include`` names, as kept runs and recorded oracles are keyed by them: a quirk
        added after those records (``KEYED_LATER``) is left out while it is unset, so the records of
        chains that do not use it keep their keys."""
        dump = self.model_dump(include=include)
        for section, names in KEYED_LATER.items():
            for name in names:
                if section in dump and not dump[section].get(name):
                    del dump[section][name]
        return dump


# Fields added after gold runs and oracles were keyed by the config: (section, names).
KEYED_LATER: dict[str, tuple[str, ...]] = {"pytest": ("hosts", "ipv6_loopback"), "oracle": ("flaky",)}


class Chain:
    """A loaded chain definition and the folder it came from, possibly narrowed to a step range."""

    def __init__(self, config: ChainConfig, folder: Path, step_offset: int = 0) -> None:
        self.config = config
        self.folder = folder
        self.step_offset = step_offset

    @property
    def step_range(self) -> str:
        """The steps covered, numbered as in the whole chain, e.g. ``1-15``."""
        return f"{self.step_offset + 1}-{self.step_offset + len(self.steps)}"

    def select_steps(self, selection: str | None) -> Chain:
        """The sub-chain of steps ``A-B`` (or ``A``), 1-based as in the whole chain."""
        if not selection:
            return self
        first, _, last = selection.partition("-")
        total = len(self.config.versions) - 1
        try:
            start, end = int(first), int(last or first)
        except ValueError:
            raise SwechainError(
                f"step range '{selection}' is not A-B or A (whole numbers, e.g. 2-{total}); chain {self.id} has "
                f"steps 1-{total}"
            ) from None
        if start > end:
            raise SwechainError(f"step range '{selection}' runs backwards; write the first step first: {end}-{start}")
        if not 1 <= start <= end <= total:
            raise SwechainError(
                f"step range '{selection}' is outside chain {self.id}, which has steps 1-{total}"
                f" (step {start if not 1 <= start <= total else end} does not exist)"
            )
        versions = self.config.versions[self.step_offset + start - 1 : self.step_offset + end + 1]
        return Chain(self.config.model_copy(update={"versions": versions}), self.folder, self.step_offset + start - 1)

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def versions(self) -> list[str]:
        return [v.version for v in self.config.versions]

    @property
    def steps(self) -> list[tuple[str, str]]:
        return list(zip(self.versions, self.versions[1:], strict=False))

    def version(self, version: str) -> ChainVersion:
        for entry in self.config.versions:
            if entry.version == version:
                return entry
        raise SwechainError(f"chain {self.id} has no version {version}")


def chains_dir() -> Path:
    return project_root() / "chains"


def available_chains() -> list[str]:
    folder = chains_dir()
    return sorted(p.parent.name for p in folder.glob("*/chain.yaml")) if folder.is_dir() else []


def load_chain(name_or_path: str) -> Chain:
    """Load a chain by id (``chains/<id>/chain.yaml``) or by a path to its folder or YAML."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        path = candidate
    elif (candidate / "chain.yaml").is_file() and (candidate.is_absolute() or "/" in name_or_path):
        path = candidate / "chain.yaml"
    else:
        path = chains_dir() / name_or_path / "chain.yaml"
        if not path.is_file():
            known = ", ".join(available_chains()) or "none"
            raise SwechainError(
                f"unknown chain '{name_or_path}'{did_you_mean(name_or_path, available_chains())}: no {path}; "
                f"known chains: {known} "
                f"(add chains/{name_or_path}/chain.yaml or set SWECHAIN_ROOT)"
            )
    return Chain(parse_chain_file(path), path.parent.resolve())


def parse_chain_file(path: Path) -> ChainConfig:
    config = read_yaml_model(path, ChainConfig, "chain")
    if config.id != path.parent.name:
        raise SwechainError(
            f"{path}: field 'id': is '{config.id}' but the folder is '{path.parent.name}'; make them equal"
        )
    return config
