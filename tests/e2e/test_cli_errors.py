"""Bad input gets a clear one-line error and a non-zero exit, and nothing already done is lost."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import run_cli

NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def folder_fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_chain(root: Path, text: str) -> Path:
    path = root / "chains" / "broken" / "chain.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "id: broken\npackage: p\nimport_name: p\nversions: [{version: '1.0', source: {kind: local, path: a}}]\n",
            "field 'versions': List should have at least 2 items",
        ),
        ("id: broken\npackage: p\nimport_name: 9p\nversions: []\n", "field 'import_name': String should match pattern"),
        ("id: broken\npackage: p\nimport_name: p\ntimeouts: {run_s: -1}\nversions: []\n", "field 'timeouts.run_s'"),
        (
            "id: broken\npackage: p\nimport_name: p\nversions:\n - {version: '1', source: {kind: ftp, path: a}}\n"
            " - {version: '2', source: {kind: local, path: b}}\n",
            "field 'versions.0.source'",
        ),
        (
            "id: broken\npackage: p\nimport_name: p\nprotected: []\n",
            "field 'protected': Extra inputs are not permitted",
        ),
        ("id: [unclosed\n", "is not valid YAML"),
        ("- just\n- a list\n", "expected a mapping of chain fields"),
    ],
)
def test_bad_chain_yaml_names_the_file_and_the_field(project_copy, text, expected):
    path = write_chain(project_copy, text)
    result = run_cli("chain", "build", "broken", env={"SWECHAIN_ROOT": str(project_copy), **NO_DOCKER})
    line = error_line(result)
    assert str(path) in line
    assert expected in line


def test_chain_id_must_match_its_folder(project_copy):
    write_chain(
        project_copy,
        "id: other\npackage: p\nimport_name: p\nversions:\n"
        " - {version: '1', source: {kind: local, path: a}}\n - {version: '2', source: {kind: local, path: b}}\n",
    )
    line = error_line(run_cli("chain", "build", "broken", env={"SWECHAIN_ROOT": str(project_copy)}))
    assert "field 'id': is 'other' but the folder is 'broken'; make them equal" in line


def test_unknown_chain_lists_the_known_ones():
    line = error_line(run_cli("run", "--chain", "nosuch", "--agent", "oracle", "--output", "/tmp/never", env=NO_DOCKER))
    assert "unknown chain 'nosuch'" in line and "known chains: " in line and "pyjwt" in line and "toy" in line
    assert not Path("/tmp/never").exists()


def test_unknown_agent_names_the_builtin_agents(tmp_path):
    line = error_line(
        run_cli("run", "--chain", "toy", "--agent", "gpt", "--output", str(tmp_path / "o"), env=NO_DOCKER)
    )
    assert "unknown agent 'gpt'" in line and "known agents are oracle, noop, replay:<patch folder>" in line


def test_missing_spec_level_is_reported_with_the_levels_present(tmp_path):
    line = error_line(
        run_cli(
            "run",
            "--chain",
            "toy",
            "--agent",
            "noop",
            "--spec-level",
            "L5",
            "--output",
            str(tmp_path / "o"),
            env=NO_DOCKER,
        )
    )
    assert "no level-L5 specification" in line and "levels present for every step: manual" in line
    assert "`swechain-ci specs synth toy --levels L5` (needs ANTHROPIC_API_KEY) writes them" in line


def test_no_docker_engine_is_a_clear_error_and_loses_nothing(tmp_path):
    output = tmp_path / "run"
    first = run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output), env=NO_DOCKER)
    line = error_line(first)
    assert "no Docker engine reachable" in line and "dockerd --bridge=none --iptables=false" in line
    assert not output.exists()


def test_an_existing_run_of_another_agent_is_never_overwritten(tmp_path):
    output = tmp_path / "run"
    output.mkdir()
    (output / "run.json").write_text(
        '{"schema_version": 1, "run_id": "abc", "chain": "toy", "step_range": "1-3", "agent": "oracle", "spec_level": "manual",'
        ' "oracle_hash": "x", "steps_total": 3, "status": "running", "stop_reason": null}'
    )
    (output / "notes.txt").write_text("keep me")
    before = folder_fingerprint(output)
    line = error_line(run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output)))
    assert "holds a run of chain toy steps 1-3 with agent oracle" in line
    assert folder_fingerprint(output) == before


def test_a_non_run_folder_is_refused(tmp_path):
    (tmp_path / "precious.txt").write_text("data")
    line = error_line(run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(tmp_path)))
    assert "holds no run.json" in line
    assert (tmp_path / "precious.txt").read_text() == "data"


def test_score_of_a_folder_without_results(tmp_path):
    line = error_line(run_cli("score", str(tmp_path)))
    assert f"{tmp_path / 'run.json'} does not exist" in line


def test_no_docker_engine_leaves_an_unfinished_run_untouched(tmp_path):
    output = tmp_path / "run"
    (output / "steps" / "01-0.1.0-0.2.0").mkdir(parents=True)
    (output / "run.json").write_text(
        '{"schema_version": 1, "run_id": "abc", "chain": "toy", "step_range": "1-3", "agent": "noop", "spec_level": "manual",'
        ' "oracle_hash": "x", "steps_total": 3, "status": "running", "stop_reason": null}'
    )
    (output / "steps" / "01-0.1.0-0.2.0" / "build.diff").write_text("partial work\n")
    before = folder_fingerprint(output)
    line = error_line(run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output), env=NO_DOCKER))
    assert "no Docker engine reachable" in line
    assert folder_fingerprint(output) == before


def test_missing_paper_level_names_the_command_that_writes_it(tmp_path):
    # PyJWT's default is the paper's L3, which `specs import` writes from the published specifications.
    # A real agent needs it (the baselines read none and run without it).
    line = error_line(
        run_cli(
            "run",
            "--chain",
            "pyjwt",
            "--agent",
            "claude-code",
            "--steps",
            "1-1",
            "--output",
            str(tmp_path / "o"),
            env=NO_DOCKER,
        )
    )
    assert "no level-L3 specification" in line and "levels present for every step: L1, L1+interface" in line
    assert "`swechain-ci specs import <specs_chain.parquet or metadata/ folder> --chain pyjwt`" in line
    interface = error_line(
        run_cli(
            "run",
            "--chain",
            "toy",
            "--agent",
            "noop",
            "--spec-level",
            "L2+interface",
            "--output",
            str(tmp_path / "t"),
            env=NO_DOCKER,
        )
    )
    assert "`swechain-ci specs synth toy --levels L2 --interface` (needs ANTHROPIC_API_KEY) writes them" in interface


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--phase", "deploy"],
            "--phase deploy is not a phase: use one of build, evaluate, fix, evaluate-fix, hand-on",
        ),
        (["--step", "2"], "--step goes with --phase"),
        (["--phase", "build", "--max-steps", "1"], "--max-steps counts whole steps; drop it with --phase"),
    ],
)
def test_phase_options_are_checked_before_any_work(tmp_path, args, expected):
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output), *args, env=NO_DOCKER)
    assert expected in error_line(result)
    assert not output.exists()


@pytest.mark.docker
def test_phases_run_one_by_one_in_order_each_with_its_summary(toy_oracle, tmp_path):
    output = tmp_path / "run"
    early = run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output), "--phase", "evaluate")
    assert "cannot run step 1 evaluate: the run is at step 1 build; run --phase build first" in error_line(early)
    built = run_cli("run", "--chain", "toy", "--agent", "noop", "--output", str(output), "--phase", "build")
    assert built.returncode == 0, built.stderr
    assert "## Step 1 (0.1.0 → 0.2.0): build" in built.stdout and "| diff " in built.stdout
    before = folder_fingerprint(output)
    again = run_cli(
        "run", "--chain", "toy", "--agent", "noop", "--output", str(output), "--phase", "build", "--step", "1"
    )
    assert again.returncode == 0 and "step 1 build: already done (the run is at step 1 evaluate)" in again.stdout
    assert folder_fingerprint(output) == before, "a phase already done is not redone"
    # The phases one by one, as jobs run them: each prints (and in Actions writes) its own summary.
    summaries = {}
    for phase in ("evaluate", "fix", "evaluate-fix"):
        done = run_cli(
            "run",
            "--chain",
            "toy",
            "--agent",
            "noop",
            "--output",
            str(output),
            "--phase",
            phase,
            "--step",
            "1",
            env={"GITHUB_STEP_SUMMARY": str(tmp_path / f"{phase}.md"), "GITHUB_OUTPUT": str(tmp_path / f"{phase}.out")},
        )
        assert done.returncode == 0, done.stderr
        summaries[phase] = (tmp_path / f"{phase}.md").read_text()
        assert summaries[phase] == done.stdout.rstrip("\n") + "\n"
    assert "the one Fix is granted" in summaries["evaluate"] and "| Build+Fix" not in summaries["evaluate"]
    assert (tmp_path / "evaluate.out").read_text() == "step=1\nnext=fix\n"
    assert "The Fix report the agent answered:" in summaries["fix"] and "unique_slug" in summaries["fix"]
    assert "| Build+Fix" in summaries["evaluate-fix"] and "Chain totals after 1 of 3 steps" in summaries["evaluate-fix"]
    assert (tmp_path / "evaluate-fix.out").read_text() == "step=1\nnext=build\n"
