"""The weekly refresh reruns what changed: `matrix --since` against the record `refresh-record`
writes, on a small project; the pure functions on their own for what the CLI cannot reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swechain_ci.errors import SwechainError
from swechain_ci.github.cli import ci_app
from swechain_ci.github.refresh import Pair, RefreshRecord, changed, pair_inputs, plan, record_runs
from swechain_ci.models import Metrics, Scorecard
from swechain_ci.records import read_model, write_model
from swechain_ci.scoring.leaderboard import build_leaderboard

EVERY_PAIR = [
    ("oracle", "alpha"),
    ("oracle", "beta"),
    ("noop", "alpha"),
    ("noop", "beta"),
    ("free", "alpha"),
    ("needs-key", "alpha"),
]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Two chains (beta without its default level's specification: the baselines' only), two
    registered agents (one with a Dockerfile), no oracle built yet."""
    root = tmp_path / "project"
    for chain in ("alpha", "beta"):
        (root / "chains" / chain).mkdir(parents=True)
        (root / "chains" / chain / "chain.yaml").write_text(
            f"id: {chain}\npackage: p\nimport_name: p\ndefault_spec_level: manual\n"
            "versions: [{version: '1', source: {kind: local, path: v1}}, {version: '2', source: {kind: local, path: v2}}]\n"
        )
    (root / "specs" / "alpha" / "1-2").mkdir(parents=True)
    (root / "specs" / "alpha" / "1-2" / "manual.md").write_text("# Upgrade\n")
    (root / "specs" / "alpha" / "1-2" / "L1.md").write_text("# Another level\n")
    agents = root / "agents"
    (agents / "files").mkdir(parents=True)
    (agents / "needs-key.yaml").write_text(
        "name: needs-key\nkind: cli\nenv: [VENDOR_TEST_KEY]\ninstall: {dockerfile: needs-key.Dockerfile}\n"
        "commands: {build: 'true', fix: 'true'}\n"
    )
    (agents / "needs-key.Dockerfile").write_text("FROM ${AGENT_IMAGE}\nCOPY files/settings.json /opt/\n")
    (agents / "files" / "settings.json").write_text("{}\n")
    (agents / "free.yaml").write_text("name: free\nkind: cli\ncommands: {build: 'true', fix: 'true'}\n")
    monkeypatch.setenv("SWECHAIN_ROOT", str(root))
    monkeypatch.setenv("SWECHAIN_SECRET_NEEDS_KEY__VENDOR_TEST_KEY", "granted")
    return root


