"""Attacks on the hidden-test harness (issue 9, classes 1, 2, 3 and 5), each a real toy chain run.

Every attack is step 1 of the toy chain (0.1.0 -> 0.2.0) with a candidate that fixes
nothing; its honest score is HONEST_STEP1 = (TP 0, FN 9, FP 0). Each attack must score
no better, or be flagged; the ``attack`` fixture checks that the host survives and
writes nothing outside the run folder. Where the harness prevents an attack, the test
asserts the honest score; where it can only detect one, it asserts the flag.
"""

from __future__ import annotations

import pytest
from conftest import REPO

from redteam.conftest import HONEST_STEP1, TOY_START, better_or_equal

pytestmark = pytest.mark.docker


def test_code_that_fixes_nothing_scores_the_honest_baseline(attack):
    run = attack({})
    assert run.build == HONEST_STEP1 and run.build_fix == HONEST_STEP1
    assert run.flags() == []


INIT = "src/toyslug/__init__.py"
ORIGINAL_INIT = (TOY_START / INIT).read_text()

# A pytest plugin that turns every report into a pass: what each shadowing attack tries to load.
FORCE_PASS = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

# Code run when the package is imported (the hidden tests import it while collecting).
AT_IMPORT = "\n# --- planted ---\n{}\n"


def planted(code: str) -> dict[str, str]:
    """0.1.0's package with ``code`` appended to its __init__: it runs when the tests import it."""
    return {INIT: ORIGINAL_INIT + AT_IMPORT.format(code)}


def assert_honest(run) -> None:
    assert better_or_equal(HONEST_STEP1, run.build), run.build
    assert better_or_equal(HONEST_STEP1, run.build_fix), run.build_fix


# Hidden test node ids, as a forger reads them from the hidden files it can see at run time.
READ_TEST_IDS = """
import ast as _ast, os as _os
def _hidden_ids(root="/work/run/tests"):
    ids = []
    for name in sorted(_os.listdir(root)):
        if name.startswith("test_") and name.endswith(".py"):
            tree = _ast.parse(open(_os.path.join(root, name)).read())
            ids += ["tests/%s::%s" % (name, n.name) for n in tree.body
                    if isinstance(n, _ast.FunctionDef) and n.name.startswith("test_")]
    return ids
"""


# ----------------------------------------------------------------------------- class 1: shadowing


def test_modules_named_like_the_harness_plugins_are_left_out_and_flagged(attack):
    """pytest-timeout, pytest-json-report and the harness's guard, shadowed from the code root and src."""
    changes = {
        "pytest_timeout.py": FORCE_PASS,
        "src/pytest_timeout.py": FORCE_PASS,
        "src/pytest_jsonreport/__init__.py": "",
        "src/pytest_jsonreport/plugin.py": FORCE_PASS,
        "swechain_guard.py": FORCE_PASS,
        "src/swechain_guard.py": FORCE_PASS,
    }
    run = attack(changes)
    assert_honest(run)
    flagged = {f["location"] for f in run.flags("build") if f["kind"] == "shadowing_file"}
    assert flagged == set(changes), run.flags()


def test_a_top_level_pytest_is_left_out_and_flagged(attack):
    changes = {
        "pytest.py": "import sys\nprint('1000 passed')\nsys.exit(0)\n",
        "src/pytest/__init__.py": FORCE_PASS,
        "src/_pytest/__init__.py": "",
        "src/pluggy/__init__.py": FORCE_PASS,
    }
    run = attack(changes)
    assert_honest(run)
    assert {f["location"] for f in run.flags("build") if f["kind"] == "shadowing_file"} == set(changes)


def test_no_pytest_config_file_of_the_candidate_is_read(attack):
    """Every name pytest accepts, each one a whole cheat: were any read, the score would show it."""
    cheat = "[pytest]\naddopts = -p toyslug_cheat\n"
    run = attack(
        {
            "pytest.toml": '[pytest]\naddopts = ["-p", "toyslug_cheat"]\n',
            ".pytest.toml": '[pytest]\naddopts = ["-p", "toyslug_cheat"]\n',
            ".pytest.ini": cheat,
            "tox.ini": cheat,
            "src/toyslug/setup.cfg": "[tool:pytest]\naddopts = -p toyslug_cheat\n",
            "src/toyslug_cheat.py": FORCE_PASS,
        }
    )
    assert_honest(run)


def test_start_up_hooks_as_packages_never_run(attack):
    hook = 'import os\nos.environ["PYTEST_ADDOPTS"] = "-p toyslug_cheat"\nimport toyslug_cheat\n'
    run = attack(
        {
            "src/sitecustomize/__init__.py": hook,
            "usercustomize/__init__.py": hook,
            "src/usercustomize.py": hook,
            "src/toyslug_cheat.py": FORCE_PASS,
        }
    )
    assert_honest(run)


