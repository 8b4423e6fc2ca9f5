"""The package's imports point down the pipeline: a stage never imports a later one."""

from __future__ import annotations

import ast
from pathlib import Path

import swechain_ci

PACKAGE = Path(swechain_ci.__file__).parent
# Foundation modules first; then the pipeline's stages as the data flows (the chain, its images,
# its oracle, the specifications an agent reads, the agent, the scores, the site, GitHub); the
# run and the CLI on top.
FOUNDATION = {"models", "errors", "settings", "records", "progress", "markdown", "prices"}
STAGES = ["chain", "containers", "evaluation", "specs", "agents", "scoring", "site", "github"]
TOP = {"run", "cli", "__main__", "__init__"}


def rank(module: str) -> int:
    """0 for foundation, 1.. for the stages in pipeline order, above them the run and the CLI."""
    head = module.split(".")[1] if module.count(".") else ""
    if head in FOUNDATION:
        return 0
    if head in STAGES:
        return 1 + STAGES.index(head)
    return 1 + len(STAGES)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, module: str) -> set[str]:
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("swechain_ci")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("swechain_ci"):
                names.add(target)
                names |= {f"{target}.{a.name}" for a in node.names}
    return names


def package_modules() -> list[tuple[Path, str]]:
    # The harness runs inside containers on the stdlib and pytest; it imports nothing of ours.
    return [(p, module_name(p)) for p in sorted(PACKAGE.rglob("*.py")) if "harness" not in p.parts]


def test_imports_point_down_the_pipeline():
    upward = []
    for path, module in package_modules():
        for target in imported(path, module):
            # ``from swechain_ci.chain import sources`` names a module; a plain name is its parent's.
            if target.count(".") >= 1 and rank(target) > rank(module):
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_the_layout_lists_exactly_the_packages_modules_and_stages():
    """A new top-level module or subpackage must be placed (foundation, a stage, or the top),
    and a name listed here must exist: the ranks above are then every module's."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    top_level = {p.stem for p in PACKAGE.glob("*.py")}
    assert subpackages == set(STAGES)
    assert top_level == FOUNDATION | TOP
    assert not FOUNDATION & TOP


def test_top_level_stays_small():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 12, top


def test_the_check_catches_an_upward_import(tmp_path):
    """The rule itself can fail: a chain module importing the scorer is reported."""
    fake = PACKAGE / "chain" / "definition.py"
    source = fake.read_text() + "\nfrom swechain_ci.scoring.score import categorize\n"
    copy = tmp_path / "definition.py"
    copy.write_text(source)
    targets = imported(copy, "swechain_ci.chain.definition")
    assert any(rank(t) > rank("swechain_ci.chain.definition") for t in targets)
