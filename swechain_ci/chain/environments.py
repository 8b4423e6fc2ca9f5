"""Test environments: what each version declares, resolved to pins and recorded.

A version's environment is its runtime requirements plus the extras and
requirement files the chain names, adjusted by the chain's ``environment``
quirks, plus the harness. It is resolved once for the chain's Python and the
image platform and cached, so the pins stay fixed; versions that resolve
alike share one dependency image.
"""

from __future__ import annotations

import base64
import configparser
import email.parser
import functools
import hashlib
import json
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import dependency_groups
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from swechain_ci import progress
from swechain_ci.chain import sources
from swechain_ci.chain.definition import Chain
from swechain_ci.chain.interpreters import interpreter
from swechain_ci.errors import SwechainError
from swechain_ci.records import write_text
from swechain_ci.settings import HARNESS_DIR, state_home

HARNESS_REQUIREMENTS = HARNESS_DIR / "requirements.txt"


def requirement_lines(text: str) -> list[str]:
    lines = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            lines.append(line)
    return lines


def egg_info_requirements(requires_txt: str) -> tuple[list[str], dict[str, list[str]]]:
    """setuptools' ``requires.txt``: base lines, then ``[extra]`` or ``[extra:marker]`` sections."""
    base: list[str] = []
    extras: dict[str, list[str]] = {}
    target = base
    marker = ""
    for line in requires_txt.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("["):
            name, _, marker = line[1:-1].partition(":")
            target = extras.setdefault(name, []) if name else base
            continue
        target.append(f"{line}; {marker}" if marker else line)
    return base, extras


def declared_metadata(tree: Path) -> tuple[list[str], dict[str, list[str]]]:
    """A version's runtime requirements and extras, from the first source that declares them."""
    pyproject = tree / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if "dependencies" in project or "optional-dependencies" in project:
            return list(project.get("dependencies", [])), dict(project.get("optional-dependencies", {}))
    for requires in sorted(tree.glob("*.egg-info/requires.txt")) + sorted(tree.glob("src/*.egg-info/requires.txt")):
        return egg_info_requirements(requires.read_text())
    setup_cfg = tree / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(setup_cfg)
        base = requirement_lines(parser.get("options", "install_requires", fallback=""))
        extras = {
            name: requirement_lines(value)
            for name, value in (
                parser.items("options.extras_require") if parser.has_section("options.extras_require") else []
            )
        }
        return base, extras
    if (tree / "PKG-INFO").is_file():
        return pkg_info_requirements((tree / "PKG-INFO").read_text())
    return [], {}


