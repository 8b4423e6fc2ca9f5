"""The site built from real run records, opened in headless Chromium over the DevTools protocol.

The runs are the session's own: the toy chain with oracle, noop and the replay fixture (the
ones test_e2e_toy/test_e2e_replay wrote, reused when present), and, in the slow set, PyJWT's
and Flask's ci_steps with oracle and noop (those of test_e2e_real_chains, reused likewise).
Screenshots go to ``$SWECHAIN_TEST_ARTIFACTS/site`` (default ``test-artifacts/site``).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from pathlib import Path

import pytest
from browser import Browser
from conftest import REPO, load_json, run_cli

from swechain_ci.scoring.leaderboard import build_leaderboard
from swechain_ci.site.build import build_site, run_page_name
from swechain_ci.site.history import record_snapshot

pytestmark = pytest.mark.docker

TOY_RUNS = {"oracle": "oracle", "noop": "noop", f"replay:{REPO / 'tests/fixtures/replay_toy'}": "replay"}
REAL_CHAINS = ["pyjwt", "flask"]


def artifacts() -> Path:
    return Path(os.environ.get("SWECHAIN_TEST_ARTIFACTS") or REPO / "test-artifacts") / "site"


def ensure_run(runs_dir: Path, name: str, *args: str) -> Path:
    """A finished run at runs_dir/name: the one an earlier test of this session wrote, else run now."""
    output = runs_dir / name
    if (output / "scorecard.json").is_file() and load_json(output / "run.json")["status"] == "finished":
        return output
    result = run_cli("run", *args, "--output", str(output), timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    return output


@pytest.fixture(scope="session")
def toy_runs(toy_oracle, runs_dir) -> list[Path]:
    return [ensure_run(runs_dir, name, "--chain", "toy", "--agent", agent) for agent, name in TOY_RUNS.items()]


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    chrome = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield chrome
    chrome.close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass


@pytest.fixture
def serve():
    """Serve a folder over HTTP on 127.0.0.1, as Pages would."""
    servers = []

    def start(folder: Path) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


WIDTHS = (390, 1280)  # a phone and a laptop


def fits(page) -> None:
    """Nothing is cut: the page itself never scrolls sideways (wide tables scroll in their frame)."""
    overflow = page.eval("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page is {overflow} px wider than the window"


def check_site(browser: Browser, url: str, board, chains: list[str], shots: str, trajectory: str | None = None) -> None:
    page = browser.page()
    try:
        for width in WIDTHS:
            page.viewport(width)
            check_pages(page, url, board, chains, f"{shots}-{width}", trajectory)
        assert page.errors == [], page.errors
    finally:
        page.close()


def check_pages(page, url: str, board, chains: list[str], shots: str, trajectory: str | None) -> None:
    page.goto(url + "index.html")
    fits(page)
    agents = page.eval("[...document.querySelectorAll('#table-0 tbody tr .agent')].map(e => e.textContent)")
    assert agents == [row.agent for row in board.rows]
    assert {"oracle", "noop"} <= set(agents)
    assert "published" in page.eval("document.querySelector('section.paper').textContent")
    assert page.eval("document.querySelectorAll('#table-0 svg.moves').length") >= 1
    assert page.eval("document.querySelectorAll('#table-0 svg.heatmap').length") >= 3
    views = page.eval("[...document.querySelectorAll('.selector label')].map(e => e.dataset.view)")
    assert views == ["Average", *chains]

    def shown() -> list[str]:
        return page.eval(
            "[...document.querySelectorAll('section.view')]"
            ".filter(s => getComputedStyle(s).display !== 'none').map(s => s.dataset.view)"
        )

    assert shown() == ["Average"]
    # sorting and filtering, added by the script: the agent column sorted, then one agent filtered
    first_table = "document.querySelector('#table-0 table.sortable')"
    page.click("#table-0 table.sortable thead th:nth-child(2)")
    names = page.eval(f"[...{first_table}.tBodies[0].rows].map(r => r.cells[1].textContent.trim())")
    assert names == sorted(names)
    # each cohort (agents run on the same chains at the same levels) is a table with its own filter:
    # the noop's (a baseline runs at a chain's default level, or at `none` where a step lacks it)
    with_noop = (
        "[...document.querySelectorAll('#table-0 table.sortable')]"
        ".find(t => [...t.querySelectorAll('tbody tr .agent')].some(e => e.textContent === 'noop'))"
    )
    page.eval(
        f"(() => {{ const t = {with_noop}; const f = t.closest('.table-frame').previousElementSibling;"
        " f.value = 'noop'; f.dispatchEvent(new Event('input')); })()"
    )
    visible = page.eval(f"[...{with_noop}.tBodies[0].rows].filter(r => !r.hidden).length")
    assert visible == 1
    page.goto(url + "index.html")
    page.screenshot(artifacts() / f"{shots}-leaderboard.png")
    for index, chain in enumerate(chains, 1):
        page.click(f'label[for="view-{index}"]')
        assert shown() == [chain]
        expected = sorted(row.agent for row in board.rows if chain in row.chains)
        listed = page.eval(f"[...document.querySelectorAll('#table-{index} tbody tr .agent')].map(e => e.textContent)")
        assert sorted(listed) == expected
    page.screenshot(artifacts() / f"{shots}-leaderboard-{chains[-1]}.png")
    page.click('label[for="view-0"]')
    assert shown() == ["Average"]

    for row in board.rows:
        for result in row.results:
            page.goto(url + run_page_name(row.agent, result.chain))
            fits(page)
            plot = page.eval(
                "(() => { const s = document.querySelector('svg.trajectory');"
                " if (!s) return null; const r = s.getBoundingClientRect();"
                " return [r.width, r.height, s.querySelectorAll('g[id^=\"series-\"] use').length]; })()"
            )
            assert plot is not None, f"no trajectory plot for {row.agent} on {result.chain}"
            assert plot[0] > 300 and plot[1] > 200 and plot[2] >= result.steps_scored
            steps = page.eval("document.querySelectorAll('table.steps tbody tr').length")
            assert steps == result.steps_scored
            raw = page.eval("[...document.querySelectorAll('td.files details a')].map(a => a.href)")
            assert raw and all(link.endswith(".txt") for link in raw)
            headers = page.eval("[...document.querySelectorAll('table.steps thead th')].map(t => t.textContent.trim())")
            assert "" not in headers and headers[:3] == ["step", "upgrade", "B+F F1 %"]
    page.goto(url + run_page_name("oracle", chains[0]))  # the oracle's steps all have a diff
    page.screenshot(artifacts() / f"{shots}-run.png")
    diff = page.eval(
        "(() => { const a = [...document.querySelectorAll('td.files > a')].find(a => a.textContent.includes('diff'));"
        " return a && a.href; })()"
    )
    assert diff and diff.endswith(".html")
    page.goto(diff)
    fits(page)
    assert page.eval("document.querySelectorAll('.highlight .gi, .highlight .gd').length") > 0
    page.screenshot(artifacts() / f"{shots}-diff.png")
    page.goto(url + f"compare/{chains[0]}.html")
    fits(page)
    columns = page.eval(
        "[...document.querySelectorAll('table.compare thead th[data-run]')].filter(t => !t.hidden).length"
    )
    assert columns == 2, "the picker shows two runs side by side"
    page.screenshot(artifacts() / f"{shots}-compare.png")
    page.goto(url + "trend.html")
    fits(page)
    assert page.eval("document.querySelectorAll('svg.trend').length") == len(chains)
    page.screenshot(artifacts() / f"{shots}-trend.png")
    if trajectory:
        page.goto(url + trajectory)
        fits(page)
        kinds = page.eval("[...document.querySelectorAll('ol.trajectory li')].map(li => li.className)")
        assert {"entry message", "entry tool_call", "entry tool_result"} <= set(kinds)
        page.screenshot(artifacts() / f"{shots}-trajectory.png")


def make_site(tmp_path: Path, runs: list[Path]):
    board = build_leaderboard(runs)
    history = tmp_path / "history"
    record_snapshot(board, history, "2026-W48")  # last week's, so the trend has two points
    from swechain_ci.site.history import load_history

    site = tmp_path / "site"
    build_site(site, board, load_history(history), "2026-W49")
    return site, board


def with_a_stream(replay: Path, tmp_path: Path) -> Path:
    """A copy of the replay run whose step 1 Build log holds Claude Code's stream, as a cli agent's would."""
    import shutil

    copy = tmp_path / "streamed"
    shutil.copytree(replay, copy)
    step = sorted((copy / "steps").iterdir())[0]
    (step / "logs").mkdir(exist_ok=True)
    shutil.copyfile(REPO / "tests/fixtures/streams/claude-stream-json.jsonl", step / "logs" / "agent-build.log")
    return copy


def test_site_from_toy_runs_in_a_real_browser(toy_runs, browser, serve, tmp_path):
    oracle, noop, replay = toy_runs
    site, board = make_site(tmp_path, [oracle, noop, with_a_stream(replay, tmp_path)])
    [page] = site.glob("runs/replay*/step-01/trajectory-build.html")
    check_site(browser, serve(site), board, ["toy"], "toy", trajectory=str(page.relative_to(site)))
    assert (site / "leaderboard.csv").read_text().startswith("cohort,rank,agent,chain")
    assert json.loads((site / "leaderboard.json").read_text())["rows"]
    for width in WIDTHS:
        for kind in ("leaderboard", "run", "diff", "compare", "trend", "trajectory"):
            assert (artifacts() / f"toy-{width}-{kind}.png").stat().st_size > 10_000, (width, kind)


@pytest.mark.slow
def test_site_from_toy_and_real_chains_in_a_real_browser(toy_runs, runs_dir, browser, serve, tmp_path):
    real = []
    for chain in REAL_CHAINS:
        steps = load_json_chain_steps(chain)
        assert run_cli("chain", "build", chain, "--steps", steps, timeout=3600).returncode == 0
        for agent in ("oracle", "noop"):
            real.append(
                ensure_run(
                    runs_dir,
                    f"{chain}-{agent}",
                    "--chain",
                    chain,
                    "--agent",
                    agent,
                    "--steps",
                    steps,
                    "--spec-level",
                    "L1",
                )
            )
    site, board = make_site(tmp_path, [*toy_runs, *real])
    assert {r.chain for row in board.rows for r in row.results} == {"toy", *REAL_CHAINS}
    check_site(browser, serve(site), board, sorted(["toy", *REAL_CHAINS]), "all")


def load_json_chain_steps(chain: str) -> str:
    from swechain_ci.chain.definition import load_chain

    return load_chain(chain).config.ci_steps
