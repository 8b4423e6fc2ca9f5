"""The files between the host and the harness, defined once for both sides.

The host writes ``/work/eval.json`` (:class:`EvalSettings`) into the test container; the
supervisor (run_hidden_tests.py) leaves ``/out/result.json`` (:class:`HarnessResult`) beside
pytest's report and stream. Standard library only: this module runs on the chain's own Python
in the image (3.9 and later), and its name is unique because the harness folder is on the
runner's ``sys.path``. The host reads ``result.json`` as hostile data: these types name its
keys, they do not vouch for them (evaluation/evaluate.py checks every value it takes).
"""

from __future__ import annotations

from typing import TypedDict

EVAL_FILE = "eval.json"  # in /work, root's
# In /work, root's only (0600), read and removed by the supervisor: {hidden module path: its text
# with the host's tripwires planted} (evaluation/tripwires.py).
PLANTED_FILE = "planted.json"
RESULT_FILE = "result.json"  # in /out, with the files below
REPORT_FILE = "report.json"  # pytest-json-report's report (merged over retries)
STREAM_FILE = "stream.jsonl"  # the harness's own per-test stream
FAILED_IMPORTS_FILE = "failed_imports.jsonl"
OUTPUT_FILE = "output.log"  # the tail of pytest's output

# pytest's exit codes after which its report can be taken: all passed, some failed, none collected.
REPORTED_EXIT_CODES = frozenset({0, 1, 5})
USAGE_ERROR_EXIT_CODE = 4  # the same for every file: retrying file by file cannot help


class RemovedOption(TypedDict):
    name: str
    takes_value: bool


class RenamedSection(TypedDict):
    file: str
    old: str
    new: str


class EvalSettings(TypedDict):
    """``eval.json``: what the supervisor needs of the chain for one run."""

    import_name: str
    test_folder: str
    source_root: str
    protected: list[str]
    remove_options: list[RemovedOption]
    rename_sections: list[RenamedSection]
    extra_args: list[str]
    env: dict[str, str]
    test_timeout_s: int
    run_timeout_s: int
    workers: int


class Flag(TypedDict):
    """An integrity finding of the supervisor (a row of scoring/integrity.py's KINDS)."""

    kind: str
    detail: str
    location: str | None


class _HarnessResultAlways(TypedDict):
    exit_code: int | None  # of the whole-suite run, or of the merged retries
    timed_out: bool
    retried: list[str]  # test files run again one by one after the suite broke off
    unreported: list[str]  # retried files that still reported nothing
    dropped_warning_filters: list[str]


class HarnessResult(_HarnessResultAlways, total=False):
    """``result.json``. ``integrity_flags`` and ``duration_s`` are written last: a result
    without them was cut short."""

    untrusted: str  # why the run's report cannot be taken
    suite_exit_code: int | None  # the whole-suite run's, when retries replaced it
    integrity_flags: list[Flag]
    duration_s: float
