"""The in-container harness's pieces, run on the host: real pytest, no Docker."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path, PurePosixPath

import pytest
from conftest import REPO

from swechain_ci.evaluation.harness import run_hidden_tests as harness

HARNESS_DIR = Path(harness.__file__).parent


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def guarded_pytest(root: Path, monkeypatch) -> harness.Pytest:
    """The harness's own pytest runner, as the current user (the supervisor in a container is root)."""
    monkeypatch.setattr(harness, "RUN", root)
    hidden = sorted(str(p.relative_to(root)) for p in (root / "tests").rglob("*") if p.is_file())
    (root / "trusted.json").write_text(json.dumps(hidden))
    env = {
        "PATH": os.environ["PATH"],
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONHASHSEED": "0",
        "SWECHAIN_RUN": str(root),
        "SWECHAIN_TESTS_ROOT": str(root / "tests"),
        "SWECHAIN_TRUSTED": str(root / "trusted.json"),
    }
    args = ["-p", "no:cacheprovider", "-c", str(HARNESS_DIR / "empty.ini"), "--rootdir", str(root)]
    return harness.Pytest(args, [str(root / "src"), str(root)], env, time.monotonic() + 120, set(hidden))


def run_guarded_pytest(root: Path, monkeypatch) -> tuple[dict, list[dict]]:
    observed = guarded_pytest(root, monkeypatch).run(["tests"])
    assert observed.untrusted() is None
    report = observed.stream.report()
    return {t["nodeid"]: t["outcome"] for t in report["tests"]}, observed.stream.imports


def test_a_missing_name_fails_only_the_tests_that_use_it(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "def present():\n    return 1\n",
            "tests/test_mod.py": (
                "from pkg import present, missing\n"
                "from pkg.gone import helper\n\n"
                "def test_present():\n    assert present() == 1\n\n"
                "def test_missing():\n    assert missing() == 2\n\n"
                "def test_helper():\n    assert helper\n"
            ),
        },
    )
    outcomes, imports = run_guarded_pytest(tmp_path, monkeypatch)
    assert outcomes == {
        "tests/test_mod.py::test_present": "passed",
        "tests/test_mod.py::test_missing": "failed",
        "tests/test_mod.py::test_helper": "failed",
    }
    assert [(i["test_file"], i["module"], i["names"]) for i in imports] == [
        ("tests/test_mod.py", "pkg", ["missing"]),
        ("tests/test_mod.py", "pkg.gone", ["helper"]),
    ]


def test_code_under_test_gets_no_tolerance(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "from pkg.inner import nothing\n",
            "src/pkg/inner.py": "something = 1\n",
            "tests/test_mod.py": "import pkg\n\ndef test_it():\n    assert pkg\n",
        },
    )
    outcomes, imports = run_guarded_pytest(tmp_path, monkeypatch)
    assert outcomes == {}, "the module fails to collect: the package's own import error stands"
    assert imports == []


@pytest.mark.parametrize(
    ("addopts", "expected"),
    [
        (["--cov=pkg", "-ra"], ["-ra"]),
        (["--cov", "pkg", "-ra"], ["-ra"]),
        (["--strict-markers", "tests"], ["tests"]),
        (["--covx", "-q"], ["--covx", "-q"]),
    ],
)
def test_remove_options(addopts, expected):
    removed = [{"name": "--cov", "takes_value": True}, {"name": "--strict-markers", "takes_value": False}]
    assert harness.remove_options(addopts, removed) == expected


