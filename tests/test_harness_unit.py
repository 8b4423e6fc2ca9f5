"""The in-container harness's pieces, run on the host: real pytest, no Docker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from swechain_ci.evaluation.harness import run_hidden_tests as harness

HARNESS_DIR = Path(harness.__file__).parent


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def run_guarded_pytest(root: Path) -> tuple[dict, list[dict]]:
    out = root / "out"
    out.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HARNESS_DIR), str(root / "src")]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "SWECHAIN_OUT": str(out),
        "SWECHAIN_TESTS_ROOT": str(root / "tests"),
    }
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "swechain_guard", "-p", "pytest_jsonreport", "--json-report",
         f"--json-report-file={out / 'report.json'}", "-p", "no:cacheprovider", "-c", str(HARNESS_DIR / "empty.ini"),
         "--rootdir", str(root), "tests"],
        cwd=root, env=env, capture_output=True, text=True,
    )
    report = json.loads((out / "report.json").read_text())
    imports_file = out / "failed_imports.jsonl"
    imports = [json.loads(line) for line in imports_file.read_text().splitlines()] if imports_file.exists() else []
    return {t["nodeid"]: t["outcome"] for t in report["tests"]}, imports


def test_a_missing_name_fails_only_the_tests_that_use_it(tmp_path):
    write(tmp_path, {
        "src/pkg/__init__.py": "def present():\n    return 1\n",
        "tests/test_mod.py": (
            "from pkg import present, missing\n"
            "from pkg.gone import helper\n\n"
            "def test_present():\n    assert present() == 1\n\n"
            "def test_missing():\n    assert missing() == 2\n\n"
            "def test_helper():\n    assert helper\n"
        ),
    })
    outcomes, imports = run_guarded_pytest(tmp_path)
    assert outcomes == {
        "tests/test_mod.py::test_present": "passed",
        "tests/test_mod.py::test_missing": "failed",
        "tests/test_mod.py::test_helper": "failed",
    }
    assert [(i["test_file"], i["module"], i["names"]) for i in imports] == [
        ("tests/test_mod.py", "pkg", ["missing"]),
        ("tests/test_mod.py", "pkg.gone", ["helper"]),
    ]


def test_code_under_test_gets_no_tolerance(tmp_path):
    write(tmp_path, {
        "src/pkg/__init__.py": "from pkg.inner import nothing\n",
        "src/pkg/inner.py": "something = 1\n",
        "tests/test_mod.py": "import pkg\n\ndef test_it():\n    assert pkg\n",
    })
    outcomes, imports = run_guarded_pytest(tmp_path)
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
        ("docs/setup.cfg", True),
    ],
)
def test_what_a_candidate_may_supply(rel, allowed):
    assert harness.candidate_may_supply(PurePosixPath(rel), PurePosixPath("tests"), {"pyproject.toml", "setup.cfg"}) is allowed


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
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    filters = ["error", "ignore::pkg.warnings.Old", "ignore::pkg.warnings.New", "ignore::DeprecationWarning"]
    assert harness.unresolvable_warning_filters(filters, env) == ["ignore::pkg.warnings.New"]


def test_merging_a_broken_off_run_with_file_retries():
    suite = {"tests": [{"nodeid": "tests/a.py::t1", "outcome": "passed"}], "collectors": [],
             "summary": {"collected": 1}}
    retry = {"tests": [{"nodeid": "tests/b.py::t2", "outcome": "failed"}],
             "collectors": [{"nodeid": "tests/b.py", "outcome": "passed"}], "summary": {"collected": 1}}
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


def test_imports_at_test_run_time_are_untouched(tmp_path):
    """Code that inspects import tracebacks (Flask's locate_app does) sees no harness frame."""
    write(tmp_path, {
        "src/pkg/__init__.py": "",
        "tests/test_mod.py": (
            "import builtins\n\n"
            "def test_real_import_at_run_time():\n"
            "    assert builtins.__import__.__module__ == 'builtins'\n"
        ),
    })
    outcomes, _ = run_guarded_pytest(tmp_path)
    assert outcomes == {"tests/test_mod.py::test_real_import_at_run_time": "passed"}
