"""The paper's published specifications, as distributed: the reference repository's
``metadata/`` layout and the dataset's ``specs_chain.parquet``, imported for PyJWT.

The real files (``../shared/reference/published-specs``, PyJWT 2.0.1 -> 2.1.0 and
2.9.0 -> 2.10.0) are used when present; the project's own fixture in the same layout otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import REPO
from typer.testing import CliRunner

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.cli import specs_app
from swechain_ci.specs.levels import LevelSpec, render_level_markdown
from swechain_ci.specs.published import import_specs, parse_markdown

# The shared reference data sits beside the checkout (or beside the worktrees' folder).
REAL = (
    next(
        (p for p in (REPO.parent / "shared", REPO.parent.parent / "shared") if (p / "reference").is_dir()),
        REPO.parent / "shared",
    )
    / "reference"
    / "published-specs"
)
FIXTURE = REPO / "tests" / "fixtures" / "published_specs"
PUBLISHED = REAL if (REAL / "pyjwt_2.0.0_to_2.12.1").is_dir() else FIXTURE
CHAIN_DIR = PUBLISHED / "pyjwt_2.0.0_to_2.12.1"
STEPS = {d.name: d for d in sorted(CHAIN_DIR.iterdir()) if (d / "synthetic").is_dir()}


@pytest.fixture
def project(project_copy, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    for level in ("L2", "L3", "L4", "L5"):  # a worktree may hold imported files; start without them
        for path in (project_copy / "specs" / "pyjwt").glob(f"*/{level}*"):
            path.unlink()
    return project_copy


def previous(chain, version: str) -> str:
    return chain.versions[chain.versions.index(version) - 1]


def published_md(version: str) -> str:
    return (STEPS[version] / "synthetic" / f"v{version}_specs.md").read_text()


# A step whose one task has no Python hunk: the reference lists it under Additional Changes alone
# (as for PyJWT 2.12.0 -> 2.12.1); the project's own words.
ADDITIONAL_ONLY = (
    "# Upgrade Specification from 2.12.0 to 2.12.1\n\n## Additional Changes\n"
    "- Ensure that the package declares the typing helper it imports on older Pythons."
)


def test_metadata_layout_gives_l2_to_l5_and_l3_is_the_published_markdown_byte_for_byte(project):
    chain = load_chain("pyjwt")
    report = import_specs(PUBLISHED, chain, None)
    assert [(r.next_ver, r.status, r.shape, r.published) for r in report.rows] == [
        (v, "written", "tasks+markdown", ["L3"]) for v in STEPS
    ]
    for version in STEPS:
        step = project / "specs" / "pyjwt" / f"{previous(chain, version)}-{version}"
        assert sorted(p.name for p in step.glob("L[2-5]*.md")) == ["L2.md", "L3.md", "L4.md", "L5.md"]
        assert (step / "L3.md").read_bytes() == published_md(version).encode()  # what the paper's agents read
        l5 = LevelSpec.model_validate_json((step / "L5.json").read_text())
        assert l5.granularity == "grounded" and all(t.behavior and t.acceptance_criteria for t in l5.tasks)
        l3 = LevelSpec.model_validate_json((step / "L3.json").read_text())
        assert l3.generated_by == "swechain-ci specs import" and l3.interface is None and l3.markdown == "published"
        assert (
            l3.source.startswith(
                f"published SWE-Chain specifications pyjwt_2.0.0_to_2.12.1/{version}/synthetic/v{version}_specs.json + "
            )
            and "(sha256 " in l3.source
        )
        # Our renderer, given the same tasks and arrangement, writes the reference's text to the byte.
        assert render_level_markdown(l3) == published_md(version)
        # L4 and L5 are the reference's renderer at --granularity grounded (and with the lists).
        l4 = (step / "L4.md").read_text()
        assert l4.startswith(f"# Upgrade Specification from {previous(chain, version)} to {version}\n\n## ")
        assert "- **Acceptance Criteria:**\n" not in l4
        text5 = (step / "L5.md").read_text()
        assert text5.index("- **Acceptance Criteria:**") < text5.index("- **Behavioral Description:**")
    listed = CliRunner().invoke(specs_app, ["list", "pyjwt"])
    assert listed.exit_code == 0, listed.output
    assert (
        "L3: specs import: published SWE-Chain specifications pyjwt_2.0.0_to_2.12.1/2.1.0/synthetic/" in listed.output
    )
    assert "L1: specs render: CHANGELOG.rst of 2.1.0" in listed.output and "default level: L3" in listed.output


def test_tasks_only_the_markdown_lists_are_kept_under_additional_changes(project):
    chain = load_chain("pyjwt")
    import_specs(PUBLISHED, chain, None)
    for version in STEPS:
        parsed = parse_markdown(published_md(version), version)
        step = project / "specs" / "pyjwt" / f"{previous(chain, version)}-{version}"
        for level in ("L2", "L4", "L5"):
            spec = LevelSpec.model_validate_json((step / f"{level}.json").read_text())
            assert [t.problem_statement for t in spec.additional] == [t.problem_statement for t in parsed.additional]
            assert [t.title for t in spec.tasks] == [t.title for t in parsed.numbered]
            assert spec.file_changes == parsed.file_changes


def test_interface_is_a_level_of_its_own(project):
    import_specs(PUBLISHED, load_chain("pyjwt"), "L3", interface=True)
    step = project / "specs" / "pyjwt" / "2.0.1-2.1.0"
    assert "## Interface changes" not in (step / "L3.md").read_text()
    with_interface = (step / "L3+interface.md").read_text()
    assert with_interface.startswith(published_md("2.1.0") + "\n\n## Interface changes\n")
    assert "PyJWKSet" in with_interface
    assert LevelSpec.model_validate_json((step / "L3+interface.json").read_text()).level == "L3+interface"


def parquet_of(path: Path, rows: list[dict]) -> Path:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def sample_rows(chain) -> list[dict]:
    """The dataset's rows for the reference samples (and a step with only Additional Changes)."""
    rows = [
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": chain.versions.index(version),
            "package": "pyjwt",
            "prev_ver": previous(chain, version),
            "next_ver": version,
            "specs": published_md(version),
        }
        for version in STEPS
    ]
    return [
        *rows,
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": 15,
            "package": "pyjwt",
            "prev_ver": "2.12.0",
            "next_ver": "2.12.1",
            "specs": ADDITIONAL_ONLY,
        },
    ]


