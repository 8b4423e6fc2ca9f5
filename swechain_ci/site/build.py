"""The static site: leaderboard, one page per agent x chain run, and the trend over the weeks.

Plain HTML and CSS from Jinja2 templates with autoescaping on: every string that comes from a
run or an agent (names, messages, summaries) is escaped. The per-chain selector is radio
buttons and CSS, so the site has no script at all. Plots are inline SVG (``plots``). A run's
diffs, Fix report and logs are copied beside its page as ``.txt`` files (bounded), so a
browser shows them as text and never renders them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from swechain_ci.agents import BUILTIN_NAMES
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.outcomes import scored_universe
from swechain_ci.models import RunRecord, Scorecard, Status, StepRecord, StepScore
from swechain_ci.records import read_model, write_bytes, write_text
from swechain_ci.scoring.failure_modes import LABELS, FailureMode, classify_phase, tally
from swechain_ci.scoring.leaderboard import ChainResult, Leaderboard
from swechain_ci.site.plots import Series, line_plot

HERE = Path(__file__).parent
MAX_COPIED_BYTES = 1 << 20  # per linked file; the rest is cut with a note
MAX_LISTED_FAILURES = 200  # per step on a run page
STEP_FILES = {
    "build.diff": "build diff",
    "fix.diff": "fix diff",
    "fix_report.md": "Fix report",
    "logs/agent-build.log": "agent log (build)",
    "logs/agent-fix.log": "agent log (fix)",
    "logs/tests-build.log": "test log (build)",
    "logs/tests-fix.log": "test log (fix)",
    "logs/trajectory-build.jsonl": "trajectory (build)",
    "logs/trajectory-fix.jsonl": "trajectory (fix)",
}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40] or "x"


def run_page_name(agent: str, chain: str) -> str:
    """The run page's path inside the site: readable, and unique even for names that slug alike."""
    digest = hashlib.sha256(f"{agent}\0{chain}".encode()).hexdigest()[:8]
    return f"runs/{_slug(agent)}--{_slug(chain)}-{digest}.html"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.2f}"


# -- run pages ----------------------------------------------------------------------------------


@dataclass
class StepView:
    index: int
    upgrade: str
    score: StepScore
    passing: float | None
    cumulative_resolving: float | None
    cumulative_resolving_build: float | None
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # test, mode label, message
    failures_cut: int = 0
    links: list[tuple[str, str]] = field(default_factory=list)  # label, href
    summary: str | None = None


@dataclass
class RunView:
    run: RunRecord
    card: Scorecard
    folder: Path
    page: str
    steps: list[StepView]
    plot: str = ""


def _copy_bounded(source: Path, target: Path) -> None:
    with source.open("rb") as handle:
        data = handle.read(MAX_COPIED_BYTES + 1)
    if len(data) > MAX_COPIED_BYTES:
        data = data[:MAX_COPIED_BYTES] + f"\n[cut: the site keeps the first {MAX_COPIED_BYTES:,} bytes]\n".encode()
    write_bytes(target, data)


def _step_records(folder: Path) -> dict[int, tuple[Path, StepRecord]]:
    records = {}
    for path in sorted(folder.glob("steps/*/step.json")):
        record = read_model(path, StepRecord)
        records[record.index] = (path.parent, record)
    return records


def _passing_rate(record: StepRecord) -> float | None:
    universe = scored_universe(record.new_gold, [*record.flaky, *record.needs_network])
    final = record.fix or record.build
    return sum(final.outcomes.get(t) == Status.passed for t in universe) / len(universe) if universe else None


def load_run(
    folder: Path,
    card: Scorecard,
    site: Path,
    summarize: Callable[[StepRecord, dict], str | None] | None,
) -> RunView:
    run = read_model(folder / "run.json", RunRecord)
    page = run_page_name(card.agent, card.chain)
    files_dir = page.removesuffix(".html")
    records = _step_records(folder)
    steps: list[StepView] = []
    tp = fn = tp_b = fn_b = 0
    for score in card.steps:
        tp, fn = tp + score.build_fix.tp, fn + score.build_fix.fn
        tp_b, fn_b = tp_b + score.build.tp, fn_b + score.build.fn
        view = StepView(
            index=score.index,
            upgrade=f"{score.prev_version} → {score.next_version}",
            score=score,
            passing=None,
            cumulative_resolving=tp / (tp + fn) if tp + fn else None,
            cumulative_resolving_build=tp_b / (tp_b + fn_b) if tp_b + fn_b else None,
        )
        if score.index in records:
            step_dir, record = records[score.index]
            view.passing = _passing_rate(record)
            final = record.fix or record.build
            modes = classify_phase(final.run, final.categories)
            listed = list(modes.items())
            view.failures = [
                (test, LABELS[mode], (final.run.error_messages.get(test) or "").strip()[:300])
                for test, mode in listed[:MAX_LISTED_FAILURES]
            ]
            view.failures_cut = max(0, len(listed) - MAX_LISTED_FAILURES)
            logs = [
                f"logs/{p.name}"
                for p in sorted((step_dir / "logs").glob("*"))
                if p.is_file() and p.suffix in (".log", ".jsonl")
            ]
            names = [n for n in STEP_FILES if (step_dir / n).is_file()]
            names += [n for n in logs if n not in STEP_FILES]
            for name in names:
                target = f"{files_dir}/step-{score.index:02d}/{_slug(name.replace('/', '-'))}.txt"
                _copy_bounded(step_dir / name, site / target)
                view.links.append((STEP_FILES.get(name, name), target.removeprefix("runs/")))
            if summarize is not None and modes:
                view.summary = summarize(record, {LABELS[m]: n for m, n in tally(modes).items() if n})
        steps.append(view)
    labels = [str(s.index) for s in steps]
    plot = line_plot(
        f"{card.agent} on {card.chain}: Build+Fix per step",
        labels,
        [
            # Build first, so that Build+Fix draws over it where the two agree
            Series("cumulative resolving (Build)", [s.cumulative_resolving_build for s in steps], dashed=True),
            Series("cumulative resolving (Build+Fix)", [s.cumulative_resolving for s in steps]),
            Series("passing rate (Build+Fix)", [s.passing for s in steps]),
        ],
        css_class="plot trajectory",
    )
    return RunView(run=run, card=card, folder=folder, page=page, steps=steps, plot=plot)


