"""The leaderboard's history: one snapshot per ISO week, and regression alerts between weeks.

A snapshot is the week's ``leaderboard.json`` (the ``Leaderboard`` model) stored as
``<history>/<YYYY>-W<WW>.json``; writing the same week again replaces it. ``regressions``
compares the latest snapshot with the one before it: pure, so the alert's numbers are
tested on recorded history.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from swechain_ci.errors import SwechainError
from swechain_ci.markdown import inline, plain
from swechain_ci.models import Strict
from swechain_ci.records import read_model, write_model
from swechain_ci.scoring.leaderboard import ChainResult, Leaderboard
from swechain_ci.site.build import run_page_name

WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
DEFAULT_THRESHOLD = 0.05  # five percentage points of chain Build+Fix F1 or resolving


def week_of(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def this_week() -> str:
    return week_of(datetime.now(UTC))


def check_week(week: str) -> str:
    if not WEEK.match(week):
        raise SwechainError(f"week {week!r} is not an ISO week like 2026-W49")
    return week


def record_snapshot(board: Leaderboard, history: Path, week: str | None = None) -> Path:
    """Store ``board`` as the snapshot of ``week`` (default: this week), replacing an earlier one of that week."""
    path = history / f"{check_week(week or this_week())}.json"
    write_model(path, board)
    return path


def load_history(history: Path) -> list[tuple[str, Leaderboard]]:
    """Every snapshot under ``history``, oldest week first; files not named like a week are an error."""
    if not history.is_dir():
        return []
    snapshots = []
    for path in sorted(history.glob("*.json")):
        if not WEEK.match(path.stem):
            raise SwechainError(f"{path} is not a weekly snapshot (named YYYY-Www.json); move it out of {history}")
        snapshots.append((path.stem, read_model(path, Leaderboard)))
    return snapshots


# -- regressions --------------------------------------------------------------------------------


class Alert(Strict):
    kind: Literal["regression", "oracle_changed"]
    chain: str
    agent: str | None = None
    metric: Literal["f1", "resolving"] | None = None
    previous: float | None = None
    current: float | None = None
    previous_week: str
    current_week: str
    detail: str = ""
    runs: list[str] = Field(
        default_factory=list, description="scorecards to look at: the previous week's, then this week's"
    )

    @property
    def drop(self) -> float | None:
        if self.previous is None or self.current is None:
            return None
        return self.previous - self.current


def _results(board: Leaderboard) -> dict[tuple[str, str], ChainResult]:
    return {(row.agent, r.chain): r for row in board.rows for r in row.results}


def _oracles(board: Leaderboard) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in board.rows:
        for r in row.results:
            if r.oracle_hash:
                found.setdefault(r.chain, set()).add(r.oracle_hash)
    return found


def _intervals(
    before: ChainResult, after: ChainResult, metric: str
) -> tuple[tuple[float | None, float], tuple[float | None, float]] | None:
    """(previous mean, its low), (current mean, its high) when both weeks have intervals; else None."""
    if before.repeats is None or after.repeats is None:
        return None
    old = getattr(before.repeats, f"build_fix_{metric}")
    new = getattr(after.repeats, f"build_fix_{metric}")
    if old.low is None or new.high is None:
        return None
    return (old.mean, old.low), (new.mean, new.high)


def regressions(
    previous: tuple[str, Leaderboard], current: tuple[str, Leaderboard], threshold: float = DEFAULT_THRESHOLD
) -> list[Alert]:
    """Oracle changes per chain, then each agent's chain Build+Fix F1 or resolving that fell by more
    than ``threshold`` (a fraction: 0.05 is five points). A value undefined in either week is not compared.
    Where both weeks have repeated runs, their means are compared and the drop must also clear both 95%
    intervals, so noise is not reported as a regression."""
    (old_week, old), (new_week, new) = previous, current
    alerts: list[Alert] = []
    old_oracles, new_oracles = _oracles(old), _oracles(new)
    for chain in sorted(set(old_oracles) & set(new_oracles)):
        if old_oracles[chain] != new_oracles[chain]:
            alerts.append(
                Alert(
                    kind="oracle_changed",
                    chain=chain,
                    previous_week=old_week,
                    current_week=new_week,
                    detail=f"oracle {', '.join(sorted(h[:12] for h in old_oracles[chain]))} -> "
                    f"{', '.join(sorted(h[:12] for h in new_oracles[chain]))}: scores on this chain are not "
                    "comparable across the two weeks",
                    runs=sorted(r.scorecard for (a, c), r in _results(new).items() if c == chain),
                )
            )
    before, after = _results(old), _results(new)
    for key in sorted(set(before) & set(after)):
        agent, chain = key
        for metric in ("f1", "resolving"):
            was, now = getattr(before[key].build_fix, metric), getattr(after[key].build_fix, metric)
            spread = _intervals(before[key], after[key], metric)
            detail = ""
            if spread is not None:
                # Repeated runs on both sides: compare their means, and only a drop beyond run-to-run noise
                # (the two 95% intervals apart) is a regression.
                (was, was_low), (now, now_high) = spread
                if was is None or now is None or was - now <= threshold or now_high >= was_low:
                    continue
                detail = "beyond the run-to-run 95% intervals of both weeks"
            elif was is None or now is None or was - now <= threshold:
                continue
            alerts.append(
                Alert(
                    kind="regression",
                    chain=chain,
                    agent=agent,
                    metric=metric,
                    previous=was,
                    current=now,
                    previous_week=old_week,
                    current_week=new_week,
                    detail=detail,
                    runs=[before[key].scorecard, after[key].scorecard],
                )
            )
    return alerts


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render_alerts(
    alerts: list[Alert], threshold: float, site_url: str | None = None, workflow_url: str | None = None
) -> str:
    """Markdown for the job summary and the issue: what dropped, by how much, and which runs to open.
    Agent and chain names are untrusted: shown as code spans only."""
    if not alerts:
        return ""
    lines = [
        f"## Leaderboard alerts ({len(alerts)})",
        "",
        f"Compared with the previous week's snapshot; threshold {100 * threshold:g} points of chain "
        "Build+Fix F1 or resolving." + (f" This week's runs: {plain(workflow_url)}" if workflow_url else ""),
        "",
    ]
    for a in alerts:
        if a.kind == "oracle_changed":
            lines.append(
                f"- **Oracle changed** on chain {inline(a.chain)} ({a.previous_week} → {a.current_week}): "
                f"{plain(a.detail)}."
            )
        else:
            lines.append(
                f"- {inline(a.agent)} on {inline(a.chain)}: Build+Fix {'F1' if a.metric == 'f1' else 'resolving'} "
                f"{_pct(a.previous)} → {_pct(a.current)} (−{100 * (a.drop or 0):.1f} points, "
                f"{a.previous_week} → {a.current_week})."
            )
            if site_url:
                lines.append(f"  - run page: {plain(site_url).rstrip('/')}/{run_page_name(a.agent or '', a.chain)}")
        lines += [f"  - look at {inline(run, limit=300)}" for run in a.runs]
    return "\n".join(lines) + "\n"
