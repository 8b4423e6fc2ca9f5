"""Scorecards as JSON and Markdown tables."""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from swechain_ci.markdown import cell, inline
from swechain_ci.models import Metrics, Scorecard
from swechain_ci.records import write_model, write_text


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def metric_cells(m: Metrics) -> list[str]:
    return [percent(m.resolving), percent(m.precision), percent(m.f1), f"{m.tp}/{m.fn}/{m.fp}"]


def render(card: Scorecard) -> str:
    headers = ["step", "upgrade", "related", "fix", "agent",
               "B res%", "B prec%", "B F1%", "B TP/FN/FP",
               "B+F res%", "B+F prec%", "B+F F1%", "B+F TP/FN/FP", "cost $"]
    rows = [
        [s.index, f"{cell(s.prev_version, 40)} → {cell(s.next_version, 40)}", s.upgrade_related,
         "yes" if s.fix_ran else "", cell(s.agent_status, 40), *metric_cells(s.build), *metric_cells(s.build_fix),
         "" if s.cost_usd is None else f"{s.cost_usd:.2f}"]
        for s in card.steps
    ]
    totals = [["chain", "Build", *metric_cells(card.build)], ["chain", "Build+Fix", *metric_cells(card.build_fix)]]
    lines = [
        f"# Scorecard: {inline(card.agent, 80)} on {inline(card.chain, 80)}",
        "",
        f"Steps {inline(card.step_range, 40)}; specification level {inline(card.spec_level, 40)}; "
        f"{card.steps_scored} of {card.steps_total} steps scored"
        + (f"; stopped: {inline(card.stop_reason, 300)}" if card.stop_reason else "")
        + (f"; agent cost ${card.cost_usd:.2f}" if card.cost_usd is not None else "") + ".",
        "",
        tabulate(totals, headers=["", "phase", "resolving %", "precision %", "F1 %", "TP/FN/FP"], tablefmt="github"),
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
        "Resolving = TP/(TP+FN), precision = TP/(TP+FP), micro-averaged over steps; n/a = undefined (0/0).",
        "",
    ]
    return "\n".join(lines)


def write_scorecard(output: Path, card: Scorecard) -> None:
    write_model(output / "scorecard.json", card)
    write_text(output / "scorecard.md", render(card))
