"""``cli`` agents: a command run inside the agent container, one per phase."""

from __future__ import annotations

import shlex

from swechain_ci.agents.base import (
    CODE_DIR,
    FIX_REPORT_FILE,
    PROMPT_FILE,
    SPEC_FILE,
    PhaseContext,
)
from swechain_ci.agents.manifest import AgentManifest
from swechain_ci.models import AgentOutcome


def render_command(manifest: AgentManifest, ctx_values: dict[str, str], phase: str) -> list[str]:
    """The argv for one phase, placeholders filled; a string template runs under bash."""
    template = getattr(manifest.commands, phase)
    if isinstance(template, str):
        quoted = {k: shlex.quote(v) for k, v in ctx_values.items()}
        return ["bash", "-c", template.format(**quoted)]
    return [part.format(**ctx_values) for part in template]


def placeholder_values(manifest: AgentManifest, ctx: PhaseContext) -> dict[str, str]:
    return {
        "spec_file": SPEC_FILE,
        "fix_report_file": FIX_REPORT_FILE,
        "prompt_file": PROMPT_FILE,
        "code_dir": CODE_DIR,
        "session_id": ctx.session_id,
        "model": manifest.model or "",
        "phase": ctx.phase,
        "step": str(ctx.step_index),
    }


class CliAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self.name = manifest.name

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        argv = render_command(self.manifest, placeholder_values(self.manifest, ctx), ctx.phase)
        with open(ctx.log, "a") as log:
            log.write(f"$ {shlex.join(argv)}\n")
        done = ctx.workspace.run(
            argv, timeout_s=ctx.limits.wall_s, output_limit=ctx.limits.output_bytes, log=ctx.log, env=ctx.secrets,
        )
        if done.timed_out:
            return AgentOutcome(status="timed_out", ended_by="wall_clock", output_truncated=done.truncated,
                                detail=f"no exit within {ctx.limits.wall_s} s; every agent process was ended")
        if done.exit_code != 0:
            return AgentOutcome(status="crashed", ended_by="exit", exit_code=done.exit_code,
                                output_truncated=done.truncated,
                                detail=f"exited with {done.exit_code}: {done.output[-300:].strip()}")
        return AgentOutcome(ended_by="exit", exit_code=0, output_truncated=done.truncated,
                            detail=f"exited 0 after {done.output_bytes} bytes of output")
