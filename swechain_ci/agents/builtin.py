"""Built-in agents: oracle (the gold code diff), noop, and replay (given patches)."""

from __future__ import annotations

from pathlib import Path

from swechain_ci.agents.base import PhaseContext, apply_in_workspace
from swechain_ci.chain import sources, trees
from swechain_ci.errors import SwechainError
from swechain_ci.models import AgentOutcome


class NoopAgent:
    name = "noop"

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        return AgentOutcome()


class OracleAgent:
    """Applies the step's gold code diff; tests are not part of the code, so never touched."""

    name = "oracle"

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        if ctx.phase == "fix":
            return AgentOutcome(detail="gold code needs no fix")
        before = sources.materialize(ctx.chain, ctx.prev_version).code
        after = sources.materialize(ctx.chain, ctx.next_version).code
        patch = trees.diff(before, after)
        ctx.log.write_text(patch)
        apply_in_workspace(ctx.workspace, patch)
        return AgentOutcome(detail=f"applied the gold code diff {ctx.prev_version} -> {ctx.next_version}")


class ReplayAgent:
    """Applies ``step-<n>.<phase>.patch`` (or ``step-<n>.patch`` for build) from a folder."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise SwechainError(f"replay agent: patch folder {folder} does not exist (use replay:<folder>)")
        self.folder = folder.resolve()
        self.name = f"replay:{folder}"

    def patch_for(self, step: int, phase: str) -> Path | None:
        names = [f"step-{step}.{phase}.patch"] + ([f"step-{step}.patch"] if phase == "build" else [])
        return next((self.folder / n for n in names if (self.folder / n).is_file()), None)

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        patch = self.patch_for(ctx.step_index, ctx.phase)
        if patch is None:
            return AgentOutcome(detail="no patch for this phase")
        apply_in_workspace(ctx.workspace, patch.read_text())
        return AgentOutcome(detail=f"applied {patch.name}")