def pkg_info_requirements(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """An sdist's ``PKG-INFO`` (``Requires-Dist``), for builds such as poetry-core that leave no other trace.

    A requirement of an extra keeps its name and specifier; its other markers are dropped.
    """
    message = email.parser.HeaderParser().parsestr(text)
    base: list[str] = []
    extras: dict[str, list[str]] = {name: [] for name in message.get_all("Provides-Extra") or []}
    for line in message.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or "extra" not in str(marker):
            base.append(line)
            continue
        requirement.marker = None
        for name in extras:
            if marker.evaluate({"extra": name}):
                extras[name].append(str(requirement))
    return base, extras


def declared_groups(tree: Path) -> dict:
    """A version's PEP 735 ``[dependency-groups]`` table (empty when it has none)."""
    pyproject = tree / "pyproject.toml"
    return tomllib.loads(pyproject.read_text()).get("dependency-groups", {}) if pyproject.is_file() else {}


def pip_requirement_line(line: str) -> str:
    """``line`` as pip reads it from a requirements file, in PEP 508 form: pip takes the markers
    after the first ';' even where a URL leaves no space before it
    (``trio @ git+https://…@rev; python_version == "3.13"``), which PEP 508 needs."""
    try:
        Requirement(line)
    except InvalidRequirement:
        spec, separator, marker = line.partition(";")
        if separator:
            return f"{spec.strip()} ; {marker.strip()}"
    return line


def locked_versions(lock: Path, markers: dict[str, str]) -> dict[str, str]:
    """A ``uv.lock``'s index releases by name; where the lock forks per Python, the fork for ``markers``."""
    locked: dict[str, str] = {}
    for package in tomllib.loads(lock.read_text()).get("package", []):
        forks = package.get("resolution-markers")
        if "registry" in package.get("source", {}) and (not forks or any(Marker(m).evaluate(markers) for m in forks)):
            locked[canonicalize_name(package["name"])] = package["version"]
    return locked


def with_own_extras(lines: list[str], extras: dict[str, list[str]], own: str, markers: dict) -> list[str]:
    """An extra's requirements with the package's references to its own extras expanded
    (attrs 22.2.0's ``tests`` is ``zope.interface`` plus ``attrs[tests-no-zope]``): the package
    itself is never installed, so what those extras hold is added here."""
    expanded: list[str] = []
    pending, seen = list(lines), set[str]()
    while pending:
        line = pending.pop(0)
        expanded.append(line)
        try:
            requirement = Requirement(pip_requirement_line(line))
        except InvalidRequirement:
            continue  # named by the caller
        if canonicalize_name(requirement.name) != own or (
            requirement.marker and not requirement.marker.evaluate(markers)
        ):
            continue
        for extra in sorted(set(requirement.extras) - seen):
            seen.add(extra)
            pending += extras.get(extra, [])
    return expanded


def requirements(chain: Chain, version: str) -> list[str]:
    """The unresolved requirements of one version's test environment."""
    tree = sources.source_root(chain, version)
    env = chain.config.environment
    for_version = [entry for entry in env.by_version if version in SpecifierSet(entry.versions)]
    base, extras = declared_metadata(tree)
    wanted = list(base)
    groups = declared_groups(tree)
    named_extras = [("environment.extras", e) for e in env.extras] + [
        ("environment.by_version", e) for entry in for_version for e in entry.extras
    ]
    own = canonicalize_name(chain.config.package)
    markers = interpreter(chain.config.python).marker_environment
    for field, extra in named_extras:
        if extra in extras:
            wanted += with_own_extras(extras[extra], extras, own, markers)
        elif extra in groups:  # the same set, declared as a PEP 735 group from some version on
            wanted += dependency_groups.resolve(groups, extra)
        else:
            raise SwechainError(
                f"{chain.folder / 'chain.yaml'}: field '{field}': version {version} declares no extra "
                f"or dependency group '{extra}' (it has: {', '.join(sorted({*extras, *groups})) or 'none'})"
            )
    named_files = [("environment.requirement_files", n) for n in env.requirement_files] + [
        ("environment.by_version", n) for entry in for_version for n in entry.requirement_files
    ]
    for field, name in named_files:
        path = tree / name
        if not path.is_file():
            raise SwechainError(f"{chain.folder / 'chain.yaml'}: field '{field}': {version} has no {name}")
        wanted += requirement_lines(path.read_text())
    locked: dict[str, str] = {}
    for name in (n for entry in for_version for n in entry.lock_files):
        if not (tree / name).is_file():
            raise SwechainError(
                f"{chain.folder / 'chain.yaml'}: field 'environment.by_version': {version} has no {name}"
            )
        locked |= locked_versions(tree / name, markers)
    dropped, overrides = changed_requirements(chain, version)
    pinned = []  # the lock's release of each declared requirement, under the same markers
    for line in wanted if locked else []:
        try:
            declared = Requirement(pip_requirement_line(line))
        except InvalidRequirement:
            continue  # named below
        name = canonicalize_name(declared.name)
        if name in locked and name not in overrides:
            pinned.append(f"{name}=={locked[name]}" + (f" ; {declared.marker}" if declared.marker else ""))
    result: list[str] = []
    harness = requirement_lines(HARNESS_REQUIREMENTS.read_text())
    if chain.config.pytest.workers != 1:
        harness.append("pytest-xdist")  # only where a chain asks for workers: other environments stay as they were
    added = [line for entry in for_version for line in entry.extra]
    from_git = {canonicalize_name(n): n for n in env.wheels_from_git}
    for line in wanted + pinned + list(env.extra) + added + harness:
        line = pip_requirement_line(line)
        try:
            name = canonicalize_name(Requirement(line).name)
        except InvalidRequirement as exc:
            raise SwechainError(f"version {version} of chain {chain.id}: bad requirement {line!r}: {exc}") from None
        if name == own or name in dropped:
            continue  # the package itself is the code under test
        if name in overrides:
            line = overrides[name]
        elif name in from_git:  # the fork's checkout, whatever URL or range the version names
            marker = Requirement(line).marker
            line = git_wheel(chain, from_git[name])[0] + (f" ; {marker}" if marker else "")
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise SwechainError(
                f"{chain.folder / 'chain.yaml'}: field 'environment.override': bad requirement {line!r}: {exc}"
            ) from None
        if requirement.url and (requirement.marker is None or requirement.marker.evaluate(markers)):
            # Pins are name==version from the index: a checkout from a URL could not be reproduced in the image.
            raise SwechainError(
                f"version {version} of chain {chain.id}: {requirement.name} is required from {requirement.url}, "
                "which the package index cannot pin; name a released version for it under 'environment.override' "
                "(or a by_version entry's override) in chain.yaml"
            )
        if line not in result:
            result.append(line)
    if env.resolution == "lowest":
        result = with_lowest_releases(result, own_requirements(chain, version), chain.config.python)
    return result


def changed_requirements(chain: Chain, version: str) -> tuple[set[str], dict[str, str]]:
    """The requirement names the chain drops at ``version``, and those it overrides (name -> line)."""
    env = chain.config.environment
    overrides: dict[str, str] = {canonicalize_name(n): r for n, r in env.override.items()}
    for entry in env.by_version:
        if version in SpecifierSet(entry.versions):
            overrides |= {canonicalize_name(n): r for n, r in entry.override.items()}
    return {canonicalize_name(n) for n in env.drop}, overrides


def own_requirements(chain: Chain, version: str) -> list[str]:
    """The package's own runtime requirements at ``version``, as the chain's drops and overrides change them."""
    base, _ = declared_metadata(sources.source_root(chain, version))
    own = canonicalize_name(chain.config.package)
    dropped, overrides = changed_requirements(chain, version)
    runtime = []
    for line in map(pip_requirement_line, base):
        name = canonicalize_name(Requirement(line).name)
        if name != own and name not in dropped:
            runtime.append(overrides.get(name, line))
    return runtime


# The local label of the stand-in for the package under test: above the index's release of the same
# version, so the resolver takes it.
OWN_LABEL = "undertest"


def own_stand_in(chain: Chain, version: str) -> tuple[str, Path]:
    """A metadata-only wheel of the package at ``version`` requiring ``own_requirements``, and the exact
    requirement on it: what a test dependency that requires the package is resolved against."""
    name = canonicalize_name(chain.config.package)
    local = f"{version}+{OWN_LABEL}"
    lines = own_requirements(chain, version)
    key = hashlib.sha256(json.dumps([name, local, lines]).encode()).hexdigest()[:16]
    folder = state_home() / "own-stand-ins" / key
    stem = f"{name.replace('-', '_')}-{local}"
    wheel = folder / f"{stem}-py3-none-any.whl"
    if not wheel.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        info = f"{stem}.dist-info"
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {local}\n" + "".join(
            f"Requires-Dist: {line}\n" for line in lines
        )
        files = {
            f"{info}/METADATA": metadata,
            f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: swechain-ci\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
        partial = folder / f"{wheel.name}.partial"
        with zipfile.ZipFile(partial, "w") as archive:
            for path, text in files.items():
                archive.writestr(path, text)
        partial.replace(wheel)
    return f"{name}=={local}", folder


def built_wheels(chain: Chain) -> list[Path]:
    """The folders of wheels built on the host, from ``environment.wheels_from_sdists`` and
    ``environment.wheels_from_git`` (none when both are empty).

    Only pure-Python wheels are accepted: they fit every image's Python and platform.
    """
    return sdist_wheels(chain) + [git_wheel(chain, name)[1] for name in chain.config.environment.wheels_from_git]


def sdist_wheels(chain: Chain) -> list[Path]:
    wanted = chain.config.environment.wheels_from_sdists
    if not wanted:
        return []
    for line in wanted:
        if len(Requirement(line).specifier) != 1 or next(iter(Requirement(line).specifier)).operator != "==":
            raise SwechainError(
                f"{chain.folder / 'chain.yaml'}: field 'environment.wheels_from_sdists': {line!r} is not an exact "
                "pin; write name==version"
            )
    folder = state_home() / "built-wheels" / hashlib.sha256("\n".join(sorted(wanted)).encode()).hexdigest()[:16]
    if (folder / ".complete").exists():
        return [folder]
    progress.say(f"building wheels from sdists: {', '.join(wanted)}")
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-binary=:all:",
            "--wheel-dir",
            str(folder),
            *wanted,
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        tail = " ".join(result.stderr.strip().splitlines()[-2:])
        raise SwechainError(f"cannot build wheels from sdists {wanted}: {tail} (is PyPI reachable?)")
    impure = [w.name for w in folder.glob("*.whl") if not w.name.endswith("-none-any.whl")]
    if impure:
        raise SwechainError(
            f"{chain.folder / 'chain.yaml'}: field 'environment.wheels_from_sdists': {', '.join(impure)} is not "
            "pure Python; only pure-Python sdists can be built on the host"
        )
    (folder / ".complete").write_text("\n".join(wanted))
    return [folder]


# The local label of a wheel built from a git commit: git.<first 12 hex digits>, so that its pin names
# the checkout and can never be met by the index's release of the same version.
GIT_LABEL_DIGITS = 12


def git_wheel(chain: Chain, name: str) -> tuple[str, Path]:
    """The exact pin on the wheel built from ``environment.wheels_from_git[name]``, and its folder.

    The checkout is cloned as git sources are (``SWECHAIN_GIT_INSTEAD_OF`` names mirrors), built with
    pip on the host and re-versioned ``<version>+git.<commit>``; only a pure-Python wheel is accepted.
    """
    url = chain.config.environment.wheels_from_git[name]
    repository, _, commit = url.removeprefix("git+").rpartition("@")
    folder = state_home() / "built-wheels" / f"git-{hashlib.sha256(url.encode()).hexdigest()[:16]}"
    done = folder / ".complete"
    if done.is_file():
        return done.read_text(), folder
    field = f"{chain.folder / 'chain.yaml'}: field 'environment.wheels_from_git': {name}"
    progress.say(f"building a wheel of {name} from {repository} at {commit[:GIT_LABEL_DIGITS]}")
    with tempfile.TemporaryDirectory(prefix="swechain-git-wheel-") as tmp:
        checkout, built = Path(tmp) / "checkout", Path(tmp) / "built"
        steps = [
            [
                "git",
                *sources.instead_of_options(),
                "clone",
                "--quiet",
                "--no-checkout",
                "--",
                repository,
                str(checkout),
            ],
            ["git", "-C", str(checkout), "-c", "advice.detachedHead=false", "checkout", "--quiet", commit],
        ]
        for command in steps:
            result = subprocess.run(
                command, capture_output=True, text=True, env=sources.git_env(), timeout=sources.GIT_TIMEOUT_S
            )
            if result.returncode != 0:
                tail = " ".join(result.stderr.strip().splitlines()[-2:])
                raise SwechainError(
                    f"{field}: cannot check out {commit} of {repository}: {tail} (is it reachable? "
                    f"{sources.GIT_INSTEAD_OF_ENV} can name a mirror)"
                )
        result = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(built), str(checkout)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            tail = " ".join(result.stderr.strip().splitlines()[-2:])
            raise SwechainError(f"{field}: cannot build a wheel of {repository} at {commit}: {tail}")
        wheels = list(built.glob("*.whl"))
        if len(wheels) != 1 or not wheels[0].name.endswith("-none-any.whl"):
            raise SwechainError(
                f"{field}: the build gave {', '.join(w.name for w in wheels) or 'no wheel'}; only one pure-Python "
                "wheel can be built on the host"
            )
        folder.mkdir(parents=True, exist_ok=True)
        pin = relabelled_wheel(wheels[0], f"git.{commit[:GIT_LABEL_DIGITS]}", folder)
    done.write_text(pin)
    return pin, folder


def relabelled_wheel(wheel: Path, label: str, folder: Path) -> str:
    """A copy of ``wheel`` in ``folder`` whose version carries the local ``label``; the exact pin on it."""
    with zipfile.ZipFile(wheel) as source:
        info = next(n.split("/", 1)[0] for n in source.namelist() if n.split("/", 1)[0].endswith(".dist-info"))
        stem = info.removesuffix(".dist-info")
        metadata = email.parser.Parser().parsestr(source.read(f"{info}/METADATA").decode())
        name, version = metadata["Name"], Version(metadata["Version"])
        local = f"{version.public}+{label}"
        new_stem = f"{stem.rsplit('-', 1)[0]}-{local}"
        entries: dict[str, bytes] = {}
        for item in source.namelist():
            data = source.read(item)
            if item == f"{info}/METADATA":
                old, new = f"Version: {metadata['Version']}\n", f"Version: {local}\n"
                data = data.replace(old.encode(), new.encode(), 1)
            if item != f"{info}/RECORD":
                entries[item.replace(f"{info}/", f"{new_stem}.dist-info/", 1)] = data
    record_path = f"{new_stem}.dist-info/RECORD"
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in entries.items()
    )
    entries[record_path] = (record + f"{record_path},,\n").encode()
    tags = wheel.name.removesuffix(".whl").split("-")[-3:]
    target = folder / f"{new_stem}-{'-'.join(tags)}.whl"
    partial = folder / f"{target.name}.partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries.items():
            archive.writestr(path, data)
    partial.replace(target)
    return f"{canonicalize_name(name)}=={local}"


