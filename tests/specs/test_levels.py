"""Levels L1-L5 of one fixed task set, compared with the exact Markdown an agent reads."""

from __future__ import annotations

import hashlib
import json

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.changelog import Reference, ReleaseNotes, ReleaseTask
from swechain_ci.specs.interface import ApiName, InterfaceChanges
from swechain_ci.specs.levels import (
    LevelSpec,
    SpecTask,
    TaskSet,
    TaskSpec,
    build_level,
    parse_levels,
    render_level_markdown,
    write_level,
)

NOTES = ReleaseNotes(
    version="1.1.0",
    found=True,
    source_file="CHANGES.md",
    source_format="markdown",
    heading="1.1.0",
    heading_label="1.1.0",
    line=3,
    matched_by="heading",
    note=None,
    tasks=[
        ReleaseTask(
            id="T1",
            category="Added",
            kind="bullet",
            text="`greet()` accepts a `name`.",
            line=7,
            references=[
                Reference(
                    kind="pull", id="12", label="#12", url="https://github.com/o/demo/pull/12", repository="o/demo"
                )
            ],
        ),
        ReleaseTask(
            id="T2",
            category="Fixed",
            kind="bullet",
            text="`shout()` no longer drops the last letter.",
            line=11,
            references=[],
        ),
        ReleaseTask(
            id="T3", category="Changed", kind="bullet", text="The docs describe `greet()`.", line=15, references=[]
        ),
    ],
)


def spec(task_id, title, kind, statement, behaviour, criteria) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "title": title,
            "type": kind,
            "runtime_impact": kind != "DOCUMENTATION",
            "description": f"Description of {task_id}.",
            "synthesized_requirement": {
                "problem_statement": statement,
                "expectation": {
                    "grounded": f"{task_id}: grounded expectation.",
                    "conceptual": f"{task_id}: conceptual expectation.",
                },
                "constraints": {
                    "grounded": f"{task_id}: grounded constraints.",
                    "conceptual": f"{task_id}: conceptual constraints.",
                },
                "behavior": behaviour,
                "acceptance_criteria": criteria,
            },
            "significance": "medium",
            "confidence": "high",
            "difficulty": "easy",
        }
    )


T1 = spec(
    "T1",
    "Let greet() take a name",
    "FEATURE",
    "Ensure that greetings can name someone.",
    ["`greet('Ada')` returns `'Hello, Ada!'`."],
    ["When greet is called with a name, it should greet that name."],
)
T2 = spec(
    "T2",
    "Keep the last letter in shout()",
    "FIX",
    "Ensure that shouted text keeps every letter.",
    ["`shout('hi')` returns `'HI!'`.", "Empty text stays empty:\n`shout('')` returns `''`."],
    ["When text is shouted, no letter should be lost."],
)
T3 = spec(
    "T3",
    "Document greet()",
    "DOCUMENTATION",
    "Ensure that the documentation describes greetings.",
    ["The docs mention greet."],
    ["When reading the docs, greet should be described."],
)
X1 = spec(
    "X1",
    "Accept bytes in greet()",
    "FEATURE",
    "Ensure that byte names can be greeted.",
    ["`greet(b'Ada')` returns `'Hello, Ada!'`."],
    ["When greet gets bytes, it should decode them."],
)

TASK_SET = TaskSet(
    chain="demo",
    package="demo",
    prev_version="1.0.0",
    next_version="1.1.0",
    source="decompsynth",
    release_notes=NOTES,
    tasks=[
        SpecTask(spec=T1, origin="release_notes", release_task=NOTES.tasks[0], code_hunks=["H1"]),
        SpecTask(spec=T2, origin="release_notes", release_task=NOTES.tasks[1], code_hunks=["H2", "H3"]),
        SpecTask(spec=T3, origin="release_notes", release_task=NOTES.tasks[2], code_hunks=[]),  # no code: additional
        SpecTask(spec=X1, origin="complete", code_hunks=["H4"]),
    ],
)

INTERFACE = InterfaceChanges(
    package="demo",
    prev_version="1.0.0",
    next_version="1.1.0",
    added_names=[ApiName(module="demo", name="greet", kind="function", parameters="(name='world')")],
)