@pytest.mark.parametrize(
    ("rel", "allowed"),
    [
        ("src/pkg/mod.py", True),
        ("conftest.py", False),
        ("src/pkg/conftest.py", False),
        ("src/sitecustomize.py", False),
        ("src/evil.pth", False),
        ("tests/test_x.py", False),
        ("pyproject.toml", False),
        # Every config file name pytest accepts, wherever it is (pytest looks upwards from each argument).
        ("docs/setup.cfg", False),
        (".pytest.ini", False),
        ("pytest.toml", False),
        (".pytest.toml", False),
        ("src/tox.ini", False),
        # Start-up hooks as files and as packages.
        ("src/sitecustomize/__init__.py", False),
        ("usercustomize/__init__.py", False),
        ("src/usercustomize.cpython-311-x86_64-linux-gnu.so", False),
        ("docs/conf.py", True),
        ("src/pkg/customize.py", True),
    ],
)
def test_what_a_candidate_may_supply(rel, allowed):
    assert (
        harness.candidate_may_supply(PurePosixPath(rel), PurePosixPath("tests"), {"pyproject.toml", "setup.cfg"})
        is allowed
    )


def test_every_config_file_name_pytest_accepts_is_excluded():
    """The table follows the installed pytest's own list of config file names."""
    import _pytest.config.findpaths as findpaths

    accepted = list(getattr(findpaths, "CONFIG_LOADERS_BY_NAME", ()))
    assert accepted, "pytest moved its list of config file names: update CONFIG_NAMES"
    assert set(accepted) <= set(harness.CONFIG_NAMES)


@pytest.mark.parametrize(
    ("rel", "shadows"),
    [
        ("pytest.py", "pytest"),
        ("pytest_timeout.py", "pytest_timeout"),
        ("src/swechain_guard.py", "swechain_guard"),
        ("src/_pytest/__init__.py", "_pytest"),
        ("json.py", "json"),
        ("src/pluggy.pyc", "pluggy"),
        ("src/pkg/json.py", None),
        ("src/pkg/__init__.py", None),
        ("README.md", None),
        ("docs/json.py", None),
    ],
)
def test_a_candidate_file_shadowing_an_installed_name_is_found(rel, shadows, monkeypatch):
    # In the image, sys.path holds the standard library, site-packages and the harness; here the
    # checkout's own folders (docs/, tests/) are on it too, and are no installed names.
    checkout = {REPO.resolve(), (REPO / "tests").resolve()}
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and Path(p).resolve() not in checkout])
    installed = harness.installed_names()
    roots = [PurePosixPath("."), PurePosixPath("src")]
    assert harness.shadowing(PurePosixPath(rel), roots, installed, "pkg") == shadows


