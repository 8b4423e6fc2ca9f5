#!/usr/bin/env python3
"""A stand-in for the vendor CLIs (claude, codex, opencode), installed under their names in
a test agent image (tests/fake_cli/fake-cli.Dockerfile).

It checks that it was called exactly as the shipped manifest documents (flags, order,
prompt, spec and Fix report readable, config files in place, Fix resuming the Build
session), prints the recorded sample of that CLI's JSON event stream
(tests/fixtures/streams/), and does the work: Build applies the step's gold patch plus a
module that breaks collection, so the hidden check asks for a Fix; Fix removes the break.
Any mismatch exits 64 with the reason, which the run records as a crash.

The API key's value picks a behaviour: ``...-overloaded`` prints the stream of a session
whose API calls met 529s and exits 1; ``...-spend`` applies the patch, then keeps spending
(OpenCode steps costing $0.5 each) until it is killed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path("/opt/fake")
STATE = Path.home() / ".fake-cli"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
NUMBER = r"\d+(\.\d+)?"
FIXTURE_SESSION = {
    "claude": "8f0e4b8e-3c1a-4d6e-9b2f-7a5c1e0d9f42",
    "codex": "0199a213-81c0-7800-8aa1-bbab2a035a53",
    "opencode": "ses_5a1b2c3d4ffeK7pQ2mX9vR4tY8",
}
BREAK = "from toyslug import _fake_broken  # noqa\n"


def fail(reason: str) -> None:
    print(f"fake-cli: {reason}", file=sys.stderr, flush=True)
    sys.exit(64)


def expect(argv: list[str], pattern: list[str]) -> None:
    """argv must match the pattern item by item (each a full regular expression)."""
    if len(argv) != len(pattern) or not all(re.fullmatch(p, a, re.DOTALL) for a, p in zip(argv, pattern, strict=True)):
        fail(f"called with {argv!r}; expected {pattern!r}")


def prompt() -> str:
    return re.escape(Path("/app/PROMPT.md").read_text().rstrip("\n"))


def check_files(phase: str) -> None:
    for path in ["/app/SPEC.md", *(["/app/FIX_REPORT.md"] if phase == "fix" else [])]:
        try:
            Path(path).read_text()
        except OSError as exc:
            fail(f"cannot read {path}: {exc}")


def claude(argv: list[str]) -> tuple[str, str]:
    phase = "fix" if "--resume" in argv else "build"
    session_flag = "--resume" if phase == "fix" else "--session-id"
    expect(
        argv,
        [
            "-p",
            prompt(),
            session_flag,
            UUID,
            "--model",
            "claude-sonnet-4-5",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
            "--add-dir",
            "/app",
            "--settings",
            "/opt/agent-config/claude-settings.json",
            "--max-turns",
            r"\d+",
            "--max-budget-usd",
            NUMBER,
        ],
    )
    deny = json.loads(Path("/opt/agent-config/claude-settings.json").read_text())["permissions"]["deny"]
    if not {"WebFetch", "WebSearch", "Bash(curl:*)", "Bash(pip install:*)", "Bash(git push:*)"} <= set(deny):
        fail(f"the settings' deny list lacks network tools, installers or remote git: {deny}")
    return phase, argv[3]


def codex(argv: list[str]) -> tuple[str, str]:
    phase = "fix" if "resume" in argv else "build"
    head = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--model",
        "gpt-5.5",
        "-c",
        "model_reasoning_effort=high",
        "-c",
        "web_search=disabled",
        "-c",
        "model_provider=swechain",
        "-c",
        "model_providers.swechain.base_url=https://api.openai.com/v1",
    ]
    expect(argv, head + (["resume", re.escape(FIXTURE_SESSION["codex"])] if phase == "fix" else []) + [prompt()])
    if "git" not in (Path.home() / ".codex" / "rules" / "swechain.rules").read_text():
        fail("the Codex rules forbid no remote git")
    return phase, FIXTURE_SESSION["codex"]


def opencode(argv: list[str]) -> tuple[str, str]:
    phase = "fix" if "--session" in argv else "build"
    tail = ["--session", re.escape(FIXTURE_SESSION["opencode"])] if phase == "fix" else ["--title", f"swechain-{UUID}"]
    expect(argv, ["run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5", *tail, prompt()])
    config = os.environ.get("OPENCODE_CONFIG", "")
    permission = json.loads(Path(config).read_text())["permission"] if config else {}
    if permission.get("websearch") != "deny" or permission.get("webfetch") != "deny":
        fail(f"OPENCODE_CONFIG={config!r} does not deny websearch and webfetch")
    return phase, FIXTURE_SESSION["opencode"]


def versions() -> tuple[str, str]:
    """The step's versions: the first two version numbers the prompt names."""
    found = re.findall(r"\b\d+(?:\.\d+)+\b", Path("/app/PROMPT.md").read_text())
    if len(found) < 2:
        fail("the prompt names no versions")
    return found[0], found[1]


def work(phase: str) -> None:
    package = Path("/app/code/src/toyslug")
    if phase == "build":
        prev, next_ = versions()
        patch = HERE / "patches" / f"{prev}-{next_}.patch"
        done = subprocess.run(["git", "apply", "-p1", str(patch)], cwd="/app/code", capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"git apply {patch.name}: {done.stderr}")
        (package / "_fake_broken.py").write_text("def broken(:\n")
        init = package / "__init__.py"
        init.write_text(init.read_text() + BREAK)
    else:
        (package / "_fake_broken.py").unlink()
        init = package / "__init__.py"
        init.write_text(init.read_text().replace(BREAK, ""))


def emit(name: str, fixture: str, session: str, resumed: bool = False) -> None:
    """The recorded stream; after a resume, with the session's totals where the real CLI reports them
    (Claude Code's total_cost_usd, Codex's usage: the Build's and the Fix's together)."""
    text = (HERE / "fixtures" / fixture).read_text().replace(FIXTURE_SESSION[name], session)
    for line in text.splitlines():
        if resumed and line.startswith("{"):
            event = json.loads(line)
            if name == "claude" and event.get("type") == "result" and "total_cost_usd" in event:
                event["total_cost_usd"] *= 2
            if name == "codex" and event.get("type") == "turn.completed":
                event["usage"] = {k: 2 * v for k, v in event["usage"].items()}
            line = json.dumps(event)
        print(line, flush=True)


def main() -> None:
    name = Path(sys.argv[0]).name
    phase, session = {"claude": claude, "codex": codex, "opencode": opencode}[name](sys.argv[1:])
    check_files(phase)
    STATE.mkdir(exist_ok=True)
    if phase == "build":
        (STATE / name).write_text(session)
    elif (STATE / name).read_text() != session:
        fail(f"Fix resumes session {session}, but Build ran {(STATE / name).read_text()}")
    key = os.environ.get("CODEX_API_KEY" if name == "codex" else "ANTHROPIC_API_KEY", "")
    stream = {"claude": "claude-stream-json", "codex": "codex-json", "opencode": "opencode-json"}[name]
    if key.endswith("-overloaded"):
        emit(name, f"{stream}.overloaded.jsonl", session)
        sys.exit(1)
    work(phase)
    if key.endswith("-spend"):
        step = json.loads((HERE / "fixtures" / f"{stream}.jsonl").read_text().splitlines()[-1])
        step["part"]["cost"] = 0.5
        while True:
            print(json.dumps(step), flush=True)
            time.sleep(0.2)
    emit(name, f"{stream}.jsonl", session, resumed=phase == "fix")


if __name__ == "__main__":
    main()