EXPECTED = {}

# In the reference's layout (its synthetic/specs_extractor.py): X1, found by Complete, and T3,
# matched to no code, are listed under Additional Changes, problem statement only.
EXPECTED["L2"] = """\
# Upgrade Specification from 1.0.0 to 1.1.0

## New Features

### Task 1 Let greet() take a name
Ensure that greetings can name someone.

## Bug Fixes

### Task 2 Keep the last letter in shout()
Ensure that shouted text keeps every letter.

## Additional Changes
- Ensure that the documentation describes greetings.
- Ensure that byte names can be greeted."""

EXPECTED["L3"] = """\
# Upgrade Specification from 1.0.0 to 1.1.0

## New Features

### Task 1 Let greet() take a name
Ensure that greetings can name someone.

- **Expectation**: T1: conceptual expectation.

- **Constraints**: T1: conceptual constraints.


## Bug Fixes

### Task 2 Keep the last letter in shout()
Ensure that shouted text keeps every letter.

- **Expectation**: T2: conceptual expectation.

- **Constraints**: T2: conceptual constraints.


## Additional Changes
- Ensure that the documentation describes greetings.
- Ensure that byte names can be greeted."""

EXPECTED["L4"] = EXPECTED["L3"].replace("conceptual", "grounded")

EXPECTED["L5"] = """\
# Upgrade Specification from 1.0.0 to 1.1.0

## New Features

### Task 1 Let greet() take a name
Ensure that greetings can name someone.

- **Expectation**: T1: grounded expectation.

- **Constraints**: T1: grounded constraints.

- **Acceptance Criteria:**
  - When greet is called with a name, it should greet that name.

- **Behavioral Description:**
  - `greet('Ada')` returns `'Hello, Ada!'`.


## Bug Fixes

### Task 2 Keep the last letter in shout()
Ensure that shouted text keeps every letter.

- **Expectation**: T2: grounded expectation.

- **Constraints**: T2: grounded constraints.

- **Acceptance Criteria:**
  - When text is shouted, no letter should be lost.

- **Behavioral Description:**
  - `shout('hi')` returns `'HI!'`.
  - Empty text stays empty:
`shout('')` returns `''`.


## Additional Changes
- Ensure that the documentation describes greetings.
- Ensure that byte names can be greeted."""

INTERFACE_SECTION = """\
## Interface changes

Computed from the code of `demo` 1.0.0 and 1.1.0 with Python's `ast` (nothing imported or run). Public names are module-level names not starting with `_`, as listed in `__all__` where a module defines it; signatures are shown without annotations.

### Added names

- function `demo.greet(name='world')`
"""


@pytest.mark.parametrize("level", ["L2", "L3", "L4", "L5"])
def test_every_level_renders_exactly(level):
    assert render_level_markdown(build_level(TASK_SET, level)) == EXPECTED[level]


@pytest.mark.parametrize("level", ["L2", "L3", "L4", "L5"])
def test_the_interface_section_is_optional_at_every_level(level):
    markdown = render_level_markdown(build_level(TASK_SET, level, INTERFACE))
    assert markdown == EXPECTED[level] + "\n\n" + INTERFACE_SECTION.rstrip()


def test_file_changes_close_the_specification():
    spec = build_level(TASK_SET, "L3", file_changes=["- Add file `demo/types.py`"])
    assert render_level_markdown(spec) == EXPECTED["L3"] + "\n\n## File Changes\n- Add file `demo/types.py`"


def test_l1_is_not_a_task_set_level():
    with pytest.raises(SwechainError, match="L1 comes from `swechain-ci specs render`"):
        build_level(TASK_SET, "L1")


