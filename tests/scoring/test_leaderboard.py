"""The leaderboard: plain means over chains, hand-computed from hand-made scorecards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import ci_app
from swechain_ci.models import Metrics, Scorecard, StepScore
from swechain_ci.records import write_model
from swechain_ci.scoring.leaderboard import (
    Leaderboard,
    build_leaderboard,
    render_markdown,
    write_leaderboard,
)

PNG = b"\x89PNG\r\n\x1a\n"


def m(resolving, precision, f1) -> Metrics:
    return Metrics(resolving=resolving, precision=precision, f1=f1, tp=0, fn=0, fp=0)


def step(index: int, cost: float | None) -> StepScore:
    return StepScore(
        index=index,
        prev_version=f"{index}",
        next_version=f"{index + 1}",
        upgrade_related=1,
        fix_ran=False,
        build=m(None, None, None),
        build_fix=m(None, None, None),
        categories_build={},
        categories_build_fix={},
        agent_status="ok",
        cost_usd=cost,
    )


def card(
    folder: Path,
    agent: str,
    chain: str,
    build: Metrics,
    build_fix: Metrics,
    costs=(None,),
    mtime: float | None = None,
    spec_level: str = "L3",
    oracle_hash: str | None = None,
) -> Path:
    path = folder / "scorecard.json"
    write_model(
        path,
        Scorecard(
            chain=chain,
            step_range=f"1-{len(costs)}",
            agent=agent,
            spec_level=spec_level,
            steps_total=len(costs) + 1,
            steps_scored=len(costs),
            build=build,
            build_fix=build_fix,
            steps=[step(i + 1, c) for i, c in enumerate(costs)],
            oracle_hash=oracle_hash,
        ),
    )
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Three agents.

    alpha: c1 (B+F 0.5/1.0/2/3), c2 (B+F 0.0/null/null), c3 three times: two older scorecards
           that must be left out and the newest (B+F 0.75/0.75/0.75); costs 1.5 + ? + 2.0.
    beta:  c1 (B+F 0.9/0.9/0.9).
    gamma: c1 with every value null.
    """
    root = tmp_path / "runs"
    card(root / "alpha-c1", "alpha", "c1", m(0.25, 0.5, 1 / 3), m(0.5, 1.0, 2 / 3), costs=(1.5, None))
    card(root / "alpha-c2", "alpha", "c2", m(0.0, None, None), m(0.0, None, None))
    # the newer one sorts first by path, so the modification time must decide
    card(
        root / "a-newer" / "alpha-c3",
        "alpha",
        "c3",
        m(0.5, 0.5, 0.5),
        m(0.75, 0.75, 0.75),
        costs=(2.0,),
        mtime=2_000_000_000,
    )
    card(
        root / "z-older" / "alpha-c3",
        "alpha",
        "c3",
        m(0.1, 0.1, 0.1),
        m(0.1, 0.1, 0.1),
        costs=(50.0,),
        mtime=1_000_000_000,
    )
    card(root / "m-oldest" / "alpha-c3", "alpha", "c3", m(0.2, 0.2, 0.2), m(0.2, 0.2, 0.2), mtime=900_000_000)
    card(root / "beta-c1", "beta", "c1", m(0.8, 0.8, 0.8), m(0.9, 0.9, 0.9), costs=(0.25, 0.5))
    card(tmp_path / "elsewhere" / "gamma-c1", "gamma", "c1", m(None, None, None), m(None, None, None))
    return root


def test_plain_means_over_chains(runs):
    board = build_leaderboard([runs, runs.parent / "elsewhere"])
    # beta and gamma ran c1 alone: one cohort, ranked together; alpha ran c1-c3 and is ranked apart
    assert [(r.agent, r.cohort, r.rank) for r in board.rows] == [
        ("beta", "c1@L3", 1),
        ("gamma", "c1@L3", 2),
        ("alpha", "c1@L3, c2@L3, c3@L3", 1),
    ]
    beta, gamma, alpha = board.rows

    assert alpha.chains == ["c1", "c2", "c3"]
    bf = alpha.build_fix
    assert (bf.resolving.value, bf.resolving.chains) == (pytest.approx((0.5 + 0.0 + 0.75) / 3), 3)
    assert (bf.precision.value, bf.precision.chains) == (pytest.approx((1.0 + 0.75) / 2), 2)  # null left out
    assert (bf.f1.value, bf.f1.chains) == (pytest.approx((2 / 3 + 0.75) / 2), 2)  # = 17/24
    assert bf.f1.value == pytest.approx(17 / 24)
    # the mean of the F1s, not the F1 of the mean resolving and precision
    p, r = bf.precision.value, bf.resolving.value
    assert bf.f1.value != pytest.approx(2 * p * r / (p + r))
    b = alpha.build
    assert (b.resolving.value, b.precision.value, b.f1.value) == (
        pytest.approx(0.75 / 3),
        pytest.approx(0.5),
        pytest.approx((1 / 3 + 0.5) / 2),
    )
    assert (alpha.steps_scored, alpha.steps_total) == (2 + 1 + 1, 3 + 2 + 2)
    assert (alpha.cost_usd, alpha.cost_steps) == (pytest.approx(3.5), 2)  # the older c3's $50 is left out

    assert (beta.build_fix.f1.value, beta.build_fix.f1.chains) == (pytest.approx(0.9), 1)
    assert beta.cost_usd == pytest.approx(0.75)
    assert gamma.build_fix.f1.value is None and gamma.build_fix.f1.chains == 0 and gamma.cost_usd is None

    assert [(s.agent, s.chain) for s in board.superseded] == [("alpha", "c3")] * 2
    assert all(s.kept.endswith("a-newer/alpha-c3/scorecard.json") for s in board.superseded)
    assert [Path(s.dropped).parent.parent.name for s in board.superseded] == ["m-oldest", "z-older"]
    assert board.scorecards == 7


