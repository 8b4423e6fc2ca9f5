"""A leaderboard over many runs: per agent, the plain mean over chains of each chain's scores.

For every agent and for Build and Build+Fix, resolving, precision and F1 are each the
plain (unweighted) mean of the chain-level values of the scorecards found; F1 is the
mean of the chains' F1s, not the F1 of the means. A null (undefined) chain value is left
out of its mean and the number of chains that have a value is recorded; with none, the
mean is null. One scorecard per agent and chain counts: of several, the latest by file
modification time, and the others are listed as superseded.

Averages are only taken over comparable runs: an agent's row belongs to a *cohort*, the set of
(chain, specification level) pairs its counted scorecards cover, and ranks are given within a
cohort; agents on other chains or levels are ranked apart, never against each other.

Ranking uses each scorecard's ranking figures, where the steps of a run's range that were
never scored count as unresolved (SEMANTICS.md, "Ranking a run that did not finish"); both
those and the paper's figures are shown. A scorecard whose integrity is ``flagged`` is
listed, marked, and left out of every mean and rank until a maintainer clears it
(``swechain-ci integrity clear``); a cleared one counts and says so.

Writes ``leaderboard.json`` (the ``Leaderboard`` model), ``leaderboard.md`` and
``leaderboard.png`` (Build+Fix resolving, precision and F1 per agent).
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field
from tabulate import tabulate

from swechain_ci.errors import SwechainError
from swechain_ci.markdown import cell, inline
from swechain_ci.models import Metrics, Record, Scorecard, Strict, Usage
from swechain_ci.records import SCORECARD_FILE, read_model, write_bytes, write_model, write_text
from swechain_ci.specs.store import INTERFACE, split_level


class PublishedFigure(Strict):
    """A figure the SWE-Chain paper reports (arXiv 2605.14415), shown beside ours, never a score."""

    model_config = ConfigDict(frozen=True)
    label: str
    phase: Literal["Build", "Build+Fix"]
    resolving: float
    precision: float
    f1: float | None


# The paper's headline figures: 9 agent configurations on its 12 chains (155 steps).
PAPER_CONFIGURATIONS = 9
PAPER_FIGURES = (
    PublishedFigure(label="mean of 9 configurations", phase="Build+Fix", resolving=0.448, precision=0.654, f1=0.502),
    PublishedFigure(label="best configuration", phase="Build+Fix", resolving=0.608, precision=0.806, f1=0.685),
    PublishedFigure(label="mean of 9 configurations", phase="Build", resolving=0.397, precision=0.540, f1=None),
)


class Mean(Strict):
    value: float | None = Field(description="plain mean over the chains that have a value; null if none has")
    chains: int = Field(description="how many chains have a value")


class PhaseMeans(Strict):
    resolving: Mean
    precision: Mean
    f1: Mean


# Two-sided 95% critical values of Student's t by degrees of freedom; beyond the table, the normal's.
T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    25: 2.060,
    30: 2.042,
}


def t95(df: int) -> float:
    """The largest tabled critical value at or below ``df`` degrees of freedom (conservative between rows)."""
    return next((T95[k] for k in sorted(T95, reverse=True) if k <= df), T95[1]) if df <= 30 else 1.96


class Interval(Strict):
    """A figure over repeated runs: their mean and a 95% t-interval (none from a single run)."""

    runs: int = Field(description="runs with a defined value")
    mean: float | None
    low: float | None = Field(description="null with fewer than two runs")
    high: float | None


def interval(values: Iterable[float | None]) -> Interval:
    known = [v for v in values if v is not None]
    if not known:
        return Interval(runs=0, mean=None, low=None, high=None)
    mean = math.fsum(known) / len(known)
    if len(known) < 2:
        return Interval(runs=1, mean=mean, low=None, high=None)
    half = t95(len(known) - 1) * statistics.stdev(known) / math.sqrt(len(known))
    return Interval(runs=len(known), mean=mean, low=mean - half, high=mean + half)


class Repeats(Strict):
    """The runs of one agent on one chain with the same inputs (level, steps, oracle): repeated samples."""

    runs: int
    build_fix_f1: Interval
    build_fix_resolving: Interval


class ChainResult(Strict):
    """One scorecard that counts (the latest of its inputs), with its repeats where there are several."""

    chain: str
    step_range: str
    spec_level: str
    steps_scored: int
    steps_total: int
    stop_reason: str | None
    build: Metrics
    build_fix: Metrics
    ranking_build_fix: Metrics = Field(description="Build+Fix with never-scored steps counted as unresolved")
    ranking_build: Metrics
    integrity: Literal["clean", "flagged", "cleared"] = "clean"
    flags: int = 0
    cost_usd: float | None
    usage: Usage | None = Field(None, description="the agent's turns and tokens over the scored steps")
    scorecard: str = Field(description="path of the scorecard.json")
    oracle_hash: str | None = Field(None, description="the chain oracle the run was scored against")
    repeats: Repeats | None = Field(None, description="over every run with the same inputs, this one included")


class FlaggedRun(Strict):
    agent: str
    result: ChainResult


class Superseded(Strict):
    agent: str
    chain: str
    kept: str
    dropped: str


class AgentRow(Strict):
    rank: int = Field(description="rank within the row's cohort")
    agent: str
    cohort: str = Field("", description="the (chain@level) pairs the row's means cover; ranks compare one cohort")
    chains: list[str]
    steps_scored: int
    steps_total: int
    cost_usd: float | None = Field(description="total over the steps whose cost is known; null if none is")
    cost_steps: int = Field(description="steps whose cost is known")
    usage: Usage | None = Field(None, description="turns and tokens summed over the chains, where reported")
    build: PhaseMeans
    build_fix: PhaseMeans
    ranking_build: PhaseMeans = Field(description="the means of the ranking figures (unscored steps as FN)")
    ranking_build_fix: PhaseMeans = Field(description="what the rank is decided by")
    build_fix_f1_runs: Interval | None = Field(
        None,
        description="the mean over chains of each chain's mean Build+Fix F1 over its runs, with a 95% interval "
        "when every chain has two runs or more",
    )
    results: list[ChainResult]


class Leaderboard(Record):
    generated_at: str
    spec_level: str | None = Field(None, description="only scorecards of this level, if set")
    scorecards: int = Field(description="scorecards found (including superseded ones)")
    rows: list[AgentRow] = Field(description="one per agent, ranked by ranking Build+Fix F1, nulls last")
    flagged: list[FlaggedRun] = Field(default_factory=list, description="flagged runs: shown, not ranked")
    superseded: list[Superseded] = Field(default_factory=list)


# -- collecting ---------------------------------------------------------------------------------


def find_scorecards(folders: Iterable[Path]) -> list[Path]:
    """Every ``scorecard.json`` under the folders, recursively (a scorecard file may be given directly)."""
    found: set[Path] = set()
    for folder in folders:
        if folder.is_file() and folder.name == SCORECARD_FILE:
            found.add(folder)
        elif folder.is_dir():
            found.update(p for p in folder.rglob(SCORECARD_FILE) if p.is_file())
        else:
            raise SwechainError(f"{folder} is not a folder of runs (or a scorecard.json); give the runs' parent folder")
    return sorted(found)


def _mean(values: Iterable[float | None]) -> Mean:
    known = [v for v in values if v is not None]
    return Mean(value=math.fsum(known) / len(known) if known else None, chains=len(known))


def _phase(metrics: Sequence[Metrics]) -> PhaseMeans:
    return PhaseMeans(
        resolving=_mean(m.resolving for m in metrics),
        precision=_mean(m.precision for m in metrics),
        f1=_mean(m.f1 for m in metrics),
    )


def _cost(card: Scorecard) -> tuple[float | None, int]:
    known = [s.cost_usd for s in card.steps if s.cost_usd is not None]
    return (math.fsum(known) if known else None), len(known)


def _rank_key(row: AgentRow) -> tuple:
    f1, res = row.ranking_build_fix.f1.value, row.ranking_build_fix.resolving.value
    return (f1 is None, -(f1 or 0.0), res is None, -(res or 0.0), row.agent)


def _entrant(card: Scorecard) -> str:
    """The row a scorecard counts in: runs whose specifications carried the interface section
    (level ``<level>+interface``) form a row of their own, never averaged with, nor superseding,
    the agent's runs without it."""
    return card.agent + (INTERFACE if split_level(card.spec_level)[1] else "")


