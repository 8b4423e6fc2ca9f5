"""Red team, class 6: the host against whatever a container or an agent leaves. Each attack is a
real chain run on the toy chain; each must end cleanly (no traceback, no run stuck ``running``),
write nothing outside the run folder, and score no better than honest code: HONEST_STEP1
(0 resolved of 9, no regression) for a candidate that fixes nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, load_json, run_cli

from redteam.conftest import HONEST_STEP1, TOY_START, better_or_equal, counts

pytestmark = pytest.mark.docker
INIT = "src/toyslug/__init__.py"
START_INIT = (TOY_START / INIT).read_text()


def no_better_than_honest(run) -> bool:
    return better_or_equal(HONEST_STEP1, run.build) and better_or_equal(HONEST_STEP1, run.build_fix)


def test_a_malformed_record_is_an_execution_error_not_a_stuck_run(attack):
    # Code that writes a failed-import record with an unexpected key where the harness collects
    # its output (if it can): once a pydantic traceback that left the run "running" forever.
    run = attack(
        {
            INIT: START_INIT + "\ntry:\n    with open('/out/failed_imports.jsonl', 'a') as _f:\n"
            '        _f.write(\'{"test_file": "t", "module": "m", "names": [], "error": "e", "forged": 1}\\n\')\n'
            "except OSError:\n    pass\n"
        }
    )
    assert no_better_than_honest(run)
    assert load_json(run.output / "run.json")["status"] == "finished"


def test_a_flood_in_the_output_folder_costs_the_host_no_memory(attack, tmp_path, monkeypatch):
    # 256 MiB written where the harness's output is collected (if it can be): the host reads at
    # most 64 MiB of it, as a stream; the evaluation is an execution error, never a host OOM.
    flood = "\ntry:\n    with open('/out/flood.bin', 'wb') as _f:\n        _f.write(b'x' * (256 << 20))\nexcept OSError:\n    pass\n"
    run = attack({INIT: START_INIT + flood})
    assert no_better_than_honest(run)
    step = run.step["build"]["run"]
    if step["execution_error"] and "exceeds" in step["execution_error"]:
        assert step["execution_error"].startswith("the output folder /out exceeds 64 MiB")


def test_peak_host_memory_stays_bounded_under_an_output_flood(toy_oracle, tmp_path):
    """The same flood, with the host's peak memory measured (the issue saw 2.8 GB for 1.3 GB)."""
    from redteam.conftest import patches_from

    folder = tmp_path / "patches"
    folder.mkdir()
    flood = "\ntry:\n    with open('/out/flood.bin', 'wb') as _f:\n        _f.write(b'x' * (256 << 20))\nexcept OSError:\n    pass\n"
    for name, text in patches_from({INIT: START_INIT + flood}, None, tmp_path / "trees").items():
        (folder / name).write_text(text)
    # The peak of this process's own memory (VmHWM): getrusage's ru_maxrss also counts the memory of
    # the process it was started from (Linux carries it over the exec), here the whole test session.
    measure = (
        "import runpy, sys\nsys.argv = ['swechain-ci'] + sys.argv[1:]\ntry:\n"
        "    runpy.run_module('swechain_ci', run_name='__main__')\nfinally:\n"
        "    peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
        "    print('MAXRSS', peak, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            measure,
            "run",
            "--chain",
            "toy",
            "--steps",
            "1-1",
            "--agent",
            f"replay:{folder}",
            "--output",
            str(tmp_path / "run"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    peak_mib = int(result.stderr.split("MAXRSS")[-1].split()[0]) / 1024
    assert peak_mib < 256, f"the host peaked at {peak_mib:.0f} MiB"


def test_a_file_name_that_is_not_utf8_is_handled(attack):
    run = attack({"src/toyslug/\udcff\udcfe.py": "x = 1\n"})
    assert no_better_than_honest(run)
    assert run.step["build"]["diff"]["files"] == 1


def forged_patch(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n"
        '+{"forged": "a step record with full marks"}\n'
    )


LINK_THEN_WRITE = (
    "diff --git a/out b/out\nnew file mode 120000\n--- /dev/null\n+++ b/out\n@@ -0,0 +1 @@\n+{target}\n"
    "\\ No newline at end of file\n"
)


@pytest.mark.parametrize("how", ["dotdot", "absolute", "link"])
def test_a_replay_patch_cannot_write_outside_the_code_tree(attack, tmp_path, how):
    # Aimed at the run folder: a forged step.json that re-scoring would count (once `git apply
    # --unsafe-paths` wrote it). "link": a link to the run folder, then a file through it.
    run_folder = tmp_path / "runs" / "run"
    target = run_folder / "steps" / "09-forged" / "step.json"
    if how == "dotdot":
        patch = forged_patch("../" * 30 + str(target).lstrip("/"))
    elif how == "absolute":
        patch = forged_patch("x").replace("+++ b/x", f"+++ {target}")
    else:
        patch = LINK_THEN_WRITE.format(target=run_folder) + forged_patch("out/steps/09-forged/step.json")
    run = attack({}, patches={"step-1.build.patch": patch})
    assert not target.exists() and not list(tmp_path.rglob("09-forged"))
    assert run.scorecard["steps_scored"] == 1 and run.build == HONEST_STEP1
    assert run.step["build"]["agent"]["status"] == "crashed"
    detail = run.step["build"]["agent"]["detail"]
    assert any(
        why in detail
        for why in ("outside the code tree", "absolute path", "beyond a symbolic link", "link out of the code tree")
    ), detail
    assert load_json(run.output / "run.json")["status"] == "stopped"


def write_agent(folder, name: str, build: str, **extra) -> str:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "kind": "cli", "commands": {"build": build, "fix": "true"}, **extra}))
    return str(path)