# -- trend ----------------------------------------------------------------------------------------


@dataclass
class ChainTrend:
    chain: str
    weeks: list[str]
    rows: list[tuple[str, list[float | None]]]  # agent, Build+Fix F1 per week
    plot: str


def trends(history: Sequence[tuple[str, Leaderboard]]) -> list[ChainTrend]:
    weeks = [week for week, _ in history]
    per_chain: dict[str, dict[str, list[float | None]]] = {}
    for i, (_, board) in enumerate(history):
        for row in board.rows:
            for result in row.results:
                series = per_chain.setdefault(result.chain, {}).setdefault(row.agent, [None] * len(weeks))
                series[i] = result.build_fix.f1
    found = []
    for chain in sorted(per_chain):
        rows = sorted(per_chain[chain].items())
        plot = line_plot(
            f"Build+Fix F1 on {chain}, by week",
            weeks,
            [Series(agent, values) for agent, values in rows],
            css_class="plot trend",
        )
        found.append(ChainTrend(chain=chain, weeks=weeks, rows=rows, plot=plot))
    return found


# -- the site -------------------------------------------------------------------------------------


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(percent=percent, money=money)
    env.globals.update(BASELINES=set(BUILTIN_NAMES), MODES=list(FailureMode), LABELS=LABELS)
    return env


def _chains(board: Leaderboard) -> list[str]:
    return sorted({r.chain for row in board.rows for r in row.results})


def _worst_integrity(results: Sequence[ChainResult]) -> str | None:
    statuses = {r.integrity for r in results}
    for status in ("flagged", "cleared", "clean"):
        if status in statuses:
            return status
    return None


def build_site(
    output: Path,
    board: Leaderboard,
    history: Sequence[tuple[str, Leaderboard]],
    week: str,
    summarize: Callable[[StepRecord, dict], str | None] | None = None,
) -> list[Path]:
    """Write the site into ``output`` (which must be empty or absent); returns the pages written."""
    if output.exists() and any(output.iterdir()):
        raise SwechainError(f"{output} is not empty: give a new folder for the site (it is rebuilt whole)")
    env = _environment()
    runs: dict[tuple[str, str], RunView] = {}
    shown = [(row.agent, result) for row in board.rows for result in row.results]
    shown += [(flagged.agent, flagged.result) for flagged in board.flagged]
    for agent, result in shown:
        folder = Path(result.scorecard).parent
        if (folder / "run.json").is_file():
            card = read_model(Path(result.scorecard), Scorecard)
            runs[(agent, result.chain)] = load_run(folder, card, output, summarize)
    if not history or history[-1][0] != week:
        history = [*history, (week, board)]
    chains = _chains(board)
    per_chain = {
        chain: sorted(
            ((row, r) for row in board.rows for r in row.results if r.chain == chain),
            key=lambda pair: (pair[1].build_fix.f1 is None, -(pair[1].build_fix.f1 or 0.0), pair[0].agent),
        )
        for chain in chains
    }
    pages: dict[str, str] = {
        "index.html": env.get_template("index.html").render(
            board=board,
            week=week,
            chains=chains,
            per_chain=per_chain,
            runs=runs,
            worst_integrity=_worst_integrity,
            root="",
        ),
        "trend.html": env.get_template("trend.html").render(trends=trends(history), week=week, root=""),
    }
    for view in runs.values():
        pages[view.page] = env.get_template("run.html").render(view=view, card=view.card, week=week, root="../")
    written = []
    for name, html in pages.items():
        write_text(output / name, html)
        written.append(output / name)
    shutil.copyfile(HERE / "style.css", output / "style.css")
    write_text(output / ".nojekyll", "")
    return written