def same_inputs(card: Scorecard, latest: Scorecard) -> bool:
    """A repeat of the latest run: same level, steps and oracle (known); anything else it superseded."""
    return (
        card.oracle_hash is not None
        and (card.oracle_hash, card.spec_level, card.step_range)
        == (latest.oracle_hash, latest.spec_level, latest.step_range)
        and card.integrity.status != "flagged"
    )


def repeats_of(cards: Sequence[Scorecard]) -> Repeats | None:
    if len(cards) < 2:
        return None
    return Repeats(
        runs=len(cards),
        build_fix_f1=interval(c.build_fix.f1 for c in cards),
        build_fix_resolving=interval(c.build_fix.resolving for c in cards),
    )


def average_interval(results: Sequence[ChainResult]) -> Interval | None:
    """The agent's average Build+Fix F1 over its runs: the mean over chains of each chain's mean, and a
    95% interval from the chains' own spreads (k chains: half-width t·sqrt(Σ s²/n)/k, df the fewest runs
    less one). None when no chain has repeats; no interval while a chain has a single run."""
    if not any(r.repeats for r in results):
        return None
    per_chain = [r.repeats.build_fix_f1 if r.repeats else interval([r.build_fix.f1]) for r in results]
    means = [i.mean for i in per_chain if i.mean is not None]
    if not means:
        return Interval(runs=0, mean=None, low=None, high=None)
    mean = math.fsum(means) / len(means)
    spread = [i for i in per_chain if i.mean is not None]
    if any(i.low is None or i.high is None or i.runs < 2 for i in spread):
        return Interval(runs=min(i.runs for i in spread), mean=mean, low=None, high=None)
    variance = math.fsum(((i.high - i.mean) / t95(i.runs - 1)) ** 2 for i in spread)  # type: ignore[operator]
    half = t95(min(i.runs for i in spread) - 1) * math.sqrt(variance) / len(spread)
    return Interval(runs=min(i.runs for i in spread), mean=mean, low=mean - half, high=mean + half)


