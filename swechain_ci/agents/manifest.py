"""Agent manifests: ``agents/<name>.yaml``, validated. Agents are data.

A manifest names the agent and its kind, the model, how it is installed into the
agent container, the commands for Build and Fix, the environment variables it
needs (names only: values come from the runner's environment and are never
stored), its limits, and what network it needs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from swechain_ci.agents.streams import PARSERS
from swechain_ci.errors import SwechainError
from swechain_ci.records import read_yaml_model
from swechain_ci.settings import project_root

PLACEHOLDERS = {
    "spec_file", "fix_report_file", "prompt_file", "code_dir", "session_id", "model", "phase", "step",
    "reasoning_effort", "max_turns", "max_cost_usd", "cli_session",
}
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentLimits(Strict):
    turns: int | None = Field(100, gt=0, description="model turns per phase")
    cost_usd: float | None = Field(10.0, gt=0, description="dollars per phase, from token usage")
    wall_s: int = Field(1800, gt=0, description="wall clock per phase; ends the whole process tree")
    command_s: int = Field(300, gt=0, description="one tool command (python agents)")
    output_bytes: int = Field(1_000_000, gt=0, description="output kept in the record per phase")
    repeats: int = Field(5, ge=2, description="identical tool calls in a row that end the session")


class AgentNetwork(Strict):
    """``none`` (the default): no network at all. ``egress``: the runner's egress network
    (``SWECHAIN_EGRESS_NETWORK``), whose proxy allows only ``allow``."""

    mode: Literal["none", "egress"] = "none"
    allow: list[str] = Field(default_factory=list, description="hosts the agent must reach, e.g. api.anthropic.com")

    @model_validator(mode="after")
    def _allow_needs_egress(self) -> AgentNetwork:
        if self.allow and self.mode == "none":
            raise ValueError("allow lists hosts but mode is none; set mode: egress")
        return self


class AgentInstall(Strict):
    """What the agent needs in the agent container, added as an image layer."""

    pip: list[str] = Field(default_factory=list, description="pip requirements, into /opt/agent-tools from a wheelhouse")
    dockerfile: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="a recipe of its own (FROM ${AGENT_IMAGE}) beside the manifest, e.g. installs a CLI; its build "
        "context is the folder files/ beside it (build args AGENT_IMAGE and CLI_VERSION)",
    )


class Commands(Strict):
    """Command templates; placeholders: {spec_file} {fix_report_file} {prompt_file} {code_dir}
    {session_id} {model} {phase} {step} {reasoning_effort} {max_turns} {max_cost_usd} and
    {cli_session} (the session id the CLI's Build stream reported; Fix only). A string runs
    under bash; a list runs as it is."""

    build: str | list[str]
    fix: str | list[str]

    @model_validator(mode="after")
    def _known_placeholders(self) -> Commands:
        for phase in ("build", "fix"):
            template = getattr(self, phase)
            text = template if isinstance(template, str) else " ".join(template)
            unknown = set(PLACEHOLDER.findall(text)) - PLACEHOLDERS
            if unknown:
                raise ValueError(f"{phase} uses unknown placeholders {sorted(unknown)}; known: {sorted(PLACEHOLDERS)}")
        return self


class AgentManifest(Strict):
    schema_version: Literal[1] = 1
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    kind: Literal["builtin", "cli", "python"]
    description: str = ""
    model: str | None = None
    reasoning_effort: str | None = Field(None, description="the model's reasoning effort, as the CLI takes it")
    cli_version: str | None = Field(None, description="the CLI's version, installed by install.dockerfile")
    stream: str | None = Field(None, description=f"the CLI's JSON event stream, parsed live: {', '.join(PARSERS)}")
    docs: dict[str, str] = Field(default_factory=dict, description="flag or event -> where its vendor documents it")
    builtin: Literal["oracle", "noop", "replay"] | None = None
    patches: str | None = Field(None, description="replay: folder of step-<n>.<phase>.patch files")
    entrypoint: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="python: module:Class")
    commands: Commands | None = None
    session: Literal["none", "resume"] = Field("none", description="resume: Fix continues the Build session")
    env: list[str] = Field(default_factory=list, description="names of environment variables the agent needs")
    base_url: str | None = Field(None, description="API base URL, e.g. for an Anthropic-compatible endpoint")
    install: AgentInstall = Field(default_factory=AgentInstall)
    limits: AgentLimits = Field(default_factory=AgentLimits)
    network: AgentNetwork = Field(default_factory=AgentNetwork)
    options: dict[str, Any] = Field(default_factory=dict, description="kind-specific settings")
    _folder: Path | None = PrivateAttr(None)

    @property
    def folder(self) -> Path:
        """Where the manifest lives (its Dockerfile is beside it): agents/ unless it was given as a path."""
        return self._folder or agents_dir()

    @model_validator(mode="after")
    def _kind_fields(self) -> AgentManifest:
        needed = {"builtin": ["builtin"], "cli": ["commands"], "python": ["entrypoint"]}[self.kind]
        missing = [f for f in needed if getattr(self, f) is None]
        if missing:
            raise ValueError(f"kind {self.kind} needs {', '.join(missing)}")
        if self.stream is not None and self.stream not in PARSERS:
            raise ValueError(f"stream {self.stream!r} is not a known format: {', '.join(PARSERS)}")
        if self.builtin == "replay" and not self.patches:
            raise ValueError("builtin replay needs patches: a folder of step-<n>.<phase>.patch files")
        for name in self.env:
            if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                raise ValueError(f"env lists {name!r}; list variable NAMES only, never values")
        return self


def agents_dir() -> Path:
    return project_root() / "agents"


def parse_manifest(path: Path) -> AgentManifest:
    manifest = read_yaml_model(path, AgentManifest, "agent")
    if manifest.name != path.stem:
        raise SwechainError(f"{path}: field 'name': is '{manifest.name}' but the file is '{path.stem}.yaml'; make them equal")
    manifest._folder = path.resolve().parent
    return manifest


def available_manifests() -> list[Path]:
    folder = agents_dir()
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []
