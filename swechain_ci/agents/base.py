"""What an agent is: something that changes the code in the agent container for one phase."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from swechain_ci.agents.manifest import AgentLimits
from swechain_ci.chain import trees
from swechain_ci.chain.definition import Chain
from swechain_ci.containers.protocol import AGENT_UID, CommandOutcome, Container
from swechain_ci.models import AgentOutcome, AgentPhase

CODE_DIR = "/app/code"
SPEC_FILE = "/app/SPEC.md"
FIX_REPORT_FILE = "/app/FIX_REPORT.md"
PROMPT_FILE = "/app/PROMPT.md"


class Workspace:
    """The agent's side of the persistent container: /app/code, the spec beside it."""

    def __init__(self, container: Container) -> None:
        self.container = container

    def pull_code(self, dest: Path) -> list[str]:
        """Copy /app/code to the host, keeping only what is safe to keep; what was left out, and why."""
        return trees.unpack_untrusted(self.container.get_tree(CODE_DIR), dest, strip="code")

    def push_code(self, source: Path) -> None:
        """Replace /app/code with ``source``."""
        self.container.remove_path(CODE_DIR)
        self.container.put_tree(trees.pack(source, "code", uid=AGENT_UID, gid=AGENT_UID), "/app")

    def put_text(self, path: str, text: str, uid: int = 0) -> None:
        self.container.put_file(path, text.encode(), uid=uid)

    def put_private(self, folder: str, files: dict[str, bytes]) -> None:
        """Files only root can read (the agent user cannot), in ``folder``."""
        self.container.exec(["mkdir", "-m", "700", "-p", folder], user=0)
        for name, content in files.items():
            self.container.put_file(f"{folder}/{name}", content, uid=0, mode=0o600)

    def shell(
        self,
        command: str,
        timeout_s: float,
        output_limit: int,
        log: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandOutcome:
        """``bash -c command`` as the agent user in /app/code, ended (tree and all) at ``timeout_s``."""
        return self.container.run_command(
            ["bash", "-c", command], timeout_s, output_limit, log=log, env=env, workdir=CODE_DIR
        )

    def run(
        self,
        argv: list[str],
        timeout_s: float,
        output_limit: int,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        on_output: Callable[[bytes], bool] | None = None,
    ) -> CommandOutcome:
        return self.container.run_command(
            argv, timeout_s, output_limit, log=log, env=env, workdir=CODE_DIR, on_output=on_output
        )

    def remove(self, path: str) -> None:
        self.container.remove_path(path)


@dataclass
class PhaseContext:
    """Everything an agent gets for one phase. Files in the container: the spec at
    SPEC_FILE, the Fix report at FIX_REPORT_FILE (fix only), the task prompt at
    PROMPT_FILE; the code at /app/code."""

    phase: AgentPhase
    step_index: int
    prev_version: str
    next_version: str
    spec: str
    fix_report: str | None
    prompt: str
    workspace: Workspace
    chain: Chain
    log: Path
    session_id: str
    cli_session: str | None = None  # Fix: the session id the CLI reported in Build, which it resumes
    resumes: AgentOutcome | None = None  # Fix: the Build's outcome, when the Fix resumes its kept session
    limits: AgentLimits = field(default_factory=AgentLimits)
    secrets: dict[str, str] = field(default_factory=dict)


class Agent(Protocol):
    name: str

    def run(self, ctx: PhaseContext) -> AgentOutcome: ...


def apply_in_workspace(workspace: Workspace, patch: str) -> None:
    """Apply a patch to the agent's code: pull, ``git apply``, push back."""
    with tempfile.TemporaryDirectory(prefix="swechain-apply-") as tmp:
        code = Path(tmp) / "code"
        workspace.pull_code(code)
        trees.apply_patch(code, patch)
        workspace.push_code(code)
