"""Run a target version's hidden tests against a candidate codebase, inside a container.

This is the supervisor. It runs as root with only the capabilities to start the
tests as another user (runner), chown that user's scratch folder and end its
processes. It reads /work/eval.json, assembles /work/run (root's, read-only for
the runner) from the candidate and the target's hidden tests and protected files
(baked into the image), starts pytest as the runner through ``launch_pytest.py``,
and reads what the guard plugin observes from a pipe it owns. It alone writes
/out, which the runner cannot write; the host reads /out. Stdlib only.
"""

from __future__ import annotations

import configparser
import contextlib
import fnmatch
import importlib.machinery
import json
import os
import pkgutil
import re
import secrets
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11):
    import tomllib
else:  # the harness requirements bring tomli
    import tomli as tomllib

if TYPE_CHECKING or __package__:  # imported on the host: its unit tests, the type checker
    from .swechain_contract import (
        EVAL_FILE,
        FAILED_IMPORTS_FILE,
        OUTPUT_FILE,
        PLANTED_FILE,
        REPORT_FILE,
        REPORTED_EXIT_CODES,
        RESULT_FILE,
        STREAM_FILE,
        USAGE_ERROR_EXIT_CODE,
        EvalSettings,
        Flag,
        HarnessResult,
        RemovedOption,
        RenamedSection,
    )
else:  # run as a script under ``python -I``: its own folder (root's) is not on sys.path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from swechain_contract import (
        EVAL_FILE,
        FAILED_IMPORTS_FILE,
        OUTPUT_FILE,
        PLANTED_FILE,
        REPORT_FILE,
        REPORTED_EXIT_CODES,
        RESULT_FILE,
        STREAM_FILE,
        USAGE_ERROR_EXIT_CODE,
        EvalSettings,
        Flag,
        HarnessResult,
        RemovedOption,
        RenamedSection,
    )

    del sys.path[0]

CANDIDATE = Path("/work/candidate")
RUN = Path("/work/run")
TARGET = Path("/opt/swechain/version")
OUT = Path("/out")
TRUSTED = Path("/work/trusted.json")
# The host's tripwires (README, "Tripwires"): hidden test modules with planted copies, root's only.
PLANTED = Path("/work") / PLANTED_FILE
HARNESS = Path(__file__).resolve().parent
RUNNER_UID = 1001
# The user code under test runs as: the runner in a container (main sets it); unchanged on a host.
run_as: int | None = None
OUTPUT_TAIL_BYTES = 64 * 1024
MAX_FILE_BYTES = 512 * 1024 * 1024
# Every config file name pytest accepts, in its order of preference (_pytest/config/findpaths.py).
CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
STARTUP_HOOKS = {"sitecustomize", "usercustomize"}
IMPORTABLE_SUFFIXES = tuple(importlib.machinery.all_suffixes())
# Bounds on what the guard may send: one line, failed imports and their fields, flags.
MAX_LINE_BYTES = 64 * 1024
MAX_IMPORTS = 200
# High enough that a package whose own code raises findings throughout its suite keeps all of them
# (the host excuses a candidate's finding only if the gold code's list holds it; 50 left attrs' noop
# flagged), each bounded in size.
MAX_FLAGS = 2000
IMPORT_TEXT_CHARS = 300
# Silence outside any test, at the time limit, that only a hang in code around pytest explains.
STALL_S = 10.0


def relative_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            yield PurePosixPath((base / name).relative_to(root).as_posix())


# The magic numbers of CPython 3.x bytecode, then b"\r\n": what a .pyc starts with, whatever its name.
PYC_MAGIC_RANGE = range(2900, 4000)
BYTECODE_NAMES = ("__pycache__",)
BYTECODE_SUFFIXES = (".pyc", ".pyo")


def is_bytecode(path: Path, rel: PurePosixPath) -> bool:
    """Compiled Python, by name or by content: never taken from a candidate, since the interpreter
    and pytest's assertion rewriter would run it in place of source the harness can check."""
    if any(part in BYTECODE_NAMES for part in rel.parts) or rel.suffix in BYTECODE_SUFFIXES:
        return True
    if path.is_symlink() or not path.is_file():
        return False
    with open(path, "rb") as handle:
        head = handle.read(4)
    return len(head) == 4 and head[2:] == b"\r\n" and int.from_bytes(head[:2], "little") in PYC_MAGIC_RANGE


