"""Agents, resolved from the name given on the command line."""

from __future__ import annotations

from pathlib import Path

from swechain_ci.agents.base import Agent
from swechain_ci.agents.builtin import NoopAgent, OracleAgent, ReplayAgent
from swechain_ci.errors import SwechainError


def resolve_agent(spec: str) -> Agent:
    """``oracle``, ``noop`` or ``replay:<patch folder>``."""
    kind, _, argument = spec.partition(":")
    if kind == "oracle" and not argument:
        return OracleAgent()
    if kind == "noop" and not argument:
        return NoopAgent()
    if kind == "replay" and argument:
        return ReplayAgent(Path(argument))
    raise SwechainError(f"unknown agent '{spec}': built-in agents are oracle, noop and replay:<patch folder>")
