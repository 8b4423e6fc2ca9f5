"""Run a target version's hidden tests against a candidate codebase, inside a container.

Reads /work/eval.json, assembles /work/run from the candidate and the target's
hidden tests and protected files (baked into the image), runs pytest and
leaves its observations in /out. Stdlib only: it runs in the image's venv.
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

try:
    import tomllib
except ImportError:  # Python < 3.11: the harness requirements bring tomli
    import tomli as tomllib

CANDIDATE = Path("/work/candidate")
RUN = Path("/work/run")
TARGET = Path("/opt/swechain/version")
OUT = Path("/out")
HARNESS = Path(__file__).resolve().parent
OUTPUT_TAIL_BYTES = 64 * 1024
MAX_FILE_BYTES = 512 * 1024 * 1024
STARTUP_FILES = {"sitecustomize.py", "usercustomize.py"}


def relative_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            yield PurePosixPath((base / name).relative_to(root).as_posix())


def candidate_may_supply(rel: PurePosixPath, test_folder: PurePosixPath, protected: set[str]) -> bool:
    """Tests, conftest files, pytest configs and interpreter start-up hooks come from the target."""
    if rel == test_folder or test_folder in rel.parents:
        return False
    if rel.name == "conftest.py" or rel.name in STARTUP_FILES or rel.suffix == ".pth":
        return False
    return not any(fnmatch.fnmatch(str(rel), pattern) for pattern in protected)


def assemble(settings: dict) -> None:
    test_folder = PurePosixPath(settings["test_folder"])
    protected = set(settings["protected"])
    protected |= {str(p) for p in relative_files(TARGET / "protected")}
    RUN.mkdir(parents=True, exist_ok=True)
    for rel in relative_files(CANDIDATE):
        if not candidate_may_supply(rel, test_folder, protected):
            continue
        src, dst = CANDIDATE / rel, RUN / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copyfile(src, dst)
    for layer in ("protected", "hidden"):
        shutil.copytree(TARGET / layer, RUN, symlinks=True, dirs_exist_ok=True)


def find_config() -> tuple[Path | None, dict]:
    """The config file pytest would use in /work/run, and its ini options."""
    for name in ("pytest.ini", ".pytest.ini"):
        path = RUN / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path)
            return path, dict(parser.items("pytest")) if parser.has_section("pytest") else {}
    path = RUN / "pyproject.toml"
    if path.is_file():
        try:
            options = tomllib.loads(path.read_text()).get("tool", {}).get("pytest", {}).get("ini_options")
        except tomllib.TOMLDecodeError:
            options = None
        if options is not None:
            return path, options
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = RUN / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read(path)
            except configparser.Error:
                continue
            if parser.has_section(section):
                return path, dict(parser.items(section))
    return None, {}


def as_args(value: str | list) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def as_lines(value: str | list) -> list[str]:
    lines = value.splitlines() if isinstance(value, str) else [str(v) for v in value]
    return [line.strip() for line in lines if line.strip()]


def unresolvable_warning_filters(filters: list[str], env: dict) -> list[str]:
    """Warning filters naming a category the candidate's code does not define.

    pytest refuses to start on such a filter, which would turn a missing class
    into a failure of every test; like a missing name in a test module, it
    costs only what it touches: the filter is dropped.
    """
    categories = {}
    for line in filters:
        parts = line.split(":")
        category = parts[2].strip() if len(parts) > 2 else ""
        if "." in category:
            categories[line] = category
    if not categories:
        return []
    probe = (
        "import importlib, json, sys\n"
        "missing = []\n"
        "for line, category in json.loads(sys.argv[1]).items():\n"
        "    module, _, name = category.rpartition('.')\n"
        "    try:\n"
        "        getattr(importlib.import_module(module), name)\n"
        "    except Exception:\n"
        "        missing.append(line)\n"
        "print(json.dumps(missing))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe, json.dumps(categories)], cwd=RUN, env=env,
            capture_output=True, text=True, timeout=60,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return list(categories)


def remove_options(addopts: list[str], removed: list[dict]) -> list[str]:
    kept: list[str] = []
    skip_next = False
    for token in addopts:
        if skip_next:
            skip_next = False
            continue
        matched = next((r for r in removed if token == r["name"] or token.startswith(r["name"] + "=")), None)
        if matched is None:
            kept.append(token)
        elif matched["takes_value"] and token == matched["name"]:
            skip_next = True
    return kept


def limit_output_files() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    os.setsid()


def rename_sections(renames: list[dict]) -> None:
    """Rename config sections an old version used, e.g. setup.cfg [pytest] -> [tool:pytest]."""
    for rename in renames:
        path = RUN / rename["file"]
        if path.is_file():
            header = re.compile(r"^\[" + re.escape(rename["old"]) + r"\]\s*$", re.MULTILINE)
            path.write_text(header.sub(f"[{rename['new']}]", path.read_text()))


def test_files(test_folder: str) -> list[str]:
    root = RUN / test_folder
    found = {p for pattern in ("test_*.py", "*_test.py") for p in root.rglob(pattern)}
    return sorted(str(p.relative_to(RUN)) for p in found)


def files_in(report: dict) -> set[str]:
    """Test files a report has anything for: a test outcome or a collector."""
    ids = [t["nodeid"] for t in report.get("tests", [])] + [c["nodeid"] for c in report.get("collectors", [])]
    return {i.split("::")[0] for i in ids}


class Pytest:
    """Runs pytest in /work/run, each run against the one deadline of the whole evaluation."""

    def __init__(self, settings: dict, base_command: list[str], env: dict, deadline: float) -> None:
        self.settings, self.base_command, self.env, self.deadline = settings, base_command, env, deadline
        self.tail = bytearray()

    def run(self, targets: list[str], report: Path) -> tuple[int | None, bool]:
        """Exit code (None if killed) and whether the deadline killed it."""
        command = [*self.base_command, f"--json-report-file={report}", *targets]
        process = subprocess.Popen(
            command, cwd=RUN, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=limit_output_files,
        )
        os.set_blocking(process.stdout.fileno(), False)
        while True:
            chunk = process.stdout.read(65536)
            if chunk:
                self.tail += chunk
                del self.tail[:-OUTPUT_TAIL_BYTES]
            elif process.poll() is not None:
                return process.returncode, False
            else:
                time.sleep(0.05)
            if time.monotonic() > self.deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return None, True


def python_path(settings: dict) -> list[Path]:
    """The harness, the candidate's source root and, where the chain asks for it
    (``installed_metadata``), the target version's distribution metadata."""
    paths = [HARNESS, RUN / settings["source_root"]]
    return paths + [TARGET / "dist"] if (TARGET / "dist").is_dir() else paths


