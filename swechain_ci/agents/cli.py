"""``cli`` agents: a command run inside the agent container, one per phase.

Where the manifest names a ``stream`` format, the CLI's JSON events are parsed as they
arrive (agents/streams.py): turns, tokens and dollars are recorded, and the turn and dollar
limits are enforced by that live parse (it ends every agent process once a limit is passed)
on top of whatever flags the CLI has for them. A failed phase is triaged
(agents/triage.py): provider overload, rate limits and network failures are
``infra_error``, anything else a crash.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from swechain_ci.agents.base import (
    CODE_DIR,
    FIX_REPORT_FILE,
    PROMPT_FILE,
    SPEC_FILE,
    PhaseContext,
)
from swechain_ci.agents.manifest import AgentLimits, AgentManifest
from swechain_ci.agents.streams import LiveParse
from swechain_ci.agents.triage import classify
from swechain_ci.models import AgentOutcome
from swechain_ci.prices import load_prices, price_for, prices_date

TRIAGED_TAIL = 1500  # characters of a failed CLI's output that are triaged


def render_command(manifest: AgentManifest, ctx_values: dict[str, str], phase: str) -> list[str]:
    """The argv for one phase, placeholders filled; a string template runs under bash."""
    template = getattr(manifest.commands, phase)
    if isinstance(template, str):
        quoted = {k: shlex.quote(v) for k, v in ctx_values.items()}
        return ["bash", "-c", template.format(**quoted)]
    return [part.format(**ctx_values) for part in template]


def placeholder_values(manifest: AgentManifest, ctx: PhaseContext, cli_session: str | None = None) -> dict[str, str]:
    limits = manifest.limits
    return {
        "spec_file": SPEC_FILE,
        "fix_report_file": FIX_REPORT_FILE,
        "prompt_file": PROMPT_FILE,
        "code_dir": CODE_DIR,
        "session_id": ctx.session_id,
        "model": manifest.model or "",
        "phase": ctx.phase,
        "step": str(ctx.step_index),
        "reasoning_effort": manifest.reasoning_effort or "",
        "max_turns": "" if limits.turns is None else str(limits.turns),
        "max_cost_usd": "" if limits.cost_usd is None else f"{limits.cost_usd:g}",
        "cli_session": cli_session or "",
    }


class CliAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.price = price_for(manifest.model, load_prices()) if manifest.stream else None

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        cli_session = ctx.cli_session  # the Build's, recorded in its outcome; Fix resumes it
        template = getattr(self.manifest.commands, ctx.phase)
        if "{cli_session}" in str(template) and not cli_session:
            return AgentOutcome(
                status="crashed",
                ended_by="no_session",
                detail="Fix resumes the Build session, but the Build stream reported no session id",
            )
        argv = render_command(self.manifest, placeholder_values(self.manifest, ctx, cli_session), ctx.phase)
        with open(ctx.log, "a") as log:
            log.write(f"$ {shlex.join(argv)}\n")
        live = LiveParse(self.manifest.stream, self.price) if self.manifest.stream else None
        passed: list[str] = []
        done = ctx.workspace.run(
            argv,
            timeout_s=ctx.limits.wall_s,
            output_limit=ctx.limits.output_bytes,
            log=ctx.log,
            env=ctx.secrets,
            on_output=self.watcher(live, ctx.limits, passed) if live else None,
        )
        usage = self.usage(live)
        if done.stopped and passed and live:
            return AgentOutcome(
                ended_by="limit",
                limit=passed[0],
                output_truncated=done.truncated,
                **usage,
                detail=self.limit_detail(passed[0], live, ctx, "the live parse ended it"),
            )
        if done.timed_out:
            return AgentOutcome(
                status="timed_out",
                ended_by="limit",
                limit="wall_s",
                output_truncated=done.truncated,
                **usage,
                detail=f"no exit within {ctx.limits.wall_s} s; every agent process was ended",
            )
        if live and live.tally.cli_limit:
            return AgentOutcome(
                ended_by="limit",
                limit=live.tally.cli_limit,
                exit_code=done.exit_code,
                output_truncated=done.truncated,
                **usage,
                detail=self.limit_detail(live.tally.cli_limit, live, ctx, "the CLI stopped itself"),
            )
        if done.exit_code != 0:
            # Only a failed exit is triaged: an error event the CLI recovered from (a retry) is not a failure.
            errors = live.tally.errors if live else []
            signature = classify("\n".join([*errors, done.output[-TRIAGED_TAIL:]]))
            what = (errors[-1] if errors else done.output[-300:]).strip()[:500]
            if signature is not None:
                return AgentOutcome(
                    status="infra_error",
                    ended_by="infra",
                    infra=signature.name,
                    exit_code=done.exit_code,
                    output_truncated=done.truncated,
                    **usage,
                    detail=f"{signature.advice} ({what})",
                )
            return AgentOutcome(
                status="crashed",
                ended_by="exit",
                exit_code=done.exit_code,
                output_truncated=done.truncated,
                **usage,
                detail=f"exited with {done.exit_code}: {what}",
            )
        return AgentOutcome(
            ended_by="exit",
            exit_code=0,
            output_truncated=done.truncated,
            **usage,
            detail=f"exited 0 after {done.output_bytes} bytes of output",
        )

    def usage(self, live: LiveParse | None) -> dict:
        if live is None:
            return {}
        tally = live.finish()
        cost = live.cost_usd
        return {
            "turns": tally.turns,
            "input_tokens": tally.usage.input_tokens,
            "output_tokens": tally.usage.output_tokens,
            "cache_read_tokens": tally.usage.cache_read_tokens,
            "cache_write_tokens": tally.usage.cache_write_tokens,
            "cost_usd": None if cost is None else round(cost, 8),
            "cost_source": live.cost_source,
            "prices_date": prices_date() if live.cost_source == "prices" else None,
            "cli_session": tally.session,
        }

    @staticmethod
    def watcher(live: LiveParse, limits: AgentLimits, passed: list[str]) -> Callable[[bytes], bool]:
        def watch(chunk: bytes) -> bool:
            """Parse as it arrives; True (end the agent) once a turn or dollar limit is passed."""
            live.feed(chunk)
            if limits.turns is not None and live.tally.turns > limits.turns:
                passed.append("turns")
            elif limits.cost_usd is not None and (live.cost_usd or 0.0) > limits.cost_usd:
                passed.append("cost_usd")
            return bool(passed)

        return watch

    @staticmethod
    def limit_detail(limit: str, live: LiveParse, ctx: PhaseContext, how: str) -> str:
        if limit == "turns":
            return f"{live.tally.turns} turns taken (limit {ctx.limits.turns}): {how}"
        cost = live.cost_usd or 0.0
        return f"${cost:.4f} spent (limit ${ctx.limits.cost_usd}): {how}"