def find_links_options(folders: list[Path]) -> list[str]:
    return [option for folder in folders for option in ("--find-links", str(folder))]


# pip's --python-version picks wheels for the target but evaluates environment markers
# (``tomli; python_version < "3.11"``) for the interpreter running pip. This runs pip with
# the marker environment of the image's interpreter instead.
PIP_WITH_MARKERS = """
import json, sys
from pip._vendor.packaging import markers
host = markers.default_environment
markers.default_environment = lambda: {**host(), **json.loads(sys.argv[1])}
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


# pip's dry run on another Python's behalf can pick a release whose Requires-Python excludes that
# Python (seen: argcomplete 3.7.2, >=3.10, picked for 3.9); each such pick is excluded and pip runs again.
RESOLUTION_ROUNDS = 5


def outside_requires_python(installs: list[dict], python: str) -> list[str]:
    """``name!=version`` for each pick whose Requires-Python excludes ``python`` (as pip reads it: 3.9 is 3.9.0)."""
    target = f"{python}.0"
    return [
        f"{canonicalize_name(i['metadata']['name'])}!={i['metadata']['version']}"
        for i in installs
        if (needs := i["metadata"].get("requires_python")) and not SpecifierSet(needs).contains(target, True)
    ]


def pip_dry_run(reqs: list[str], python: str, find_links: list[Path]) -> list[dict]:
    """What pip would install for ``reqs`` on the image's Python and platform (its report's install list)."""
    target = interpreter(python)
    with tempfile.TemporaryDirectory(prefix="swechain-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                PIP_WITH_MARKERS,
                json.dumps(target.marker_environment),
                "install",
                "--dry-run",
                "--ignore-installed",
                "--quiet",
                "--report",
                str(report),
                "--target",
                str(Path(tmp) / "never"),
                "--only-binary=:all:",
                "--python-version",
                python,
                "--implementation",
                "cp",
                *target.platform_options(),
                *find_links_options(find_links),
                *reqs,
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            tail = " ".join(result.stderr.strip().splitlines()[-3:])
            raise SwechainError(
                f"cannot resolve test requirements {reqs}: {tail} "
                "(drop or override the requirement under 'environment' in chain.yaml)"
            )
        return json.loads(report.read_text())["install"]


def resolve(reqs: list[str], python: str, find_links: list[Path] | None = None) -> list[str]:
    """Pins (``name==version``) for ``reqs`` on the image's Python and platform; cached for good."""
    find_links = find_links or []
    target = interpreter(python)
    platforms = target.platforms
    key = hashlib.sha256(json.dumps([reqs, python, platforms, target.marker_environment]).encode()).hexdigest()[:20]
    record = state_home() / "resolutions" / f"{key}.json"
    if record.is_file():
        return json.loads(record.read_text())["pins"]
    progress.say(f"resolving {len(reqs)} test requirements for Python {python}")
    excluded: list[str] = []
    for _ in range(RESOLUTION_ROUNDS):
        installs = pip_dry_run([*reqs, *excluded], python, find_links)
        unfit = outside_requires_python(installs, python)
        if not unfit:
            break
        excluded += unfit
    else:
        raise SwechainError(
            f"cannot resolve test requirements {reqs} for Python {python}: every release pip picked of "
            f"{', '.join(sorted({e.split('!=')[0] for e in excluded}))} requires another Python "
            "(pin an older one under environment.override in chain.yaml)"
        )
    pins = sorted(f"{canonicalize_name(i['metadata']['name'])}=={i['metadata']['version']}" for i in installs)
    write_text(  # whole or not at all: builds beside each other (a pool's runners, CI's workers) read it
        record, json.dumps({"requirements": reqs, "python": python, "platforms": platforms, "pins": pins}, indent=2)
    )
    return pins


