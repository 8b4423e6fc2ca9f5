"""The level a run uses: the baselines read no specification, so a chain without its default
level runs them at level ``none``; a real agent gets a one-line error naming both ways out."""

from __future__ import annotations

import pytest
from conftest import run_cli

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.store import NO_LEVEL, run_specs

NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


@pytest.fixture
def project(project_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return project_copy


def test_a_baseline_runs_without_the_default_level_and_records_none(project):
    chain = load_chain("pyjwt").select_steps("1-2")
    assert "L3" not in {p.stem for p in (project / "specs" / "pyjwt" / "2.0.0-2.0.1").glob("*.md")}
    assert run_specs(chain, None, reads_spec=False) == (NO_LEVEL, {})
    level, specs = run_specs(chain, NO_LEVEL, reads_spec=False)  # resuming such a run
    assert (level, specs) == (NO_LEVEL, {})


def test_a_baseline_runs_at_the_default_level_when_it_exists(project):
    chain = load_chain("toy")  # its default level is `manual`, present for every step
    level, specs = run_specs(chain, None, reads_spec=False)
    assert level == "manual"
    assert set(specs) == set(chain.steps) and all(text.strip() for text in specs.values())


def test_a_level_asked_for_by_name_must_exist_even_for_a_baseline(project):
    with pytest.raises(SwechainError, match="no level-L4 specification"):
        run_specs(load_chain("pyjwt"), "L4", reads_spec=False)


def test_a_real_agent_without_the_level_is_told_both_ways_out(project):
    chain = load_chain("pyjwt")
    with pytest.raises(SwechainError) as caught:
        run_specs(chain, None, reads_spec=True)
    message = str(caught.value)
    assert "\n" not in message
    assert "`swechain-ci specs fetch`" in message and "`swechain-ci specs import" in message
    assert "--spec-level L1" in message
    with pytest.raises(SwechainError, match="--spec-level none is for the baselines"):
        run_specs(chain, NO_LEVEL, reads_spec=True)


def test_a_chain_with_no_level_at_all_points_at_rendering_l1(project):
    for md in (project / "specs" / "pyjwt").rglob("*"):
        if md.is_file():
            md.unlink()
    with pytest.raises(SwechainError, match=r"`swechain-ci specs render pyjwt` and run with --spec-level L1"):
        run_specs(load_chain("pyjwt"), None, reads_spec=True)


def test_the_cli_error_for_a_real_agent_is_one_line_with_exit_2(project, tmp_path):
    agents = project / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "free.yaml").write_text("name: free\nkind: cli\ncommands: {build: 'true', fix: 'true'}\n")
    env = {**NO_DOCKER, "SWECHAIN_ROOT": str(project), "SWECHAIN_HOME": str(tmp_path / "home")}
    result = run_cli("run", "--chain", "pyjwt", "--agent", "free", "--output", str(tmp_path / "out"), env=env)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: chain pyjwt has no level-L3 specification")
    assert "--spec-level L1" in lines[0] and "specs fetch" in lines[0]
    assert not (tmp_path / "out").exists(), "nothing is started"
    # Without --output the folder is runs/<chain>-<agent>[-<steps>]; the error stays one line.
    default = run_cli("run", "--chain", "pyjwt", "--agent", "free", "--steps", "1-2", env=env, cwd=tmp_path)
    assert default.returncode == 2 and len([x for x in default.stderr.splitlines() if x.strip()]) == 1
    assert not (tmp_path / "runs").exists()
