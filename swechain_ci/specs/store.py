"""Upgrade specifications: ``specs/<chain>/<prev>-<next>/<level>.md``."""

from __future__ import annotations

from pathlib import Path

from swechain_ci.chain.definition import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.settings import project_root


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
            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; levels present for every step: {have}"
        )
    return {(a, b): spec_path(chain, a, b, level).read_text() for a, b in chain.steps}