def test_ranking_puts_nulls_last_and_breaks_ties_by_resolving(tmp_path):
    card(tmp_path / "1", "none", "c", m(None, None, None), m(0.0, None, None))
    card(tmp_path / "2", "low-res", "c", m(0, 0, 0), m(0.4, 0.6, 0.5))
    card(tmp_path / "3", "high-res", "c", m(0, 0, 0), m(0.6, 0.4, 0.5))
    card(tmp_path / "4", "zero", "c", m(0, 0, 0), m(0.0, 0.0, 0.0))
    assert [r.agent for r in build_leaderboard([tmp_path]).rows] == ["high-res", "low-res", "zero", "none"]


def test_markdown(runs):
    md = render_markdown(build_leaderboard([runs, runs.parent / "elsewhere"]))
    rows = [line for line in md.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert [row.split("|")[2].strip() for row in rows] == ["`beta`", "`gamma`", "`alpha`"]
    alpha = [c.strip() for c in rows[2].split("|")[1:-1]]
    # Without a ranking plan (older scorecards) the ranked figures are the paper's.
    assert alpha == [
        "1",
        "`alpha`",
        "`c1@L3, c2@L3, c3@L3`",
        "4/7",
        "70.8 (2/3)",
        "41.7",
        "41.7",
        "87.5 (2/3)",
        "70.8 (2/3)",
        "25.0",
        "50.0 (2/3)",
        "41.7 (2/3)",
        "",
        "",
        "3.50 (2/4 steps)",
    ]
    gamma = [c.strip() for c in rows[1].split("|")[1:-1]]
    assert gamma[4:] == ["n/a"] * 8 + ["", "", "n/a"], "no turns or tokens reported: blank"
    assert "kept `" in md and "z-older/alpha-c3/scorecard.json`" in md
    # the paper's figures are a footnote, never a row
    assert "ranked only against agents with the same chains at the same specification levels" in md
    assert "by the ranked Build+Fix F1, where a run's steps that were never scored" in md
    [footnote] = [line for line in md.splitlines() if line.startswith("[^paper]:")]
    assert "9 agent configurations" in footnote and "44.8% resolving, 65.4% precision and 50.2% F1" in footnote
    assert md.count("44.8") == 1


def test_files_are_written(runs, tmp_path):
    board = build_leaderboard([runs])
    paths = write_leaderboard(board, tmp_path / "reports")
    assert {p.name for p in (tmp_path / "reports").iterdir()} == {
        "leaderboard.json",
        "leaderboard.md",
        "leaderboard.png",
    }
    loaded = Leaderboard.model_validate_json(paths["json"].read_text())
    assert loaded == board and json.loads(paths["json"].read_text())["schema_version"] == 1
    assert "44.8" not in paths["json"].read_text()
    assert paths["md"].read_text() == render_markdown(board)
    png = paths["png"].read_bytes()
    assert png.startswith(PNG) and len(png) > 5_000


def test_spec_level_filter_and_errors(runs, tmp_path):
    card(tmp_path / "l1" / "x", "alpha", "c9", m(1, 1, 1), m(1, 1, 1), spec_level="L1")
    board = build_leaderboard([runs, tmp_path / "l1"], spec_level="L1")
    assert [(r.agent, r.chains) for r in board.rows] == [("alpha", ["c9"])]
    with pytest.raises(SwechainError, match="at spec level L2"):
        build_leaderboard([runs], spec_level="L2")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SwechainError, match=r"no scorecard\.json under"):
        build_leaderboard([tmp_path / "empty"])
    with pytest.raises(SwechainError, match="is not a folder"):
        build_leaderboard([tmp_path / "missing"])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "scorecard.json").write_text('{"chain": "c"}')
    with pytest.raises(SwechainError, match=r"bad/scorecard.json: field 'step_range'"):
        build_leaderboard([tmp_path / "bad"])


