"""Scorecards as JSON and Markdown tables."""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from swechain_ci.markdown import cell, inline
from swechain_ci.models import Integrity, Metrics, Scorecard, Usage
from swechain_ci.records import RunFolder, write_model, write_text


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def with_sign(value: float | None) -> str:
    """A percentage in running text: "12.5%", or "n/a" (never "n/a%")."""
    return "n/a" if value is None else f"{percent(value)}%"


def metric_cells(m: Metrics) -> list[str]:
    return [percent(m.resolving), percent(m.precision), percent(m.f1), f"{m.tp}/{m.fn}/{m.fp}"]


def integrity_lines(integrity: Integrity) -> list[str]:
    """The run's integrity: one line when clean, else a marked line and one line per flag."""
    if integrity.status == "clean":
        return ["Integrity: clean.", ""]
    if integrity.status == "cleared":
        head = (
            f"Integrity: **cleared** by {inline(integrity.cleared_by, 100)} ({inline(integrity.cleared_reason, 300)}); "
            f"{len(integrity.flags)} finding(s):"
        )
    else:
        head = (
            f"Integrity: **⚠ flagged**, {len(integrity.flags)} finding(s); not ranked until a maintainer "
            "clears it (`swechain-ci integrity clear`):"
        )
    lines = [head, ""]
    for flag in integrity.flags:
        where = f"step {flag.step} {flag.phase or ''}".strip() if flag.step is not None else "run"
        at = f" at {inline(flag.location, 200)}" if flag.location else ""
        lines.append(f"- {where}: {inline(flag.kind, 60)}{at}: {inline(flag.detail, 500)}")
    return [*lines, ""]


def ranking_line(card: Scorecard) -> list[str]:
    if card.ranking is None or not card.ranking.steps_unscored:
        return []
    r = card.ranking
    return [
        f"For ranking, the {len(r.steps_unscored)} step(s) never scored ({', '.join(map(str, r.steps_unscored))}) count "
        f"their {r.fn_added} upgrade-related tests as unresolved: Build+Fix resolving {with_sign(r.build_fix.resolving)}, "
        f"precision {with_sign(r.build_fix.precision)}, F1 {with_sign(r.build_fix.f1)} "
        f"({r.build_fix.tp}/{r.build_fix.fn}/{r.build_fix.fp}); Build F1 {with_sign(r.build.f1)}.",
        "",
    ]


def tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def usage_cells(usage: Usage | None) -> list[str]:
    """Turns, and tokens as input/output/cache (cache reads + writes); blank when not reported."""
    if usage is None or (usage.turns is None and usage.input_tokens is None):
        return ["", ""]
    cache = None if usage.cache_read_tokens is None else usage.cache_read_tokens + (usage.cache_write_tokens or 0)
    shown = (
        ""
        if usage.input_tokens is None
        else f"{tokens(usage.input_tokens)}/{tokens(usage.output_tokens)}/{tokens(cache)}"
    )
    return ["" if usage.turns is None else str(usage.turns), shown]


def usage_sentence(usage: Usage | None) -> str:
    turns, shown = usage_cells(usage)
    return (f"; {turns} agent turns" if turns else "") + (f", tokens in/out/cache {shown}" if shown else "")


def render(card: Scorecard) -> str:
    headers = [
        "step",
        "upgrade",
        "related",
        "fix",
        "agent",
        "B res%",
        "B prec%",
        "B F1%",
        "B TP/FN/FP",
        "B+F res%",
        "B+F prec%",
        "B+F F1%",
        "B+F TP/FN/FP",
        "turns",
        "tokens in/out/cache",
        "cost $",
    ]
    rows = [
        [
            s.index,
            f"{cell(s.prev_version, 40)} → {cell(s.next_version, 40)}",
            s.upgrade_related,
            "yes" if s.fix_ran else "",
            cell(s.agent_status, 40),
            *metric_cells(s.build),
            *metric_cells(s.build_fix),
            *usage_cells(s.usage),
            "" if s.cost_usd is None else f"{s.cost_usd:.2f}",
        ]
        for s in card.steps
    ]
    totals = [["chain", "Build", *metric_cells(card.build)], ["chain", "Build+Fix", *metric_cells(card.build_fix)]]
    lines = [
        f"# Scorecard: {inline(card.agent, 80)} on {inline(card.chain, 80)}",
        "",
        f"Steps {inline(card.step_range, 40)}; specification level {inline(card.spec_level, 40)}; "
        f"{card.steps_scored} of {card.steps_total} steps scored"
        + (
            f"; {'paused' if card.status == 'paused' else 'stopped'}: {inline(card.stop_reason, 500)}"
            if card.stop_reason
            else ""
        )
        + (f"; agent cost ${card.cost_usd:.2f}" if card.cost_usd is not None else "")
        + usage_sentence(card.usage)
        + ".",
        "",
        *integrity_lines(card.integrity),
        tabulate(totals, headers=["", "phase", "resolving %", "precision %", "F1 %", "TP/FN/FP"], tablefmt="github"),
        "",
        *ranking_line(card),
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
        "Resolving = TP/(TP+FN), precision = TP/(TP+FP), micro-averaged over steps; n/a = undefined (0/0).",
        "",
    ]
    return "\n".join(lines)


def write_scorecard(output: Path, card: Scorecard) -> None:
    folder = RunFolder(output)
    write_model(folder.scorecard, card)
    write_text(folder.scorecard_md, render(card))
