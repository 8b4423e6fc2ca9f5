"""The docs site builds strictly, its references are the code's, and every command it shows is real.

Each ``swechain-ci`` command in a shell block of ``docs/`` (or the README) is parsed by the real
command line: the command must exist and take the options shown. The cheap ones (no Docker, no
network) are also run here, in a fresh state home; a block that needs Docker or a runner says so on
the line above it (``<!-- needs: docker -->`` or ``<!-- needs: runner -->``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import REPO

from swechain_ci.cli import app

DOCS = REPO / "docs"
BLOCK = re.compile(
    r"(?:<!-- needs: (?P<needs>docker|runner) -->\s*\n\s*)?```(?:sh|bash|console)\n(?P<body>.*?)```", re.S
)
# Commands that read the repository only: the docs test runs them as shown.
RUN_HERE = {("chain", "list"), ("agents", "list"), ("agents", "validate"), ("specs", "list"), ("--help",)}


def doc_files() -> list[Path]:
    return [*sorted(DOCS.rglob("*.md")), REPO / "README.md", REPO / "CONTRIBUTING.md"]


def shown_commands() -> list[tuple[Path, str, str | None]]:
    """(file, command line, what it needs) for every swechain-ci line of every shell block."""
    found = []
    for path in doc_files():
        for block in BLOCK.finditer(path.read_text()):
            for line in block["body"].splitlines():
                line = line.split(" #", 1)[0].strip()
                if line.startswith("swechain-ci"):
                    found.append((path, line, block["needs"]))
    return found


def synopsis_args(line: str) -> list[str]:
    """A synopsis line's words, with its optional-part brackets taken as given."""
    return shlex.split(line.replace("[", " ").replace("]", " ").replace("...", ""))[1:]


def resolve(args: list[str]) -> tuple[object, list[str], list[str]]:
    command: object = typer.main.get_command(app)
    path: list[str] = []
    while hasattr(command, "commands") and args and args[0] in command.commands:
        path.append(args[0])
        command = command.commands[args.pop(0)]
    return command, path, args


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return site


def test_the_docs_build_strictly_with_every_chain_page(built_site):
    for chain in (REPO / "chains").glob("*/README.md"):
        assert (built_site / "chains" / chain.parent.name / "index.html").is_file(), chain.parent.name
    assert (built_site / "reference" / "cli" / "index.html").is_file()


def test_the_cli_reference_names_every_command_and_option(built_site):
    page = (built_site / "reference" / "cli" / "index.html").read_text()

    def walk(command, path):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                yield from walk(sub, [*path, name])

    for path, command in walk(typer.main.get_command(app), ["swechain-ci"]):
        assert " ".join(path) in page, path
        for param in command.params:
            for option in param.opts:
                if option.startswith("--"):
                    assert option in page, (path, option)


def test_the_chain_reference_names_every_field(built_site):
    from swechain_ci.chain.definition import ChainConfig

    page = (built_site / "reference" / "chain-yaml" / "index.html").read_text()
    for model in (
        ChainConfig,
        *(f.annotation for f in ChainConfig.model_fields.values() if hasattr(f.annotation, "model_fields")),
    ):
        for name in model.model_fields:
            assert f"<code>{name}</code>" in page, (model.__name__, name)


def test_every_command_shown_is_one_the_cli_takes():
    commands = shown_commands()
    assert len(commands) > 20, "the docs show the commands people need"
    wrong = []
    for path, line, _ in commands:
        command, names, rest = resolve(synopsis_args(line))
        if not names and rest[:1] not in (["--help"], ["--version"]):
            wrong.append(f"{path.name}: {line}: no such command")
            continue
        if hasattr(command, "commands") and rest and not rest[0].startswith("-"):
            wrong.append(f"{path.name}: {line}: {' '.join(names)} has no subcommand {rest[0]}")
            continue
        try:
            command.make_context(" ".join(names), rest)  # type: ignore[attr-defined]
        except Exception as error:
            # A synopsis may leave out a required value; anything else (an unknown option, an extra
            # argument) is a command the CLI would refuse.
            placeholder = type(error).__name__ == "BadParameter" and re.search(r"\b[A-Z][A-Z_-]+\b", line)
            if type(error).__name__ not in {"MissingParameter", "Exit"} and not placeholder:
                wrong.append(f"{path.name}: {line}: {error}")
    assert wrong == []


def test_the_commands_that_need_nothing_run_as_shown(tmp_path):
    ran = 0
    for path, line, needs in shown_commands():
        args = shlex.split(line)[1:]
        if needs or (tuple(args[:2]) not in RUN_HERE and tuple(args[:1]) not in RUN_HERE) or "[" in line:
            continue
        if any(a.isupper() or "<" in a for a in args):
            continue  # a placeholder, not a value
        result = subprocess.run(
            [sys.executable, "-m", "swechain_ci", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "SWECHAIN_HOME": str(tmp_path / "home")},
            timeout=120,
        )
        assert result.returncode == 0, f"{path.name}: {line}: {result.stderr[-800:]}"
        ran += 1
    assert ran >= 3


def test_every_shell_block_that_cannot_run_here_says_what_it_needs():
    """A block whose commands start containers or agents must say it needs Docker or a runner."""
    heavy = {("run",), ("chain", "build"), ("chain", "compare"), ("specs", "synth"), ("specs", "fetch")}
    unmarked = []
    for path, line, needs in shown_commands():
        _, names, _ = resolve(synopsis_args(line))
        if (tuple(names[:1]) in heavy or tuple(names[:2]) in heavy) and needs is None:
            unmarked.append(f"{path.relative_to(REPO)}: {line}")
    assert unmarked == []
