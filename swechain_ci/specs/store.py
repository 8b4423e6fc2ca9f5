"""Upgrade specifications: ``specs/<chain>/<prev>-<next>/<level>.md``."""

from __future__ import annotations

from pathlib import Path

from swechain_ci.chain.definition import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.settings import project_root


INTERFACE = "+interface"


def split_level(level: str) -> tuple[str, bool]:
    """``"L3+interface"`` -> ``("L3", True)``: the interface section is part of the level's name,
    so specifications with it are never taken (or scored) for specifications without it."""
    return (level[: -len(INTERFACE)], True) if level.endswith(INTERFACE) else (level, False)


def level_name(base: str, interface: bool) -> str:
    return base + INTERFACE if interface else base


def producing_command(chain: Chain, level: str) -> str:
    """The command that writes ``level``'s files for ``chain``."""
    base, interface = split_level(level)
    flag = " --interface" if interface else ""
    if base == "L1":
        return f"`swechain-ci specs render {chain.id}{flag}`"
    if base in ("L2", "L3", "L4", "L5"):
        synth = f"`swechain-ci specs synth {chain.id} --levels {base}{flag}` (needs ANTHROPIC_API_KEY)"
        if chain.config.paper_id:
            return (f"`swechain-ci specs import <specs_chain.parquet or metadata/ folder> --chain {chain.id}{flag}` "
                    f"(the published specifications of {chain.config.paper_id}), or {synth}")
        return synth
    return f"none: level {base} is written by hand under specs/{chain.id}/<prev>-<next>/{level}.md"


def spec_dir(chain: Chain) -> Path:
    return project_root() / "specs" / chain.id


def spec_path(chain: Chain, prev: str, next_: str, level: str) -> Path:
    return spec_dir(chain) / f"{prev}-{next_}" / f"{level}.md"


def levels_available(chain: Chain) -> list[str]:
    """Levels that exist for every step of the chain."""
    per_step = [
        {p.stem for p in (spec_dir(chain) / f"{a}-{b}").glob("*.md")} for a, b in chain.steps
    ]
    return sorted(set.intersection(*per_step)) if per_step else []


def load_specs(chain: Chain, level: str) -> dict[tuple[str, str], str]:
    missing = [spec_path(chain, a, b, level) for a, b in chain.steps if not spec_path(chain, a, b, level).is_file()]
    if missing:
        have = ", ".join(levels_available(chain)) or "none"
        raise SwechainError(
            f"chain {chain.id} has no level-{level} specification at {missing[0]}"
            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; levels present for every step: {have}; "
            f"{producing_command(chain, level)} writes them"
        )
    return {(a, b): spec_path(chain, a, b, level).read_text() for a, b in chain.steps}