def module_stem(name: str) -> str:
    return name.split(".", 1)[0]


def candidate_may_supply(rel: PurePosixPath, test_folder: PurePosixPath, protected: set[str]) -> bool:
    """Tests, conftest files, pytest configs and interpreter start-up hooks come from the target."""
    if rel == test_folder or test_folder in rel.parents:
        return False
    if rel.name == "conftest.py" or rel.name in CONFIG_NAMES or rel.suffix == ".pth":
        return False
    if any(module_stem(part) in STARTUP_HOOKS for part in rel.parts):
        return False  # a file, or a package directory, named like a start-up hook
    return not any(fnmatch.fnmatch(str(rel), pattern) for pattern in protected)


def installed_names() -> set[str]:
    """Top-level names the image provides: the standard library, site-packages, the harness."""
    names = set(getattr(sys, "stdlib_module_names", ())) | set(
        sys.builtin_module_names
    )  # before 3.10: the standard library folders on sys.path list it below
    names |= {module_stem(p.name) for p in HARNESS.iterdir() if p.suffix == ".py"}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        names |= {m.name for m in pkgutil.iter_modules([entry])}
        names |= {d for d in os.listdir(entry) if d.isidentifier() and os.path.isdir(os.path.join(entry, d))}
    return names


def shadowing(rel: PurePosixPath, import_roots: list[PurePosixPath], installed: set[str], own: str) -> str | None:
    """The installed top-level name ``rel`` would stand in for, imported from one of ``import_roots``."""
    for root in import_roots:
        if root != PurePosixPath(".") and root not in rel.parents:
            continue
        top = rel.relative_to(root).parts
        if len(top) == 1 and not top[0].endswith(IMPORTABLE_SUFFIXES):
            continue
        name = module_stem(top[0])
        if name in installed and name != own:
            return name
    return None


@dataclass
class Assembly:
    flags: list[Flag] = field(default_factory=list)
    hidden_files: set[str] = field(default_factory=set)


def assemble(settings: EvalSettings) -> Assembly:
    test_folder = PurePosixPath(settings["test_folder"])
    protected = set(settings["protected"])
    protected |= {str(p) for p in relative_files(TARGET / "protected")}
    import_roots = [PurePosixPath("."), PurePosixPath(settings["source_root"])]
    installed = installed_names()
    assembly = Assembly()
    RUN.mkdir(parents=True, exist_ok=True)
    for rel in relative_files(CANDIDATE):
        if not candidate_may_supply(rel, test_folder, protected):
            continue
        if is_bytecode(CANDIDATE / rel, rel):
            assembly.flags.append(
                {
                    "kind": "bytecode_left_out",
                    "location": str(rel)[:300],
                    "detail": f"{str(rel)[:200]} is compiled Python; left out of the run",
                }
            )
            continue
        if name := shadowing(rel, import_roots, installed, settings["import_name"]):
            assembly.flags.append(
                {
                    "kind": "shadowing_file",
                    "location": str(rel),
                    "detail": f"{str(rel)[:200]} would stand in for the installed module {name}; left out of the run",
                }
            )
            continue
        src, dst = CANDIDATE / rel, RUN / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copyfile(src, dst)
    planted = read_planted()
    for layer in ("protected", "hidden"):
        shutil.copytree(TARGET / layer, RUN, symlinks=True, dirs_exist_ok=True, copy_function=planting(layer, planted))
        assembly.hidden_files |= {str(p) for p in relative_files(TARGET / layer)}
    # The runner must not compare the run's test modules with the originals.
    os.chmod(TARGET / "hidden", 0o700)
    TRUSTED.write_text(json.dumps(sorted(assembly.hidden_files)))
    return assembly


def read_planted() -> dict[str, str]:
    """The host's planted modules, read and removed before any code under test runs."""
    if not PLANTED.is_file():
        return {}
    planted = json.loads(PLANTED.read_text(encoding="utf-8"))
    PLANTED.unlink()
    return planted if isinstance(planted, dict) else {}


def planting(layer: str, planted: dict[str, str]):
    """A copy function for ``layer``: a planted module is written in the same pass as every other
    file and given its original's times, so that nothing about the file tells it apart."""
    root = TARGET / layer

    def copy(src: str, dst: str) -> str:
        text = planted.get(Path(src).relative_to(root).as_posix()) if layer == "hidden" else None
        if text is None:
            return shutil.copy2(src, dst)
        Path(dst).write_text(text, encoding="utf-8")
        shutil.copystat(src, dst)
        return dst

    return copy


