"""The site, its history and the regression alerts, without Docker (the browser test is test_site_browser.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO
from github_server import FakeGitHub, GitHubState
from typer.testing import CliRunner

from swechain_ci.cli import app
from swechain_ci.errors import SwechainError
from swechain_ci.models import Metrics, RunRecord, Scorecard, StepRecord
from swechain_ci.records import read_model, write_model
from swechain_ci.scoring.leaderboard import Leaderboard, build_leaderboard
from swechain_ci.scoring.report import write_scorecard
from swechain_ci.scoring.score import scorecard
from swechain_ci.site.build import build_site, run_page_name
from swechain_ci.site.history import load_history, record_snapshot, regressions, render_alerts

FIXTURES = REPO / "tests" / "fixtures" / "failure_modes"
HOSTILE = '<script>alert("agent")</script><img src=x onerror=alert(1)>'


def make_run(root: Path, agent: str, chain: str, steps: list[str], oracle_hash: str = "a" * 64) -> Path:
    """A run folder from real step records (tests/fixtures/failure_modes), scored by the real scorer."""
    folder = root / f"{len(list(root.glob('*')))}"
    records = []
    for index, name in enumerate(steps, 1):
        record = StepRecord.model_validate_json((FIXTURES / f"{name}.json").read_text())
        record = record.model_copy(update={"index": index})
        write_model(folder / "steps" / f"{index:02d}-{record.prev_version}-{record.next_version}" / "step.json", record)
        step_dir = folder / "steps" / f"{index:02d}-{record.prev_version}-{record.next_version}"
        (step_dir / "build.diff").write_text(f"diff --git a/x b/x\n+{HOSTILE}\n")
        (step_dir / "logs").mkdir()
        (step_dir / "logs" / "trajectory-build.jsonl").write_text(
            json.dumps({"event": "text", "message": HOSTILE}) + "\n"
        )
        records.append(record)
    run = RunRecord(
        run_id="r1",
        chain=chain,
        step_range=f"1-{len(steps)}",
        agent=agent,
        spec_level="manual",
        oracle_hash=oracle_hash,
        steps_total=len(steps),
        status="finished",
    )
    write_model(folder / "run.json", run)
    write_scorecard(folder, scorecard(run, records))
    return folder


def test_every_hostile_string_is_escaped(tmp_path):
    runs = tmp_path / "runs"
    hostile_step = StepRecord.model_validate_json((FIXTURES / "replay-step1.json").read_text())
    test = "tests/test_truncate.py::test_truncate_exact_output"
    hostile_step.build.run.error_messages[test] = f"AssertionError: {HOSTILE}"
    folder = make_run(runs, HOSTILE, "toy", ["replay-step1"])
    write_model(next(folder.glob("steps/*/step.json")), hostile_step)  # same outcomes, a hostile message
    board = build_leaderboard([runs])
    site = tmp_path / "site"
    pages = build_site(site, board, [], "2026-W49")
    run_page = site / run_page_name(HOSTILE, "toy")
    assert run_page in pages and re.fullmatch(r"[A-Za-z0-9._-]+", run_page.name)
    for page in pages:
        html = page.read_text()
        # the one script is the site's own table enhancement, never anything from a run
        assert html.count("<script") == 1 and re.search(r'<script src="(\.\./)*tables\.js" defer></script>', html), page
        assert "<img" not in html, page
    text = run_page.read_text()
    assert "&lt;script&gt;alert(&#34;agent&#34;)&lt;/script&gt;" in text  # the agent's name, shown escaped
    assert "AssertionError: &lt;script&gt;" in text  # the test's message, shown escaped
    # the agent's diff is linked as text, never as a page
    links = re.findall(r'href="([^"]+)"', text)
    assert any(link.endswith("build.diff.txt") for link in links)
    assert any(link.endswith("logs-trajectory-build.jsonl.txt") for link in links) and "trajectory (build)" in text
    copied = next(site.glob("runs/*/step-01/logs-trajectory-build.jsonl.txt")).read_text()
    assert "<script>alert(" in copied, "linked files are copied verbatim, as text"
    assert not [link for link in links if link.startswith(("javascript:", "http"))]


def test_run_pages_carry_failure_mode_counts_and_the_trajectory(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, "replay", "toy", ["replay-step1", "replay-step2"])
    site = tmp_path / "site"
    build_site(site, build_leaderboard([runs]), [], "2026-W49")
    html = (site / run_page_name("replay", "toy")).read_text()
    assert html.count('class="plot trajectory"') == 1
    card = json.loads((next(runs.iterdir()) / "scorecard.json").read_text())
    assert card["failure_modes_build"]["collection"] == 39 and card["failure_modes_build_fix"]["assertion"] == 6
    assert '<td class="mode">39</td>' in html and '<td class="mode">6</td>' in html


def board_of(
    tmp_path: Path, week: str, agents: dict[str, tuple[float, float]], oracle_hash: str = "a" * 64, chain: str = "pyjwt"
) -> Leaderboard:
    """A leaderboard whose agents have these chain Build+Fix (resolving, precision) values."""
    root = tmp_path / week
    for agent, (resolving, precision) in agents.items():
        folder = root / agent
        f1 = 2 * resolving * precision / (resolving + precision)
        write_model(
            folder / "scorecard.json",
            Scorecard(
                chain=chain,
                step_range="11-15",
                agent=agent,
                spec_level="L1",
                steps_total=5,
                steps_scored=5,
                build=Metrics(resolving=resolving, precision=precision, f1=f1, tp=1, fn=1, fp=0),
                build_fix=Metrics(resolving=resolving, precision=precision, f1=f1, tp=1, fn=1, fp=0),
                steps=[],
                oracle_hash=oracle_hash,
            ),
        )
    return build_leaderboard([root])


def test_two_weeks_of_history_where_an_agent_drops(tmp_path):
    history = tmp_path / "history"
    record_snapshot(board_of(tmp_path, "w48", {"steady": (0.5, 0.5), "falling": (0.8, 1.0)}), history, "2026-W48")
    record_snapshot(board_of(tmp_path, "w49", {"steady": (0.49, 0.5), "falling": (0.6, 1.0)}), history, "2026-W49")
    weeks = load_history(history)
    assert [w for w, _ in weeks] == ["2026-W48", "2026-W49"]
    alerts = regressions(weeks[0], weeks[1], threshold=0.05)
    # steady lost 1 point of resolving (under the threshold); falling lost 20 points of resolving and 13.3 of F1
    assert [(a.agent, a.metric) for a in alerts] == [("falling", "f1"), ("falling", "resolving")]
    f1, resolving = alerts
    assert f1.previous == pytest.approx(2 * 0.8 / 1.8) and f1.current == pytest.approx(1.2 / 1.6)
    assert resolving.previous == pytest.approx(0.8) and resolving.current == pytest.approx(0.6)
    assert resolving.runs == [
        str(tmp_path / "w48" / "falling" / "scorecard.json"),
        str(tmp_path / "w49" / "falling" / "scorecard.json"),
    ]
    text = render_alerts(alerts, 0.05, "https://example.org/site")
    assert "- `falling` on `pyjwt`: Build+Fix F1 88.9% → 75.0% (−13.9 points, 2026-W48 → 2026-W49)" in text
    assert "- `falling` on `pyjwt`: Build+Fix resolving 80.0% → 60.0% (−20.0 points" in text
    assert f"https://example.org/site/{run_page_name('falling', 'pyjwt')}" in text
    assert "steady" not in text
    assert regressions(weeks[0], weeks[1], threshold=0.25) == []


def test_an_oracle_change_is_an_alert(tmp_path):
    old = ("2026-W48", board_of(tmp_path, "w48", {"a": (0.5, 0.5)}, oracle_hash="1" * 64))
    new = ("2026-W49", board_of(tmp_path, "w49", {"a": (0.5, 0.5)}, oracle_hash="2" * 64))
    alerts = regressions(old, new)
    assert [(a.kind, a.chain) for a in alerts] == [("oracle_changed", "pyjwt")]
    assert "111111111111 -> 222222222222" in alerts[0].detail


def test_a_snapshot_per_week_replaces_the_same_week(tmp_path):
    history = tmp_path / "history"
    record_snapshot(board_of(tmp_path, "x", {"a": (0.5, 0.5)}), history, "2026-W49")
    record_snapshot(board_of(tmp_path, "y", {"a": (0.25, 0.5)}), history, "2026-W49")
    assert [p.name for p in history.iterdir()] == ["2026-W49.json"]
    assert read_model(history / "2026-W49.json", Leaderboard).rows[0].build_fix.resolving.value == 0.25
    with pytest.raises(SwechainError, match="not an ISO week"):
        record_snapshot(board_of(tmp_path, "z", {"a": (0.5, 0.5)}), history, "week 49")


def test_trend_page_shows_each_week(tmp_path):
    history = [
        ("2026-W48", board_of(tmp_path, "w48", {"a": (0.5, 0.5)})),
        ("2026-W49", board_of(tmp_path, "w49", {"a": (0.25, 0.5)})),
    ]
    site = tmp_path / "site"
    build_site(site, history[-1][1], history, "2026-W49")
    html = (site / "trend.html").read_text()
    assert html.count('class="plot trend"') == 1
    assert "<th>2026-W48</th><th>2026-W49</th>" in html and "<td>50.0</td><td>33.3</td>" in html


@pytest.mark.parametrize("target", ["comment", "issue"])
def test_alerts_cli_writes_the_summary_first_and_reports_on_github(tmp_path, monkeypatch, target):
    history = tmp_path / "history"
    record_snapshot(board_of(tmp_path, "w48", {"falling": (0.8, 1.0)}), history, "2026-W48")
    record_snapshot(board_of(tmp_path, "w49", {"falling": (0.6, 1.0)}), history, "2026-W49")
    summary = tmp_path / "summary.md"
    with FakeGitHub(GitHubState(repository="o/r")) as server:
        server.state.add_pull(7)  # a standing issue (the store serves pull requests as issues)
        monkeypatch.setenv("GITHUB_API_URL", server.url)
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        args = ["--comment-on", "7"] if target == "comment" else ["--open-issue", "Leaderboard regression"]
        result = CliRunner().invoke(app, ["alerts", "--history", str(history), *args])
        assert result.exit_code == 0, result.output
        assert summary.read_text().startswith("## Leaderboard alerts (2)")
        if target == "comment":
            [comment] = server.state.comments_on(7)
            body = comment.body
        else:
            [(_number, issue)] = server.state.issues.items()
            assert issue["title"] == "Leaderboard regression"
            body = issue["body"]
    assert "Build+Fix resolving 80.0% → 60.0% (−20.0 points" in body
    assert str(tmp_path / "w49" / "falling" / "scorecard.json") in body


def test_alerts_cli_with_one_week_says_there_is_nothing_to_compare(tmp_path):
    history = tmp_path / "history"
    record_snapshot(board_of(tmp_path, "w48", {"a": (0.8, 1.0)}), history, "2026-W48")
    result = CliRunner().invoke(app, ["alerts", "--history", str(history)])
    assert result.exit_code == 0 and "nothing to compare yet" in result.output


def test_alerts_cli_compares_this_weeks_runs_with_the_last_snapshot(tmp_path, monkeypatch):
    history = tmp_path / "history"
    record_snapshot(board_of(tmp_path, "w48", {"falling": (0.8, 1.0), HOSTILE: (0.9, 1.0)}), history, "2026-W48")
    board_of(tmp_path, "w49", {"falling": (0.8, 1.0), HOSTILE: (0.5, 1.0)})  # this week's scorecards
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = CliRunner().invoke(
        app,
        [
            "alerts",
            str(tmp_path / "w49"),
            "--history",
            str(history),
            "--week",
            "2026-W49",
            "--threshold",
            "0.1",
            "--site-url",
            "https://pages.example/site",
        ],
    )
    assert result.exit_code == 0, result.output
    text = summary.read_text()
    assert text.startswith("## Leaderboard alerts (2)") and "falling" not in text
    # the hostile agent's name is a code span, never Markdown or HTML
    assert f"- `{HOSTILE}` on `pyjwt`: Build+Fix F1 94.7% → 66.7% (−28.1 points, 2026-W48 → 2026-W49)" in text
    assert f"https://pages.example/site/{run_page_name(HOSTILE, 'pyjwt')}" in text


def test_llm_summary_adds_a_cached_sentence_beside_the_counts(tmp_path, monkeypatch):
    from anthropic_server import ScriptedServer, message, tool_use

    from swechain_ci.site.summary import StepSummarizer
    from swechain_ci.specs.llm import make_llm

    runs = tmp_path / "runs"
    make_run(runs, "replay", "toy", ["replay-step1", "replay-step2"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    sentence = f"The syntax error in text.py broke every module {HOSTILE}."
    with ScriptedServer(lambda body: message([tool_use("summary", {"sentence": sentence})])) as server:
        summarize = StepSummarizer(make_llm(base_url=server.url), cache=tmp_path / "cache")
        build_site(tmp_path / "site", build_leaderboard([runs]), [], "2026-W49", summarize)
        asked = len(server.requests)
        build_site(tmp_path / "again", build_leaderboard([runs]), [], "2026-W49", summarize)
        assert len(server.requests) == asked == 2, "one request per failed step, then the cache"
    prompt = json.loads(server.requests[1].messages[0]["content"][0]["text"])
    assert prompt["failure_modes"] == {"assertion mismatch": 3}  # step 2's Build+Fix
    html = (tmp_path / "again" / run_page_name("replay", "toy")).read_text()
    assert html.count("The syntax error in text.py broke every module &lt;script&gt;") == 2
    assert '<td class="mode">6</td>' in html, "the counts stay"


def test_flagged_runs_are_listed_apart_with_their_flags_and_run_pages(tmp_path):
    from swechain_ci.models import Integrity, IntegrityFlag

    runs = tmp_path / "runs"
    make_run(runs, "honest", "toy", ["replay-step1"])
    flagged = make_run(runs, "sneaky", "toy", ["replay-step1"])
    card = read_model(flagged / "scorecard.json", Scorecard)
    card.integrity = Integrity(
        status="flagged", flags=[IntegrityFlag(kind="skipped_on_candidate", detail=HOSTILE, step=1)]
    )
    write_model(flagged / "scorecard.json", card)
    board = build_leaderboard([runs])
    assert [row.agent for row in board.rows] == ["honest"] and [f.agent for f in board.flagged] == ["sneaky"]
    build_site(tmp_path / "site", board, [], "2026-W49")
    index = (tmp_path / "site" / "index.html").read_text()
    ranked, listed = index.split('class="flagged-runs"')
    assert "sneaky" not in ranked and 'class="integrity clean"' in ranked
    assert 'class="integrity flagged"' in listed and run_page_name("sneaky", "toy") in listed
    page = (tmp_path / "site" / run_page_name("sneaky", "toy")).read_text()
    assert "skipped_on_candidate" in page and "&lt;script&gt;" in page and page.count("<script") == 1