def test_background_processes_do_not_outlive_their_phase(toy_oracle, tmp_path):
    # Step 1's build leaves a process appending to the code tree forever. Step 2's build deletes
    # its file, waits, and exits 1 if the file came back (the process outlived step 1).
    build = (
        "if [ {step} = 1 ]; then nohup sh -c 'while :; do date >> /app/code/heartbeat; sleep 0.2; done' "
        ">/dev/null 2>&1 & sleep 1; fi; "
        "if [ {step} = 2 ]; then rm -f heartbeat; sleep 2; test ! -e heartbeat || exit 7; fi"
    )
    agent = write_agent(tmp_path, "lingerer", build)
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--steps", "1-2", "--agent", agent, "--output", str(output))
    assert result.returncode == 0, result.stderr
    card = load_json(output / "scorecard.json")
    # Step 2's agent exits 7 (a crash that stops the chain) if the writer was still alive.
    assert [s["agent_status"] for s in card["steps"]] == ["ok", "ok"], card["stop_reason"]


def test_an_oversized_tree_stops_the_chain_cleanly_and_resumes_cleanly(toy_oracle, tmp_path):
    # 230 MB in the code tree, over the 200 MiB limit: an agent failure with its own status.
    agent = write_agent(tmp_path, "hoarder", "head -c 230000000 /dev/zero > big.bin")
    output = tmp_path / "run"
    result = run_cli("run", "--chain", "toy", "--steps", "1-1", "--agent", agent, "--output", str(output))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    card = load_json(output / "scorecard.json")
    assert card["steps"][0]["agent_status"] == "tree_rejected"
    assert card["stop_reason"].startswith("step 1: agent tree_rejected: the agent's code tree exceeds 200 MiB")
    assert counts(card["steps"][0]["build"]) == HONEST_STEP1, "the code as it was is scored"
    assert load_json(output / "run.json")["status"] == "stopped"
    assert sum(f.stat().st_size for f in output.rglob("*") if f.is_file()) < 10 * 2**20
    # The same agent, now behaving: the resumed run redoes step 1 and finishes.
    write_agent(tmp_path, "hoarder", "true")
    again = run_cli("run", "--chain", "toy", "--steps", "1-1", "--agent", agent, "--output", str(output))
    assert again.returncode == 0, again.stderr
    assert "step 1 ended with a failed agent; running it again" in again.stderr
    assert load_json(output / "run.json")["status"] == "finished"
    assert load_json(output / "scorecard.json")["steps"][0]["agent_status"] == "ok"
    assert not os.path.exists(output / "steps" / "01-0.1.0-0.2.0" / "big.bin")