def cohort_of(results: Iterable[ChainResult]) -> str:
    """What a row's averages are over: its chains, each with the specification level it ran at."""
    return ", ".join(sorted(f"{r.chain}@{r.spec_level}" for r in results))


def cohorts(board: Leaderboard) -> list[tuple[str, list[AgentRow]]]:
    """The board's rows grouped by cohort, in the board's order."""
    grouped: dict[str, list[AgentRow]] = {}
    for row in board.rows:
        grouped.setdefault(row.cohort, []).append(row)
    return list(grouped.items())


def build_leaderboard(folders: Sequence[Path], spec_level: str | None = None) -> Leaderboard:
    paths = find_scorecards(folders)
    if not paths:
        raise SwechainError(
            f"no scorecard.json under {', '.join(str(f) for f in folders)}: "
            "point at the folders that hold the runs (or their downloaded artifacts)"
        )
    cards = [(p, read_model(p, Scorecard)) for p in paths]
    if spec_level is not None:
        cards = [(p, c) for p, c in cards if c.spec_level == spec_level]
        if not cards:
            raise SwechainError(f"none of the {len(paths)} scorecards found is at spec level {spec_level}")

    groups: dict[tuple[str, str], list[tuple[Path, Scorecard]]] = {}
    # oldest first; the path breaks ties in modification time
    for path, card in sorted(cards, key=lambda pc: (pc[0].stat().st_mtime_ns, str(pc[0]))):
        groups.setdefault((_entrant(card), card.chain), []).append((path, card))
    latest = {key: group[-1] for key, group in groups.items()}
    repeated = {key: [card for _, card in group if same_inputs(card, group[-1][1])] for key, group in groups.items()}
    superseded = [
        Superseded(agent=agent, chain=chain, kept=str(group[-1][0]), dropped=str(path))
        for (agent, chain), group in groups.items()
        for path, card in group[:-1]
        if not same_inputs(card, group[-1][1])
    ]

    by_agent: dict[str, list[tuple[Path, Scorecard]]] = {}
    for (agent, _), pair in sorted(latest.items()):
        by_agent.setdefault(agent, []).append(pair)

    rows, flagged = [], []
    for agent, pairs in by_agent.items():
        results = []
        for path, card in pairs:
            cost, _ = _cost(card)
            ranked = card.ranking
            result = ChainResult(
                chain=card.chain,
                step_range=card.step_range,
                spec_level=card.spec_level,
                steps_scored=card.steps_scored,
                steps_total=card.steps_total,
                stop_reason=card.stop_reason,
                build=card.build,
                build_fix=card.build_fix,
                ranking_build=ranked.build if ranked else card.build,
                ranking_build_fix=ranked.build_fix if ranked else card.build_fix,
                integrity=card.integrity.status,
                flags=len(card.integrity.flags),
                cost_usd=cost,
                usage=card.usage,
                scorecard=str(path),
                oracle_hash=card.oracle_hash,
                repeats=repeats_of(repeated[(agent, card.chain)]),
            )
            if result.integrity == "flagged":
                flagged.append(FlaggedRun(agent=agent, result=result))
            else:
                results.append(result)
        if not results:
            continue
        counted = [card for path, card in pairs if card.integrity.status != "flagged"]
        costs = [_cost(card) for card in counted]
        cost_steps = sum(n for _, n in costs)
        rows.append(
            AgentRow(
                rank=0,
                agent=agent,
                chains=[r.chain for r in results],
                steps_scored=sum(r.steps_scored for r in results),
                steps_total=sum(r.steps_total for r in results),
                cost_usd=math.fsum(c for c, _ in costs if c is not None) if cost_steps else None,
                cost_steps=cost_steps,
                usage=Usage.total([r.usage for r in results if r.usage is not None]),
                build=_phase([r.build for r in results]),
                build_fix=_phase([r.build_fix for r in results]),
                ranking_build=_phase([r.ranking_build for r in results]),
                ranking_build_fix=_phase([r.ranking_build_fix for r in results]),
                build_fix_f1_runs=average_interval(results),
                results=results,
            )
        )
    for row in rows:
        row.cohort = cohort_of(row.results)
    sizes: dict[str, int] = {}
    for row in rows:
        sizes[row.cohort] = sizes.get(row.cohort, 0) + 1
    # The largest cohort first (the comparison most agents share), then by rank within each.
    rows.sort(key=lambda r: (-sizes[r.cohort], r.cohort, *_rank_key(r)))
    previous, rank = None, 0
    for row in rows:
        rank = rank + 1 if row.cohort == previous else 1
        row.rank, previous = rank, row.cohort
    superseded.sort(key=lambda s: (s.agent, s.chain, s.dropped))
    return Leaderboard(
        generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        spec_level=spec_level,
        scorecards=len(cards),
        rows=rows,
        flagged=flagged,
        superseded=superseded,
    )


