"""JSON on disk is the pydantic models, written atomically so a kill never leaves half a file.
YAML written by people (chains, agents) is read into the same models, with errors naming
the file, the field and what is expected."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TypeVar

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
