"""The static scan of a candidate's change: one test per rule, and what it leaves alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from swechain_ci.evaluation import change_scan
from swechain_ci.models import TestRun as Run

# One row per rule of change_scan.RULES, in order: code that must be found, code that must not.
CASES = {
    "imports_test_machinery": (
        [
            "import pytest",
            "from _pytest.runner import pytest_runtest_makereport",
            "import pluggy",
            "__import__('pytest')",
            "importlib.import_module('_pytest.config')",
        ],
        ["import json", "from .pytest_like import x", "import pytest_like"],
    ),
    "gc_object_walk": (
        ["gc.get_objects()", "from gc import get_referrers", "x = gc.get_referents", "import gc as g\ng.get_objects()"],
        ["gc.collect()", "import gc"],
    ),
    "writes_sys_modules": (
        [
            "sys.modules['tests.test_a'] = fake",
            "sys.modules.update(mods)",
            "del sys.modules['x']",
            "sys.modules.setdefault('x', m)",
            "import sys as _s\n_s.modules['t'] = m",
            "from sys import modules\nmodules['t'] = m",
        ],
        ["m = sys.modules['json']", "'x' in sys.modules"],
    ),
    "writes_builtins": (
        [
            "builtins.AssertionError = Exception",
            "setattr(builtins, 'print', f)",
            "__builtins__['open'] = f",
            "builtins.__dict__.update(x)",
            "import builtins as b\nb.AssertionError = E",
        ],
        ["x = builtins.open", "print(builtins.len)"],
    ),
    "process_exit": (
        [
            "os._exit(0)",
            "import atexit",
            "from atexit import register",
            "f = os._exit",
            "from os import _exit as quit\nquit(0)",
        ],
        ["sys.exit(0)", "raise SystemExit"],
    ),
    "names_the_harness": (
        [
            "open('/out/report.json', 'w')",
            "os.environ['SWECHAIN_STREAM_FD']",
            "p = '/work/run/tests'",
            "os.listdir('/proc/self/fd')",
            "os.environ.get('PYTEST_CURRENT_TEST')",
        ],
        ["x = 'layout/output'", "'stdout'", "s = 'a/work/b'"],
    ),
}


def test_every_rule_has_cases_in_order():
    assert list(CASES) == [rule.kind for rule in change_scan.RULES]


@pytest.mark.parametrize("kind", list(CASES))
def test_each_rule_finds_its_constructs_and_only_them(kind):
    found, left_alone = CASES[kind]
    for code in found:
        kinds = [rule.kind for rule, _, _ in change_scan.findings(code, "m.py")]
        assert kind in kinds, code
    for code in left_alone:
        kinds = [rule.kind for rule, _, _ in change_scan.findings(code, "m.py")]
        assert kind not in kinds, code


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_only_what_the_change_adds_is_flagged_with_file_and_line(tmp_path):
    gold = write(
        tmp_path / "gold",
        {
            "src/pkg/__init__.py": "import atexit\natexit.register(print)\n",
            "src/pkg/util.py": "def f():\n    return 1\n",
        },
    )
    candidate = write(
        tmp_path / "cand",
        {
            # The gold code's own atexit, moved to another file, is not a finding.
            "src/pkg/__init__.py": "x = 1\n",
            "src/pkg/moved.py": "import atexit\natexit.register(print)\n",
            "src/pkg/util.py": "import os\n\ndef f():\n    os._exit(0)\n",
            "tests/test_mine.py": "import pytest\n",  # the test folder is the target's, never run
        },
    )
    flags = change_scan.scan_change(gold, candidate, "tests")
    assert [(f.kind, f.location) for f in flags] == [("process_exit", "src/pkg/util.py:4")]
    assert "os._exit" in flags[0].detail


def test_unchanged_code_and_unparsable_files_give_nothing(tmp_path):
    gold = write(tmp_path / "gold", {"src/pkg/a.py": "import pytest\n"})
    candidate = write(tmp_path / "cand", {"src/pkg/a.py": "import pytest\n", "src/pkg/b.py": "def (:\n"})
    assert change_scan.scan_change(gold, candidate, "tests") == []


def test_flags_are_stamped_with_step_and_phase(tmp_path):
    gold = write(tmp_path / "gold", {"src/pkg/a.py": ""})
    candidate = write(tmp_path / "cand", {"src/pkg/a.py": "import gc\ngc.get_objects()\n"})
    run = change_scan.flag_run(Run(), gold, candidate, "tests", 3, "fix")
    assert [(f.kind, f.step, f.phase, f.location) for f in run.integrity_flags] == [
        ("gc_object_walk", 3, "fix", "src/pkg/a.py:2")
    ]


def test_the_gold_changes_of_the_toy_chain_raise_no_flag():
    """The oracle's change at every step is honest code: the scan must leave it alone.
    (Run by hand over PyJWT 2.0.0 -> 2.12.1 and Jinja2 3.0.0 -> 3.1.6 too: no flag either.)"""
    from swechain_ci.chain import sources
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("toy")
    for prev, next_ in chain.steps:
        gold, after = sources.materialize(chain, prev).code, sources.materialize(chain, next_).code
        assert change_scan.scan_change(gold, after, chain.config.test_folder) == [], (prev, next_)


def test_a_package_importing_itself_is_not_test_machinery_only_where_it_is_that_package(tmp_path):
    """pytest's own chains: `_pytest` imports in `src/_pytest` are the code under test. The
    exemption comes from the gold tree's own top-level names, so another chain keeps the rule."""
    change = "from _pytest.compat import final\nimport os\nos.environ.get('PYTEST_VERSION')\n"
    gold = write(
        tmp_path / "gold",
        {"src/_pytest/__init__.py": "", "src/_pytest/main.py": "x = 1\n", "src/pytest/__init__.py": ""},
    )
    candidate = write(
        tmp_path / "cand", {"src/_pytest/__init__.py": "", "src/_pytest/main.py": change, "src/pytest/__init__.py": ""}
    )
    assert change_scan.own_names(gold, "src") == {"_pytest", "pytest"}
    assert change_scan.scan_change(gold, candidate, "testing", "src") == []
    # The same change in a package that is not pytest is flagged twice over.
    other_gold = write(tmp_path / "og", {"src/pkg/__init__.py": "", "src/pkg/main.py": "x = 1\n"})
    other = write(tmp_path / "oc", {"src/pkg/__init__.py": "", "src/pkg/main.py": change})
    kinds = [f.kind for f in change_scan.scan_change(other_gold, other, "tests", "src")]
    assert kinds == ["imports_test_machinery", "names_the_harness"]
    # A candidate cannot widen the exemption by adding a package named like the machinery.
    widened = write(
        tmp_path / "wc", {"src/pkg/__init__.py": "", "src/pkg/main.py": change, "src/_pytest/__init__.py": ""}
    )
    assert "imports_test_machinery" in [f.kind for f in change_scan.scan_change(other_gold, widened, "tests", "src")]


@pytest.mark.parametrize("step", ["3", "8"])
def test_the_gold_changes_of_pytest_chain_steps_raise_no_flag(step):
    """pytest 8.0.2 -> 8.1.1 and 8.2.2 -> 8.3.0, the real sdists: their gold changes write
    sys.modules, import _pytest and name PYTEST_* variables, as the runner does; the oracle of
    pytest's own chain stays clean (without the exemption, 1 and 7 flags)."""
    from swechain_ci.chain import sources
    from swechain_ci.chain.definition import load_chain

    chain = load_chain("pytest-8").select_steps(step)
    gold, after = (sources.materialize(chain, v).code for v in chain.versions)
    assert change_scan.scan_change(gold, after, chain.config.test_folder, ".") != []
    assert change_scan.scan_change(gold, after, chain.config.test_folder, chain.config.source_root) == []