def test_config_sections_are_renamed_and_found(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RUN", tmp_path)
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n[pytest]\naddopts = --strict -ra\n")
    harness.rename_sections([{"file": "setup.cfg", "old": "pytest", "new": "tool:pytest"}])
    assert "[tool:pytest]" in (tmp_path / "setup.cfg").read_text()
    path, ini = harness.find_config()
    assert path == tmp_path / "setup.cfg"
    assert harness.as_args(ini["addopts"]) == ["--strict", "-ra"]


def test_pyproject_config_wins_over_setup_cfg(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RUN", tmp_path)
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = -x\n")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nfilterwarnings = ["error", "ignore::a.B"]\n')
    path, ini = harness.find_config()
    assert path.name == "pyproject.toml"
    assert harness.as_lines(ini["filterwarnings"]) == ["error", "ignore::a.B"]


def test_warning_filters_naming_absent_classes_are_found(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RUN", tmp_path)
    write(tmp_path, {"src/pkg/warnings.py": "class Old(UserWarning):\n    pass\n"})
    filters = ["error", "ignore::pkg.warnings.Old", "ignore::pkg.warnings.New", "ignore::DeprecationWarning"]
    found = harness.unresolvable_warning_filters(filters, dict(os.environ), [str(tmp_path / "src")])
    assert found == ["ignore::pkg.warnings.New"]


def test_merging_a_broken_off_run_with_file_retries():
    suite = {
        "tests": [{"nodeid": "tests/a.py::t1", "outcome": "passed"}],
        "collectors": [],
        "summary": {"collected": 1},
    }
    retry = {
        "tests": [{"nodeid": "tests/b.py::t2", "outcome": "failed"}],
        "collectors": [{"nodeid": "tests/b.py", "outcome": "passed"}],
        "summary": {"collected": 1},
    }
    merged, exit_code = harness.merge([suite, retry])
    assert [t["nodeid"] for t in merged["tests"]] == ["tests/a.py::t1", "tests/b.py::t2"]
    assert merged["summary"] == {"collected": 2, "deselected": 0}
    assert exit_code == 1
    assert harness.merge([suite])[1] == 0
    assert harness.merge([])[1] == 5
    assert harness.files_in(retry) == {"tests/b.py"}


def test_report_consistency_with_exit_codes():
    failing = {"tests": [{"outcome": "failed"}]}
    passing = {"tests": [{"outcome": "passed"}]}
    assert harness.report_is_consistent(1, failing) and harness.report_is_consistent(0, passing)
    assert not harness.report_is_consistent(0, failing)
    assert not harness.report_is_consistent(1, passing)
    assert harness.report_is_consistent(5, {"tests": []}) and not harness.report_is_consistent(5, passing)


def test_imports_at_test_run_time_are_untouched(tmp_path, monkeypatch):
    """Code that inspects import tracebacks (Flask's locate_app does) sees no harness frame."""
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "tests/test_mod.py": (
                "import builtins\n\n"
                "def test_real_import_at_run_time():\n"
                "    assert builtins.__import__.__module__ == 'builtins'\n"
            ),
        },
    )
    outcomes, _ = run_guarded_pytest(tmp_path, monkeypatch)
    assert outcomes == {"tests/test_mod.py::test_real_import_at_run_time": "passed"}


TOKEN = "t0k"
COLLECTED = {"t": "collected", "count": 1, "deselected": 0}
BEGIN = {"t": "begin", "nodeid": "tests/test_a.py::t"}
CALL = {"t": "test", "nodeid": "tests/test_a.py::t", "when": "call", "outcome": "passed", "category": "passed"}
TEARDOWN = {**CALL, "when": "teardown", "category": ""}
FINISH = {"t": "finish", "exitstatus": 0}
IMPORT = {"t": "import", "test_file": "tests/test_a.py", "module": "pkg", "names": ["x"], "error": "E" * 5000}


# Rows: the guard's lines in order, and the violation the supervisor must see (None: a real session).
@pytest.mark.parametrize(
    ("lines", "violation"),
    [
        ([IMPORT, COLLECTED, BEGIN, CALL, TEARDOWN, FINISH], None),
        (
            [
                {"t": "collector", "nodeid": "tests/test_b.py", "longrepr": "E"},
                {**COLLECTED, "count": 0},
                {**FINISH, "exitstatus": 1},
            ],
            None,
        ),
        ([COLLECTED, BEGIN, {**CALL, "k": "guessed"}], "did not write"),
        ([CALL, COLLECTED], "out of order"),  # a result before collection ended: written at import
        ([COLLECTED, CALL], "not running"),  # a result for a test that never began
        ([COLLECTED, BEGIN, BEGIN], "while another ran"),
        ([COLLECTED, BEGIN, CALL, TEARDOWN, {**BEGIN, "nodeid": "tests/test_a.py::u"}], "more tests ran"),
        ([COLLECTED, BEGIN, CALL, TEARDOWN, FINISH, {**CALL, "when": "setup"}], "after the session finished"),
        ([COLLECTED, {**IMPORT}], "out of order"),
        ([{**IMPORT, "test_file": "src/pkg/mod.py"}], "not a hidden test file"),
        ([{"t": "collected", "count": "many", "deselected": 0}], "malformed"),
    ],
)
def test_the_result_stream_must_follow_a_real_session(lines, violation):
    check = harness.StreamCheck(TOKEN, {"tests/test_a.py"})
    check.feed(b"".join(json.dumps({"k": TOKEN, **line}).encode() + b"\n" for line in lines))
    if violation is None:
        assert check.violation is None
    else:
        assert violation in (check.violation or "")


def test_a_real_session_becomes_a_bounded_report():
    check = harness.StreamCheck(TOKEN, {"tests/test_a.py"})
    for line in [IMPORT, COLLECTED, BEGIN, CALL, TEARDOWN, FINISH]:
        check.feed(json.dumps({"k": TOKEN, **line}).encode() + b"\n")
    assert check.report()["tests"] == [
        {
            "nodeid": "tests/test_a.py::t",
            "outcome": "passed",
            "call": {"outcome": "passed", "crash": {"message": ""}},
            "teardown": {"outcome": "passed", "crash": {"message": ""}},
        }
    ]
    assert check.report()["summary"] == {"collected": 1, "deselected": 0}
    assert len(check.imports[0]["error"]) == harness.IMPORT_TEXT_CHARS
    assert harness.Observation(0, False, check).untrusted() is None
    assert "exited 1" in harness.Observation(1, False, check).untrusted()


def test_a_time_out_outside_any_test_is_a_stall_not_a_result():
    check = harness.StreamCheck(TOKEN, set())
    for line in [COLLECTED, BEGIN, CALL, TEARDOWN]:
        check.feed(json.dumps({"k": TOKEN, **line}).encode() + b"\n")
    killed = time.monotonic()
    # Killed between two tests of a run that was busy to the end: a time-out, not a stall.
    assert harness.Observation(None, True, check, ended_at=check.last_line_at + 0.5).untrusted() is None
    check.last_line_at = killed - harness.STALL_S
    assert "stalled outside any test" in harness.Observation(None, True, check, ended_at=killed).untrusted()
    check.feed(json.dumps({"k": TOKEN, **{**BEGIN, "nodeid": "x"}}).encode() + b"\n")
    assert check.violation == "more tests ran than were collected"


def test_an_oversized_stream_line_is_a_violation():
    check = harness.StreamCheck(TOKEN, set())
    check.feed(b"x" * (harness.MAX_LINE_BYTES + 1))
    assert check.violation == "a stream line over the size limit"


def test_an_honest_session_raises_no_flag(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "def f():\n    return 1\n",
            "tests/conftest.py": "import pytest\n\n@pytest.fixture\ndef one():\n    return 1\n",
            "tests/test_mod.py": "import pkg\n\ndef test_f(one):\n    assert pkg.f() == one\n",
        },
    )
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    assert observed.untrusted() is None and observed.stream.flags == []


