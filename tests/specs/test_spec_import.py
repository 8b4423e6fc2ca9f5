"""``specs import``: rows in the public SWE-Chain layout, matched to the toy chain's steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO
from typer.testing import CliRunner

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.cli import specs_app
from swechain_ci.specs.levels import LevelSpec
from swechain_ci.specs.published import (
    import_specs,
    match_step,
    parse_markdown,
    same_version,
)

FIXTURE = REPO / "tests" / "fixtures" / "swe_chain_specs" / "toyslug_specs_chain.jsonl"

STEP_1_L3 = """\
# Upgrade Specification from 0.1.0 to 0.2.0

## New Features

### Task 1 Add unique_slug for collision-free slugs
Ensure that callers can build a slug that does not collide with slugs already taken.

- **Expectation**: Slugs can be made unique against a collection of taken slugs by numbering them.

- **Constraints**: Existing slug helpers keep their behaviour.


## Bug Fixes

### Task 2 Fix truncate exceeding the requested length
Ensure that shortening text with an ellipsis never returns more characters than requested.

- **Expectation**: Shortened text with an ellipsis fits the requested length exactly.

- **Constraints**: Everything else about shortening text stays as it was.
"""


def published_text(line: int) -> str:
    return json.loads(FIXTURE.read_text().splitlines()[line - 1])["specs"]


L5_MARKDOWN = """# Upgrade Specification from 0.3.0 to 0.4.0

## Breaking Changes

### Task 1 Transliterate accents in slugify
Ensure that accented letters become their ASCII base letters.

- **Expectation**: `slugify` decomposes text with NFKD
and drops combining marks.

- **Constraints**: Letters without an ASCII form stay boundaries.

- **Acceptance Criteria:**
  - When text has accents, the slug should keep their base letters.

- **Behavioral Description:**
  - `slugify("café")` returns `"cafe"`.
  - `slugify("Crème brûlée")` returns
    `"creme-brulee"`.