def find_config() -> tuple[Path | None, dict]:
    """The config file pytest would use in /work/run, and its ini options."""
    for name in ("pytest.toml", ".pytest.toml"):
        path = RUN / name
        if path.is_file():
            try:
                return path, tomllib.loads(path.read_text()).get("pytest", {})
            except tomllib.TOMLDecodeError:
                return path, {}
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


def as_runner() -> dict:
    """Popen options that start a process as the user code under test runs as."""
    return {} if run_as is None else {"user": run_as, "group": run_as, "extra_groups": []}


def unresolvable_warning_filters(filters: list[str], env: dict, code_paths: list[str]) -> list[str]:
    """Warning filters naming a category the candidate's code does not define.

    pytest refuses to start on such a filter, which would turn a missing class
    into a failure of every test; like a missing name in a test module, it
    costs only what it touches: the filter is dropped. The probe imports the
    candidate's code, so it runs as the runner, isolated like pytest.
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
        "sys.path += json.loads(sys.argv[2])\n"
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
            [sys.executable, "-I", "-c", probe, json.dumps(categories), json.dumps(code_paths)],
            cwd=RUN,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            **as_runner(),
        )
        missing = json.loads(done.stdout.strip().splitlines()[-1])
        return [line for line in missing if line in categories]
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError, TypeError):
        return list(categories)


def remove_options(addopts: list[str], removed: list[RemovedOption]) -> list[str]:
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


def rename_sections(renames: list[RenamedSection]) -> None:
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


def bounded(value, chars: int) -> str:
    return value[:chars] if isinstance(value, str) else ""


class StreamCheck:
    """The guard's lines, checked against the order a real session produces them in.

    collecting (failed imports, failed collectors) -> collected -> per test: begin, its
    stages, teardown -> finish. Anything else (a line without the token, a test before
    collection ended, a test that did not begin, lines after the end) is a violation:
    the stream is not the session's, whoever wrote it.
    """

    def __init__(self, token: str, allowed_test_files: set[str], parallel: bool = False) -> None:
        self.token, self.allowed_test_files, self.parallel = token, allowed_test_files, parallel
        self.pending = b""
        self.state = "collecting"
        self.running: set[str] = set()
        self.tests: dict[str, dict[str, dict]] = {}
        self.complete: list[str] = []
        self.collectors: dict[str, str] = {}
        self.imports: list[dict] = []
        self.flags: list[Flag] = []
        self.violation: str | None = None
        self.collected = self.deselected = 0
        self.exitstatus: int | None = None
        self.last_line_at = time.monotonic()

    def feed(self, data: bytes) -> None:
        self.last_line_at = time.monotonic()
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        if len(self.pending) > MAX_LINE_BYTES:
            self.violate("a stream line over the size limit")
            self.pending = b""
        for line in lines:
            if self.violation is None:
                self.line(line)

    def violate(self, reason: str) -> None:
        self.violation = self.violation or reason

    def line(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self.violate("a stream line that is not JSON")
        if not isinstance(record, dict) or record.get("k") != self.token:
            return self.violate("a stream line the harness did not write")
        kind = record.get("t")
        if self.state == "finished":
            return self.violate(f"a '{kind}' line after the session finished")
        if kind == "flag":
            if len(self.flags) < MAX_FLAGS:
                self.flags.append(
                    {
                        "kind": bounded(record.get("kind"), 40),
                        "detail": bounded(record.get("detail"), 400),
                        "location": bounded(record.get("location"), 300) or None,
                    }
                )
        elif kind == "import" and (self.state == "collecting" or self.parallel):
            # Under pytest-xdist, workers collect: their failed imports ride on their first reports.
            self.failed_import(record)
        elif kind == "collector" and self.state == "collecting":
            self.collectors[bounded(record.get("nodeid"), 1000)] = bounded(record.get("longrepr"), 4000)
        elif kind == "collected" and self.state == "collecting":
            count, deselected = record.get("count"), record.get("deselected")
            if not (isinstance(count, int) and isinstance(deselected, int)):
                return self.violate("a malformed 'collected' line")
            self.collected, self.deselected, self.state = count, deselected, "running"
        elif kind == "begin" and self.state == "running":
            nodeid = record.get("nodeid")
            if (self.running and not self.parallel) or not isinstance(nodeid, str) or nodeid in self.tests:
                return self.violate("a test began while another ran, or twice")
            if len(self.tests) >= self.collected - self.deselected:
                return self.violate("more tests ran than were collected")
            self.running.add(nodeid)
            self.tests[nodeid] = {}
        elif kind == "test" and self.state == "running":
            nodeid, when = record.get("nodeid"), record.get("when")
            if nodeid not in self.running or when not in ("setup", "call", "teardown"):
                return self.violate("a test result for a test that was not running")
            self.tests[nodeid][when] = {
                "outcome": bounded(record.get("outcome"), 20),
                "category": bounded(record.get("category"), 20),
                "xfail": bool(record.get("xfail")),
                "message": bounded(record.get("message"), 4000),
            }
            if when == "teardown":
                self.complete.append(nodeid)
                self.running.discard(nodeid)
        elif kind == "finish" and self.state in ("collecting", "running") and not self.running:
            status = record.get("exitstatus")
            if not isinstance(status, int):
                return self.violate("a malformed 'finish' line")
            self.exitstatus, self.state = status, "finished"
        else:
            self.violate(f"a '{kind}' line out of order ({self.state})")

    def failed_import(self, record: dict) -> None:
        test_file = record.get("test_file")
        names = record.get("names")
        if test_file not in self.allowed_test_files or not isinstance(names, list):
            return self.violate("a failed-import line for a file that is not a hidden test file")
        if len(self.imports) < MAX_IMPORTS:
            self.imports.append(
                {
                    "test_file": test_file,
                    "module": bounded(record.get("module"), 200),
                    "names": [bounded(n, 100) for n in names[:20]],
                    "error": bounded(record.get("error"), IMPORT_TEXT_CHARS),
                }
            )

    def report(self) -> dict:
        """The session as a report in pytest-json-report's shape, from tests that finished."""
        tests = []
        for nodeid in self.complete:
            stages = self.tests[nodeid]
            categories = [s["category"] for s in stages.values() if s["category"] not in ("", "passed")]
            entry = {"nodeid": nodeid, "outcome": categories[-1] if categories else "passed"}
            for when, stage in stages.items():
                entry[when] = {"outcome": stage["outcome"], "crash": {"message": stage["message"]}}
            tests.append(entry)
        collectors = [{"nodeid": n, "outcome": "failed", "longrepr": r} for n, r in self.collectors.items()]
        return {
            "tests": tests,
            "collectors": collectors,
            "summary": {"collected": self.collected, "deselected": self.deselected},
        }

    def stream_lines(self) -> list[dict]:
        """The finished tests' stages and the failed collectors, as the host reads them."""
        lines = [{"collector": n, "longrepr": r} for n, r in self.collectors.items()]
        for nodeid in self.complete:
            lines += [
                {"nodeid": nodeid, "when": w, "outcome": s["outcome"], "xfail": s["xfail"]}
                for w, s in self.tests[nodeid].items()
            ]
        return lines


