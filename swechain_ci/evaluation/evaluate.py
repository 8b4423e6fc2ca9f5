"""Hidden-test evaluation of one codebase in a fresh container of the target version.

``evaluate`` runs the container; ``parse`` turns what it left behind into a
``TestRun`` and decides whether the report can be trusted. ``parse`` is pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from swechain_ci.chain import trees
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.protocol import Sandbox
from swechain_ci.containers.runner import run_limits, runner_size, test_workers
from swechain_ci.containers.sandbox import SUPERVISOR_CAPABILITIES, single_file_tar
from swechain_ci.evaluation.harness.swechain_contract import (
    EVAL_FILE,
    FAILED_IMPORTS_FILE,
    OUTPUT_FILE,
    PLANTED_FILE,
    REPORT_FILE,
    REPORTED_EXIT_CODES,
    RESULT_FILE,
    STREAM_FILE,
    EvalSettings,
    HarnessResult,
    RemovedOption,
    RenamedSection,
)
from swechain_ci.evaluation.tripwires import Planting, function_name, judge, scrub
from swechain_ci.models import BROKEN, FailedImport, IntegrityFlag, Status, TestRun
from swechain_ci.records import write_bytes

# pytest exit codes: 0 all passed, 1 some failed, 5 nothing collected.
MESSAGE_CHARS = 600


def evaluate(
    sandbox: Sandbox,
    chain: Chain,
    image: str,
    code: Path,
    labels: dict[str, str],
    log: Path | None = None,
    network: str = "none",
    planting: Planting | None = None,
    keep_planted: bool = False,
) -> TestRun:
    """One hidden-test run; ``log``, if given, receives pytest's whole output as the container kept it.
    ``network`` other than none is only for probing gold code (the oracle's network probe).
    ``planting``: tripwires planted in the hidden modules; the run comes back judged and without them
    (``tripwires.judge``), unless ``keep_planted`` (the oracle's verification reads them)."""
    config = chain.config
    size = runner_size()
    settings: EvalSettings = {
        "import_name": config.import_name,
        "test_folder": config.test_folder,
        "source_root": config.source_root,
        "protected": config.protected_files,
        "remove_options": [RemovedOption(name=o.name, takes_value=o.takes_value) for o in config.pytest.remove_options],
        "rename_sections": [RenamedSection(file=r.file, old=r.old, new=r.new) for r in config.pytest.rename_sections],
        "extra_args": config.pytest.extra_args,
        "env": config.pytest.env,
        "test_timeout_s": config.timeouts.test_s,
        "run_timeout_s": config.timeouts.run_s,
        "workers": test_workers(chain, size),
    }
    # Root's files: the supervisor (root) reads them, the runner gets only what it assembles.
    archives = [
        ("/work", trees.pack(code, "candidate", uid=0, gid=0)),
        ("/work", single_file_tar(EVAL_FILE, json.dumps(settings).encode(), 0)),
    ]
    if planting is not None and planting.files:
        archives.append(("/work", single_file_tar(PLANTED_FILE, json.dumps(planting.files).encode(), 0, 0o600)))
    result = sandbox.run_once(
        image,
        ["/opt/venv/bin/python", "-I", "/opt/swechain/harness/run_hidden_tests.py"],
        archives,
        collect="/out",
        limits=run_limits(chain, size),
        # The harness stops pytest at run_s; the host kills the container a little later.
        timeout_s=config.timeouts.run_s + 60,
        labels=labels,
        network=network,
        user="0",
        capabilities=SUPERVISOR_CAPABILITIES,
        hosts=config.pytest.hosts,
        ipv6_loopback=config.pytest.ipv6_loopback,
    )
    if result.output_error:
        run = TestRun(
            execution_error=result.output_error,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output_tail=result.logs_tail,
        )
    else:
        run = parse_untrusted(result.files, result.exit_code, result.timed_out, result.logs_tail)
    output = (result.files.get(OUTPUT_FILE) or result.logs_tail.encode()).decode(errors="replace")
    if planting is not None and not keep_planted:
        planted = {t: s for t, s in run.statuses.items() if function_name(t) in planting.names}
        output = scrub(output, planting, planted, list(run.statuses))
        run = judge(run, planting)
    if log is not None:
        write_bytes(log, output.encode())
    return run


def parse_untrusted(
    files: dict[str, bytes], container_exit: int | None, host_timed_out: bool, logs: str = ""
) -> TestRun:
    """``parse``, where anything malformed in the container's output (a record with an unexpected key,
    a value of the wrong type, JSON that is not an object) is an execution error naming the cause,
    never a traceback on the host or a run left ``running``."""
    try:
        return parse(files, container_exit, host_timed_out, logs)
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        IndexError,
        RecursionError,
    ) as exc:  # pydantic's ValidationError is a ValueError
        cause = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        return TestRun(
            execution_error=f"the harness's output is malformed ({cause})",
            exit_code=container_exit,
            timed_out=host_timed_out,
            output_tail=logs[-8000:],
        )


def jsonl(raw: bytes | None) -> list[dict]:
    if not raw:
        return []
    lines = []
    for line in raw.decode(errors="replace").splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return lines


def integrity_flags(raw) -> list[IntegrityFlag]:
    """The supervisor's findings; one it could not have written is dropped."""
    flags = []
    for item in raw if isinstance(raw, list) else []:
        try:
            flags.append(IntegrityFlag.model_validate(item))
        except ValidationError:
            continue
    return flags


def stage_status(outcome: str | None, stages: Mapping[str, str | None], xfail: bool) -> Status:
    """One test's status from its setup/call/teardown outcomes."""
    if stages.get("setup") == "failed":
        return Status.error
    if outcome in ("xfailed", "xpassed", "skipped"):
        return Status(outcome)
    if stages.get("setup") == "skipped" or stages.get("call") == "skipped":
        return Status.xfailed if xfail else Status.skipped
    if stages.get("call") == "failed":
        return Status.failed
    if stages.get("teardown") == "failed" or outcome == "error":
        return Status.error
    if stages.get("call") == "passed":
        return Status.xpassed if xfail else Status.passed
    return Status.failed if outcome == "failed" else Status.error


def stream_statuses(lines: list[dict]) -> tuple[dict[str, Status], dict[str, str]]:
    stages: dict[str, dict[str, str]] = {}
    xfail: dict[str, bool] = {}
    collection_errors = {}
    for line in lines:
        if "collector" in line:
            collection_errors[line["collector"]] = line.get("longrepr", "")
        else:
            stages.setdefault(line["nodeid"], {})[line["when"]] = line["outcome"]
            xfail[line["nodeid"]] = xfail.get(line["nodeid"], False) or line.get("xfail", False)
    return {n: stage_status(None, s, xfail[n]) for n, s in stages.items()}, collection_errors


def crash_message(entry: dict) -> str:
    for stage in ("setup", "call", "teardown"):
        info = entry.get(stage) or {}
        if info.get("outcome") == "failed":
            crash = info.get("crash") or {}
            message = crash.get("message") or str(info.get("longrepr", "")).strip().splitlines()[-1:]
            return (message if isinstance(message, str) else " ".join(message))[:MESSAGE_CHARS]
    return ""


def parse(files: dict[str, bytes], container_exit: int | None, host_timed_out: bool, logs: str = "") -> TestRun:
    """Interpret one evaluation's output, cross-checking the report before trusting it."""
    # Hostile until checked: the contract names its keys; every value below is read with a default and validated.
    result: HarnessResult = json.loads(files.get(RESULT_FILE, b"{}"))
    timed_out = host_timed_out or bool(result.get("timed_out"))
    exit_code = result.get("exit_code")
    output_tail = files.get(OUTPUT_FILE, b"").decode(errors="replace")[-8000:] or logs
    failed_imports = []
    for line in jsonl(files.get(FAILED_IMPORTS_FILE)):
        record = FailedImport.model_validate(line)
        if record not in failed_imports:
            failed_imports.append(record)
    streamed, streamed_collection_errors = stream_statuses(jsonl(files.get(STREAM_FILE)))
    base = dict(
        exit_code=exit_code,
        timed_out=timed_out,
        failed_imports=failed_imports,
        duration_s=result.get("duration_s", 0.0),
        output_tail=output_tail,
        integrity_flags=integrity_flags(result.get("integrity_flags")),
    )
    if REPORT_FILE not in files:
        if timed_out:
            # Killed at the time limit: keep what was reached; the rest counts as error.
            return TestRun(statuses=streamed, collection_errors=streamed_collection_errors, **base)
        reason = "the harness left no result" if not result else f"pytest left no report (exit code {exit_code})"
        if container_exit not in (0, None):
            reason += f"; the container exited with {container_exit}"
        return TestRun(execution_error=reason, **base)
    try:
        report = json.loads(files[REPORT_FILE])
    except json.JSONDecodeError:
        return TestRun(execution_error="the pytest report is not valid JSON", **base)
    statuses: dict[str, Status] = {}
    messages: dict[str, str] = {}
    for entry in report.get("tests", []):
        stages = {s: (entry.get(s) or {}).get("outcome") for s in ("setup", "call", "teardown")}
        status = stage_status(entry.get("outcome"), stages, False)
        statuses[entry["nodeid"]] = status
        if status in BROKEN:
            messages[entry["nodeid"]] = crash_message(entry)
    collection_errors = {
        c["nodeid"]: str(c.get("longrepr", "")) for c in report.get("collectors", []) if c.get("outcome") == "failed"
    }
    summary = report.get("summary", {})
    collected = summary.get("collected")
    run = TestRun(
        statuses=statuses,
        collection_errors=collection_errors,
        error_messages=messages,
        collected=collected,
        **base,
    )
    problem = result.get("untrusted") or distrust(run, report, streamed)
    return run.model_copy(update={"execution_error": problem}) if problem else run


def distrust(run: TestRun, report: dict, streamed: dict[str, Status]) -> str | None:
    """Why a report cannot be taken at its word, or None when all cross-checks agree."""
    if run.exit_code not in REPORTED_EXIT_CODES:
        return f"pytest exited with code {run.exit_code} (interrupted, internal or usage error)"
    broken = any(s in BROKEN for s in run.statuses.values()) or bool(run.collection_errors)
    if run.exit_code == 0 and broken:
        return "the report shows failures but pytest exited 0"
    if run.exit_code == 1 and not broken:
        return "pytest exited 1 but the report shows no failure"
    if run.exit_code == 5 and run.statuses:
        return "pytest reported no tests collected but the report lists tests"
    summary = report.get("summary", {})
    expected = (summary.get("collected") or 0) - (summary.get("deselected") or 0)
    if run.statuses and expected != len(run.statuses):
        return f"the report lists {len(run.statuses)} tests but pytest collected {expected}"
    # The stream may hold more (tests a crashed run reached); never less, never otherwise.
    disagreeing = [n for n, s in run.statuses.items() if n in streamed and streamed[n] != s]
    if disagreeing or set(run.statuses) - set(streamed):
        return "the report disagrees with the harness's own per-test stream"
    return None