def invoke(*args: str):
    result = CliRunner().invoke(ci_app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


def refresh(record: Path, *more: str) -> tuple[list[dict], str]:
    """The weekly plan job: the matrix entries, and the notes on stderr."""
    result = invoke("matrix", "--runnable-only", "--since", str(record), *more)
    return json.loads(result.stdout)["include"], result.stderr


def pairs_of(include: list[dict]) -> list[tuple[str, str]]:
    return [(e["agent"], e["chain"]) for e in include]


def scorecard(agent: str, chain: str, level: str, resolving: float = 0.5) -> Scorecard:
    metrics = Metrics(resolving=resolving, precision=1.0, f1=2 * resolving / (1 + resolving), tp=1, fn=1, fp=0)
    return Scorecard(
        chain=chain,
        step_range="1-1",
        agent=agent,
        spec_level=level,
        steps_total=1,
        steps_scored=1,
        build=metrics,
        build_fix=metrics,
        steps=[],
        oracle_hash="0" * 64,
    )


def run_all(include: list[dict], runs: Path) -> Path:
    """The run jobs: a scorecard in each entry's folder, as `run --output weekly/<folder>` leaves it."""
    for entry in include:
        write_model(
            runs / entry["folder"] / "scorecard.json", scorecard(entry["agent"], entry["chain"], entry["level"])
        )
    return runs


def first_refresh(project: Path, tmp_path: Path) -> Path:
    record = project / "reports" / "refresh.json"
    include, notes = refresh(record)
    assert "no refresh record" in notes and pairs_of(include) == EVERY_PAIR
    assert notes.count("not run by a refresh yet") == len(EVERY_PAIR)
    invoke("refresh-record", str(run_all(include, tmp_path / "week1")), "--record", str(record))
    return record


def test_nothing_changed_runs_no_pair(project, tmp_path):
    record = first_refresh(project, tmp_path)
    kept = read_model(record, RefreshRecord)
    assert len(kept.pairs) == len(EVERY_PAIR) and all(len(p.runs) == 1 for p in kept.pairs)
    levels = {(p.pair.agent, p.pair.chain): p.pair.level for p in kept.pairs}
    assert levels[("oracle", "beta")] == "none" and levels[("free", "alpha")] == "manual"
    include, notes = refresh(record)
    assert include == []
    assert "no input of the 6 pairs changed" in notes and "the matrix is empty" in notes


@pytest.mark.parametrize(
    ("edit", "expected", "reason"),
    [
        (
            lambda root: (root / "agents" / "free.yaml").write_text(
                "name: free\nkind: cli\ncommands: {build: 'echo v2', fix: 'true'}\n"
            ),
            [("free", "alpha")],
            "the agent changed",
        ),
        (
            lambda root: (root / "agents" / "files" / "settings.json").write_text('{"v": 2}\n'),
            [("needs-key", "alpha")],  # free has no Dockerfile: agents/files/ is not its input
            "the agent changed",
        ),
        (
            lambda root: (root / "chains" / "beta" / "oracle.json").write_text("{}\n"),  # built: was unbuilt
            [("oracle", "beta"), ("noop", "beta")],
            "the chain's oracle changed",
        ),
        (
            lambda root: (root / "specs" / "alpha" / "1-2" / "manual.md").write_text("# Upgrade, reworded\n"),
            [("free", "alpha"), ("needs-key", "alpha")],  # the baselines read no specification
            "the specification changed",
        ),
        (
            lambda root: (root / "specs" / "alpha" / "1-2" / "L1.md").write_text("# Not the level run\n"),
            [],
            None,
        ),
    ],
    ids=["manifest", "dockerfile-files", "oracle", "spec", "other-level"],
)
def test_one_changed_input_reruns_exactly_the_affected_pairs(project, tmp_path, edit, expected, reason):
    record = first_refresh(project, tmp_path)
    edit(project)
    include, notes = refresh(record)
    assert pairs_of(include) == expected
    assert [e["repeat"] for e in include] == [1] * len(expected)
    for agent, chain in expected:
        assert f"note: {agent} on {chain} at " in notes and reason in notes
    # the refresh records what it ran: the next one has nothing to do
    invoke("refresh-record", str(run_all(include, tmp_path / "week2")), "--record", str(record))
    assert refresh(record)[0] == []


def test_a_harness_change_reruns_every_pair(project, tmp_path):
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "run_hidden_tests.py").write_text("print('v1')\n")
    pairs = [Pair(agent=a, chain=c, level="manual") for a, c in EVERY_PAIR]
    before = [(p, pair_inputs(project, harness, p, "1.0" if p.agent in ("oracle", "noop") else None)) for p in pairs]
    ran = [(p, inputs, {1: scorecard(p.agent, p.chain, p.level)}) for p, inputs in before]
    record = record_runs(RefreshRecord(), ran)
    assert changed(before, record) == []
    (harness / "run_hidden_tests.py").write_text("print('v2')\n")
    after = [(p, pair_inputs(project, harness, p, "1.0" if p.agent in ("oracle", "noop") else None)) for p in pairs]
    assert changed(after, record) == [(p, ["the harness changed"]) for p in pairs]
    # a new package version is a new built-in agent
    bumped = [(p, pair_inputs(project, harness, p, "1.1")) for p in pairs[:1]]
    assert changed(bumped, record) == [(pairs[0], ["the agent changed", "the harness changed"])]