@dataclass
class Observation:
    exit_code: int | None
    timed_out: bool
    stream: StreamCheck
    ended_at: float = field(default_factory=time.monotonic)

    @property
    def finished(self) -> bool:
        return self.stream.state == "finished"

    def untrusted(self) -> str | None:
        """Why the supervisor cannot take this session's stream as its result."""
        stream = self.stream
        if stream.violation:
            return f"the test process's result stream is forged: {stream.violation}"
        if self.finished and not self.timed_out and stream.exitstatus != self.exit_code:
            return f"pytest ended its session with {stream.exitstatus} but the process exited {self.exit_code}"
        silent = self.ended_at - stream.last_line_at
        if (
            self.timed_out
            and not self.finished
            and stream.state == "running"
            and not stream.running
            and (silent >= STALL_S)
        ):
            return f"the test process stalled outside any test for {silent:.0f} s until the time limit"
        return None


class Pytest:
    """Runs pytest as the runner in /work/run, each run against the one deadline of the whole evaluation."""

    def __init__(
        self,
        base_args: list[str],
        code_paths: list[str],
        env: dict,
        deadline: float,
        allowed_test_files: set[str],
        parallel: bool = False,
    ) -> None:
        self.base_args, self.code_paths, self.env, self.deadline = base_args, code_paths, env, deadline
        self.allowed_test_files, self.parallel = allowed_test_files, parallel
        self.tail = bytearray()

    def run(self, targets: list[str]) -> Observation:
        token = secrets.token_hex(16)
        token_read, token_write = os.pipe()
        os.write(token_write, token.encode())
        os.close(token_write)
        stream_read, stream_write = os.pipe()
        command = [
            sys.executable,
            "-s",
            str(HARNESS / "launch_pytest.py"),
            *self.code_paths,
            "--",
            *self.base_args,
            *targets,
        ]
        env = {**self.env, "SWECHAIN_STREAM_FD": str(stream_write), "SWECHAIN_TOKEN_FD": str(token_read)}
        process = subprocess.Popen(
            command,
            cwd=RUN,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(stream_write, token_read),
            start_new_session=True,
            preexec_fn=limit_output_files,
            **as_runner(),
        )
        os.close(stream_write)
        os.close(token_read)
        stream = StreamCheck(token, self.allowed_test_files, self.parallel)
        timed_out = self.pump(process, stream_read, stream)
        os.close(stream_read)
        return Observation(None if timed_out else process.returncode, timed_out, stream)

    def pump(self, process: subprocess.Popen, stream_read: int, stream: StreamCheck) -> bool:
        """Read output and stream until the process ends; True if the deadline ended it."""
        assert process.stdout is not None  # started with stdout=PIPE
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ, "output")
        selector.register(stream_read, selectors.EVENT_READ, "stream")
        exited_at = None
        while selector.get_map():
            for key, _ in selector.select(timeout=0.2):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data == "output":
                    self.tail += chunk
                    del self.tail[:-OUTPUT_TAIL_BYTES]
                else:
                    stream.feed(chunk)
            if time.monotonic() > self.deadline:
                end_runner_processes(process)
                return True
            if stream.violation:
                break  # a forged stream is not waited on: nothing the process does now counts
            if process.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > 2:
                    break  # a child left behind holds a pipe open; what it writes now is not the session's
        end_runner_processes(process)
        process.wait()
        return False