# -- rendering ----------------------------------------------------------------------------------


def _cell(mean: Mean, chains: int) -> str:
    if mean.value is None:
        return "n/a"
    text = f"{100 * mean.value:.1f}"
    return text if mean.chains == chains else f"{text} ({mean.chains}/{chains})"


def _cost_cell(row: AgentRow) -> str:
    if row.cost_usd is None:
        return "n/a"
    text = f"{row.cost_usd:.2f}"
    return text if row.cost_steps == row.steps_scored else f"{text} ({row.cost_steps}/{row.steps_scored} steps)"


def _usage_cells(usage: Usage | None) -> list[str]:
    if usage is None or usage.input_tokens is None:
        return ["" if usage is None or usage.turns is None else str(usage.turns), ""]
    return ["" if usage.turns is None else str(usage.turns), f"{usage.input_tokens:,}/{usage.output_tokens or 0:,}"]


def render_markdown(board: Leaderboard) -> str:
    headers = [
        "rank",
        "agent",
        "compared over",
        "steps scored",
        "ranked B+F F1 %",
        "ranked B+F resolving %",
        "B+F resolving %",
        "B+F precision %",
        "B+F F1 %",
        "B resolving %",
        "B precision %",
        "B F1 %",
        "turns",
        "tokens in/out",
        "cost $",
    ]
    table = []
    for row in board.rows:
        n = len(row.chains)
        cleared = sum(r.integrity == "cleared" for r in row.results)
        table.append(
            [
                row.rank,
                cell(row.agent, 80) + (f" (cleared: {cleared})" if cleared else ""),
                cell(row.cohort, 200),
                f"{row.steps_scored}/{row.steps_total}",
                _cell(row.ranking_build_fix.f1, n),
                _cell(row.ranking_build_fix.resolving, n),
                *(_cell(getattr(row.build_fix, m), n) for m in ("resolving", "precision", "f1")),
                *(_cell(getattr(row.build, m), n) for m in ("resolving", "precision", "f1")),
                *_usage_cells(row.usage),
                _cost_cell(row),
            ]
        )
    per_chain = [
        [
            cell(row.agent, 80),
            cell(r.chain, 80),
            cell(r.spec_level, 40),
            cell(r.step_range, 40),
            f"{r.steps_scored}/{r.steps_total}",
            *(
                ("n/a" if v is None else f"{100 * v:.1f}")
                for v in (r.build_fix.resolving, r.build_fix.precision, r.build_fix.f1)
            ),
            r.integrity,
            cell(r.stop_reason, 300) if r.stop_reason else "",
        ]
        for row in board.rows
        for r in row.results
    ]
    mean = PAPER_FIGURES[0]
    lines = [
        "# Leaderboard",
        "",
        f"{len(board.rows)} agents, {board.scorecards} scorecards"
        + (f", specification level {board.spec_level}" if board.spec_level else "")
        + ". "
        "Each score is the plain mean over the agent's chains of that chain's value "
        "(F1: the mean of the chains' F1s); agents are ranked only against agents with the same chains at the same "
        "specification levels (the column 'compared over'), by the ranked Build+Fix F1, where a run's steps that were "
        "never scored count their upgrade-related tests as unresolved (the other columns are the paper's figures "
        "over the scored steps). Flagged runs are listed below and not ranked.[^paper]",
        "",
        tabulate(table, headers=headers, tablefmt="github", disable_numparse=True),
        "",
        "B = Build, B+F = Build+Fix. n/a: undefined on every chain. (k/n): the mean over the k of n chains "
        "where the value is defined. Cost: total over the steps whose cost is known.",
        "",
        "## Per chain",
        "",
        tabulate(
            per_chain,
            headers=[
                "agent",
                "chain",
                "level",
                "steps",
                "scored",
                "B+F resolving %",
                "B+F precision %",
                "B+F F1 %",
                "integrity",
                "stopped",
            ],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
    ]
    if board.flagged:
        lines += [
            "## Flagged runs (not ranked)",
            "",
            "Integrity findings mark these runs; a maintainer reviews them and clears them with "
            "`swechain-ci integrity clear RUN_DIR --by NAME --reason TEXT`, or not:",
            "",
        ]
        lines += [
            f"- **⚠ flagged** {inline(f.agent, 80)} on {inline(f.result.chain, 80)} steps {inline(f.result.step_range, 40)} "
            f"({f.result.flags} finding(s)): B+F F1 "
            f"{'n/a' if f.result.build_fix.f1 is None else f'{100 * f.result.build_fix.f1:.1f}'}%, "
            f"{inline(f.result.scorecard, 300)}"
            for f in board.flagged
        ]
        lines.append("")
    if board.superseded:
        lines += [
            "## Superseded scorecards",
            "",
            "An agent with several scorecards for one chain counts only the latest (file modification time):",
            "",
        ]
        lines += [
            f"- {inline(s.agent, 80)} on {inline(s.chain, 80)}: kept {inline(s.kept)}, left out {inline(s.dropped)}"
            for s in board.superseded
        ]
        lines.append("")
    lines += [
        f"[^paper]: For reference, the SWE-Chain paper reports a Build+Fix mean over its {PAPER_CONFIGURATIONS} "
        f"agent configurations of {100 * mean.resolving:.1f}% resolving, {100 * mean.precision:.1f}% precision "
        f"and {100 * (mean.f1 or 0):.1f}% F1, on its own chains; these are not scores of the runs above.",
        "",
    ]
    return "\n".join(lines)


def render_png(board: Leaderboard) -> bytes:
    """A grouped bar chart of Build+Fix resolving, precision and F1 (percent) per agent, in rank order."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    agents = [row.agent for row in board.rows]
    series = [("resolving", "#4C78A8"), ("precision", "#F58518"), ("f1", "#54A24B")]
    width = 0.8 / len(series)
    fig = Figure(figsize=(max(6.0, 1.2 * len(agents) + 2), 4.5), dpi=100)
    ax = fig.add_subplot()
    for i, (metric, color) in enumerate(series):
        xs = [a + (i - (len(series) - 1) / 2) * width for a in range(len(agents))]
        values = [getattr(row.build_fix, metric).value for row in board.rows]
        heights = [0.0 if v is None else 100 * v for v in values]
        bars = ax.bar(xs, heights, width, label="F1" if metric == "f1" else metric, color=color)
        ax.bar_label(bars, labels=["n/a" if v is None else f"{100 * v:.1f}" for v in values], fontsize=7, padding=2)
    ax.set_xticks(
        range(len(agents)), agents, rotation=20 if len(agents) > 4 else 0, ha="right" if len(agents) > 4 else "center"
    )
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("percent (mean over chains)")
    ax.set_title("Build+Fix per agent")
    ax.legend(loc="upper right", ncols=3, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def write_leaderboard(board: Leaderboard, output: Path) -> dict[str, Path]:
    """Write leaderboard.json, leaderboard.md and leaderboard.png into ``output``."""
    paths = {"json": output / "leaderboard.json", "md": output / "leaderboard.md", "png": output / "leaderboard.png"}
    write_model(paths["json"], board)
    write_text(paths["md"], render_markdown(board))
    write_bytes(paths["png"], render_png(board))
    return paths