Issue #7: accents are dropped from slugs (linked issue text, not imported).
"""


@pytest.fixture
def project(project_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return project_copy


def specs(project: Path, step: str) -> Path:
    return project / "specs" / "toy" / step


def rows_file(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_matching_rows_are_written_and_the_unmatched_row_is_reported(project):
    report = import_specs(FIXTURE, load_chain("toy"))
    assert [(r.line, r.status, r.step, r.shape, r.tasks, r.published) for r in report.rows] == [
        (1, "written", "0.1.0-0.2.0", "tasks", 2, []),
        (2, "written", "0.2.0-0.3.0", "markdown", 3, ["L3"]),
        (3, "written", "0.3.0-0.4.0", "tasks", 1, []),
        (4, "unmatched", None, None, None, []),
    ]
    assert report.rows[3].reason == "version 0.5.0 not in chain toy (0.1.0 .. 0.4.0)"
    assert [r.line for r in report.unmatched] == [4]

    assert (specs(project, "0.1.0-0.2.0") / "L3.md").read_text() == STEP_1_L3
    # The published text is what the agent reads, byte for byte, File Changes included.
    assert (specs(project, "0.2.0-0.3.0") / "L3.md").read_text() == published_text(2)
    assert published_text(2).endswith("## File Changes\n- Add file `src/toyslug/text.py`")
    # Task objects give every level; a published text (L3) gives L3 and its problem statements.
    assert sorted(p.name for p in specs(project, "0.1.0-0.2.0").glob("L*.md")) == ["L2.md", "L3.md", "L4.md", "L5.md"]
    assert sorted(p.name for p in specs(project, "0.2.0-0.3.0").glob("L*.md")) == ["L2.md", "L3.md"]
    l3 = (specs(project, "0.3.0-0.4.0") / "L3.md").read_text()
    assert "## Breaking Changes\n\n### Task 1 Transliterate accents in slugify\n" in l3
    assert "- **Expectation**: Accented Latin letters keep their base letter in slugs.\n" in l3
    assert not (specs(project, "0.4.0-0.5.0")).exists()

    data = LevelSpec.model_validate_json((specs(project, "0.1.0-0.2.0") / "L3.json").read_text())
    assert (data.generated_by, data.level, data.granularity, data.note, data.markdown) == (
        "swechain-ci specs import",
        "L3",
        "conceptual",
        None,
        "rendered",
    )
    assert data.source == f"imported from {FIXTURE.name} line 1"
    assert [t.task_id for t in data.tasks] == ["task_2", "task_1"] and data.interface is None
    markdown_row = LevelSpec.model_validate_json((specs(project, "0.2.0-0.3.0") / "L3.json").read_text())
    assert markdown_row.markdown == "published" and markdown_row.file_changes == ["- Add file `src/toyslug/text.py`"]
    l2 = (specs(project, "0.2.0-0.3.0") / "L2.md").read_text()
    assert "### Task 1 Let is_slug validate other separators\nEnsure that slugs built" in l2
    assert "Expectation" not in l2 and l2.endswith("## File Changes\n- Add file `src/toyslug/text.py`")
    # Imports may be run again: the files are ours.
    assert [r.status for r in import_specs(FIXTURE, load_chain("toy")).rows].count("written") == 3


def test_a_level_the_markdown_does_not_hold_is_refused_before_anything_is_written(project):
    with pytest.raises(
        SwechainError,
        match=r"toyslug_specs_chain.jsonl:2 \(0.2 -> 0.3\), field specs: the published text holds L3 content, "
        r"so it cannot be written at L4 \(use --level L2 or L3;",
    ):
        import_specs(FIXTURE, load_chain("toy"), level="L4")
    assert not list((project / "specs" / "toy").rglob("L4.*"))


def test_a_text_with_only_additional_changes_is_itself_at_every_level(project, tmp_path):
    text = (
        "# Upgrade Specification from 0.3.0 to 0.4.0\n\n## Additional Changes\n"
        "- Ensure that the package still imports on older Pythons."
    )
    path = rows_file(tmp_path, {"package": "toyslug", "prev_ver": "0.3.0", "next_ver": "0.4.0", "specs": text})
    report = import_specs(path, load_chain("toy"))
    assert report.rows[0].published == ["L2", "L3", "L4", "L5"]
    for level in ("L2", "L3", "L4", "L5"):
        assert (specs(project, "0.3.0-0.4.0") / f"{level}.md").read_text() == text


def test_markdown_with_behaviour_and_criteria_is_l5(project, tmp_path):
    parsed = parse_markdown(L5_MARKDOWN, "here")
    assert parsed.versions == ("0.3.0", "0.4.0")
    [task] = parsed.tasks
    assert (task.number, task.type, task.title) == (1, "BREAKING", "Transliterate accents in slugify")
    assert task.expectation == "`slugify` decomposes text with NFKD\nand drops combining marks."
    assert task.behavior == [
        '`slugify("café")` returns `"cafe"`.',
        '`slugify("Crème brûlée")` returns\n`"creme-brulee"`.',
    ]
    assert task.acceptance_criteria == ["When text has accents, the slug should keep their base letters."]
    assert task.extra_lines == 1

    path = rows_file(tmp_path, {"package": "toyslug", "prev_ver": "0.3.0", "next_ver": "0.4.0", "specs": L5_MARKDOWN})
    report = import_specs(path, load_chain("toy"))
    assert report.rows[0].published == ["L5"]
    assert (specs(project, "0.3.0-0.4.0") / "L5.md").read_text() == L5_MARKDOWN
    l4 = (specs(project, "0.3.0-0.4.0") / "L4.md").read_text()
    assert "- **Expectation**: `slugify` decomposes text with NFKD\nand drops combining marks.\n" in l4
    assert "Acceptance Criteria" not in l4 and "Behavioral Description" not in l4
    assert LevelSpec.model_validate_json((specs(project, "0.3.0-0.4.0") / "L5.json").read_text()).note is None
    with pytest.raises(
        SwechainError, match=r"holds L5 content, so it cannot be written at L3 \(use --level L2 or L4 or L5"
    ):
        import_specs(path, load_chain("toy"), level="L3")


def test_versions_are_compared_as_versions():
    chain = load_chain("toy")
    assert same_version("2.0", "2.0.0") and same_version("v2.0", "2.0.0") and same_version("2.0.0", "2.0")
    assert not same_version("2.0.post1", "2.0") and not same_version("2.0.0rc1", "2.0.0")
    assert not same_version("2.1", "2.10") and same_version("weird", "Weird")
    assert match_step(chain, "0.2", "0.3") == (("0.2.0", "0.3.0"), None)
    assert match_step(chain, "0.1.0", "0.3.0") == (
        None,
        "0.1.0 and 0.3.0 are both in chain toy but are not one step apart",
    )
    assert match_step(chain, "0.0.9", "0.1") == (None, "version 0.0.9 not in chain toy (0.1.0 .. 0.4.0)")


def test_other_packages_and_repeated_steps_are_reported(project, tmp_path):
    first = json.loads(FIXTURE.read_text().splitlines()[0])
    path = rows_file(
        tmp_path, {**first, "package": "Toy_Slug"}, {**first, "package": "TOYSLUG"}, {**first, "prev_ver": "0.1"}
    )
    report = import_specs(path, load_chain("toy"))
    assert [(r.status, r.reason) for r in report.rows] == [
        ("unmatched", "package Toy_Slug is not chain toy's package toyslug"),
        ("written", None),
        ("duplicate", "same step as row 2; not written"),
    ]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"package": "toyslug", "prev_ver": "0.1.0", "next_ver": "0.2.0"}, r"rows.jsonl:1: missing specs"),
        (
            {"package": "toyslug", "prev_ver": "0.1.0", "next_ver": "0.2.0", "specs": 3},
            r"rows.jsonl:1 \(0.1.0 -> 0.2.0\), field specs: expected a list of task objects, got int",
        ),
        (
            {"package": "toyslug", "prev_ver": "0.1.0", "next_ver": "0.2.0", "specs": '[{"task_id": '},
            r"rows.jsonl:1 \(0.1.0 -> 0.2.0\), field specs: specs look like JSON but do not parse",
        ),
        (
            {
                "package": "toyslug",
                "prev_ver": "0.1.0",
                "next_ver": "0.2.0",
                "specs": {"task_1": {"task_id": "task_9"}},
            },
            r"the task under key 'task_1' has task_id 'task_9'",
        ),
        (
            {"package": "toyslug", "prev_ver": "0.1.0", "next_ver": "0.2.0", "specs": "## Bug Fixes\n\nstray text\n"},
            r"field specs: line 3: text outside a task",
        ),
        (
            {
                "package": "toyslug",
                "prev_ver": "0.1.0",
                "next_ver": "0.2.0",
                "specs": "# Upgrade Specification from 0.1.0 to 0.3.0\n",
            },
            r"the Markdown title names 0.1.0 -> 0.3.0",
        ),
    ],
)
def test_invalid_rows_stop_the_import_with_file_and_line(project, tmp_path, row, message):
    with pytest.raises(SwechainError, match=message):
        import_specs(rows_file(tmp_path, row), load_chain("toy"))


def test_task_objects_are_validated_strictly(project, tmp_path):
    first = json.loads(FIXTURE.read_text().splitlines()[0])
    broken = json.loads(json.dumps(first))
    broken["specs"][1]["synthesized_requirement"]["expectation"]["vague"] = "x"
    broken["specs"][1]["type"] = "Feature"
    with pytest.raises(SwechainError) as caught:
        import_specs(rows_file(tmp_path, broken), load_chain("toy"))
    text = str(caught.value)
    assert "rows.jsonl:1 (0.1.0 -> 0.2.0), field specs: task 2: 'type': Input should be 'FEATURE'" in text
    assert "'synthesized_requirement.expectation.vague': Extra inputs are not permitted" in text
    assert not (specs(project, "0.1.0-0.2.0") / "L3.md").exists()


def test_a_hand_written_level_is_never_overwritten(project):
    (specs(project, "0.3.0-0.4.0") / "L3.md").write_text("# mine\n")
    with pytest.raises(SwechainError, match=r"0\.3\.0-0\.4\.0/L3\.md: exists and was not written by"):
        import_specs(FIXTURE, load_chain("toy"))
    assert not (specs(project, "0.1.0-0.2.0") / "L3.md").exists()


def test_the_cli_imports_and_reports(project):
    runner = CliRunner()
    result = runner.invoke(specs_app, ["import", str(FIXTURE), "--chain", "toy", "--interface", "--level", "L3"])
    assert result.exit_code == 0, result.output
    assert (
        "| 0.2 → 0.3     | written   | markdown | 3       | specs/toy/0.2.0-0.3.0/ (L3, L3+interface)" in result.output
    )
    assert "version 0.5.0 not in chain toy (0.1.0 .. 0.4.0)" in result.output
    assert "3 of 4 rows written at L3, L3+interface; 1 matched no step" in result.output
    assert (specs(project, "0.2.0-0.3.0") / "L3.md").read_text() == published_text(2)
    l3 = (specs(project, "0.2.0-0.3.0") / "L3+interface.md").read_text()
    assert l3.startswith(published_text(2) + "\n\n## Interface changes\n")
    assert "### Renamed modules\n\n- `toyslug.core` → `toyslug.text`\n" in l3
    listed = runner.invoke(specs_app, ["list", "toy"])
    assert "levels present for every step: L3, L3+interface, manual" in listed.output
    bad = runner.invoke(specs_app, ["import", str(FIXTURE), "--chain", "toy", "--level", "L1"])
    assert isinstance(bad.exception, SwechainError) and "unsupported level 'L1'" in str(bad.exception)
