"""Agent manifests: ``agents/<name>.yaml``, validated. Agents are data.

A manifest names the agent and its kind, the model, how it is installed into the
agent container, the commands for Build and Fix, the environment variables it
needs (names only: values come from the runner's environment and are never
stored), its limits, and what network it needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from swechain_ci.agents.streams import PARSERS
from swechain_ci.errors import SwechainError
from swechain_ci.models import Strict
from swechain_ci.records import read_yaml_model
from swechain_ci.settings import project_root

# Variables a manifest may never ask for: the runner's and the job's own (tokens, paths,
# how processes, git and Docker behave) and the runner's grants. Ordered (pattern, why); a
# name is checked against each row. Agents ask only for their own keys (API keys, proxies).
RESERVED_ENV: tuple[tuple[str, str], ...] = (
    (r"GITHUB_.*", "GITHUB_* belong to the runner (the job token, the workspace, the event)"),
    (r"ACTIONS_.*", "ACTIONS_* belong to the runner (runtime, cache and OIDC tokens)"),
    (r"RUNNER_.*", "RUNNER_* belong to the runner (its paths and temp folder)"),
    (r"SWECHAIN_.*", "SWECHAIN_* configure swechain-ci itself and hold the runner's grants"),
    (r"GIT_.*", "GIT_* change what git runs and with which credentials"),
    (r"(LD|DYLD)_.*", "LD_*/DYLD_* inject code into every process"),
    (r"PYTHON[A-Z_]*", "PYTHON* change what Python imports and runs"),
    (r"DOCKER_.*", "DOCKER_* point at the Docker engine, which is root on the host"),
    (r"SSH_.*|GPG_.*|AWS_.*|AZURE_.*|GOOGLE_APPLICATION_CREDENTIALS|KUBECONFIG", "these are the host's credentials"),
    (
        r"CI|HOME|PATH|SHELL|USER|LOGNAME|PWD|TMPDIR|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|INVOCATION_ID|JOURNAL_STREAM"
        r"|ImageOS|ImageVersion|AGENT_TOOLSDIRECTORY",
        "it describes or steers the runner's own process",
    ),
)
SECRET_PREFIX = "SWECHAIN_SECRET_"
EGRESS_PROXY_ENV = "SWECHAIN_EGRESS_PROXY"  # the runner's forward proxy, given to egress agents as HTTPS_PROXY...
BASE_URL_ENV = "SWECHAIN_AGENT_BASE_URL"  # the runner's model endpoint for cli agents (a local server, a gateway)
NO_SECRETS_ENV = "SWECHAIN_NO_SECRETS"  # set (to 1) for smoke runs of proposed agents: no grant is read
# The file of grants (SWECHAIN_SECRET_<AGENT>__<NAME>=value lines) the runner's .env names instead
# of holding the values: every job's environment then carries a path, never a key, and only a run
# that starts an agent reads the values.
GRANTS_FILE_ENV = "SWECHAIN_GRANTS_FILE"
# Python agents run in the harness's process, so only modules shipped with swechain-ci
# (reviewed code, never a pull request's) may be named as their entry point.
TRUSTED_PYTHON_PACKAGE = "swechain_ci.agents."

PLACEHOLDERS = {
    "spec_file",
    "fix_report_file",
    "prompt_file",
    "code_dir",
    "session_id",
    "model",
    "phase",
    "step",
    "reasoning_effort",
    "max_turns",
    "max_cost_usd",
    "cli_session",
    "base_url",
}
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


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

    pip: list[str] = Field(
        default_factory=list, description="pip requirements, into /opt/agent-tools from a wheelhouse"
    )
    dockerfile: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="a recipe of its own (FROM ${AGENT_IMAGE}) beside the manifest, e.g. installs a CLI; its build "
        "context holds the folder files/ beside it and npm/ (see npm) (build args AGENT_IMAGE and CLI_VERSION)",
    )
    npm: str | None = Field(
        None,
        pattern=r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$",
        description="the CLI's npm package, at cli_version: fetched on the host with Node (agents/npm.py), "
        "in the recipe's build context as npm/node_modules; needs dockerfile and cli_version",
    )


class Commands(Strict):
    """Command templates; placeholders: {spec_file} {fix_report_file} {prompt_file} {code_dir}
    {session_id} {model} {phase} {step} {reasoning_effort} {max_turns} {max_cost_usd},
    {cli_session} (the session id the CLI's Build stream reported; Fix only) and {base_url}
    (SWECHAIN_AGENT_BASE_URL, else the manifest's base_url). A string runs
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
    entrypoint: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="python: module:Class, a module shipped in swechain_ci.agents",
    )
    commands: Commands | None = None
    session: Literal["none", "resume"] = Field("none", description="resume: Fix continues the Build session")
    env: list[str] = Field(default_factory=list, description="names of environment variables the agent needs")
    base_url: str | None = Field(None, description="API base URL, e.g. for an Anthropic-compatible endpoint")
    base_url_env: str | None = Field(
        None,
        pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="cli: the variable the CLI reads its API base URL from (e.g. ANTHROPIC_BASE_URL); the runner "
        f"sets it to {BASE_URL_ENV} or base_url where one is given (commands may also use {{base_url}})",
    )
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
        if self.install.npm and not (self.install.dockerfile and self.cli_version):
            raise ValueError("install.npm needs install.dockerfile (the recipe that installs it) and cli_version")
        if self.builtin == "replay" and not self.patches:
            raise ValueError("builtin replay needs patches: a folder of step-<n>.<phase>.patch files")
        for name in self.env:
            if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                raise ValueError(f"env lists {name!r}; list variable NAMES only, never values")
            why = reserved_reason(name)
            if why:
                raise ValueError(
                    f"env lists {name}, which an agent may not ask for: {why}; "
                    "list only the agent's own keys, e.g. ANTHROPIC_API_KEY"
                )
        if self.entrypoint and not self.entrypoint.startswith(TRUSTED_PYTHON_PACKAGE):
            raise ValueError(
                f"entrypoint {self.entrypoint} is outside {TRUSTED_PYTHON_PACKAGE.rstrip('.')}: python "
                "agents run in the harness's process, so only shipped modules may be named; "
                "register a kind: cli agent instead (it runs in the agent container)"
            )
        return self


def reserved_reason(name: str) -> str | None:
    """Why a manifest may not ask for ``name`` (the first matching row of RESERVED_ENV), or None."""
    return next((why for pattern, why in RESERVED_ENV if re.fullmatch(pattern, name)), None)


def grant_name(agent: str, variable: str) -> str:
    """The runner-side variable that grants ``agent`` its ``variable``: SWECHAIN_SECRET_<AGENT>__<VARIABLE>,
    AGENT the name upper-cased with every other character than a letter or digit as ``_``."""
    return f"{SECRET_PREFIX}{re.sub(r'[^A-Z0-9]', '_', agent.upper())}__{variable}"


def runner_grants(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The runner's grants: SWECHAIN_SECRET_* variables, and the lines of the SWECHAIN_GRANTS_FILE
    file (which win). A line that is not a grant is one error naming its number, never its value."""
    grants = {name: value for name, value in environ.items() if name.startswith(SECRET_PREFIX)}
    path = environ.get(GRANTS_FILE_ENV, "").strip()
    if path:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise SwechainError(
                f"{GRANTS_FILE_ENV}={path} cannot be read ({type(exc).__name__}): give the runner user read access"
            ) from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, equals, value = line.partition("=")
            if not equals or not re.fullmatch(rf"{SECRET_PREFIX}[A-Z0-9_]+__[A-Z_][A-Z0-9_]*", name.strip()):
                raise SwechainError(
                    f"{path} line {number} is not a grant: write SWECHAIN_SECRET_<AGENT>__<NAME>=value (README, Agent secrets)"
                )
            grants[name.strip()] = value.strip()
    return grants


def granted_secrets(manifest: AgentManifest, environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The values the runner grants this agent for the names its manifest lists; never stored.

    A name is granted only by its SWECHAIN_SECRET_<AGENT>__<NAME> grant (a variable, or a line of
    the grants file), never by a variable of the same name, so an agent gets nothing the runner did
    not map to it. With SWECHAIN_NO_SECRETS set (a smoke run of a proposed agent) it gets nothing
    at all, and the grants file is not even read."""
    if environ.get(NO_SECRETS_ENV):
        return {}
    grants = runner_grants(environ)
    missing = [
        grant_name(manifest.name, name) for name in manifest.env if not grants.get(grant_name(manifest.name, name))
    ]
    if missing:
        raise SwechainError(
            f"agent {manifest.name} needs {', '.join(manifest.env)}: the runner grants them as {', '.join(missing)} "
            "(set those in the runner's grants file; README, Agent secrets)"
        )
    return {name: grants[grant_name(manifest.name, name)] for name in manifest.env}


def scrub_runner_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """Take the runner's internals and every grant out of ``environ``, so that nothing running later
    in this process finds them; returns what it took (the caller hands on what it needs: the
    agent's grants, the job's summary and output files)."""
    names = [
        name
        for name in list(environ)
        if name.startswith(SECRET_PREFIX)
        or name == GRANTS_FILE_ENV
        or re.fullmatch(r"(GITHUB|ACTIONS|RUNNER)_.*", name)
    ]
    return {name: environ.pop(name) for name in names}


def agents_dir() -> Path:
    return project_root() / "agents"


def parse_manifest(path: Path) -> AgentManifest:
    manifest = read_yaml_model(path, AgentManifest, "agent")
    if manifest.name != path.stem:
        raise SwechainError(
            f"{path}: field 'name': is '{manifest.name}' but the file is '{path.stem}.yaml'; make them equal"
        )
    manifest._folder = path.resolve().parent
    return manifest


def available_manifests() -> list[Path]:
    folder = agents_dir()
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def agents_concerned(changed: PurePosixPath, dockerfiles: Mapping[str, str | None]) -> list[str]:
    """The agents a changed file concerns, the one rule of every caller (the CI matrix, `agents
    validate`, a pull request's validation and smoke runs). ``changed`` is relative to the agents
    folder; ``dockerfiles`` maps each agent to its install.dockerfile (None: no image of its own).
    Its own manifest (``<name>.yaml``), the manifests naming it as their Dockerfile, and for a file
    under ``files/``, every agent with a Dockerfile (its recipe may copy it)."""
    if len(changed.parts) == 1 and changed.suffix in (".yaml", ".yml"):
        return [changed.stem]
    if len(changed.parts) > 1 and changed.parts[0] == "files":
        return [name for name, dockerfile in dockerfiles.items() if dockerfile]
    return [name for name, dockerfile in dockerfiles.items() if dockerfile and PurePosixPath(dockerfile) == changed]
