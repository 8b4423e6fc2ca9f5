"""MkDocs hooks: the reference pages are generated from the code at build time, so they cannot drift.

A page asks for a generated section with a marker on a line of its own, ``<!-- generate: NAME -->``;
NAME is a key of ``GENERATORS``. An unknown name fails the build.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent

MARKER = re.compile(r"^<!-- generate: ([a-z-]+) -->$", re.M)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _type_name(schema: dict[str, Any] | bool, defs: dict[str, Any]) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return f"[{schema['$ref'].rsplit('/', 1)[-1]}](#{schema['$ref'].rsplit('/', 1)[-1].lower()})"
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(_type_name(s, defs) for s in schema.get("anyOf", schema.get("oneOf", [])))
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type_name(schema.get('items', {}), defs)}"
    if kind == "object" and "additionalProperties" in schema:
        return f"map to {_type_name(schema['additionalProperties'], defs)}"
    return str(kind)


def _default(name: str, field: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    value = field.get("default")
    return "—" if value in ({}, [], None) else f"`{value}`"


def _model_table(name: str, schema: dict[str, Any], defs: dict[str, Any]) -> str:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].split()), ""]
    lines += ["| field | type | default | meaning |", "|---|---|---|---|"]
    required = set(schema.get("required", []))
    for field, spec in schema.get("properties", {}).items():
        meaning = spec.get("description", "")
        lines.append(f"| `{field}` | {_type_name(spec, defs)} | {_default(field, spec, required)} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def chain_schema() -> str:
    """Every model of ``chain.yaml``, top level first, from the pydantic schema the loader validates with."""
    from swechain_ci.chain.definition import ChainConfig

    schema = ChainConfig.model_json_schema()
    defs = schema.pop("$defs", {})
    parts = [_model_table("ChainConfig", schema, defs)]
    parts += [_model_table(name, sub, defs) for name, sub in sorted(defs.items())]
    return "\n".join(parts)


def agent_schema() -> str:
    """Every model of an agent manifest, from the pydantic schema ``agents validate`` uses."""
    from swechain_ci.agents.manifest import AgentManifest

    schema = AgentManifest.model_json_schema()
    defs = schema.pop("$defs", {})
    parts = [_model_table("AgentManifest", schema, defs)]
    parts += [_model_table(name, sub, defs) for name, sub in sorted(defs.items())]
    return "\n".join(parts)


def _command_section(path: list[str], command: Any, depth: int) -> list[str]:
    # typer ships its own copy of click, so commands are read by their attributes, not their classes.
    ctx = command.context_class(command, info_name=" ".join(path))
    heading = "#" * min(depth, 6)
    lines = [f"{heading} `{' '.join(path)}`", ""]
    if command.help:
        lines += [" ".join(command.help.split("\n\n")[0].split()), ""]
    lines += ["```", " ".join(command.collect_usage_pieces(ctx)).join((f"{' '.join(path)} ", "")), "```", ""]
    params = [p for p in command.params if p.name not in {"help"}]
    if params:
        lines += ["| argument or option | meaning |", "|---|---|"]
        for param in params:
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts]) or f"`{param.name}`"
            if param.param_type_name == "argument":
                names = f"`{(param.metavar or param.name or '').upper()}`"
            help_text = getattr(param, "help", None) or ""
            lines.append(f"| {names} | {_cell(' '.join(help_text.split()))} |")
        lines.append("")
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            if not sub.hidden:
                lines += _command_section([*path, name], sub, depth + 1)
    return lines


def cli_reference() -> str:
    """Every command of ``swechain-ci`` with its usage and options, grouped by the panels of its help."""
    from swechain_ci.cli import app

    root: Any = typer.main.get_command(app)
    panels: dict[str, list[tuple[str, Any]]] = {}
    for name, command in root.commands.items():
        if command.hidden:
            continue
        panel = getattr(command, "rich_help_panel", None) or "Commands"
        panels.setdefault(panel, []).append((name, command))
    lines: list[str] = ["## Options of swechain-ci itself", ""]
    lines += ["| option | meaning |", "|---|---|"]
    for param in root.params:
        names = ", ".join(f"`{o}`" for o in param.opts)
        lines.append(f"| {names} | {_cell(' '.join((getattr(param, 'help', None) or '').split()))} |")
    lines.append("")
    for panel, commands in panels.items():
        lines += [f"## {panel}", ""]
        for name, command in commands:
            lines += _command_section(["swechain-ci", name], command, 3)
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {
    "chain-schema": chain_schema,
    "agent-schema": agent_schema,
    "cli-reference": cli_reference,
}


def _chain_page(chain_id: str, readme: str) -> str:
    # A chain README links its siblings as ../<id>/README.md; on the site they are pages side by side.
    readme = re.sub(r"\]\(\.\./([a-z0-9_-]+)/README\.md\)", r"](\1.md)", readme)
    return readme.replace("](../../docs/", "](../")  # a docs page, seen from chains/<id>.md


def chains_index(ids: list[str]) -> str:
    from swechain_ci.chain.definition import load_chain

    lines = [
        "# Chains",
        "",
        "Each chain's own page is its `chains/<id>/README.md`: what was built and measured here,",
        "its known failures with their reasons, and the commands for the rest.",
        "",
        "| chain | package | Python | versions | steps |",
        "|---|---|---|---|---|",
    ]
    for chain_id in ids:
        chain = load_chain(chain_id)
        versions = [v.version for v in chain.config.versions]
        lines.append(
            f"| [{chain_id}]({chain_id}.md) | `{chain.config.package}` | {chain.config.python} "
            f"| {versions[0]} → {versions[-1]} | {len(versions) - 1} |"
        )
    lines += ["", "What the files under `reports/` are: [reports](reports.md)."]
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: Any) -> Files:
    """Per-chain facts stay in chains/<id>/README.md; the site shows each as a page of its own."""
    ids = sorted(p.parent.name for p in (REPO / "chains").glob("*/README.md"))
    for chain_id in ids:
        readme = (REPO / "chains" / chain_id / "README.md").read_text()
        files.append(File.generated(config, f"chains/{chain_id}.md", content=_chain_page(chain_id, readme)))
    files.append(File.generated(config, "chains/index.md", content=chains_index(ids)))
    files.append(File.generated(config, "chains/reports.md", content=(REPO / "reports" / "README.md").read_text()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"{page.file.src_path}: no generator named {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)
