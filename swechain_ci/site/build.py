"""The static site: leaderboard, one page per agent x chain run, comparisons, and the trend.

Plain HTML and CSS from Jinja2 templates with autoescaping on: every string that comes from a
run or an agent (names, messages, summaries, trajectories, diffs) is escaped. Every page works
without script: the per-chain selector is radio buttons and CSS, tables scroll in their frame;
``tables.js`` only adds sorting and filtering. Plots are matplotlib's SVG (``plots``), the
published figures of the paper stand beside ours, marked as published, and averages are only
shown over comparable runs (a cohort: the same chains at the same levels). A run's diffs, Fix
report and logs are copied beside its page as ``.txt`` files (bounded), so a browser shows
them as text and never renders them; diffs and trajectories also get a page of their own.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pygments import highlight
from pygments.formatters.html import HtmlFormatter
from pygments.lexers.diff import DiffLexer

from swechain_ci.agents import BUILTIN_NAMES
from swechain_ci.errors import SwechainError
from swechain_ci.evaluation.outcomes import scored_universe
from swechain_ci.models import RunRecord, Scorecard, Status, StepRecord, StepScore
from swechain_ci.records import RunFolder, StepFolder, read_model, write_bytes, write_text
from swechain_ci.scoring.failure_modes import LABELS, FailureMode, classify_phase, tally
from swechain_ci.scoring.leaderboard import PAPER_FIGURES, AgentRow, ChainResult, Leaderboard, cohorts
from swechain_ci.scoring.score import f1_undefined
from swechain_ci.site.failure_judge import NAMES as JUDGE_CATEGORIES
from swechain_ci.site.failure_judge import Verdict
from swechain_ci.site.plots import Move, Series, build_to_fix_plot, heatmap, line_plot
from swechain_ci.site.trajectory import Entry, read_entries

HERE = Path(__file__).parent
MAX_COPIED_BYTES = 1 << 20  # per linked file; the rest is cut with a note
MAX_LISTED_FAILURES = 200  # per step on a run page
NAMES = StepFolder(Path())  # a step folder's record names, relative to the folder (records.py)
PHASES = ("build", "fix")
STEP_FILES = {
    **{NAMES.diff(p).as_posix(): f"{p} diff" for p in PHASES},
    NAMES.fix_report.as_posix(): "Fix report",
    **{NAMES.agent_log(p).as_posix(): f"agent log ({p})" for p in PHASES},
    **{NAMES.tests_log(p).as_posix(): f"test log ({p})" for p in PHASES},
    **{NAMES.trajectory(p).as_posix(): f"trajectory ({p})" for p in PHASES},
}
DIFFS = {NAMES.diff(p).as_posix(): p.capitalize() for p in PHASES}
# Where a phase's trajectory is recorded: the reference agent's own file, else the CLI's stream in its log.
TRAJECTORY_SOURCES = {p: (NAMES.trajectory(p).as_posix(), NAMES.agent_log(p).as_posix()) for p in PHASES}
MAX_DIFF_BYTES = 1 << 20
SITE_MARKER = ".swechain-site"


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
    pages: list[tuple[str, str]] = field(default_factory=list)  # label, href of the step's own pages
    summary: str | None = None
    verdict: Verdict | None = None  # the failure judge's category, where it ran


@dataclass
class RunView:
    run: RunRecord
    card: Scorecard
    folder: Path
    page: str
    steps: list[StepView]
    plot: str = ""
    csv: str = ""  # href of the per-step figures as CSV


def _copy_bounded(source: Path, target: Path) -> None:
    with source.open("rb") as handle:
        data = handle.read(MAX_COPIED_BYTES + 1)
    if len(data) > MAX_COPIED_BYTES:
        data = data[:MAX_COPIED_BYTES] + f"\n[cut: the site keeps the first {MAX_COPIED_BYTES:,} bytes]\n".encode()
    write_bytes(target, data)


def _step_records(folder: Path) -> dict[int, tuple[Path, StepRecord]]:
    records = {}
    for path in RunFolder(folder).step_records():
        record = read_model(path, StepRecord)
        records[record.index] = (path.parent, record)
    return records


def _passing_rate(record: StepRecord) -> float | None:
    universe = scored_universe(record.new_gold, [*record.flaky, *record.needs_network])
    final = record.fix or record.build
    return sum(final.outcomes.get(t) == Status.passed for t in universe) / len(universe) if universe else None


Judge = Callable[[StepRecord, list[Entry], dict[str, int]], Verdict | None]


def load_run(
    folder: Path,
    card: Scorecard,
    site: Path,
    summarize: Callable[[StepRecord, dict], str | None] | None,
    judge: Judge | None = None,
) -> RunView:
    run = read_model(RunFolder(folder).record, RunRecord)
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
                (NAMES.logs / p.name).as_posix()
                for p in sorted((step_dir / NAMES.logs).glob("*"))
                if p.is_file() and p.suffix in (".log", ".jsonl")
            ]
            names = [n for n in STEP_FILES if (step_dir / n).is_file()]
            names += [n for n in logs if n not in STEP_FILES]
            for name in names:
                target = f"{files_dir}/step-{score.index:02d}/{_slug(name.replace('/', '-'))}.txt"
                _copy_bounded(step_dir / name, site / target)
                view.links.append((STEP_FILES.get(name, name), target.removeprefix("runs/")))
            view.pages = _step_pages(step_dir, score.index, files_dir, site, card)
            counts = {LABELS[m]: n for m, n in tally(modes).items() if n}
            if summarize is not None and modes:
                view.summary = summarize(record, counts)
            if judge is not None and modes:
                view.verdict = judge(record, phase_entries(step_dir, "fix" if record.fix else "build"), counts)
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
    csv_name = f"{files_dir}/steps.csv"
    write_text(site / csv_name, steps_csv(steps))
    return RunView(
        run=run, card=card, folder=folder, page=page, steps=steps, plot=plot, csv=csv_name.removeprefix("runs/")
    )


def steps_csv(steps: Sequence[StepView]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "step",
            "upgrade",
            "upgrade_related",
            "fix_ran",
            "agent_status",
            *(
                f"{phase}_{m}"
                for phase in ("build", "build_fix")
                for m in ("resolving", "precision", "f1", "tp", "fn", "fp")
            ),
            "cost_usd",
        ]
    )
    for s in steps:
        sc = s.score
        writer.writerow(
            [
                s.index,
                s.upgrade,
                sc.upgrade_related,
                sc.fix_ran,
                sc.agent_status,
                *(
                    "" if (v := getattr(getattr(sc, phase), m)) is None else v
                    for phase in ("build", "build_fix")
                    for m in ("resolving", "precision", "f1", "tp", "fn", "fp")
                ),
                "" if sc.cost_usd is None else sc.cost_usd,
            ]
        )
    return buffer.getvalue()


def _read_bounded(path: Path, limit: int) -> tuple[str, bool]:
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    return data[:limit].decode("utf-8", "replace"), len(data) > limit


def phase_entries(step_dir: Path, phase: str) -> list[Entry]:
    """The phase's trajectory: the reference agent's own record, else the CLI's stream in its log."""
    for source in TRAJECTORY_SOURCES[phase]:
        if (step_dir / source).is_file():
            entries = read_entries(step_dir / source)
            if entries:
                return entries
    return []