# A release with no wheel for the image is passed over; past this many the requirement is named.
LOWEST_CANDIDATES = 25


# One listing and one pick per name, specifier and Python for the process: the versions of a chain ask
# again and again for the same requirements (each is a pip subprocess of a second or more).
@functools.cache
def released_versions(name: str, python: str) -> tuple[Version, ...]:
    """The final releases of ``name`` that the index lists for ``python`` (pip's own listing), oldest first."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name, "--python-version", python],
        capture_output=True,
        text=True,
    )
    listed = next((line for line in result.stdout.splitlines() if line.startswith("Available versions:")), None)
    if result.returncode != 0 or listed is None:
        tail = " ".join(result.stderr.strip().splitlines()[-2:])
        raise SwechainError(f"cannot list the releases of {name} for Python {python}: {tail or 'none listed'}")
    return tuple(sorted(Version(v.strip()) for v in listed.partition(":")[2].split(",")))


@functools.cache
def lowest_release(name: str, specifier: SpecifierSet, python: str) -> tuple[str, tuple[str, ...]]:
    """The lowest release of ``name`` that ``specifier`` allows and has a wheel for the image, and what it requires."""
    candidates = list(specifier.filter(released_versions(name, python)))
    for version in candidates[:LOWEST_CANDIDATES]:
        try:
            (install,) = pip_dry_run([f"{name}=={version}", "--no-deps"], python, [])
        except SwechainError:
            continue  # no wheel of this release for the image's Python and platform
        return str(version), tuple(install["metadata"].get("requires_dist", []))
    raise SwechainError(
        f"no release of {name}{specifier} among the lowest {LOWEST_CANDIDATES} has a wheel for Python {python}; "
        "name one under 'environment.override' in chain.yaml, or drop 'resolution: lowest'"
    )


# In every Python image the reference starts from, and uv keeps an installed release that satisfies a
# requirement: a requirement on them never takes their lowest release (wheel 0.9 would need distribute).
PREINSTALLED = frozenset({"pip", "setuptools", "wheel"})


def lowest_releases(lines: list[str], python: str, moved_up: frozenset[str] = frozenset()) -> dict[str, str]:
    """What the reference's ``uv pip install --resolution lowest`` takes for ``lines``: each requirement,
    and each of theirs, at the lowest release every requirement seen on it allows; names in
    ``moved_up`` (and the preinstalled) are left to the resolver. Cached for good."""
    markers = interpreter(python).marker_environment
    key = hashlib.sha256(json.dumps(["lowest", lines, python, markers, sorted(moved_up)]).encode()).hexdigest()[:20]
    record = state_home() / "resolutions" / f"lowest-{key}.json"
    if record.is_file():
        return dict(json.loads(record.read_text())["releases"])
    progress.say(f"resolving {len(lines)} runtime requirements to their lowest releases for Python {python}")
    allowed: dict[str, SpecifierSet] = {}
    extras_of: dict[str, set[str]] = {}
    chosen: dict[str, str] = {}
    pending = [(line, "") for line in lines]
    while pending:  # finite: a release is chosen again only when a narrower specifier excludes it
        line, for_extra = pending.pop(0)
        try:
            requirement = Requirement(pip_requirement_line(line))
        except InvalidRequirement as exc:
            raise SwechainError(
                f"cannot take the lowest releases for Python {python}: bad requirement {line!r} "
                f"({str(exc).splitlines()[0]}); "
                "name a release for it under 'environment.override' in chain.yaml, or drop 'resolution: lowest'"
            ) from None
        if requirement.marker and not requirement.marker.evaluate({**markers, "extra": for_extra}):
            continue
        name = canonicalize_name(requirement.name)
        if name in moved_up or name in PREINSTALLED:
            continue
        allowed[name] = allowed.get(name, SpecifierSet()) & requirement.specifier
        new_extras = set(requirement.extras) - extras_of.get(name, set())
        extras_of[name] = extras_of.get(name, set()) | new_extras
        if name in chosen and allowed[name].contains(chosen[name], prereleases=True) and not new_extras:
            continue
        chosen[name], requires = lowest_release(name, allowed[name], python)
        pending += [(r, extra) for r in requires for extra in ("", *sorted(extras_of[name]))]
    write_text(  # whole or not at all: builds beside each other (a pool's runners, CI's workers) read it
        record,
        json.dumps(
            {"requirements": lines, "python": python, "moved_up": sorted(moved_up), "releases": chosen}, indent=2
        ),
    )
    return chosen


def with_lowest_releases(result: list[str], runtime: list[str], python: str) -> list[str]:
    """``result`` with a pin for each lowest release of ``runtime`` (and of theirs) that every line of
    ``result`` naming it allows. A release some line excludes is moved up, as the reference's second
    install does, and what it required is no longer taken at its lowest."""
    markers = interpreter(python).marker_environment
    named: dict[str, list[Requirement]] = {}
    for line in result:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({**markers, "extra": ""}):
            named.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    moved_up: frozenset[str] = frozenset()
    while True:  # finite: each round moves at least one more name up
        releases = lowest_releases(runtime, python, moved_up)
        excluded = {
            name
            for name, release in releases.items()
            if not all(r.specifier.contains(release, prereleases=True) for r in named.get(name, []))
        }
        if not excluded:
            break
        moved_up |= excluded
    pins = [f"{name}=={release}" for name, release in releases.items()]
    return result + [pin for pin in pins if pin not in result]


def pins(chain: Chain, version: str) -> list[str]:
    """The version's pinned test environment, never holding the package under test itself:
    a test dependency that requires it (pytest plugins, for pytest's own chains) gets the
    candidate's code instead, which the harness puts on the path."""
    own = canonicalize_name(chain.config.package)
    wanted, find_links = requirements(chain, version), built_wheels(chain)
    if chain.config.environment.own_in_resolution:
        requirement, folder = own_stand_in(chain, version)
        wanted, find_links = [*wanted, requirement], [*find_links, folder]
    return [
        pin
        for pin in resolve(wanted, chain.config.python, find_links)
        if canonicalize_name(pin.split("==", 1)[0]) != own
    ]
