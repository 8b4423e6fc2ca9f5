"""A vendor's Dockerfile (``install.dockerfile``) as data: parsed, and allowed only what an agent image needs.

Docker's legacy builder performs ``ADD <url>`` inside the daemon, on the host's network,
whatever network the build was given, and ``FROM``/``COPY --from`` may name any local image
(chain version images hold the hidden tests). So a recipe is parsed with a real Dockerfile
parser (dockerfile-parse) and refused, with one line naming the instruction, unless it is one
stage ``FROM ${AGENT_IMAGE}`` that adds files only from its build context (agents/files/) and
runs commands without build secrets, SSH agents or other mounts.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dockerfile_parse import DockerfileParser

from swechain_ci.errors import SwechainError

RECIPE_LIMIT = 100_000  # bytes; a recipe is a short text
BASE = "AGENT_IMAGE"
ALLOWED = ("ARG", "FROM", "RUN", "COPY", "ADD", "ENV", "USER", "WORKDIR", "LABEL")
COPY_FLAGS = ("--chown", "--chmod")
FLAG = re.compile(r"--[A-Za-z][\w-]*(=(\"[^\"]*\"|'[^']*'|\S*))?")
REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@)", re.IGNORECASE)


@dataclass(frozen=True)
class Instruction:
    line: int  # 1-based, where it starts
    name: str
    value: str

    @property
    def flags(self) -> list[str]:
        """The leading ``--flag[=value]`` options."""
        found, rest = [], self.value.lstrip()
        while match := FLAG.match(rest):
            found.append(match.group(0))
            rest = rest[match.end() :].lstrip()
        return found

    @property
    def arguments(self) -> str:
        rest = self.value.lstrip()
        for flag in self.flags:
            rest = rest[len(flag) :].lstrip()
        return rest

    def text(self) -> str:
        return f"{self.name} {self.value}".strip()[:120]


def parse(data: bytes) -> tuple[list[Instruction], list[str]]:
    """The instructions (comments left out) and the parser directives (``# syntax=``, ``# escape=``)."""
    text = data.decode("utf-8", errors="replace")
    directives = []
    for line in text.splitlines():
        match = re.match(r"#\s*([A-Za-z]+)\s*=", line)
        if not match:
            break
        directives.append(match.group(1).lower())
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()), env_replace=False)
    instructions = [
        Instruction(item["startline"] + 1, item["instruction"].upper(), item["value"])
        for item in parser.structure
        if item["instruction"].upper() != "COMMENT"
    ]
    return instructions, directives


def _sources(instruction: Instruction) -> list[str]:
    """COPY/ADD's sources: every argument but the last (the destination), JSON form too."""
    args = instruction.arguments
    if args.startswith("["):
        import json

        try:
            items = [str(x) for x in json.loads(args)]
        except ValueError:
            items = args.strip("[]").split(",")
    else:
        items = args.split()
    return items[:-1]


# Each rule returns the problem with one instruction, or None; checked in order.
def _known(i: Instruction, stage: int) -> str | None:
    if i.name not in ALLOWED:
        return f"{i.name} is not allowed in an agent recipe (allowed: {', '.join(ALLOWED)})"
    return None


def _before_from(i: Instruction, stage: int) -> str | None:
    if stage == 0 and i.name != "FROM":
        if i.name == "ARG" and i.arguments.strip() == BASE:
            return None
        return f"only `ARG {BASE}` (with no default) may come before FROM"
    return None


def _from(i: Instruction, stage: int) -> str | None:
    if i.name != "FROM":
        return None
    if stage > 0:
        return "a second FROM: an agent recipe is one stage on the agent image"
    if i.flags or i.arguments.split() not in ([f"${{{BASE}}}"], [f"${BASE}"]):
        return f"the recipe must build on `FROM ${{{BASE}}}` (the agent image the harness gives), not another image"
    return None


def _copy(i: Instruction, stage: int) -> str | None:
    if i.name not in ("COPY", "ADD"):
        return None
    for flag in i.flags:
        if flag.split("=", 1)[0] not in COPY_FLAGS:
            if flag.startswith("--from"):
                return f"{i.name} {flag} copies from another image or stage; copy only from the build context (agents/files/)"
            return f"{i.name} {flag.split('=', 1)[0]} is not allowed (allowed: {', '.join(COPY_FLAGS)})"
    for source in _sources(i):
        if i.name == "ADD" and "$" in source:
            return f"ADD of {source[:80]}: a variable could name a URL; name the file in agents/files/ as it is"
        if REMOTE.match(source):
            return (
                f"{i.name} of {source[:80]}: the builder would fetch it on the host's network; "
                "put the file in agents/files/ and COPY it"
            )
    return None


def _run(i: Instruction, stage: int) -> str | None:
    if i.name == "RUN" and i.flags:
        return (
            f"RUN {i.flags[0].split(',', 1)[0]} is not allowed: no build secrets, SSH agents, mounts or networks "
            "in an agent recipe"
        )
    return None


RULES: tuple[tuple[str, Callable[[Instruction, int], str | None]], ...] = (
    ("known instruction", _known),
    ("before FROM", _before_from),
    ("one stage on the agent image", _from),
    ("files from the context only", _copy),
    ("no secrets or mounts", _run),
)


def problems(data: bytes) -> list[tuple[int, str, str]]:
    """(line, instruction, why) for every instruction an agent recipe may not have."""
    if len(data) > RECIPE_LIMIT:
        return [(1, "", f"the recipe is {len(data):,} bytes; at most {RECIPE_LIMIT:,}")]
    instructions, directives = parse(data)
    found = []
    if directives:
        found.append(
            (1, f"# {directives[0]}=", "parser directives are not allowed (`# syntax=` names a builder image)")
        )
    stage = 0
    for instruction in instructions:
        for _, rule in RULES:
            why = rule(instruction, stage)
            if why:
                found.append((instruction.line, instruction.text(), why))
                break
        if instruction.name == "FROM":
            stage += 1
    if stage == 0:
        found.append((1, "", f"no FROM: the recipe must build on `FROM ${{{BASE}}}`"))
    return found


def check_recipe(path: Path, shown: str | None = None) -> None:
    """Raise a one-line SwechainError naming the first refused instruction of the recipe at ``path``."""
    name = shown or str(path)
    if not path.is_file():
        raise SwechainError(f"{name} does not exist: install.dockerfile names a file in agents/")
    found = problems(path.read_bytes())
    if found:
        line, instruction, why = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        where = f"{name} line {line}" + (f" `{instruction}`" if instruction else "")
        raise SwechainError(f"{where}: {why}{more}".replace("\n", " "))
