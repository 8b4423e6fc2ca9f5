"""JSON on disk is the pydantic models, written atomically so a kill never leaves half a file.
YAML written by people (chains, agents) is read into the same models, with errors naming
the file, the field and what is expected. A run's folder (``RunFolder``) names every record
of a run: nowhere else are those file names written."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from swechain_ci.errors import SwechainError, describe_validation
from swechain_ci.models import SCHEMA_VERSION

Model = TypeVar("Model", bound=BaseModel)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_model(path: Path, model: BaseModel) -> None:
    write_text(path, model.model_dump_json(indent=2) + "\n")


def read_model(path: Path, model: type[Model]) -> Model:
    try:
        loaded = model.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise SwechainError(f"{path} does not exist") from None
    except ValidationError as exc:
        raise SwechainError(describe_validation(str(path), exc)) from None
    version = getattr(loaded, "schema_version", SCHEMA_VERSION)
    if version > SCHEMA_VERSION:
        raise SwechainError(f"{path} has schema_version {version}; upgrade swechain-ci to read it")
    return loaded


def read_yaml_model(path: Path, model: type[Model], what: str) -> Model:
    """A hand-written YAML file as ``model``; ``what`` names its fields in errors ("chain")."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SwechainError(f"{path}:{where} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    except OSError as exc:
        raise SwechainError(f"{path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise SwechainError(f"{path}: expected a mapping of {what} fields, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SwechainError(describe_validation(str(path), exc)) from None


# -- a run's folder -------------------------------------------------------------------------------
# The names of a run's records, written here only: the run writes them, the branch carries them,
# the CLI, the summaries and the site read them.


def trajectory_name(phase: str) -> str:
    """An agent phase's trajectory, beside its log (an agent that keeps one writes it there)."""
    return f"trajectory-{phase}.jsonl"


class _StepKey(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def prev_version(self) -> str: ...
    @property
    def next_version(self) -> str: ...


@dataclass(frozen=True)
class StepFolder:
    """One step's records: ``steps/<index>-<prev>-<next>/``. ``phase`` is an agent phase (build, fix)."""

    path: Path

    @property
    def record(self) -> Path:
        """``step.json``, written last: its presence marks the step finished."""
        return self.path / "step.json"

    @property
    def evaluation(self) -> Path:
        """``evaluate.json``: the Build evaluated, when an execution error granted the Fix."""
        return self.path / "evaluate.json"

    @property
    def fix_report(self) -> Path:
        return self.path / "fix_report.md"

    @property
    def prev_run(self) -> Path:
        """prev's hidden-test run, taken while the agent worked."""
        return self.path / "prev-run.json"

    @property
    def session(self) -> Path:
        """The Build's session state, for a Fix that resumes it."""
        return self.path / "session.tar.gz"

    @property
    def final_code(self) -> Path:
        """The code the step hands on."""
        return self.path / "code.tar.gz"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    def agent(self, phase: str) -> Path:
        """``agent-<phase>.json``, written last by the agent's phase."""
        return self.path / f"agent-{phase}.json"

    def code(self, phase: str) -> Path:
        return self.path / f"code-{phase}.tar.gz"

    def diff(self, phase: str) -> Path:
        return self.path / f"{phase}.diff"

    def agent_log(self, phase: str) -> Path:
        return self.logs / f"agent-{phase}.log"

    def trajectory(self, phase: str) -> Path:
        return self.logs / trajectory_name(phase)

    def tests_log(self, phase: str) -> Path:
        return self.logs / f"tests-{phase}.log"


@dataclass(frozen=True)
class RunFolder:
    """A run's output folder, every record of it named here."""

    root: Path

    @property
    def record(self) -> Path:
        """``run.json``: which run this folder holds, and where it stands."""
        return self.root / RUN_FILE

    @property
    def manifest(self) -> Path:
        """``agent.json``: the agent's manifest as the run began."""
        return self.root / "agent.json"

    @property
    def scorecard(self) -> Path:
        return self.root / SCORECARD_FILE

    @property
    def scorecard_md(self) -> Path:
        return self.root / "scorecard.md"

    @property
    def clearance(self) -> Path:
        """Integrity findings a maintainer cleared."""
        return self.root / "integrity-clearance.json"

    @property
    def infra_errors(self) -> Path:
        """Logs of phases an infrastructure failure cut short, kept aside."""
        return self.root / "infra-errors"

    def step(self, step: _StepKey) -> StepFolder:
        return StepFolder(self.root / "steps" / f"{step.index:02d}-{step.prev_version}-{step.next_version}")

    def step_at(self, index: int) -> StepFolder | None:
        """The folder of step ``index``, if the run has one."""
        found = sorted(self.root.glob(f"steps/{index:02d}-*"))
        return StepFolder(found[0]) if found else None

    def step_records(self) -> list[Path]:
        """Every finished step's ``step.json``."""
        return sorted(self.root.glob("steps/*/step.json"))


RUN_FILE = "run.json"  # also how earlier runs are found under a folder
SCORECARD_FILE = "scorecard.json"  # also how the leaderboard finds runs
