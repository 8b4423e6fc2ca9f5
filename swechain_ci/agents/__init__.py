"""Stage 5, agents: manifests (manifest), the protocol and workspace (base), the built-in, cli
and reference agents (builtin, cli, anthropic with its tools), an agent phase in its container
(phase) and the agent image (image). Agents are resolved here from a name: a built-in, a
manifest in agents/, or a path.

Imports: the chain, containers, evaluation and specs stages and the foundation modules.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from swechain_ci.agents.base import Agent
from swechain_ci.agents.builtin import NoopAgent, OracleAgent, ReplayAgent
from swechain_ci.agents.cli import CliAgent
from swechain_ci.agents.manifest import (
    AgentManifest,
    agents_dir,
    available_manifests,
    parse_manifest,
)
from swechain_ci.errors import SwechainError, did_you_mean

BUILTIN_NAMES = ("oracle", "noop")


def manifest_for(spec: str) -> AgentManifest:
    """The manifest an agent name stands for."""
    kind, _, argument = spec.partition(":")
    if spec in BUILTIN_NAMES:
        return AgentManifest(name=spec, kind="builtin", builtin=spec)
    if kind == "replay" and argument:
        return AgentManifest(name="replay", kind="builtin", builtin="replay", patches=argument)
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise SwechainError(f"agent manifest {path} does not exist")
        return parse_manifest(path)
    registered = agents_dir() / f"{spec}.yaml"
    if registered.is_file():
        return parse_manifest(registered)
    names = [*BUILTIN_NAMES, *(p.stem for p in available_manifests())]
    known = ", ".join([*BUILTIN_NAMES, "replay:<patch folder>", *names[len(BUILTIN_NAMES) :]])
    raise SwechainError(
        f"unknown agent '{spec}'{did_you_mean(spec, names)}: known agents are {known} (or give a manifest path)"
    )


def build_agent(manifest: AgentManifest) -> Agent:
    if manifest.kind == "builtin":
        if manifest.builtin == "oracle":
            return OracleAgent()
        if manifest.builtin == "noop":
            return NoopAgent()
        assert manifest.patches is not None, "the manifest's validation requires patches for replay"
        return ReplayAgent(Path(manifest.patches))
    if manifest.kind == "cli":
        return CliAgent(manifest)
    assert manifest.entrypoint is not None, "the manifest's validation requires an entrypoint for kind python"
    module_name, _, class_name = manifest.entrypoint.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise SwechainError(
            f"agent {manifest.name}: entrypoint {manifest.entrypoint} cannot be loaded ({exc})"
        ) from None
    return factory(manifest)


def resolve_agent(spec: str) -> tuple[Agent, AgentManifest]:
    manifest = manifest_for(spec)
    return build_agent(manifest), manifest