def end_runner_processes(process: subprocess.Popen) -> None:
    """End pytest's session and, when the supervisor is the container's init, every runner process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if run_as is not None and os.getpid() == 1:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
    process.wait()


def python_path(settings: EvalSettings) -> list[Path]:
    """What follows site-packages on the tests' path: the candidate's source root, where the
    chain asks for it (``installed_metadata``) the target version's distribution metadata,
    and the run folder (the working folder a plain ``python -m pytest`` would put first)."""
    paths = [RUN / settings["source_root"]]
    if (TARGET / "dist").is_dir():
        paths.append(TARGET / "dist")
    return [*paths, RUN]


def report_is_consistent(exit_code: int, report: dict) -> bool:
    broken = any(t.get("outcome") in ("failed", "error") for t in report.get("tests", []))
    broken = broken or any(c.get("outcome") == "failed" for c in report.get("collectors", []))
    return (
        (exit_code == 0 and not broken) or (exit_code == 1 and broken) or (exit_code == 5 and not report.get("tests"))
    )


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


def runner_scratch() -> Path:
    """A private temporary folder (and home) for the runner."""
    tmp = Path(tempfile.mkdtemp(prefix="swechain-", dir=os.environ.get("TMPDIR", "/tmp")))
    (tmp / "home").mkdir()
    if run_as is not None:
        for path in (tmp / "home", tmp):  # the folder last: then root no longer enters it
            os.chown(path, run_as, run_as)
    return tmp


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def main() -> int:
    global run_as
    run_as = RUNNER_UID
    settings: EvalSettings = json.loads((Path("/work") / EVAL_FILE).read_text())
    OUT.mkdir(exist_ok=True)
    assembly = assemble(settings)
    rename_sections(settings["rename_sections"])
    config, ini = find_config()
    addopts = remove_options(as_args(ini.get("addopts", "")), settings["remove_options"])
    tmp = runner_scratch()
    tests_parent = PurePosixPath(settings["test_folder"]).parent
    allowed_test_files = {
        str(PurePosixPath(f).relative_to(tests_parent))
        for f in assembly.hidden_files
        if tests_parent == PurePosixPath(".") or tests_parent in PurePosixPath(f).parents
    }
    code_paths = [str(p) for p in python_path(settings)]
    env = {
        **settings.get("env", {}),  # the chain's (chain.yaml pytest.env); what follows is fixed
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # Every PYTEST_* variable pytest reads, fixed here.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_ADDOPTS": "",
        "PYTEST_PLUGINS": "",
        "SWECHAIN_RUN": str(RUN),
        "SWECHAIN_TESTS_ROOT": str(RUN / settings["test_folder"]),
        "SWECHAIN_TRUSTED": str(TRUSTED),
    }
    env.pop("PYTHONPYCACHEPREFIX", None)  # bytecode is read only beside its source, in root's folders
    ini_overrides = ["-o", "addopts=" + shlex.join(addopts)]
    filters = as_lines(ini.get("filterwarnings", ""))
    dropped_filters = unresolvable_warning_filters(filters, env, code_paths)
    if dropped_filters:
        kept = [f for f in filters if f not in dropped_filters]
        ini_overrides += ["-o", "filterwarnings=" + "\n".join(kept)]
    base_args = [
        "-c",
        str(config) if config else str(HARNESS / "empty.ini"),
        "--rootdir",
        str(RUN),
        *ini_overrides,
        "-p",
        "no:cacheprovider",
        "-p",
        "pytest_timeout",
        f"--timeout={settings['test_timeout_s']}",
        "--continue-on-collection-errors",
        "-rN",
        "--tb=short",
        "--color=no",
        f"--basetemp={tmp / 'pytest'}",
        *settings["extra_args"],
    ]
    workers = int(settings.get("workers", 1))
    if workers > 1:
        # Workers are child processes of this pytest: the same unprivileged user, container and limits.
        # The guard module by name, so that each worker loads its import tolerance too.
        base_args += ["-p", "xdist.plugin", "-n", str(workers), "-p", "swechain_guard"]
    started = time.monotonic()
    pytest = Pytest(base_args, code_paths, env, started + settings["run_timeout_s"], allowed_test_files, workers > 1)
    suite = pytest.run([settings["test_folder"]])
    flags = assembly.flags + suite.stream.flags
    imports = list(suite.stream.imports)
    result: HarnessResult = {
        "exit_code": suite.exit_code,
        "timed_out": suite.timed_out,
        "retried": [],
        "unreported": [],
        "dropped_warning_filters": dropped_filters,
    }
    problem = suite.untrusted()
    reports, observed = [], [suite]
    if problem:
        result["untrusted"] = problem
        flags.append({"kind": "result_stream", "detail": problem[:400], "location": None})
    elif suite.timed_out:
        write_jsonl(OUT / STREAM_FILE, suite.stream.stream_lines())
    elif suite.finished and suite.exit_code in REPORTED_EXIT_CODES:
        reports.append(suite.stream.report())
    elif suite.exit_code != USAGE_ERROR_EXIT_CODE:
        # The run broke off (a crash, os._exit, pytest.exit): retry what reported nothing, file by file.
        if suite.stream.complete or suite.stream.collectors:
            reports.append(suite.stream.report())
        seen = set().union(*(files_in(r) for r in reports))
        for test_file in (f for f in test_files(settings["test_folder"]) if f not in seen):
            retry = pytest.run([test_file])
            observed.append(retry)
            result["retried"].append(test_file)
            flags += retry.stream.flags
            imports += retry.stream.imports
            if retry.untrusted():
                result["untrusted"] = f"{test_file}: {retry.untrusted()}"
            elif retry.finished and retry.exit_code in REPORTED_EXIT_CODES:
                report = retry.stream.report()
                if not report_is_consistent(retry.exit_code, report):
                    result["untrusted"] = f"{test_file}: exit code {retry.exit_code} disagrees with its report"
                reports.append(report)
            else:
                result["unreported"].append(test_file)
            if retry.timed_out:
                result["timed_out"] = True
                break
        if reports:
            result["suite_exit_code"] = suite.exit_code
    if reports:
        merged, result["exit_code"] = merge(reports) if result["retried"] else (reports[0], suite.exit_code)
        (OUT / REPORT_FILE).write_text(json.dumps(merged))
        write_jsonl(OUT / STREAM_FILE, [line for o in observed for line in o.stream.stream_lines()])
    if imports:
        write_jsonl(OUT / FAILED_IMPORTS_FILE, imports)
    result["integrity_flags"] = flags[:MAX_FLAGS]
    result["duration_s"] = round(time.monotonic() - started, 3)
    (OUT / OUTPUT_FILE).write_bytes(bytes(pytest.tail))
    (OUT / RESULT_FILE).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
