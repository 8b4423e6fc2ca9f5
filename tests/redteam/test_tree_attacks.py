"""Red team, issue 22 class 8: the host against unusual code trees an agent leaves. Each attack is
a real toy chain run with an agent that shapes its tree from the shell; each must end cleanly (no
traceback, no run left ``running``, nothing outside the run folder), in bounded time, with the
reason recorded."""

from __future__ import annotations

import time

import pytest
from conftest import load_json, run_cli

from redteam.conftest import HONEST_STEP1, counts
from redteam.test_host_attacks import write_agent

pytestmark = pytest.mark.docker

DEEP = "python3 -c \"import os\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\nopen('f.py', 'w').write('x = 1')\""


def run_agent(tmp_path, name: str, build: str) -> tuple[dict, float, object]:
    agent = write_agent(tmp_path, name, build)
    around = tmp_path / "runs"
    around.mkdir()
    output = around / "run"
    started = time.perf_counter()
    result = run_cli("run", "--chain", "toy", "--steps", "1-1", "--agent", agent, "--output", str(output))
    seconds = time.perf_counter() - started
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert [p.name for p in around.iterdir()] == ["run"], "written beside the run folder"
    return load_json(output / "scorecard.json"), seconds, output


def test_a_tree_3000_folders_deep_is_rejected_with_its_reason(toy_oracle, tmp_path):
    card, seconds, output = run_agent(tmp_path, "deep", DEEP)
    step = card["steps"][0]
    assert step["agent_status"] == "tree_rejected"
    assert "more than 100 folders deep" in card["stop_reason"], card["stop_reason"]
    assert counts(step["build"]) == HONEST_STEP1, "the code as it was is scored"
    assert load_json(output / "run.json")["status"] == "stopped"
    assert seconds < 300, f"the run took {seconds:.0f} s"


def test_hard_links_are_the_agents_files(toy_oracle, tmp_path):
    """The package's __init__.py as the second name of a file (a hard link in the tree's archive):
    once dropped, which broke the package and scored code the agent never wrote."""
    build = "ln src/toyslug/__init__.py src/toyslug/AAA_same_file.py && mkfifo src/pipe"
    card, _, output = run_agent(tmp_path, "linker", build)
    step = card["steps"][0]
    assert step["agent_status"] == "ok"
    assert counts(step["build"]) == HONEST_STEP1, counts(step["build"])
    folder = next((output / "steps").glob("01-*"))
    agent = load_json(folder / "agent-build.json")["agent"]
    assert "left out of the code tree: src/pipe (a fifo)" in agent["detail"], agent["detail"]