def test_the_json_of_a_level_holds_what_its_markdown_shows():
    l3 = build_level(TASK_SET, "L3", source="DecompSynth (claude-sonnet-4-6)")
    data = json.loads(l3.model_dump_json())
    assert (data["level"], data["granularity"], data["generated_by"]) == ("L3", "conceptual", "swechain-ci specs synth")
    assert [(t["number"], t["task_id"], t["type"]) for t in data["tasks"]] == [(1, "T1", "FEATURE"), (2, "T2", "FIX")]
    assert data["tasks"][0] == {
        "number": 1,
        "task_id": "T1",
        "title": "Let greet() take a name",
        "type": "FEATURE",
        "problem_statement": "Ensure that greetings can name someone.",
        "expectation": "T1: conceptual expectation.",
        "constraints": "T1: conceptual constraints.",
        "behavior": None,
        "acceptance_criteria": None,
    }
    assert [t["task_id"] for t in data["additional"]] == ["T3", "X1"]
    assert all(t["expectation"] is None for t in data["additional"])
    assert data["release_notes"] is None and data["interface"] is None and data["file_changes"] == []
    l5 = build_level(TASK_SET, "L5")
    assert (l5.granularity, l5.tasks[1].behavior) == ("grounded", T2.synthesized_requirement.behavior)
    assert build_level(TASK_SET, "L2").tasks[0].expectation is None
    assert LevelSpec.model_validate_json(l5.model_dump_json()) == l5


def test_a_task_set_without_tasks_is_its_title_alone():
    empty = TASK_SET.model_copy(update={"tasks": []})
    assert render_level_markdown(build_level(empty, "L3")) == "# Upgrade Specification from 1.0.0 to 1.1.0"


def test_imported_tasks_without_hunk_information_are_all_numbered():
    imported = TASK_SET.model_copy(
        update={
            "source": "import",
            "release_notes": None,
            "tasks": [SpecTask(spec=t.spec, origin="import") for t in TASK_SET.tasks],
        }
    )
    spec = build_level(imported, "L2", generated_by="swechain-ci specs import")
    assert [(t.number, t.task_id) for t in spec.tasks] == [(1, "T1"), (2, "X1"), (3, "T2"), (4, "T3")]
    assert spec.additional == []
    assert "## Documentation\n\n### Task 4 Document greet()\n" in render_level_markdown(spec)


def test_task_specs_are_validated_strictly():
    data = T1.model_dump(mode="json")
    for broken in (
        {**data, "type": "feature"},
        {**data, "runtime_impact": "yes"},
        {**data, "extra": 1},
        {**data, "title": "  "},
        {**data, "synthesized_requirement": {**data["synthesized_requirement"], "expectation": {"grounded": "g"}}},
    ):
        with pytest.raises(ValueError):
            TaskSpec.model_validate(broken)


def test_parse_levels():
    assert parse_levels("L2, l3,L3") == ["L2", "L3"]
    with pytest.raises(SwechainError, match="unknown or unsupported level 'L6'"):
        parse_levels("L6")
    with pytest.raises(SwechainError, match="unsupported level 'L1'"):
        parse_levels("L1,L2", ("L2", "L3", "L4", "L5"))


def test_levels_are_written_next_to_the_other_specs_and_hand_written_files_are_kept(project_copy, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    chain = load_chain("toy")
    toy = TASK_SET.model_copy(
        update={"chain": "toy", "package": "toyslug", "prev_version": "0.1.0", "next_version": "0.2.0"}
    )
    md, js = write_level(chain, build_level(toy, "L3"))
    assert md == project_copy / "specs" / "toy" / "0.1.0-0.2.0" / "L3.md" and js == md.with_suffix(".json")
    assert md.read_text().startswith("# Upgrade Specification from 0.1.0 to 0.2.0\n")  # nothing added for the agent
    record = LevelSpec.model_validate_json(js.read_text())
    assert record.level == "L3" and record.markdown == "rendered"
    assert record.markdown_sha256 == hashlib.sha256(md.read_bytes()).hexdigest()
    write_level(chain, build_level(toy, "L3", generated_by="swechain-ci specs import"))  # ours: overwritten
    md.write_text(md.read_text() + "\nedited by hand\n")  # the JSON twin no longer vouches for it
    with pytest.raises(SwechainError, match=r"L3.md: exists and was not written by .* \(or was edited since\)"):
        write_level(chain, build_level(toy, "L3"))
    assert md.read_text().endswith("edited by hand\n")
    js.unlink()
    with pytest.raises(SwechainError, match=r"L3\.md: exists and was not written by"):
        write_level(chain, build_level(toy, "L3"))
