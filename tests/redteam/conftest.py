"""Red-team fixtures: an attack is a candidate codebase, run as a real one-step chain run.

``attack`` turns a set of file changes on the toy chain's 0.1.0 code into a ``replay:``
patch and runs ``swechain-ci run --chain toy --steps 1-1`` in Docker, exactly as a
submitted agent's code would be run. Code that fixes nothing scores, on step 1
(0.1.0 -> 0.2.0), ``HONEST_STEP1``: 0 resolved of 9 upgrade-related tests, no regression.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, load_json, run_cli

from swechain_ci.chain import trees

TOY_START = REPO / "chains" / "toy" / "versions" / "0.1.0"
# (TP, FN, FP) of step 1 for code that fixes nothing: 9 upgrade-related tests, all unresolved.
HONEST_STEP1 = (0, 9, 0)
# A file change: text (or bytes) to write, or None to delete the file.
Change = dict[str, str | bytes | None]


def counts(metrics: dict) -> tuple[int, int, int]:
    return metrics["tp"], metrics["fn"], metrics["fp"]


@dataclass
class AttackRun:
    output: Path
    result: subprocess.CompletedProcess
    scorecard: dict
    step: dict

    @property
    def build(self) -> tuple[int, int, int]:
        return counts(self.scorecard["steps"][0]["build"])

    @property
    def build_fix(self) -> tuple[int, int, int]:
        return counts(self.scorecard["steps"][0]["build_fix"])

    def flags(self, phase: str | None = None) -> list[dict]:
        """The integrity flags the evaluations of the step's phases recorded."""
        found = []
        for name in ("build", "fix"):
            record = self.step.get(name)
            if record and phase in (None, name):
                found += record["run"].get("integrity_flags", [])
        return found

    def flag_kinds(self, phase: str | None = None) -> set[str]:
        return {f["kind"] for f in self.flags(phase)}

    def no_better_than_honest_or_flagged(self) -> bool:
        honest = all(better_or_equal(HONEST_STEP1, c) for c in (self.build, self.build_fix))
        return honest or bool(self.flags())


def better_or_equal(honest: tuple[int, int, int], seen: tuple[int, int, int]) -> bool:
    """Whether ``seen`` is no better than ``honest``: no more TP, no fewer FN and FP."""
    return seen[0] <= honest[0] and seen[1] >= honest[1] and seen[2] >= honest[2]


def write_changes(tree: Path, changes: Change) -> None:
    for rel, content in changes.items():
        path = tree / rel
        if content is None:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def patches_from(build: Change, fix: Change | None, scratch: Path) -> dict[str, str]:
    """The replay patches: 0.1.0's code to the build candidate, and that to the fix candidate."""
    start, built, fixed = scratch / "start", scratch / "build", scratch / "fix"
    trees.copy_tree(TOY_START, start, exclude=lambda rel: rel.parts[0] == "tests")
    shutil.copytree(start, built, symlinks=True)
    write_changes(built, build)
    patches = {"step-1.build.patch": trees.diff(start, built)}
    if fix is not None:
        shutil.copytree(built, fixed, symlinks=True)
        write_changes(fixed, fix)
        patches["step-1.fix.patch"] = trees.diff(built, fixed)
    return {name: text for name, text in patches.items() if text}


def repo_state() -> str:
    """What a write outside the run folder would change in the project checkout."""
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    # Python's and pytest's own caches appear as the test session imports and runs.
    return "\n".join(line for line in listed if not any(c in line for c in ("__pycache__", ".pytest_cache")))


@pytest.fixture
def attack(toy_oracle, tmp_path) -> Callable[..., AttackRun]:
    """Run a candidate (changes to 0.1.0's code; ``fix`` for the Fix phase) as step 1 of the toy chain.

    Asserts what every attack must leave true: the host exits cleanly, and nothing
    outside the run folder changed (the project checkout and the folder around the run).
    """

    def run(changes: Change, fix: Change | None = None, patches: dict[str, str] | None = None) -> AttackRun:
        folder = tmp_path / "patches"
        folder.mkdir()
        for name, text in {**patches_from(changes, fix, tmp_path / "trees"), **(patches or {})}.items():
            (folder / name).write_text(text)
        around = tmp_path / "runs"
        around.mkdir()
        output = around / "run"
        before = repo_state()
        result = run_cli(
            "run", "--chain", "toy", "--steps", "1-1", "--agent", f"replay:{folder}", "--output", str(output)
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert [p.name for p in around.iterdir()] == ["run"], "written beside the run folder"
        assert repo_state() == before, "the run changed the project checkout"
        step = load_json(next((output / "steps").glob("01-*")) / "step.json")
        return AttackRun(output, result, load_json(output / "scorecard.json"), step)

    return run