def _step_pages(step_dir: Path, index: int, files_dir: str, site: Path, card: Scorecard) -> list[tuple[str, str]]:
    """A highlighted page per diff and a viewer page per phase trajectory, beside the run page."""
    env = _environment()
    pages = []
    for name, phase in DIFFS.items():
        if (step_dir / name).is_file() and (step_dir / name).stat().st_size:
            text, cut = _read_bounded(step_dir / name, MAX_DIFF_BYTES)
            target = f"{files_dir}/step-{index:02d}/{name.replace('.', '-')}.html"
            html = highlight(text, DiffLexer(), HtmlFormatter(cssclass="highlight"))
            write_text(
                site / target,
                env.get_template("diff.html").render(
                    card=card, index=index, phase=phase, diff=Markup(html), cut=cut, week="", root="../../../"
                ),
            )
            pages.append((f"{phase} diff", target.removeprefix("runs/")))
    for phase in TRAJECTORY_SOURCES:
        entries = phase_entries(step_dir, phase)
        if entries:
            target = f"{files_dir}/step-{index:02d}/trajectory-{phase}.html"
            write_text(
                site / target,
                env.get_template("trajectory.html").render(
                    card=card, index=index, phase=phase, entries=entries, week="", root="../../../"
                ),
            )
            pages.append((f"trajectory ({phase})", target.removeprefix("runs/")))
    return pages


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


