"""L1 specifications: rendering, files, the CLI sub-app, and the generated PyJWT specs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import REPO
from typer.testing import CliRunner

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.records import read_model
from swechain_ci.specs.cli import specs_app
from swechain_ci.specs.render import (
    GENERATED_MARKER,
    L1Spec,
    render_chain,
    render_l1,
    rst_to_markdown,
    write_l1,
)


@pytest.fixture
def project(project_copy, tmp_path, monkeypatch):
    """A copy of the project as SWECHAIN_ROOT, with its own state home."""
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return project_copy


def test_toy_l1_has_the_tasks_and_the_interface_section(project):
    markdown, data = render_l1("toy", "0.2.0", "0.3.0", interface=True)
    assert markdown.startswith(GENERATED_MARKER)
    assert "# toyslug 0.2.0 → 0.3.0: upgrade specification (L1+interface, release notes)\n" in markdown
    assert "## Release notes of toyslug 0.3.0\n" in markdown
    assert "section `0.3.0 - 2024-05-20` (line 6)" in markdown
    assert (
        "### Changed\n\n"
        "- **T1.** **Breaking:** the module `toyslug.core` is renamed to `toyslug.text`; "
        "`toyslug.core` no longer exists.\n\n"
        "- **T2.** **Breaking:** `truncate()` is renamed to `shorten()` with the same signature and behaviour; "
        "the old name is removed.\n\n"
        "### Added\n\n"
        "- **T3.** `is_slug()` accepts a `sep` keyword argument"
    ) in markdown
    assert "## Interface changes\n" in markdown
    assert "### Renamed modules\n\n- `toyslug.core` → `toyslug.text`\n" in markdown
    assert "- function in `toyslug.checks`: `is_slug(text)` → `is_slug(text, sep='-')`" in markdown
    assert markdown.index("## Release notes") < markdown.index("## Interface changes")

    assert data["schema_version"] == 1 and data["level"] == "L1+interface"
    assert (data["chain"], data["package"], data["prev_version"], data["next_version"]) == (
        "toy",
        "toyslug",
        "0.2.0",
        "0.3.0",
    )
    assert data["release_notes"]["linked_text_fetched"] is False
    assert [t["category"] for t in data["release_notes"]["tasks"]] == ["Changed", "Changed", "Added"]
    assert data["interface"]["renamed_modules"] == [{"old": "toyslug.core", "new": "toyslug.text"}]
    assert L1Spec.model_validate_json(json.dumps(data)).release_notes.version == "0.3.0"


def test_l1_has_no_interface_section_unless_asked(project):
    markdown, data = render_l1("toy", "0.3.0", "0.4.0")
    assert data["interface"] is None and data["level"] == "L1"
    assert "Interface changes" not in markdown
    assert "- **T2.** `slugify()` accepts a `max_length` keyword argument" in markdown


def demo_chain(root: Path, changelog_2: str) -> None:
    """A two-version local chain whose 2.0 ships ``changelog_2``."""
    folder = root / "chains" / "demo"
    (folder).mkdir(parents=True)
    (folder / "chain.yaml").write_text(
        textwrap.dedent("""\
        schema_version: 1
        id: demo
        package: demo
        import_name: demo
        versions:
          - {version: "1.0", source: {kind: local, path: v1}}
          - {version: "2.0", source: {kind: local, path: v2}}
    """)
    )
    for version, code, log in (
        ("v1", "def f(a): ...\n", "## 1.0\n\n- First release\n"),
        ("v2", "def f(a, b=0): ...\n", changelog_2),
    ):
        (folder / version / "demo").mkdir(parents=True)
        (folder / version / "tests").mkdir()
        (folder / version / "tests" / "test_x.py").write_text("def test(): pass\n")
        (folder / version / "demo" / "__init__.py").write_text(code)
        (folder / version / "CHANGELOG.md").write_text(log)


def test_no_release_notes_says_so(project):
    demo_chain(project, "## 1.0\n\n- First release\n")  # 2.0 shipped without a 2.0 section
    markdown, data = render_l1("demo", "1.0", "2.0", interface=True)
    assert (
        "No release notes were shipped for 2.0: CHANGELOG.md has no section for 2.0 (its sections: 1.0).\n"
    ) in markdown
    assert "**T1.**" not in markdown and "First release" not in markdown
    assert data["release_notes"]["found"] is False and data["release_notes"]["tasks"] == []
    # The interface section is still there: it comes from the code.
    assert "- function in `demo`: `f(a)` → `f(a, b=0)`" in markdown


def test_files_are_written_and_hand_written_specs_are_never_overwritten(project):
    chain = load_chain("toy")
    manual = project / "specs" / "toy" / "0.1.0-0.2.0" / "manual.md"
    before = manual.read_text()
    written = render_chain(chain)
    assert [(md.parent.name, md.name, js.name) for md, js, _ in written] == [
        ("0.1.0-0.2.0", "L1.md", "L1.json"),
        ("0.2.0-0.3.0", "L1.md", "L1.json"),
        ("0.3.0-0.4.0", "L1.md", "L1.json"),
    ]
    assert manual.read_text() == before
    md, js, spec = written[0]
    assert md.read_text().startswith(GENERATED_MARKER)
    assert read_model(js, L1Spec) == spec
    assert [t.text.split(" ")[0] for t in spec.release_notes.tasks] == ["`unique_slug(text,", "`truncate()`"]
    write_l1(chain, "0.1.0", "0.2.0")  # a generated file may be rendered again

    md.write_text("# My own L1\n")
    with pytest.raises(SwechainError, match=r"L1\.md: exists and was not generated by `swechain-ci specs render`"):
        render_chain(chain)
    assert md.read_text() == "# My own L1\n"
    with pytest.raises(SwechainError, match="level L3 cannot be rendered from the release alone"):
        render_chain(chain, level="L3")
    with pytest.raises(SwechainError, match=r"0\.1\.0 -> 0\.3\.0 is not a step of chain toy"):
        render_l1(chain, "0.1.0", "0.3.0")


def test_cli_render_and_list(project):
    runner = CliRunner()
    before = runner.invoke(specs_app, ["list", "toy"])
    assert before.exit_code == 0, before.output
    assert "levels present for every step: manual" in before.output
    result = runner.invoke(specs_app, ["render", "toy"])
    assert result.exit_code == 0, result.output
    assert "specs/toy/0.2.0-0.3.0/L1.md" in result.output and "L1+interface" not in result.output
    assert json.loads((project / "specs/toy/0.2.0-0.3.0/L1.json").read_text())["interface"] is None
    both = runner.invoke(specs_app, ["render", "toy", "--interface"])
    assert both.exit_code == 0, both.output
    with_interface = json.loads((project / "specs/toy/0.2.0-0.3.0/L1+interface.json").read_text())
    assert with_interface["level"] == "L1+interface" and with_interface["interface"]["renamed_modules"]
    after = runner.invoke(specs_app, ["list", "toy"])
    assert after.exit_code == 0, after.output
    assert "levels present for every step: L1, L1+interface, manual" in after.output
    refused = runner.invoke(specs_app, ["render", "toy", "--level", "L2"])
    assert refused.exit_code != 0 and isinstance(refused.exception, SwechainError)


def test_rst_to_markdown():
    text = (
        "Fix ``SyntaxWarning``\\s in `#1103 <https://github.com/o/r/pull/1103>`__ and `<https://x.org/y>`__\n"
        "\n"
        ".. code-block:: pycon\n"
        "\n"
        " >>> 1 + 1\n"
        "\n"
        "After."
    )
    assert rst_to_markdown(text) == (
        "Fix `SyntaxWarning`s in [#1103](https://github.com/o/r/pull/1103) and <https://x.org/y>\n"
        "\n"
        "```pycon\n"
        ">>> 1 + 1\n"
        "```\n"
        "\n"
        "After."
    )


# --------------------------------------------------------------------------- the generated PyJWT specs


def test_generated_pyjwt_specs_are_present_and_current():
    chain = load_chain("pyjwt")
    counts = {}
    for prev, next_ in chain.steps:
        folder = REPO / "specs" / "pyjwt" / f"{prev}-{next_}"
        spec = read_model(folder / "L1.json", L1Spec)
        assert (folder / "L1.md").read_text().startswith(GENERATED_MARKER)
        assert (spec.prev_version, spec.next_version, spec.release_notes.found) == (prev, next_, True)
        counts[next_] = len(spec.release_notes.tasks)
    assert counts == {
        "2.0.1": 2,
        "2.1.0": 11,
        "2.2.0": 8,
        "2.3.0": 2,
        "2.4.0": 15,
        "2.5.0": 17,
        "2.6.0": 5,
        "2.7.0": 18,
        "2.8.0": 4,
        "2.9.0": 12,
        "2.10.0": 22,
        "2.10.1": 1,
        "2.11.0": 21,
        "2.12.0": 6,
        "2.12.1": 1,
    }
    markdown, data = render_l1(chain, "2.9.0", "2.10.0")
    assert data == json.loads((REPO / "specs/pyjwt/2.9.0-2.10.0/L1.json").read_text())
    assert markdown == (REPO / "specs/pyjwt/2.9.0-2.10.0/L1.md").read_text()
    assert "Interface changes" not in markdown
    with_interface, _ = render_l1(chain, "2.9.0", "2.10.0", interface=True)
    assert with_interface == (REPO / "specs/pyjwt/2.9.0-2.10.0/L1+interface.md").read_text()
    assert "- `jwt.exceptions.InvalidJTIError` (bases `InvalidTokenError`)" in with_interface
    assert (
        "Added validation for 'sub' (subject) and 'jti' (JWT ID) claims in tokens by @Divan009 in "
        "[#1005](https://github.com/jpadilla/pyjwt/pull/1005)" in markdown
    )
