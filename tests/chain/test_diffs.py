"""The three-way diff of a step: code, tests and others, with exact statistics."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from swechain_ci.chain import diffs, trees
from swechain_ci.chain.definition import Chain, ChainConfig
from swechain_ci.chain.diffs import DiffPart, StepDiff, part_of

V1 = {
    "PKG-INFO": "Metadata-Version: 2.1\nVersion: 1\n",
    "demo.egg-info/PKG-INFO": "Version: 1\n",
    "demo.egg-info/SOURCES.txt": "demo/__init__.py\n",
    "demo/__init__.py": "A = 1\nB = 2\n",
    "demo/gone.py": "x = 1\n",
    "demo/conftest.py": "# c\n",
    "conftest.py": "import pytest\n",
    "tests/test_a.py": "def test_a():\n    assert True\n",
    "tests/data/keep.txt": "same\n",
    "README.md": "v1\n",
    "setup.cfg": "[metadata]\nversion = 1\n",
}
V2 = {
    "PKG-INFO": "Metadata-Version: 2.1\nVersion: 2\n",
    "demo.egg-info/PKG-INFO": "Version: 2\n",
    "demo.egg-info/SOURCES.txt": "demo/__init__.py\ndemo/new.py\n",
    "demo/__init__.py": "A = 1\nB = 3\nC = 4\n",
    "demo/new.py": "y = 2\n",
    "demo/conftest.py": "# c\n# d\n",
    "docs/conf.py": "project = 'demo'\n",
    "conftest.py": "import pytest\nimport os\n",
    "tests/test_a.py": "def test_a():\n    assert True\n\ndef test_b():\n    assert 1\n",
    "tests/data/keep.txt": "same\n",
    "tests/data/empty.json": "",
    "README.md": "v2\n",
    "setup.cfg": "[metadata]\nversion = 2\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x01\x02",
}

CODE = DiffPart(
    files=5,
    hunks=5,
    added=5,
    removed=2,
    paths=["demo/__init__.py", "demo/conftest.py", "demo/gone.py", "demo/new.py", "docs/conf.py"],
)
TESTS = DiffPart(files=2, hunks=2, added=4, removed=0, paths=["conftest.py", "tests/test_a.py"])
OTHERS = DiffPart(
    files=4, hunks=2, added=2, removed=2, paths=["README.md", "logo.png", "setup.cfg", "tests/data/empty.json"]
)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.fixture
def chain(tmp_path, monkeypatch) -> Chain:
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    write(tmp_path / "v1", V1)
    write(tmp_path / "v2", V2)
    write(tmp_path / "v3", V2)
    config = ChainConfig.model_validate(
        {
            "id": "demo",
            "package": "demo",
            "import_name": "demo",
            "test_folder": "tests",
            "versions": [{"version": v, "source": {"kind": "local", "path": f"v{v}"}} for v in ("1", "2", "3")],
        }
    )
    return Chain(config, tmp_path)


def test_part_of():
    rel = PurePosixPath
    assert part_of(rel("pkg/mod.py"), "tests") == "code"
    assert part_of(rel("pkg/conftest.py"), "tests") == "code"  # not on the path to the test folder
    assert part_of(rel("conftest.py"), "src/tests") == "tests"
    assert part_of(rel("src/conftest.py"), "src/tests") == "tests"
    assert part_of(rel("src/tests/test_x.py"), "src/tests") == "tests"
    assert part_of(rel("tests/test_x.py"), "src/tests") == "code"
    assert part_of(rel("src/tests/data/x.json"), "src/tests") == "others"
    assert part_of(rel("pkg/mod.pyi"), "tests") == "others"
    assert part_of(rel("PKG-INFO"), "tests") is None
    assert part_of(rel("pkg.egg-info/PKG-INFO"), "tests") is None
    assert part_of(rel("src/pkg.egg-info/SOURCES.txt"), "tests") is None


def test_three_way_split_and_stats(chain, tmp_path):
    step = diffs.step_diff(chain, "1", "2")
    assert (step.chain, step.prev_version, step.next_version, step.test_folder) == ("demo", "1", "2", "tests")
    assert (step.code, step.tests, step.others) == (CODE, TESTS, OTHERS)
    assert (step.prev_digest, step.next_digest) == (trees.digest(tmp_path / "v1"), trees.digest(tmp_path / "v2"))

    folder = tmp_path / "home" / "diffs" / "demo" / "1-2"
    assert diffs.diff_folder(chain, "1", "2") == folder
    assert sorted(p.name for p in folder.iterdir()) == ["code.diff", "others.diff", "stats.json", "tests.diff"]
    assert StepDiff.model_validate_json((folder / "stats.json").read_text()) == step
    assert json.loads((folder / "stats.json").read_text())["others"]["hunks"] == 2

    code, tests, others = (diffs.read_diff(chain, "1", "2", p) for p in ("code", "tests", "others"))
    assert code.count("diff --git ") == 5 and tests.count("diff --git ") == 2 and others.count("diff --git ") == 4
    assert "diff --git a/demo/gone.py b/demo/gone.py\ndeleted file mode 100644\n" in code
    assert "+import os\n" in tests and "+def test_b():\n" in tests
    # The empty fixture is visible although it has no hunk; the binary file travels as a binary patch.
    assert (
        "diff --git a/tests/data/empty.json b/tests/data/empty.json\nnew file mode 100644\nindex 0000000..e69de29\n"
        in others
    )
    assert "diff --git a/logo.png b/logo.png\nnew file mode 100644\n" in others and "GIT binary patch\n" in others
    for text in (code, tests, others):
        assert "PKG-INFO" not in text and "egg-info" not in text


def test_the_three_parts_together_rebuild_the_next_version(chain, tmp_path):
    diffs.step_diff(chain, "1", "2")

    def noise(rel):
        return diffs.part_of(rel, "tests") is None

    trees.copy_tree(tmp_path / "v1", tmp_path / "rebuilt", exclude=noise)
    trees.copy_tree(tmp_path / "v2", tmp_path / "expected", exclude=noise)
    for part in diffs.PARTS:
        trees.apply_patch(tmp_path / "rebuilt", diffs.read_diff(chain, "1", "2", part))
    assert (tmp_path / "rebuilt/tests/data/empty.json").read_bytes() == b""
    assert (tmp_path / "rebuilt/logo.png").read_bytes() == V2["logo.png"]
    assert trees.digest(tmp_path / "rebuilt") == trees.digest(tmp_path / "expected")


def test_cached_until_a_tree_changes(chain, tmp_path):
    first = diffs.step_diff(chain, "1", "2")
    stats = tmp_path / "home" / "diffs" / "demo" / "1-2" / "stats.json"
    written = stats.stat().st_mtime_ns
    assert diffs.step_diff(chain, "1", "2") == first
    assert stats.stat().st_mtime_ns == written
    (tmp_path / "v2" / "README.md").write_text("v2\nmore\n")
    changed = diffs.step_diff(chain, "1", "2")
    assert changed.others == DiffPart(files=4, hunks=2, added=3, removed=2, paths=OTHERS.paths)
    assert (changed.code, changed.tests) == (CODE, TESTS)
    assert "+more\n" in diffs.read_diff(chain, "1", "2", "others")


def test_chain_diffs_covers_every_step(chain):
    steps = diffs.chain_diffs(chain)
    assert [(s.prev_version, s.next_version) for s in steps] == [("1", "2"), ("2", "3")]
    assert (steps[0].code, steps[0].tests, steps[0].others) == (CODE, TESTS, OTHERS)
    assert (steps[1].code, steps[1].tests, steps[1].others) == (DiffPart(), DiffPart(), DiffPart())
    assert diffs.read_diff(chain, "2", "3", "code") == ""


def test_unquotes_git_paths():
    assert diffs.unquote_git_path('"dir/na\\303\\257ve file.txt"') == "dir/naïve file.txt"
    assert diffs.unquote_git_path("plain/path.py") == "plain/path.py"


def test_non_ascii_paths_are_reported_as_text(chain, tmp_path):
    write(tmp_path / "v3", {"demo/naïve.py": "z = 1\n"})
    step = diffs.step_diff(chain, "2", "3")
    assert step.code == DiffPart(files=1, hunks=1, added=1, removed=0, paths=["demo/naïve.py"])


def test_pyjwt_2_9_0_to_2_10_0_from_pypi(tmp_path, monkeypatch):
    """Real sdists: 2.10.0 adds an empty fixture and changes jwt/exceptions.py."""
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path))
    monkeypatch.delenv("SWECHAIN_INDEX_URL", raising=False)
    config = ChainConfig.model_validate(
        {
            "id": "pyjwt",
            "package": "PyJWT",
            "import_name": "jwt",
            "source_root": ".",
            "test_folder": "tests",
            "versions": [{"version": v, "source": {"kind": "pypi"}} for v in ("2.9.0", "2.10.0")],
        }
    )
    step = diffs.chain_diffs(Chain(config, tmp_path))[0]
    assert "jwt/exceptions.py" in step.code.paths
    assert step.code.paths == [
        "docs/conf.py",
        "jwt/__init__.py",
        "jwt/algorithms.py",
        "jwt/api_jws.py",
        "jwt/api_jwt.py",
        "jwt/exceptions.py",
        "jwt/help.py",
        "jwt/jwks_client.py",
        "jwt/utils.py",
        "setup.py",
    ]
    assert step.tests.paths == [
        "tests/test_algorithms.py",
        "tests/test_api_jws.py",
        "tests/test_api_jwt.py",
        "tests/test_utils.py",
    ]
    assert "tests/keys/jwk_empty.json" in step.others.paths
    assert not any(p == "PKG-INFO" or ".egg-info/" in p for p in step.others.paths)
    assert (step.code.files, step.code.hunks, step.code.added, step.code.removed) == (10, 54, 157, 73)
    assert (step.tests.files, step.tests.hunks, step.tests.added, step.tests.removed) == (4, 9, 169, 11)
    assert (step.others.files, step.others.hunks, step.others.added, step.others.removed) == (15, 45, 547, 229)
    others = diffs.read_diff(Chain(config, tmp_path), "2.9.0", "2.10.0", "others")
    assert "diff --git a/tests/keys/jwk_empty.json b/tests/keys/jwk_empty.json\nnew file mode 100644\n" in others
