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
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path, PurePosixPath

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


def find_config() -> tuple[Path | None, list[str]]:
    """The config file pytest would use in /work/run, and its addopts."""
    for name in ("pytest.ini", ".pytest.ini"):
        path = RUN / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path)
            return path, shlex.split(parser.get("pytest", "addopts", fallback=""))
    path = RUN / "pyproject.toml"
    if path.is_file():
        try:
            options = tomllib.loads(path.read_text()).get("tool", {}).get("pytest", {}).get("ini_options")
        except tomllib.TOMLDecodeError:
            options = None
        if options is not None:
            addopts = options.get("addopts", "")
            return path, shlex.split(addopts) if isinstance(addopts, str) else list(addopts)
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = RUN / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read(path)
            except configparser.Error:
                continue
            if parser.has_section(section):
                return path, shlex.split(parser.get(section, "addopts", fallback=""))
    return None, []


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


def main() -> int:
    settings = json.loads(Path("/work/eval.json").read_text())
    OUT.mkdir(exist_ok=True)
    assemble(settings)
    config, addopts = find_config()
    addopts = remove_options(addopts, settings["remove_options"])
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "swechain-private"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "home").mkdir(exist_ok=True)
    command = [
        sys.executable, "-m", "pytest",
        "-c", str(config) if config else str(HARNESS / "empty.ini"),
        "--rootdir", str(RUN),
        "-o", "addopts=" + shlex.join(addopts),
        "-p", "no:cacheprovider",
        "-p", "swechain_guard",
        "-p", "pytest_jsonreport",
        "-p", "pytest_timeout",
        "--json-report", f"--json-report-file={OUT / 'report.json'}",
        "--json-report-omit", "log", "streams", "warnings", "keywords",
        f"--timeout={settings['test_timeout_s']}",
        "--continue-on-collection-errors",
        "-rN", "--tb=short", "--color=no",
        f"--basetemp={tmp / 'pytest'}",
        *settings["extra_args"],
        settings["test_folder"],
    ]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join([str(HARNESS), str(RUN / settings["source_root"])]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "SWECHAIN_OUT": str(OUT),
        "SWECHAIN_TESTS_ROOT": str(RUN / settings["test_folder"]),
    }
    started = time.monotonic()
    timed_out = False
    tail = bytearray()
    process = subprocess.Popen(
        command, cwd=RUN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=limit_output_files,
    )
    deadline = started + settings["run_timeout_s"]
    os.set_blocking(process.stdout.fileno(), False)
    while True:
        chunk = process.stdout.read(65536)
        if chunk:
            tail += chunk
            del tail[:-OUTPUT_TAIL_BYTES]
        elif process.poll() is not None:
            break
        else:
            time.sleep(0.05)
        if time.monotonic() > deadline:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            break
    result = {
        "exit_code": process.returncode,
        "timed_out": timed_out,
        "duration_s": round(time.monotonic() - started, 3),
        "command": command,
    }
    (OUT / "output.log").write_bytes(bytes(tail))
    (OUT / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