TAMPERING = {
    "hook_registered": (
        "import gc, pytest\n"
        "class Always:\n"
        "    @pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        outcome.get_result().outcome = 'passed'\n"
        "for o in gc.get_objects():\n"
        "    if type(o).__name__ == 'Config' and hasattr(o, 'pluginmanager'):\n"
        "        o.pluginmanager.register(Always())\n"
    ),
    "builtins_replaced": "import builtins\nbuiltins.AssertionError = type('Skip', (Exception,), {})\n",
    "test_machinery_replaced": (
        "import _pytest.reports as r\n"
        "_original = r.TestReport.__init__\n"
        "def __init__(self, *a, **k):\n"
        "    _original(self, *a, **k)\n"
        "    self.outcome = 'passed'\n"
        "r.TestReport.__init__ = __init__\n"
    ),
    "test_code_altered": (
        "import sys, types\n"
        "path = __file__.rsplit('/src/', 1)[0] + '/tests/test_mod.py'\n"
        "source = open(path).read().replace('assert pkg.f() == 2', 'assert True')\n"
        "module = types.ModuleType('test_mod')\n"
        "module.__file__ = path\n"
        "sys.modules['test_mod'] = module\n"
        "exec(compile(source, path, 'exec'), module.__dict__)\n"
    ),
}


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_in_process_tampering_is_flagged(kind, tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "def f():\n    return 1\n",
            "src/pkg/tamper.py": TAMPERING[kind],
            "tests/conftest.py": "import pkg.tamper\n" if kind == "test_code_altered" else "",
            "tests/test_mod.py": "import pkg\nimport pkg.tamper\n\ndef test_f():\n    assert pkg.f() == 2\n",
        },
    )
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    assert kind in {f["kind"] for f in observed.stream.flags}, observed.stream.flags


