"""``cli`` agents: a command run inside the agent container, one per phase.

Where the manifest names a ``stream`` format, the CLI's JSON events are parsed as they
arrive (agents/streams.py): turns, tokens and dollars are recorded, and the turn and dollar
limits are enforced by that live parse (it ends every agent process once a limit is passed)
on top of whatever flags the CLI has for them. The output reaches the step log and the
terminal as it comes (agents/echo.py). A Fix resumes the Build's session where one was kept,
and is charged its own share of the session's totals; where none was kept it starts anew. A failed phase is triaged
(agents/triage.py): provider overload, rate limits and network failures are
``infra_error``, anything else a crash.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from swechain_ci.agents.base import (
    CODE_DIR,
    FIX_REPORT_FILE,
    PROMPT_FILE,
    SPEC_FILE,
    PhaseContext,
)
from swechain_ci.agents.echo import Echo
from swechain_ci.agents.manifest import BASE_URL_ENV, EGRESS_PROXY_ENV, AgentManifest
from swechain_ci.agents.streams import Baseline, LiveParse
from swechain_ci.agents.triage import classify
from swechain_ci.models import AgentOutcome
from swechain_ci.prices import TokenUsage, load_prices, price_for, prices_date

TRIAGED_TAIL = 1500  # characters of a failed CLI's output that are triaged


def render_command(manifest: AgentManifest, ctx_values: dict[str, str], phase: str) -> list[str]:
    """The argv for one phase, placeholders filled; a string template runs under bash."""
    template = getattr(manifest.commands, phase)
    if isinstance(template, str):
        quoted = {k: shlex.quote(v) for k, v in ctx_values.items()}
        return ["bash", "-c", template.format(**quoted)]
    return [part.format(**ctx_values) for part in template]


def placeholder_values(
    manifest: AgentManifest, ctx: PhaseContext, cli_session: str | None = None, base_url: str | None = None
) -> dict[str, str]:
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
        "base_url": base_url or manifest.base_url or "",
    }


def baseline_of(built: AgentOutcome | None) -> Baseline | None:
    """What the Build reported, for a Fix that resumes its session (streams.SESSION_TOTALS)."""
    if built is None:
        return None
    usage = TokenUsage(
        input_tokens=built.input_tokens or 0,
        output_tokens=built.output_tokens or 0,
        cache_read_tokens=built.cache_read_tokens or 0,
        cache_write_tokens=built.cache_write_tokens or 0,
    )
    return Baseline(usage=usage, cost=built.cost_usd if built.cost_source == "cli" else None)


class CliAgent:
    def __init__(self, manifest: AgentManifest, environ: Mapping[str, str] = os.environ) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.price = price_for(manifest.model, load_prices()) if manifest.stream else None
        self.base_url = environ.get(BASE_URL_ENV) or manifest.base_url
        self.proxy = environ.get(EGRESS_PROXY_ENV) if manifest.network.mode == "egress" else None

    def endpoint_env(self) -> dict[str, str]:
        """The CLI's base-URL variable, where the runner or the manifest names an endpoint, and
        the runner's egress proxy for an agent on the egress network (README, Network)."""
        env = {}
        if self.base_url and self.manifest.base_url_env:
            env[self.manifest.base_url_env] = self.base_url
        if self.proxy:
            for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
                env[name] = self.proxy
            env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1"
        return env

    def run(self, ctx: PhaseContext) -> AgentOutcome:
        phase, notes, resumes = ctx.phase, [], ctx.resumes if self.manifest.session == "resume" else None
        fix_command = self.manifest.commands.fix if self.manifest.commands else None
        if resumes is not None and "{cli_session}" in str(fix_command) and not resumes.cli_session:
            resumes = None  # the Build's stream named no session to resume
        if phase == "fix" and self.manifest.session == "resume" and resumes is None:
            # Nothing to resume (the Build's session was dropped, or its stream named none):
            # the Fix starts a session of its own, with the Fix prompt, by the Build command.
            phase = "build"
            notes.append("no Build session to resume: the Fix runs as a new session")
        cli_session = resumes.cli_session if resumes else None
        values = placeholder_values(self.manifest, ctx, cli_session, self.base_url)
        argv = render_command(self.manifest, values, phase)
        with open(ctx.log, "a") as log:
            log.write(f"$ {shlex.join(argv)}\n")
            log.writelines(f"[swechain-ci] {note}\n" for note in notes)
        live = LiveParse(self.manifest.stream, self.price, baseline_of(resumes)) if self.manifest.stream else None
        echo = Echo(ctx.limits.output_bytes)
        passed: list[str] = []

        def watch(chunk: bytes) -> bool:
            """Shown and parsed as it arrives; True (end the agent) once a turn or dollar limit is passed."""
            echo.feed(chunk)
            if live is None:
                return False
            live.feed(chunk)
            limits = ctx.limits
            if limits.turns is not None and live.tally.turns > limits.turns:
                passed.append("turns")
            elif limits.cost_usd is not None and (live.cost_usd or 0.0) > limits.cost_usd:
                passed.append("cost_usd")
            return bool(passed)

        done = ctx.workspace.run(
            argv,
            timeout_s=ctx.limits.wall_s,
            output_limit=ctx.limits.output_bytes,
            log=ctx.log,
            env={**ctx.secrets, **self.endpoint_env()},
            on_output=watch,
        )
        echo.finish()
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
        if live and live.tally.unreadable:  # it worked blind: its permissions kept it from its task
            path, why = next(iter(live.tally.unreadable.items()))
            return AgentOutcome(
                status="crashed",
                ended_by="input_unreadable",
                exit_code=0,
                output_truncated=done.truncated,
                **usage,
                detail=f"the CLI could not read {path} ({why.strip()[:300]}): check its permission config",
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
        cost, own = live.cost_usd, live.usage
        return {
            "turns": tally.turns,
            "input_tokens": own.input_tokens,
            "output_tokens": own.output_tokens,
            "cache_read_tokens": own.cache_read_tokens,
            "cache_write_tokens": own.cache_write_tokens,
            "cost_usd": None if cost is None else round(cost, 8),
            "cost_source": live.cost_source,
            "prices_date": prices_date() if live.cost_source == "prices" else None,
            "cli_session": tally.session,
        }

    @staticmethod
    def limit_detail(limit: str, live: LiveParse, ctx: PhaseContext, how: str) -> str:
        if limit == "turns":
            return f"{live.tally.turns} turns taken (limit {ctx.limits.turns}): {how}"
        cost = live.cost_usd or 0.0
        return f"${cost:.4f} spent (limit ${ctx.limits.cost_usd}): {how}"