# ----------------------------------------------------------------------------- class 2: forged results


def test_results_written_at_import_then_exit_are_not_taken(attack):
    """The candidate writes a passing report, stream and result where the host reads, then os._exit(0)."""
    run = attack(
        planted(
            READ_TEST_IDS
            + """
import json as _json, os as _os
_ids = _hidden_ids()
_files = {
    "report.json": {"tests": [{"nodeid": i, "outcome": "passed", "call": {"outcome": "passed"}} for i in _ids],
                    "collectors": [], "summary": {"collected": len(_ids), "deselected": 0}},
    "result.json": {"exit_code": 0, "timed_out": False, "retried": [], "unreported": []},
}
for _name, _data in _files.items():
    try:
        with open("/out/" + _name, "w") as _handle:
            _json.dump(_data, _handle)
    except OSError:
        pass
_os._exit(0)
"""
        )
    )
    assert_honest(run)
    assert {"process_exit", "names_the_harness"} <= run.flag_kinds("build")


def test_results_rewritten_from_atexit_are_not_taken(attack):
    run = attack(
        planted(
            READ_TEST_IDS
            + """
import atexit as _atexit, json as _json
def _rewrite():
    for _name in ("report.json", "stream.jsonl", "result.json"):
        try:
            open("/out/" + _name, "w").write(_json.dumps({"exit_code": 0}))
        except OSError:
            pass
_atexit.register(_rewrite)
"""
        )
    )
    assert_honest(run)
    assert "process_exit" in run.flag_kinds("build")


def test_a_passing_stream_written_into_the_pipe_then_a_hang_is_not_taken(attack):
    """Lines forged into every pipe the process holds, then a hang: the supervisor stops at the forgery."""
    run = attack(
        planted(
            READ_TEST_IDS
            + """
import json as _json, os as _os, stat as _stat, time as _time
_lines = [{"t": "collected", "count": len(_hidden_ids()), "deselected": 0}]
for _i in _hidden_ids():
    _lines += [{"t": "begin", "nodeid": _i},
               {"t": "test", "nodeid": _i, "when": "call", "outcome": "passed", "category": "passed"},
               {"t": "test", "nodeid": _i, "when": "teardown", "outcome": "passed", "category": ""}]
_lines.append({"t": "finish", "exitstatus": 0})
for _fd in map(int, _os.listdir("/proc/self/fd")):
    try:
        if _stat.S_ISFIFO(_os.fstat(_fd).st_mode):
            _os.write(_fd, "".join(_json.dumps(l) + "\\n" for l in _lines).encode())
    except OSError:
        pass
_time.sleep(3600)
"""
        )
    )
    assert_honest(run)
    assert "result_stream" in run.flag_kinds("build")
    assert run.step["build"]["run"]["duration_s"] < 60, "a forged stream is not waited on to its time limit"


def test_a_forgery_through_the_guards_own_channel_is_flagged(attack):
    """The strongest forger finds the guard through gc and sends a whole fake session with its token.
    No check inside one Python process can tell that apart; the change itself gives it away."""
    run = attack(
        planted(
            READ_TEST_IDS
            + """
import gc as _gc, os as _os
for _guard in [o for o in _gc.get_objects() if type(o).__name__ == "Guard"]:
    _ids = _hidden_ids()
    _guard.send({"t": "collected", "count": len(_ids), "deselected": 0})
    for _i in _ids:
        _guard.send({"t": "begin", "nodeid": _i})
        for _when in ("setup", "call", "teardown"):
            _guard.send({"t": "test", "nodeid": _i, "when": _when, "outcome": "passed",
                         "category": "passed" if _when == "call" else "", "xfail": False, "message": ""})
    _guard.send({"t": "finish", "exitstatus": 0})
    _os._exit(0)
"""
        )
    )
    assert {"gc_object_walk", "process_exit", "names_the_harness"} & run.flag_kinds("build")


# ----------------------------------------------------------------------------- class 3: in-process tampering


def test_a_hook_registered_through_gc_is_flagged(attack):
    run = attack(
        planted("""
import gc as _gc, pytest as _pytest

class _Always:
    @_pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"

for _o in _gc.get_objects():
    if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
        _o.pluginmanager.register(_Always())
""")
    )
    kinds = run.flag_kinds("build")
    assert "hook_registered" in kinds, "seen at run time"
    assert {"gc_object_walk", "imports_test_machinery"} <= kinds, "seen in the change"