def test_the_parquet_of_the_samples_imports_every_step_and_the_agent_reads_its_text(project, tmp_path):
    chain = load_chain("pyjwt")
    path = parquet_of(tmp_path / "specs_chain.parquet", sample_rows(chain))
    report = import_specs(path, chain)
    assert [r.status for r in report.rows] == ["written"] * (len(STEPS) + 1)
    for row in sample_rows(chain):
        step = project / "specs" / "pyjwt" / f"{row['prev_ver']}-{row['next_ver']}"
        assert (step / "L3.md").read_bytes() == row["specs"].encode()
    last = project / "specs" / "pyjwt" / "2.12.0-2.12.1"
    assert [(last / f"{lv}.md").read_text() for lv in ("L2", "L3", "L4", "L5")] == [ADDITIONAL_ONLY] * 4
    assert report.rows[-1].published == ["L2", "L3", "L4", "L5"]
    with pytest.raises(
        SwechainError,
        match=r"row 1 \(pyjwt_2.0.0_to_2.12.1 2.0.1 -> 2.1.0\), field specs: the "
        r"published text holds L3 content, so it cannot be written at L4",
    ):
        import_specs(path, chain, "L4")


def test_parquet_rows_are_matched_by_paper_id_and_version(project, tmp_path):
    version = next(iter(STEPS))
    markdown = published_md(version)
    rows = [
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": 2,
            "package": "pyjwt",
            "prev_ver": "2.0.1",
            "next_ver": version,
            "specs": markdown,
        },
        {
            "chain_id": "flask_2.0.0_to_2.3.3",
            "step_id": 1,
            "package": "flask",
            "prev_ver": "2.0.0",
            "next_ver": "2.0.1",
            "specs": "# Upgrade Specification from 2.0.0 to 2.0.1\n",
        },
        {
            "chain_id": "pyjwt_2.0.0_to_2.12.1",
            "step_id": 99,
            "package": "pyjwt",
            "prev_ver": "2.12.1",
            "next_ver": "2.13.0",
            "specs": markdown,
        },
    ]
    path = parquet_of(tmp_path / "specs_chain.parquet", rows)
    report = import_specs(path, load_chain("pyjwt"))
    assert [(r.line, r.status) for r in report.rows] == [(1, "written"), (2, "unmatched"), (3, "unmatched")]
    assert report.rows[1].reason == "chain_id flask_2.0.0_to_2.3.3 is not chain pyjwt's paper_id pyjwt_2.0.0_to_2.12.1"
    assert report.rows[2].reason.startswith("version 2.13.0 not in chain pyjwt")
    l3 = project / "specs" / "pyjwt" / f"2.0.1-{version}" / "L3.md"
    assert l3.read_text() == markdown
    spec = LevelSpec.model_validate_json(l3.with_suffix(".json").read_text())
    assert spec.source.startswith(
        "published SWE-Chain specifications specs_chain.parquet row 1 "
        "(chain_id pyjwt_2.0.0_to_2.12.1, step_id 2, sha256 "
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"next_ver": None}, r"row 2: field next_ver must be a non-empty string"),
        (
            {"specs": "## Bugs\n"},
            r"row 2 \(pyjwt_2.0.0_to_2.12.1 {prev} -> {next}\), field specs: line 1: unknown section 'Bugs'",
        ),
        ({"specs": "[1, 2]"}, r"row 2 .*field specs: task 1: '\(top level\)'"),
    ],
)
def test_a_bad_row_stops_its_chain_with_the_row_and_field_named(project, tmp_path, change, message):
    chain = load_chain("pyjwt")
    rows = [dict(r) for r in sample_rows(chain)]
    rows[1].update(change)
    path = parquet_of(tmp_path / "specs_chain.parquet", rows)
    # row 2's step depends on which samples are at hand (the reference's, or the fixture's)
    message = message.replace("{prev}", re.escape(str(rows[1]["prev_ver"]))).replace(
        "{next}", re.escape(str(rows[1]["next_ver"]))
    )
    with pytest.raises(SwechainError, match=message):
        import_specs(path, chain)
    assert not list((project / "specs" / "pyjwt").rglob("L3.md")), "nothing of the chain is written"


def test_parquet_without_the_extra_names_it(project, tmp_path, monkeypatch):
    path = tmp_path / "specs_chain.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(
        SwechainError,
        match=r"reading parquet needs pyarrow; install the extra: "
        r"pip install 'swechain-ci\[parquet\]'",
    ):
        import_specs(path, load_chain("pyjwt"))


def test_a_chain_without_paper_id_cannot_take_the_metadata_layout(project):
    with pytest.raises(SwechainError, match=r"chain toy has no paper_id"):
        import_specs(PUBLISHED, load_chain("toy"), None)


def test_every_paper_chain_defaults_to_the_papers_level():
    from swechain_ci.chain.definition import available_chains

    chains = [load_chain(c) for c in available_chains()]
    paper = {c.id: c.config.default_spec_level for c in chains if c.config.paper_id}
    assert "pyjwt" in paper and set(paper.values()) == {"L3"}
    assert load_chain("toy").config.default_spec_level == "manual"  # the toy keeps its hand-written level
