"""The scorecard for a terminal: the figures that matter in 80 columns (``scorecard.md`` keeps every
column for GitHub). Every string from a run is plain text here: control characters replaced and
bounded, and never read as rich markup."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from swechain_ci.markdown import plain
from swechain_ci.models import Metrics, Scorecard
from swechain_ci.scoring.report import with_sign as _pct
from swechain_ci.scoring.score import f1_undefined

WIDTH = 80
MAX_FLAGS = 10  # findings listed; scorecard.md has every one


def _counts(m: Metrics) -> str:
    return f"{m.tp}/{m.fn}/{m.fp}"


def _text(value: object, limit: int = 60) -> Text:
    return Text(plain(value, limit))


def render_terminal(card: Scorecard, width: int = WIDTH, color: bool = False) -> str:
    """The scorecard as text at most ``width`` columns wide (ANSI colours only if ``color``)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, color_system="standard" if color else None, highlight=False, markup=False
    )
    title = Text("Scorecard: ", style="bold")
    title.append(plain(card.agent, 40), style="bold cyan")
    title.append(" on ", style="bold")
    title.append(plain(card.chain, 30), style="bold cyan")
    console.print(title)
    facts = (
        f"steps {plain(card.step_range, 20)}, level {plain(card.spec_level, 30)}, "
        f"{card.steps_scored} of {card.steps_total} scored"
        + (f", agent cost ${card.cost_usd:.2f}" if card.cost_usd is not None else "")
    )
    console.print(Text(facts))
    if card.stop_reason:
        console.print(Text(f"{'paused' if card.status == 'paused' else 'stopped'}: {plain(card.stop_reason, 300)}"))
    status = card.integrity.status
    integrity = Text("integrity: ")
    shown = "⚠ flagged" if status == "flagged" else status
    integrity.append(shown, style="green" if status == "clean" else "bold red" if status == "flagged" else "yellow")
    if status == "flagged":
        integrity.append(f", {len(card.integrity.flags)} finding(s); not ranked until a maintainer clears it")
    elif card.integrity.flags:
        integrity.append(f" by {plain(card.integrity.cleared_by, 40)}, {len(card.integrity.flags)} finding(s)")
    console.print(integrity)
    for flag in card.integrity.flags[:MAX_FLAGS]:
        where = f"step {flag.step} {flag.phase or ''}".strip() if flag.step is not None else "run"
        console.print(Text(f"  - {where}: {plain(flag.kind, 40)}: {plain(flag.detail, 160)}"))
    if len(card.integrity.flags) > MAX_FLAGS:
        console.print(Text(f"  … {len(card.integrity.flags) - MAX_FLAGS} more in scorecard.md"))

    totals = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ("phase", "F1", "resolving", "precision", "TP/FN/FP"):
        totals.add_column(header, justify="left" if header == "phase" else "right")
    notes = []
    for label, metrics in (("Build+Fix", card.build_fix), ("Build", card.build)):
        why = f1_undefined(metrics)
        if why and why not in notes:
            notes.append(why)
        f1 = "n/a" + "*" * (notes.index(why) + 1) if why else _pct(metrics.f1)
        totals.add_row(label, f1, _pct(metrics.resolving), _pct(metrics.precision), _counts(metrics))
    console.print(totals)
    for n, why in enumerate(notes, 1):
        console.print(
            Text(
                f"{'*' * n} chain F1 undefined: {why}; a chain's F1 is the harmonic mean of its precision and "
                "resolving, as the paper computes it (a step's is 2TP/(2TP+FP+FN)).",
                style="dim",
            )
        )
    if card.ranking is not None and card.ranking.steps_unscored:
        r = card.ranking
        console.print(
            Text(
                f"for ranking, {len(r.steps_unscored)} unscored step(s) count as unresolved: "
                f"Build+Fix F1 {_pct(r.build_fix.f1)}"
            )
        )

    steps = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header, justify in (
        ("step", "right"),
        ("upgrade", "left"),
        ("rel", "right"),
        ("B F1", "right"),
        ("B+F F1", "right"),
        ("B+F TP/FN/FP", "right"),
        ("fix", "left"),
        ("agent", "left"),
    ):
        steps.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for s in card.steps:
        steps.add_row(
            str(s.index),
            _text(f"{plain(s.prev_version, 16)} → {plain(s.next_version, 16)}"),
            str(s.upgrade_related),
            _pct(s.build.f1),
            _pct(s.build_fix.f1),
            _counts(s.build_fix),
            "yes" if s.fix_ran else "",
            _text(s.agent_status, 20),
        )
    console.print(steps)
    console.print(Text("B = Build, B+F = Build+Fix; n/a = undefined (0/0). Every column: scorecard.md.", style="dim"))
    return buffer.getvalue()