def test_the_launched_interpreter_keeps_the_candidate_behind_the_image(tmp_path, monkeypatch):
    """Site-packages before the candidate's folders, no user site, the hash seed pinned, and the
    candidate importable in subprocesses that tests start."""
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "tests/test_env.py": (
                "import subprocess, sys\n\n"
                "def test_order():\n"
                "    site = next(i for i, p in enumerate(sys.path) if p.endswith('site-packages'))\n"
                "    src = sys.path.index({!r})\n"
                "    assert site < src and sys.flags.no_user_site and sys.flags.hash_randomization == 0\n\n"
                "def test_subprocess_imports_the_candidate():\n"
                "    subprocess.run([sys.executable, '-c', 'import pkg'], check=True)\n"
            ).format(str(tmp_path / "src")),
        },
    )
    outcomes, _ = run_guarded_pytest(tmp_path, monkeypatch)
    assert set(outcomes.values()) == {"passed"}, outcomes


# At import, the package points the interpreter's bytecode cache at a folder of its own and puts
# there, for a hidden test module collected later, a rewritten module whose test passes.
STEER_PYCACHE = """
import importlib.util, inspect, marshal, os, sys, tempfile
import _pytest.assertion.rewrite as rewrite
prefix = tempfile.mkdtemp()
target = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'test_b.py')
target = os.path.realpath(target)
stat = os.stat(target)
code = compile("def test_b():\\n    assert True\\n", target, "exec")
folder = os.path.join(prefix, *os.path.dirname(target).split(os.sep)[1:])
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "test_b.py"[:-3] + rewrite.PYC_TAIL), "wb") as handle:
    if "source_hash" in inspect.getsource(rewrite._read_pyc):  # pytest >= 9: hash-based pycs
        source = open(target, "rb").read()
        handle.write(importlib.util.MAGIC_NUMBER + b"\\3\\0\\0\\0" + importlib.util.source_hash(source)[:8])
    else:
        handle.write(importlib.util.MAGIC_NUMBER + b"\\0\\0\\0\\0")
        handle.write((int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"))
        handle.write((stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    handle.write(marshal.dumps(code))
sys.pycache_prefix = prefix
"""


def test_a_crafted_rewrite_cache_under_the_candidates_pycache_prefix_is_never_read(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": STEER_PYCACHE,
            "tests/test_a.py": "import pkg\n\ndef test_a():\n    assert 1 == 2\n",
            "tests/test_b.py": "def test_b():\n    assert 1 == 2\n",
        },
    )
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    outcomes = {t["nodeid"]: t["outcome"] for t in observed.stream.report()["tests"]}
    assert outcomes == {"tests/test_a.py::test_a": "failed", "tests/test_b.py::test_b": "failed"}
    assert "bytecode_steered" in {f["kind"] for f in observed.stream.flags}, observed.stream.flags


def test_compiled_files_under_any_name_are_bytecode(tmp_path):
    import importlib.util

    pyc = importlib.util.MAGIC_NUMBER + b"\0" * 12
    cases = {
        "pkg/mod.pyc": (b"x", True),
        "pkg/__pycache__/m.txt": (b"x", True),
        "pkg/data.bin": (pyc, True),
        "pkg/m.py": (b"x = 1\n", False),
        "pkg/short": (b"\r\n", False),
    }
    for rel, (data, compiled) in cases.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
        assert harness.is_bytecode(tmp_path / rel, PurePosixPath(rel)) is compiled, rel


# hypothesis' @given, rebuilt from the standard library: an installed wrapper (contextlib's, which
# holds the test) behind a generated trampoline that claims the test file's name and line.
IMPERSONATED = """
import contextlib
import pkg


class quiet(contextlib.ContextDecorator):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _real():
    assert pkg.f() == {expected}


namespace = {{}}
exec("def accept(f):\\n    def test_x():\\n        {body}\\n    return test_x\\n", namespace)
test_x = namespace["accept"](quiet()(_real))
test_x.__code__ = test_x.__code__.replace(co_filename=__file__, co_firstlineno=_real.__code__.co_firstlineno)
"""