def report_is_consistent(exit_code: int, report: dict) -> bool:
    broken = any(t.get("outcome") in ("failed", "error") for t in report.get("tests", []))
    broken = broken or any(c.get("outcome") == "failed" for c in report.get("collectors", []))
    return (exit_code == 0 and not broken) or (exit_code == 1 and broken) or (exit_code == 5 and not report.get("tests"))


def merge(reports: list[dict]) -> tuple[dict, int]:
    """One report out of the whole-suite run's and the file-by-file retries', and its exit code."""
    tests, collectors, collected, deselected = {}, [], 0, 0
    for report in reports:
        for test in report.get("tests", []):
            tests[test["nodeid"]] = test
        collectors += report.get("collectors", [])
        collected += report.get("summary", {}).get("collected", 0)
        deselected += report.get("summary", {}).get("deselected", 0)
    merged = {
        "tests": list(tests.values()),
        "collectors": collectors,
        "summary": {"collected": collected, "deselected": deselected},
    }
    broken = any(t.get("outcome") in ("failed", "error") for t in tests.values())
    broken = broken or any(c.get("outcome") == "failed" for c in collectors)
    return merged, 1 if broken else (0 if tests else 5)


def main() -> int:
    settings = json.loads(Path("/work/eval.json").read_text())
    OUT.mkdir(exist_ok=True)
    assemble(settings)
    rename_sections(settings["rename_sections"])
    config, ini = find_config()
    addopts = remove_options(as_args(ini.get("addopts", "")), settings["remove_options"])
    # A private temporary directory for every run.
    tmp = Path(tempfile.mkdtemp(prefix="swechain-", dir=os.environ.get("TMPDIR", "/tmp")))
    (tmp / "home").mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(str(p) for p in python_path(settings)),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "SWECHAIN_OUT": str(OUT),
        "SWECHAIN_TESTS_ROOT": str(RUN / settings["test_folder"]),
    }
    ini_overrides = ["-o", "addopts=" + shlex.join(addopts)]
    filters = as_lines(ini.get("filterwarnings", ""))
    dropped_filters = unresolvable_warning_filters(filters, env)
    if dropped_filters:
        kept = [f for f in filters if f not in dropped_filters]
        ini_overrides += ["-o", "filterwarnings=" + "\n".join(kept)]
    base_command = [
        sys.executable, "-m", "pytest",
        "-c", str(config) if config else str(HARNESS / "empty.ini"),
        "--rootdir", str(RUN),
        *ini_overrides,
        "-p", "no:cacheprovider",
        "-p", "swechain_guard",
        "-p", "pytest_jsonreport",
        "-p", "pytest_timeout",
        "--json-report",
        "--json-report-omit", "log", "streams", "warnings", "keywords",
        f"--timeout={settings['test_timeout_s']}",
        "--continue-on-collection-errors",
        "-rN", "--tb=short", "--color=no",
        f"--basetemp={tmp / 'pytest'}",
        *settings["extra_args"],
    ]
    if settings.get("workers", 1) > 1:
        # Workers are child processes of this pytest: the same unprivileged user, container and limits.
        base_command += ["-p", "xdist.plugin", "-n", str(int(settings["workers"]))]
    started = time.monotonic()
    pytest = Pytest(settings, base_command, env, started + settings["run_timeout_s"])
    main_report = OUT / "report-suite.json"
    exit_code, timed_out = pytest.run([settings["test_folder"]], main_report)
    result = {
        "exit_code": exit_code, "timed_out": timed_out, "retried": [], "unreported": [],
        "dropped_warning_filters": dropped_filters,
    }
    # 4 is a usage error: the same for every file, so retrying cannot help.
    if not timed_out and exit_code != 4 and (exit_code not in (0, 1, 5) or not main_report.is_file()):
        # The run broke off (a crash, os._exit, pytest.exit): retry what reported nothing, file by file.
        reports = [json.loads(main_report.read_text())] if main_report.is_file() else []
        seen = set().union(*(files_in(r) for r in reports))
        for index, test_file in enumerate(f for f in test_files(settings["test_folder"]) if f not in seen):
            report = OUT / f"report-file-{index}.json"
            code, timed_out = pytest.run([test_file], report)
            result["retried"].append(test_file)
            if report.is_file() and code in (0, 1, 5):
                loaded = json.loads(report.read_text())
                if not report_is_consistent(code, loaded):
                    result["untrusted"] = f"{test_file}: exit code {code} disagrees with its report"
                reports.append(loaded)
            else:
                result["unreported"].append(test_file)
            if timed_out:
                break
        result["timed_out"] = timed_out
        if reports:
            merged, result["exit_code"] = merge(reports)
            result["suite_exit_code"] = exit_code
            (OUT / "report.json").write_text(json.dumps(merged))
    elif main_report.is_file():
        main_report.rename(OUT / "report.json")
    result["duration_s"] = round(time.monotonic() - started, 3)
    (OUT / "output.log").write_bytes(bytes(pytest.tail))
    (OUT / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
