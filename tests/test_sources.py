"""Splitting a version into gold code, hidden tests and protected files."""

from __future__ import annotations

from pathlib import Path

from swechain_ci.chain import Chain, ChainConfig
from swechain_ci.sources import split


def chain(folder: Path) -> Chain:
    config = ChainConfig.model_validate({
        "id": "demo", "package": "demo", "import_name": "demo", "test_folder": "src/tests",
        "protected_files": ["pyproject.toml", "*.cfg"],
        "versions": [{"version": "1", "source": {"kind": "local", "path": "v1"}},
                     {"version": "2", "source": {"kind": "local", "path": "v2"}}],
    })
    return Chain(config, folder)


def test_split_three_ways(tmp_path):
    root = tmp_path / "v1"
    files = {
        "pyproject.toml": "[project]\n", "setup.cfg": "", "README.md": "hi",
        "conftest.py": "# root conftest\n", "src/conftest.py": "# on the path\n",
        "src/demo/__init__.py": "", "src/demo/conftest.py": "# not on the path\n",
        "src/tests/test_a.py": "def test(): pass\n", "src/tests/data/empty.json": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    trees = split(chain(tmp_path), root, tmp_path / "out", "1")
    listing = lambda d: sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())
    assert listing(trees.code) == [
        "README.md", "pyproject.toml", "setup.cfg", "src/demo/__init__.py", "src/demo/conftest.py"
    ]
    assert listing(trees.hidden) == ["conftest.py", "src/conftest.py", "src/tests/data/empty.json", "src/tests/test_a.py"]
    assert listing(trees.protected) == ["pyproject.toml", "setup.cfg", "src/demo/conftest.py"]