@functools.cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(percent=percent, money=money, f1_undefined=f1_undefined)
    env.globals.update(
        BASELINES=set(BUILTIN_NAMES), MODES=list(FailureMode), LABELS=LABELS, judge_categories=JUDGE_CATEGORIES
    )
    return env


def _chains(board: Leaderboard) -> list[str]:
    return sorted({r.chain for row in board.rows for r in row.results})


def _worst_integrity(results: Sequence[ChainResult]) -> str | None:
    statuses = {r.integrity for r in results}
    for status in ("flagged", "cleared", "clean"):
        if status in statuses:
            return status
    return None


@dataclass
class CohortView:
    """Agents compared over the same chains at the same levels: the only rows averaged together."""

    name: str
    rows: list[AgentRow]
    chains: list[str]
    moves: Markup
    heatmaps: list[Markup]


def _difficulty_order(rows: Sequence[AgentRow], chains: Sequence[str]) -> list[str]:
    """Chains from the easiest to the hardest: by the mean Build+Fix F1 of the cohort's agents."""

    def mean_f1(chain: str) -> float:
        known = [r.build_fix.f1 for row in rows for r in row.results if r.chain == chain and r.build_fix.f1 is not None]
        return sum(known) / len(known) if known else -1.0

    return sorted(chains, key=lambda c: (-mean_f1(c), c))


def cohort_views(board: Leaderboard) -> list[CohortView]:
    views = []
    for name, rows in cohorts(board):
        chains = _difficulty_order(rows, sorted({r.chain for row in rows for r in row.results}))
        moves = build_to_fix_plot(
            "Build → Build+Fix, mean over chains",
            [
                Move(
                    row.agent,
                    (row.build.precision.value, row.build.resolving.value),
                    (row.build_fix.precision.value, row.build_fix.resolving.value),
                )
                for row in rows
            ],
        )
        maps = []
        for metric in ("resolving", "precision", "f1"):
            values = [
                [next((getattr(r.build_fix, metric) for r in row.results if r.chain == c), None) for c in chains]
                for row in rows
            ]
            label = "F1" if metric == "f1" else metric
            maps.append(
                heatmap(f"Build+Fix {label} %, chains from easiest to hardest", [r.agent for r in rows], chains, values)
            )
        views.append(CohortView(name=name, rows=rows, chains=chains, moves=moves, heatmaps=maps))
    return views


@dataclass
class ComparePage:
    chain: str
    page: str
    runs: list[RunView]
    steps: list[int]
    plot: Markup


def compare_pages(runs: dict[tuple[str, str], RunView]) -> list[ComparePage]:
    """Per chain with two or more runs: the runs side by side, step by step (the paper's Figure 6 on top)."""
    by_chain: dict[str, list[RunView]] = {}
    for (_, chain), view in sorted(runs.items()):
        by_chain.setdefault(chain, []).append(view)
    pages = []
    for chain, views in by_chain.items():
        if len(views) < 2:
            continue
        steps = sorted({s.index for v in views for s in v.steps})
        plot = line_plot(
            f"Cumulative Build+Fix resolving on {chain}",
            [str(i) for i in steps],
            [
                Series(
                    v.card.agent, [next((s.cumulative_resolving for s in v.steps if s.index == i), None) for i in steps]
                )
                for v in views
            ],
            css_class="plot cumulative",
        )
        pages.append(ComparePage(chain=chain, page=f"compare/{_slug(chain)}.html", runs=views, steps=steps, plot=plot))
    return pages


def judged_failures(runs: dict[tuple[str, str], RunView]) -> dict[str, dict[str, int]]:
    """Per agent, how many of its failed steps the judge put in each category."""
    counts: dict[str, dict[str, int]] = {}
    for (agent, _), view in sorted(runs.items()):
        for step in view.steps:
            if step.verdict is not None:
                per_agent = counts.setdefault(agent, dict.fromkeys(JUDGE_CATEGORIES, 0))
                per_agent[step.verdict.category] += 1
    return counts