def test_repeats_give_n_entries_per_pair_each_in_its_own_folder(project, tmp_path):
    record = first_refresh(project, tmp_path)
    include, notes = refresh(record, "--repeats", "3")
    assert pairs_of(include) == [pair for pair in EVERY_PAIR for _ in range(3)]
    oracle_beta = [e for e in include if (e["agent"], e["chain"]) == ("oracle", "beta")]
    assert [e["repeat"] for e in oracle_beta] == [2, 3, 4], "numbered after the run kept"
    assert [e["folder"] for e in oracle_beta] == ["oracle/beta/r2", "oracle/beta/r3", "oracle/beta/r4"]
    assert "repeat 4 asked" in notes
    week2 = run_all(include, tmp_path / "week2")
    invoke("refresh-record", str(week2), "--record", str(record))
    kept = read_model(record, RefreshRecord)
    assert all([r.repeat for r in p.runs] == [1, 2, 3, 4] for p in kept.pairs)
    # the run kept from last week is written back beside this week's: the leaderboard counts 4 repeats
    assert (week2 / "oracle" / "beta" / "r1" / "scorecard.json").is_file()
    board = build_leaderboard([week2])
    assert all(result.repeats.runs == 4 for row in board.rows for result in row.results)

    # a changed pair with repeats starts afresh: its runs on the old inputs are not kept
    (project / "agents" / "free.yaml").write_text("name: free\nkind: cli\ncommands: {build: 'echo v2', fix: 'true'}\n")
    include, _ = refresh(record, "--repeats", "2")
    free = [e["repeat"] for e in include if e["agent"] == "free"]
    assert free == [1, 2]
    invoke("refresh-record", str(run_all(include, tmp_path / "week3")), "--record", str(record))
    runs = {(p.pair.agent, p.pair.chain): [r.repeat for r in p.runs] for p in read_model(record, RefreshRecord).pairs}
    assert runs[("free", "alpha")] == [1, 2] and runs[("noop", "alpha")] == [1, 2, 3, 4, 5, 6]


def test_unchanged_pairs_stay_on_the_leaderboard(project, tmp_path):
    record = first_refresh(project, tmp_path)
    (project / "agents" / "free.yaml").write_text("name: free\nkind: cli\ncommands: {build: 'echo v2', fix: 'true'}\n")
    include, _ = refresh(record)
    assert pairs_of(include) == [("free", "alpha")]
    week2 = run_all(include, tmp_path / "week2")
    result = invoke("refresh-record", str(week2), "--record", str(record))
    assert "5 kept runs of unchanged pairs written back" in result.stdout
    board = build_leaderboard([week2])
    assert {(row.agent, r.chain) for row in board.rows for r in row.results} == set(EVERY_PAIR)


def test_a_failed_run_is_retried_and_nothing_ran_changes_nothing(project, tmp_path):
    record = project / "reports" / "refresh.json"
    include, _ = refresh(record)
    run_all([e for e in include if e["agent"] != "noop"], tmp_path / "week1")  # noop's runs left no scorecard
    invoke("refresh-record", str(tmp_path / "week1"), "--record", str(record))
    include, notes = refresh(record)
    assert pairs_of(include) == [("noop", "alpha"), ("noop", "beta")] and "not run by a refresh yet" in notes
    before = record.read_bytes()
    invoke("refresh-record", str(tmp_path / "empty"), "--record", str(record))
    assert record.read_bytes() == before, "an empty refresh rewrites the record byte for byte"


def test_plan_without_a_record_and_bad_arguments(project, tmp_path):
    pair = Pair(agent="free", chain="alpha", level="manual")
    inputs = pair_inputs(project, tmp_path, pair)
    assert inputs.parts["oracle"] == "unbuilt" and len(inputs.digest) == 64
    assert plan([(pair, inputs)], RefreshRecord(), repeats=2) == [
        (pair, 1, ["not run by a refresh yet"]),
        (pair, 2, ["not run by a refresh yet"]),
    ]
    with pytest.raises(SwechainError, match="--repeats counts from a refresh record"):
        CliRunner().invoke(ci_app, ["matrix", "--repeats", "2"], catch_exceptions=False)
    (tmp_path / "bad.json").write_text('{"schema_version": 1, "pairs": [{"pair": {}}]}')
    with pytest.raises(SwechainError, match=r"bad\.json"):
        CliRunner().invoke(ci_app, ["matrix", "--since", str(tmp_path / "bad.json")], catch_exceptions=False)