@pytest.mark.parametrize(
    "expected, body, flagged, outcome",
    [
        (1, "return f()", False, "passed"),  # honest: the trampoline forwards to the installed wrapper
        (2, "return f()", False, "failed"),
        (2, "return None", True, "passed"),  # the trampoline does not call the test: flagged
    ],
)
def test_installed_wrappers_behind_a_trampoline_are_recognised(tmp_path, monkeypatch, expected, body, flagged, outcome):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "def f():\n    return 1\n",
            "tests/test_mod.py": IMPERSONATED.format(expected=expected, body=body),
        },
    )
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    assert [t["outcome"] for t in observed.stream.report()["tests"]] == [outcome]
    kinds = {f["kind"] for f in observed.stream.flags}
    assert ("test_code_altered" in kinds) is flagged, observed.stream.flags


def test_code_claiming_an_installed_file_must_be_that_files(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "tests/test_mod.py": (
                "import os\n\ndef test_x():\n    assert False\n\n"
                "test_x.__code__ = compile('def test_x():\\n    pass\\n', os.__file__, 'exec').co_consts[0]\n"
            ),
        },
    )
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    assert [f["detail"] for f in observed.stream.flags if f["kind"] == "test_code_altered"] == [
        f"tests/test_mod.py::test_x runs code that claims {os.__file__} but is not that file's"
    ]


def test_a_wrapper_chain_that_comes_back_to_itself_ends_as_a_finding(tmp_path, monkeypatch):
    """An installed wrapper whose __wrapped__ is the trampoline in front of it: the walk ends at
    the layer it meets twice, never loops (hypothesis' own closure holds its trampoline too)."""
    cyclic = IMPERSONATED.format(expected=1, body="return f()") + (
        "test_x.__closure__[0].cell_contents.__wrapped__ = test_x\n"
    )
    write(tmp_path, {"src/pkg/__init__.py": "def f():\n    return 1\n", "tests/test_mod.py": cyclic})
    observed = guarded_pytest(tmp_path, monkeypatch).run(["tests"])
    details = [f["detail"] for f in observed.stream.flags if f["kind"] == "test_code_altered"]
    assert details == ["tests/test_mod.py::test_x wraps itself without reaching its hidden file's code"]


def test_a_failed_tests_garbage_fails_no_later_test(tmp_path, monkeypatch):
    # A failing test leaves a never-awaited coroutine in its traceback's cycle. Collected later, in
    # whichever test runs then, pytest up to 8.3 (Flask's pin) reports it there: an error under
    # `filterwarnings = error` (the conftest does what pytest 8.3 does), in a test that passes. The
    # harness releases a failed test's garbage as the test ends.
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "async def view():\n    return 1\n",
            "tests/conftest.py": (
                "import sys\n\nimport pytest\n\n"
                "@pytest.fixture(autouse=True)\n"
                "def unraisable_is_an_error():\n"
                "    seen, hook = [], sys.unraisablehook\n"
                "    sys.unraisablehook = seen.append\n"
                "    yield\n"
                "    sys.unraisablehook = hook\n"
                "    if seen:\n"
                "        pytest.fail(f'unraisable: {seen[0].exc_value!r}')\n"
            ),
            "tests/test_mod.py": (
                "import gc\n\nimport pkg\n\n"
                "def test_unsupported_async_view():\n"
                "    pending = pkg.view()\n"
                "    holder = [pending]\n    holder.append(holder)\n"
                "    assert pending is None\n\n"
                "def test_later():\n"
                "    gc.collect()  # the collector's own moment, here made certain\n"
                "    assert pkg.view\n"
            ),
        },
    )
    runner = guarded_pytest(tmp_path, monkeypatch)
    runner.base_args += ["-W", "error::RuntimeWarning"]  # Flask's `filterwarnings = error`
    observed = runner.run(["tests"])
    assert observed.untrusted() is None
    report = observed.stream.report()["tests"]
    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in report}
    assert outcomes == {"test_unsupported_async_view": "failed", "test_later": "passed"}
