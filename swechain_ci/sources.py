"""Version sources, split three ways: gold code, hidden tests and protected files."""

from __future__ import annotations

import fnmatch
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from swechain_ci import trees
from swechain_ci.chain import Chain, LocalSource
from swechain_ci.errors import SwechainError
from swechain_ci.settings import state_home


@dataclass(frozen=True)
class VersionTrees:
    """One version, split. ``code`` is what an agent may see."""

    version: str
    root: Path
    code: Path
    hidden: Path
    protected: Path
    digest: str


def source_root(chain: Chain, version: str) -> Path:
    source = chain.version(version).source
    if isinstance(source, LocalSource):
        path = (chain.folder / source.path).resolve()
        if not path.is_dir():
            raise SwechainError(
                f"{chain.folder / 'chain.yaml'}: version {version}: source path {path} is not a folder"
            )
        return path
    raise SwechainError(f"unsupported source kind for {chain.id} {version}")


def is_hidden(rel: PurePosixPath, test_folder: str) -> bool:
    """The test folder, and the conftest.py files on the path to it."""
    folder = PurePosixPath(test_folder)
    if rel == folder or folder in rel.parents:
        return True
    if rel.name == "conftest.py":
        return rel.parent == PurePosixPath(".") or rel.parent in folder.parents
    return False


def is_protected(rel: PurePosixPath, chain: Chain) -> bool:
    """Per-chain build/config files, and every conftest.py: a candidate never supplies them."""
    if rel.name == "conftest.py":
        return True
    return any(fnmatch.fnmatch(str(rel), pattern) for pattern in chain.config.protected_files)


def split(chain: Chain, root: Path, dest: Path, version: str) -> VersionTrees:
    test_folder = chain.config.test_folder
    if not (root / test_folder).is_dir():
        raise SwechainError(
            f"{root}: version {version} has no test folder '{test_folder}' (set test_folder in chain.yaml)"
        )
    if dest.exists():
        shutil.rmtree(dest)
    trees.copy_tree(root, dest / "code", exclude=lambda rel: is_hidden(rel, test_folder))
    trees.copy_tree(root, dest / "hidden", exclude=lambda rel: not is_hidden(rel, test_folder))
    trees.copy_tree(
        root,
        dest / "protected",
        exclude=lambda rel: is_hidden(rel, test_folder) or not is_protected(rel, chain),
    )
    return VersionTrees(version, root, dest / "code", dest / "hidden", dest / "protected", trees.digest(root))


def materialize(chain: Chain, version: str) -> VersionTrees:
    """The split trees of one version, cached under the state home by content."""
    root = source_root(chain, version)
    content = trees.digest(root)
    dest = state_home() / "trees" / chain.id / f"{version}-{content[:16]}"
    if (dest / ".complete").exists():
        return VersionTrees(version, root, dest / "code", dest / "hidden", dest / "protected", content)
    split(chain, root, dest, version)
    (dest / ".complete").write_text(content)
    return VersionTrees(version, root, dest / "code", dest / "hidden", dest / "protected", content)
