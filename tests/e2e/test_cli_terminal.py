"""The command line as a user meets it: version, help grouped, one-line errors, the 80-column scorecard."""

from __future__ import annotations

import pytest
from conftest import REPO, run_cli

from swechain_ci.models import Scorecard
from swechain_ci.records import read_model
from swechain_ci.scoring.terminal import WIDTH, render_terminal


def test_version_and_help_put_the_users_commands_first():
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("swechain-ci ")
    shown = run_cli("--help", env={"COLUMNS": "100"}).stdout
    assert shown.index("Commands") < shown.index("Workflow plumbing")
    user, plumbing = shown.split("Workflow plumbing", 1)
    assert "run " in user and "plan " in user and "matrix " in plumbing and "matrix " not in user


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "--chain", "pyjtw", "--agent", "oracle"], "did you mean 'pyjwt'?"),
        (["run", "--chain", "toy", "--agent", "orcle"], "did you mean 'oracle'?"),
        (
            ["run", "--chain", "toy", "--agent", "oracle", "--steps", "3-2"],
            "runs backwards; write the first step first: 2-3",
        ),
        (
            ["run", "--chain", "toy", "--agent", "oracle", "--steps", "2-5"],
            "toy, which has steps 1-3 (step 5 does not exist)",
        ),
        (["run", "--chain", "toy", "--agent", "oracle", "--steps", "x"], "is not A-B or A"),
        (["run", "--chain", "toy", "--agent", "claude-code", "--spec-level", "l3"], "did you mean 'L3'?"),
        (["site", "serve", "/nonexistent-site"], "holds no site (no index.html)"),
    ],
)
def test_bad_input_is_one_line_with_the_fix(args, words, tmp_path):
    result = run_cli(*args, "--output", str(tmp_path / "out")) if args[0] == "run" else run_cli(*args)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and words in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists(), "nothing written for refused input"


def test_output_that_is_a_file_and_an_unwritable_state_home(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    result = run_cli("run", "--chain", "toy", "--agent", "oracle", "--output", str(afile))
    assert result.returncode == 2 and "is a file, not a folder" in result.stderr and afile.read_text() == "keep me"
    blocked = tmp_path / "blocked"
    blocked.write_text("")  # a file where the state home's folder would be
    result = run_cli(
        "run",
        "--chain",
        "toy",
        "--agent",
        "oracle",
        "--output",
        str(tmp_path / "o"),
        env={"SWECHAIN_HOME": str(blocked)},
    )
    assert (
        result.returncode == 2 and "cannot write the state home" in result.stderr and "SWECHAIN_HOME" in result.stderr
    )


def test_a_second_run_into_the_same_folder_is_refused(tmp_path):
    import fcntl
    import hashlib

    from swechain_ci.settings import state_home

    output = tmp_path / "run"
    home = tmp_path / "home"
    key = hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:24]
    (home / "locks").mkdir(parents=True)
    with open(home / "locks" / f"run-{key}.lock", "w") as held:  # what a first run holds while it works
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = run_cli(
            "run", "--chain", "toy", "--agent", "oracle", "--output", str(output), env={"SWECHAIN_HOME": str(home)}
        )
    assert result.returncode == 2 and "another swechain-ci run is writing to" in result.stderr
    assert state_home() != home


def test_the_terminal_scorecard_fits_80_columns_and_shows_strings_as_text():
    card = read_model(REPO / "tests/fixtures/scorecards/replay-toy.json", Scorecard)
    hostile = card.model_copy(
        update={"agent": "[bold red]x[/] \x1b[31mred\x1b[0m" * 4, "stop_reason": "[link=http://e]y"}
    )
    text = render_terminal(hostile)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert "\x1b" not in text and "[bold red]x[/]" in text, "no markup read, no escape sent"
    assert "B+F F1" in text and "Build+Fix" in text and "n/a%" not in text


def test_progress_is_plain_lines_off_a_terminal_and_never_reads_markup(capsys):
    from swechain_ci import progress

    with progress.task("gold runs of [bold]x[/]", 2) as done:
        done("one [red]a[/]")
        done()
    progress.say("[link=http://evil]y[/link]")
    with progress.status("building image [b]z[/b]"):
        pass
    err = capsys.readouterr().err
    assert "gold runs of [bold]x[/]: 0/2" in err and "gold runs of [bold]x[/]: 2/2" in err
    assert "(one [red]a[/])" in err and "[link=http://evil]y[/link]" in err and "building image [b]z[/b]" in err


def test_an_unquoted_python_version_is_named_with_the_fix(project_copy):
    chain_file = project_copy / "chains" / "toy" / "chain.yaml"
    text = chain_file.read_text()
    assert 'python: "3.11"' in text
    chain_file.write_text(text.replace('python: "3.11"', "python: 3.10"))
    result = run_cli("chain", "list", env={"SWECHAIN_ROOT": str(project_copy)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "3.1 was read as a number; quote the version" in result.stderr, result.stderr


def test_score_and_report_take_the_folder_as_run_does(tmp_path):
    result = run_cli("report", "--output", str(tmp_path / "none"))
    assert result.returncode == 2 and "scorecard.json" in result.stderr
    both = run_cli("report")
    assert both.returncode == 2 and "give the run's folder" in both.stderr


def test_a_step_is_named_by_its_number_and_its_place_in_the_run():
    from swechain_ci.progress import step_label

    assert step_label(2, 1, 3) == "step 2/3"
    assert step_label(2, 2, 1) == "step 2 (1 of 1)", "--steps 2 is no longer 'step 2/1'"
    assert step_label(13, 12, 2) == "step 13 (2 of 2)"