def leaderboard_csv(board: Leaderboard) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    metrics = [
        f"{phase}_{m}" for phase in ("build", "build_fix") for m in ("resolving", "precision", "f1", "tp", "fn", "fp")
    ]
    writer.writerow(
        [
            "cohort",
            "rank",
            "agent",
            "chain",
            "spec_level",
            "steps",
            "steps_scored",
            "steps_total",
            "integrity",
            *metrics,
            "ranking_build_fix_f1",
            "cost_usd",
        ]
    )
    for row in board.rows:
        for r in row.results:
            values = [
                getattr(getattr(r, phase), m)
                for phase in ("build", "build_fix")
                for m in ("resolving", "precision", "f1", "tp", "fn", "fp")
            ]
            writer.writerow(
                [
                    row.cohort,
                    row.rank,
                    row.agent,
                    r.chain,
                    r.spec_level,
                    r.step_range,
                    r.steps_scored,
                    r.steps_total,
                    r.integrity,
                    *("" if v is None else v for v in values),
                    "" if r.ranking_build_fix.f1 is None else r.ranking_build_fix.f1,
                    "" if r.cost_usd is None else r.cost_usd,
                ]
            )
    return buffer.getvalue()


def build_site(
    output: Path,
    board: Leaderboard,
    history: Sequence[tuple[str, Leaderboard]],
    week: str,
    summarize: Callable[[StepRecord, dict], str | None] | None = None,
    *,
    judge: Judge | None = None,
    force: bool = False,
) -> list[Path]:
    """Write the site into ``output``; returns the pages written. ``output`` must be empty or absent,
    or ``force`` replaces a folder that holds an earlier build of the site (never another folder)."""
    if output.exists() and any(output.iterdir()):
        if not force:
            raise SwechainError(f"{output} is not empty: give a new folder for the site, or --force to rebuild it")
        if not (output / SITE_MARKER).is_file():
            raise SwechainError(
                f"{output} does not hold a site built by swechain-ci; --force replaces only such a folder"
            )
        shutil.rmtree(output)
    env = _environment()
    runs: dict[tuple[str, str], RunView] = {}
    shown = [(row.agent, result) for row in board.rows for result in row.results]
    shown += [(flagged.agent, flagged.result) for flagged in board.flagged]
    for agent, result in shown:
        folder = Path(result.scorecard).parent
        if RunFolder(folder).record.is_file():
            card = read_model(Path(result.scorecard), Scorecard)
            runs[(agent, result.chain)] = load_run(folder, card, output, summarize, judge)
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
    comparisons = compare_pages(runs)
    pages: dict[str, str] = {
        "index.html": env.get_template("index.html").render(
            board=board,
            week=week,
            chains=chains,
            per_chain=per_chain,
            cohorts=cohort_views(board),
            judged=judged_failures(runs) if judge is not None else None,
            paper=PAPER_FIGURES,
            comparisons={c.chain: c for c in comparisons},
            runs=runs,
            worst_integrity=_worst_integrity,
            root="",
        ),
        "trend.html": env.get_template("trend.html").render(trends=trends(history), week=week, root=""),
    }
    for view in runs.values():
        pages[view.page] = env.get_template("run.html").render(view=view, card=view.card, week=week, root="../")
    for comparison in comparisons:
        pages[comparison.page] = env.get_template("compare.html").render(c=comparison, week=week, root="../")
    written = []
    for name, html in pages.items():
        write_text(output / name, html)
        written.append(output / name)
    written += sorted(set(output.glob("runs/*/step-*/*.html")))  # each step's diff and trajectory pages
    write_text(output / "leaderboard.csv", leaderboard_csv(board))
    write_text(output / "leaderboard.json", board.model_dump_json(indent=2))
    shutil.copyfile(HERE / "style.css", output / "style.css")
    with (output / "style.css").open("a") as handle:
        handle.write(HtmlFormatter(cssclass="highlight").get_style_defs(".highlight"))
    shutil.copyfile(HERE / "tables.js", output / "tables.js")
    write_text(output / ".nojekyll", "")
    write_text(output / SITE_MARKER, "a site built by swechain-ci site; --force may replace this folder\n")
    return written