def test_altered_copies_of_hidden_test_modules_in_sys_modules_are_flagged(attack):
    run = attack(
        planted("""
import sys as _sys, types as _types, os as _os
_root = "/work/run/tests"
for _name in _os.listdir(_root):
    if _name.startswith("test_") and _name.endswith(".py") and _name[:-3] not in _sys.modules:
        _path = _os.path.join(_root, _name)
        _source = open(_path).read().replace("assert ", "assert True or ")
        _module = _types.ModuleType(_name[:-3])
        _module.__file__ = _path
        _sys.modules[_name[:-3]] = _module
        exec(compile(_source, _path, "exec"), _module.__dict__)
""")
    )
    kinds = run.flag_kinds("build")
    assert "test_code_altered" in kinds, run.flags()
    assert "writes_sys_modules" in kinds


def test_assertion_error_replaced_in_builtins_is_flagged(attack):
    run = attack(
        planted("""
import builtins as _builtins
class _Skip(Exception):
    pass
_builtins.AssertionError = _Skip
""")
    )
    assert {"builtins_replaced", "writes_builtins"} <= run.flag_kinds("build")


# ----------------------------------------------------------------------------- class 5: Fix-report leaks


def test_a_forged_failed_import_record_grants_no_fix_and_leaks_nothing(attack):
    """A failed-import line carrying every hidden test file, forged into the pipe."""
    run = attack(
        planted("""
import json as _json, os as _os, stat as _stat
_root = "/work/run/tests"
_leak = "".join(open(_os.path.join(_root, n)).read() for n in sorted(_os.listdir(_root)) if n.endswith(".py"))
_line = _json.dumps({"t": "import", "test_file": "tests/test_unique.py", "module": "toyslug",
                     "names": ["unique"], "error": _leak}) + "\\n"
for _fd in map(int, _os.listdir("/proc/self/fd")):
    try:
        if _stat.S_ISFIFO(_os.fstat(_fd).st_mode):
            _os.write(_fd, _line.encode())
    except OSError:
        pass
""")
    )
    assert_honest(run)
    assert "result_stream" in run.flag_kinds("build")
    assert run.step["fix"] is None and run.step["fix_report"] is None, "a forgery earns no Fix"


def test_a_real_import_error_carrying_test_files_is_cut_to_its_bound(attack):
    """The package raises, for the name the hidden tests import, an ImportError holding the hidden tests."""
    run = attack(
        planted("""
def __getattr__(name):
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "tests")
    text = "".join(open(os.path.join(root, n)).read() for n in sorted(os.listdir(root)) if n.endswith(".py"))
    raise ImportError(name + " " + text)
""")
    )
    assert_honest(run)
    report = run.step["fix_report"]
    assert report is not None, "a failed import in a test module is a real execution error"
    hidden = (REPO / "chains/toy/versions/0.2.0/tests/test_unique.py").read_text()
    longest_leak = max((len(chunk) for chunk in hidden.split("\n\n") if chunk.strip() and chunk in report), default=0)
    assert longest_leak <= 300, "at most one bounded error text of it"
    assert all(len(line) <= 2000 for line in report.splitlines())


# ----------------------------------------------------------------------------- attacks found after building


def test_rewriting_the_hidden_tests_on_disk_is_refused(attack):
    run = attack(
        planted("""
import os as _os
for _name in _os.listdir("/work/run/tests"):
    try:
        open(_os.path.join("/work/run/tests", _name), "w").write("def test_x():\\n    pass\\n")
    except OSError:
        pass
""")
    )
    assert_honest(run)


def test_ending_the_supervisor_is_refused(attack):
    run = attack(
        planted("""
import os as _os, signal as _signal
try:
    _os.kill(1, _signal.SIGKILL)  # the supervisor is the container's init, another user
except OSError:
    pass
""")
    )
    assert_honest(run)


def test_patching_pytest_internals_without_a_hook_is_flagged(attack):
    run = attack(
        planted("""
import _pytest.reports as _reports
_original = _reports.TestReport.__init__
def _init(self, *args, **kwargs):
    _original(self, *args, **kwargs)
    self.outcome = "passed"
_reports.TestReport.__init__ = _init
""")
    )
    assert "test_machinery_replaced" in run.flag_kinds("build"), run.flags()


def test_a_background_child_that_outlives_pytest_changes_nothing(attack):
    """A forked child keeps the inherited pipe and writes after pytest is gone."""
    run = attack(
        planted("""
import os as _os, time as _time
if _os.fork() == 0:
    _os.setsid()
    _time.sleep(4)
    for _fd in range(3, 64):
        try:
            _os.write(_fd, b'{"t": "finish", "exitstatus": 0}\\n')
        except OSError:
            pass
    _time.sleep(3600)
""")
    )
    assert_honest(run)
