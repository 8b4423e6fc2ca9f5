"""JSON on disk is the pydantic models, written atomically so a kill never leaves half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from swechain_ci.errors import SwechainError, describe_validation
from swechain_ci.models import SCHEMA_VERSION

Model = TypeVar("Model", bound=BaseModel)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


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
