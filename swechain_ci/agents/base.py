"""What an agent is: something that changes the code in the agent container for one phase."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from swechain_ci import trees
from swechain_ci.chain import Chain
from swechain_ci.models import AgentOutcome
from swechain_ci.sandbox import AGENT_UID, AgentContainer

CODE_DIR = "/app/code"


class Workspace:
    """The agent's side of the persistent container: /app/code, the spec beside it."""

    def __init__(self, container: AgentContainer) -> None:
        self.container = container

    def pull_code(self, dest: Path) -> None:
        """Copy /app/code to the host, keeping only what is safe to keep."""
        trees.unpack_untrusted(self.container.get_tree(CODE_DIR), dest, strip="code")

    def push_code(self, source: Path) -> None:
        """Replace /app/code with ``source``."""
        self.container.remove_path(CODE_DIR)
        self.container.put_tree(trees.pack(source, "code", uid=AGENT_UID, gid=AGENT_UID), "/app")

    def put_text(self, path: str, text: str) -> None:
        self.container.put_file(path, text.encode(), uid=0)

    def remove(self, path: str) -> None:
        self.container.remove_path(path)


@dataclass
class PhaseContext:
    phase: Literal["build", "fix"]
    step_index: int
    prev_version: str
    next_version: str
    spec: str
    fix_report: str | None
    workspace: Workspace
    chain: Chain
    log: Path


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