def test_cli_leaderboard(runs, tmp_path):
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        ci_app, ["leaderboard", str(runs), str(runs.parent / "elsewhere"), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Leaderboard") and "| `beta`" in result.stdout
    assert "superseded by the later" in result.stderr
    assert (out / "leaderboard.png").read_bytes().startswith(PNG)
    assert json.loads((out / "leaderboard.json").read_text())["rows"][0]["agent"] == "beta"


def test_runs_with_the_interface_section_are_a_row_of_their_own(tmp_path):
    card(tmp_path / "plain", "alpha", "c1", m(0.5, 0.5, 0.5), m(0.5, 0.5, 0.5), mtime=1_000_000_000)
    card(
        tmp_path / "newer-with-interface",
        "alpha",
        "c1",
        m(0.9, 0.9, 0.9),
        m(0.9, 0.9, 0.9),
        mtime=2_000_000_000,
        spec_level="L3+interface",
    )
    board = build_leaderboard([tmp_path])
    rows = {r.agent: (r.build_fix.f1.value, [c.spec_level for c in r.results]) for r in board.rows}
    assert rows == {"alpha+interface": (0.9, ["L3+interface"]), "alpha": (0.5, ["L3"])}
    assert board.superseded == []  # the newer run at L3+interface does not replace the L3 one


def test_repeated_runs_give_a_mean_and_a_95_percent_interval(tmp_path):
    """Three runs of one agent with the same inputs are repeats; a run on another oracle supersedes."""
    for i, f1 in enumerate((0.5, 0.6, 0.7)):
        card(tmp_path / f"r{i}", "rep", "c1", m(0, 0, 0), m(f1, f1, f1), mtime=1_000 + i, oracle_hash="o2")
        card(tmp_path / f"s{i}", "rep", "c2", m(0, 0, 0), m(f1 / 2, f1 / 2, f1 / 2), mtime=1_000 + i, oracle_hash="p")
    card(tmp_path / "old", "rep", "c1", m(0, 0, 0), m(0.1, 0.1, 0.1), mtime=10, oracle_hash="o1")
    card(tmp_path / "once", "single", "c1", m(0, 0, 0), m(0.4, 0.4, 0.4), oracle_hash="o2")
    board = build_leaderboard([tmp_path])
    rep = next(r for r in board.rows if r.agent == "rep")
    c1 = next(r for r in rep.results if r.chain == "c1")
    assert c1.build_fix.f1 == 0.7, "the chain's figure is still the latest run's"
    f1 = c1.repeats.build_fix_f1
    half = 4.303 * 0.1 / 3**0.5  # t(2) * stdev / sqrt(n)
    assert (c1.repeats.runs, f1.runs) == (3, 3)
    assert (f1.mean, f1.low, f1.high) == (pytest.approx(0.6), pytest.approx(0.6 - half), pytest.approx(0.6 + half))
    assert [s.dropped for s in board.superseded] == [str(tmp_path / "old" / "scorecard.json")]
    average = rep.build_fix_f1_runs
    expected_half = 4.303 * ((0.1**2 / 3 + 0.05**2 / 3) ** 0.5) / 2
    assert average.mean == pytest.approx((0.6 + 0.3) / 2)
    assert average.high - average.mean == pytest.approx(expected_half)
    single = next(r for r in board.rows if r.agent == "single")
    assert single.results[0].repeats is None and single.build_fix_f1_runs is None, "one run: no interval"


def test_a_single_interval_value_has_no_spread():
    from swechain_ci.scoring.leaderboard import interval, t95

    assert interval([0.5]).low is None and interval([]).mean is None
    assert t95(1) == 12.706 and t95(11) == 2.228 and t95(31) == 1.96


def test_alerts_tell_a_regression_from_noise_with_repeats(tmp_path):
    from swechain_ci.site.history import regressions

    def board(name, values):
        for i, f1 in enumerate(values):
            card(tmp_path / name / f"r{i}", "rep", "c1", m(0, 0, 0), m(f1, f1, f1), mtime=1_000 + i, oracle_hash="o")
        return build_leaderboard([tmp_path / name])

    before = board("w1", (0.60, 0.70, 0.65))
    noisy = board("w2", (0.58, 0.66, 0.52))  # the latest run fell 13 points, the runs overlap
    fell = board("w3", (0.30, 0.32, 0.31))
    assert regressions(("2026-W48", before), ("2026-W49", noisy)) == []
    [f1, resolving] = regressions(("2026-W48", before), ("2026-W49", fell))
    assert (f1.metric, f1.previous, f1.current) == ("f1", pytest.approx(0.65), pytest.approx(0.31))
    assert "beyond the run-to-run 95% intervals" in f1.detail and resolving.metric == "resolving"


def test_the_site_shows_intervals_for_repeats_and_says_when_there_is_one_run(tmp_path):
    from swechain_ci.site.build import build_site

    for i, f1 in enumerate((0.5, 0.6, 0.7)):
        card(tmp_path / "runs" / f"r{i}", "rep", "c1", m(0, 0, 0), m(f1, f1, f1), mtime=1_000 + i, oracle_hash="o")
    card(tmp_path / "runs" / "once", "single", "c1", m(0, 0, 0), m(0.4, 0.4, 0.4), oracle_hash="o")
    build_site(tmp_path / "site", build_leaderboard([tmp_path / "runs"]), [], "2026-W49")
    html = (tmp_path / "site" / "index.html").read_text()
    assert "3 runs: 60.0 <small>± 24.8</small>" in html
    assert '<span title="a single run: no interval">1 run</span>' in html
