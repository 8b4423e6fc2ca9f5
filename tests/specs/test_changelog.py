"""Release notes (L1) from the changelogs the releases really ship.

PyJWT's sdists come from PyPI through ``materialize`` (cached in the state home after the
first run); the toy chain is local. Every count below was checked by reading the file.
"""

from __future__ import annotations

from collections import Counter

import pytest

from swechain_ci.chain.definition import load_chain
from swechain_ci.chain.sources import materialize
from swechain_ci.specs.changelog import (
    ReleaseNotes,
    chain_release_notes,
    extract_references,
    extract_release_notes,
    find_changelog,
    release_notes,
)


@pytest.fixture(scope="module")
def pyjwt():
    return load_chain("pyjwt")


@pytest.fixture(scope="module")
def toy():
    return load_chain("toy")


def categories(notes: ReleaseNotes) -> dict[str | None, int]:
    return dict(Counter(task.category for task in notes.tasks))


# --------------------------------------------------------------------------- PyJWT, rst


def test_pyjwt_2_10_0_section(pyjwt):
    notes = chain_release_notes(pyjwt, "2.10.0")
    assert (notes.found, notes.source_file, notes.source_format) == (True, "CHANGELOG.rst", "rst")
    assert notes.heading == "`v2.10.0 <https://github.com/jpadilla/pyjwt/compare/2.9.0...2.10.0>`__"
    assert (notes.heading_label, notes.line, notes.matched_by) == ("v2.10.0", 12, "heading")
    assert notes.linked_text_fetched is False
    assert len(notes.tasks) == 22
    assert categories(notes) == {"Changed": 8, "Fixed": 7, "Added": 7}
    assert [t.id for t in notes.tasks] == [f"T{i}" for i in range(1, 23)]

    sub_jti = notes.tasks[4]
    assert sub_jti.category == "Changed" and sub_jti.kind == "bullet" and sub_jti.line == 38
    assert sub_jti.text.startswith("Added validation for 'sub' (subject) and 'jti' (JWT ID) claims in tokens")
    assert [r.model_dump() for r in sub_jti.references] == [
        {
            "kind": "pull",
            "id": "1005",
            "label": "#1005",
            "url": "https://github.com/jpadilla/pyjwt/pull/1005",
            "repository": "jpadilla/pyjwt",
        }
    ]
    python38 = notes.tasks[7]
    assert python38.text.startswith("Drop support for Python 3.8 (EOL)")
    assert [(r.kind, r.id) for r in python38.references] == [("pull", "1007")]
    # Not in the section: the first bullet of 2.9.0 comes right after it.
    assert not any("Drop support for Python 3.7" in t.text for t in notes.tasks)


def test_pyjwt_continuation_lines_and_code_blocks_stay_with_their_bullet(pyjwt):
    notes = chain_release_notes(pyjwt, "2.10.0")
    none_alg = notes.tasks[3]
    assert none_alg.text.startswith("Encoding and decoding payloads using the `none` algorithm")
    assert "Before:" in none_alg.text and 'algorithm="none")' in none_alg.text
    assert none_alg.text.count(".. code-block:: pycon") == 2
    # The commit link lacks the trailing underscores in this release; it is still a commit reference.
    assert [(r.kind, r.id, r.label) for r in none_alg.references] == [
        ("commit", "c2629f66c593459e02616048443231ccbe18be16", "#c2629f6")
    ]
    assert notes.tasks[4].line == 38  # the bullet after the code blocks is a task of its own

    eleven = chain_release_notes(pyjwt, "2.11.0")
    assert len(eleven.tasks) == 21 and categories(eleven) == {"Fixed": 10, "Added": 11}
    typing = eleven.tasks[9]
    assert typing.text == (
        "Development: Test type annotations across all supported Python versions,\n"
        "increase the strictness of the type checking, and remove the mypy pre-commit hook\n"
        "by @kurtmckee in `#1112 <https://github.com/jpadilla/pyjwt/pull/1112>`__"
    )


@pytest.mark.parametrize(
    ("version", "count", "by_category"),
    [
        ("2.0.1", 2, {"Changed": 1, "Fixed": 1}),
        ("2.1.0", 11, {"Changed": 1, "Fixed": 4, "Added": 6}),
        ("2.3.0", 2, {"Fixed": 1, "Added": 1}),
        ("2.4.0", 15, {"Security": 1, "Changed": 2, "Fixed": 4, "Added": 8}),
        ("2.7.0", 18, {"Changed": 4, "Fixed": 4, "Added": 10}),
        ("2.8.0", 4, {"Changed": 1, "Added": 3}),  # its "Fixed" heading is empty
        ("2.12.1", 1, {"Fixed": 1}),
    ],
)
def test_pyjwt_task_counts(pyjwt, version, count, by_category):
    notes = chain_release_notes(pyjwt, version)
    assert notes.found and notes.source_file == "CHANGELOG.rst"
    assert len(notes.tasks) == count
    assert categories(notes) == by_category


def test_pyjwt_2_0_1_tasks_verbatim(pyjwt):
    notes = chain_release_notes(pyjwt, "2.0.1")
    assert [(t.category, t.text) for t in notes.tasks] == [
        (
            "Changed",
            "Rename CHANGELOG.md to CHANGELOG.rst and include in docs "
            "`#597 <https://github.com/jpadilla/pyjwt/pull/597>`__",
        ),
        ("Fixed", "Fix `from_jwk()` for all algorithms `#598 <https://github.com/jpadilla/pyjwt/pull/598>`__"),
    ]


def test_pyjwt_2_4_0_security_references(pyjwt):
    task = chain_release_notes(pyjwt, "2.4.0").tasks[0]
    assert task.category == "Security"
    assert [(r.kind, r.id, r.url) for r in task.references] == [
        ("cve", "CVE-2022-29217", None),
        (
            "advisory",
            "GHSA-ffqj-6fqr-9h24",
            "https://github.com/jpadilla/pyjwt/security/advisories/GHSA-ffqj-6fqr-9h24",
        ),
    ]


def test_pyjwt_2_5_0_heading_typo_is_matched_by_its_compare_link(pyjwt):
    # 2.5.0's own changelog titles its section "v2.4.0" (fixed in 2.6.0); its link ends at 2.5.0.
    notes = chain_release_notes(pyjwt, "2.5.0")
    assert (notes.found, notes.matched_by, notes.heading_label, notes.line) == (True, "compare_link", "v2.4.0", 19)
    assert "compare link ends at 2.5.0" in notes.note
    assert len(notes.tasks) == 17
    assert categories(notes) == {"Changed": 8, "Fixed": 5, "Added": 4}
    assert notes.tasks[0].text.startswith("Skip keys with incompatible alg when loading JWKSet")
    # Asked for 2.4.0, the same file gives the real 2.4.0 section (the one whose link agrees).
    older = release_notes(materialize(pyjwt, "2.5.0").root, "2.4.0")
    assert (older.matched_by, older.line, len(older.tasks)) == ("heading", 51, 15)


# --------------------------------------------------------------------------- PyJWT 2.0.0, Markdown


def test_pyjwt_2_0_0_markdown_changelog(pyjwt):
    root = materialize(pyjwt, "2.0.0").root
    assert find_changelog(root) == root / "CHANGELOG.md"
    notes = chain_release_notes(pyjwt, "2.0.0")
    assert (notes.found, notes.source_file, notes.source_format) == (True, "CHANGELOG.md", "markdown")
    assert (notes.heading, notes.heading_label, notes.line) == ("[v2.0.0][2.0.0]", "v2.0.0", 15)
    # 8 "####" highlights (one task each, with their text) and 92 bullets under "### Changes".
    assert len(notes.tasks) == 100
    assert categories(notes) == {"Highlights": 8, "Changes": 92}
    first = notes.tasks[0]
    assert first.kind == "heading" and first.text.startswith("Introduce better experience for JWKs\n")
    assert "jwks_client = PyJWKClient(url)" in first.text
    assert first.references == []  # URLs inside the code example are not references
    assert [t.text for t in notes.tasks[1:8]] == [
        "Support for JWKs containing ECDSA keys",
        "Drop support for Python 2",
        "Require cryptography >= 3",
        "Drop support for PyCrypto and ECDSA\n\n"
        "We've kept this around for a long time, mostly for environments that didn't allow installing cryptography.",
        "Drop CLI\n\nDropped the included cli entry point.",
        "Improve typings\n\nWe no longer need to use mypy Python 2 compatibility mode (comments)",
        "Add support for Ed25519 / EdDSA",
    ]
    pypy = notes.tasks[8]
    assert (pypy.kind, pypy.text) == ("bullet", "Add PyPy3 to the test matrix (#550) by @jdufresne")
    assert [r.model_dump() for r in pypy.references] == [
        {"kind": "issue_or_pull", "id": "550", "label": "#550", "url": None, "repository": None}
    ]
    assert notes.tasks[-1].text == "Complete type hinting of jwks_client.py (#578) by @jdufresne"


def test_pyjwt_markdown_reference_links_resolve_to_their_definitions(pyjwt):
    # 1.7.0 in 2.0.0's CHANGELOG.md: "- Remove CRLF line endings [#353][353]", "[353]: https://…/pull/353".
    notes = release_notes(materialize(pyjwt, "2.0.0").root, "1.7.0")
    assert [(t.category, t.text) for t in notes.tasks] == [
        ("Changed", "Remove CRLF line endings [#353][353]"),
        ("Fixed", "Update usage.rst [#360][360]"),
        ("Added", "Support for Python 3.7 [#375][375] [#379][379] [#384][384]"),
    ]
    assert [(r.kind, r.id, r.url) for r in notes.tasks[2].references] == [
        ("pull", "375", "https://github.com/jpadilla/pyjwt/pull/375"),
        ("pull", "379", "https://github.com/jpadilla/pyjwt/pull/379"),
        ("pull", "384", "https://github.com/jpadilla/pyjwt/pull/384"),
    ]


# --------------------------------------------------------------------------- toy chain


def test_toy_versions(toy):
    got = {}
    for version in toy.versions:
        notes = chain_release_notes(toy, version)
        assert notes.found and notes.source_file == "CHANGELOG.md" and notes.matched_by == "heading"
        got[version] = [(t.category, t.text) for t in notes.tasks]
    assert got == {
        "0.1.0": [
            ("Added", '`slugify(text, sep="-")` turns text into a lowercase ASCII slug.'),
            ("Added", '`truncate(text, length, ellipsis="...")` shortens text, marking the cut with an ellipsis.'),
            ("Added", "`is_slug(text)` checks whether a string is already a well-formed slug."),
        ],
        "0.2.0": [
            (
                "Added",
                '`unique_slug(text, existing, sep="-")` returns a slug that does not collide with any slug '
                "in `existing`, appending `-2`, `-3`, ... as needed.",
            ),
            (
                "Fixed",
                "`truncate()` returned one character more than `length` when it appended an ellipsis; "
                "the result now never exceeds `length`.",
            ),
        ],
        "0.3.0": [
            (
                "Changed",
                "**Breaking:** the module `toyslug.core` is renamed to `toyslug.text`; "
                "`toyslug.core` no longer exists.",
            ),
            (
                "Changed",
                "**Breaking:** `truncate()` is renamed to `shorten()` with the same signature and "
                "behaviour; the old name is removed.",
            ),
            (
                "Added",
                '`is_slug()` accepts a `sep` keyword argument (default `"-"`) to validate slugs built '
                "with another separator.",
            ),
        ],
        "0.4.0": [
            (
                "Changed",
                '`slugify()` now transliterates accented Latin letters to ASCII (`"café"` becomes '
                '`"cafe"` instead of `"caf"`); `unique_slug()` follows.',
            ),
            (
                "Added",
                "`slugify()` accepts a `max_length` keyword argument that keeps only the leading whole words that fit.",
            ),
        ],
    }
    assert chain_release_notes(toy, "0.3.0").heading == "[0.3.0] - 2024-05-20"


def test_missing_section_is_reported_not_guessed(toy, pyjwt):
    notes = release_notes(materialize(toy, "0.1.0").root, "0.2.0")  # 0.1.0 predates 0.2.0's notes
    assert (notes.found, notes.tasks, notes.source_file, notes.heading) == (False, [], "CHANGELOG.md", None)
    assert notes.note == "CHANGELOG.md has no section for 0.2.0 (its sections: 0.1.0 - 2024-01-15)"
    rst = release_notes(materialize(pyjwt, "2.0.1").root, "2.1.0")
    assert (rst.found, rst.tasks) == (False, [])
    assert rst.note == "CHANGELOG.rst has no section for 2.1.0 (its sections: Unreleased, v2.0.1, v2.0.0, v1.7.1, ...)"


def test_no_changelog_at_all(tmp_path):
    (tmp_path / "README.md").write_text("# demo\n")
    notes = release_notes(tmp_path, "1.0")
    assert (notes.found, notes.source_file, notes.tasks) == (False, None, [])
    assert notes.note.startswith("the release tree ships no changelog (looked for CHANGELOG.rst, CHANGELOG.md")


# --------------------------------------------------------------------------- small synthetic cases


def test_changelog_preference_order(tmp_path):
    (tmp_path / "NEWS.txt").write_text("")
    assert find_changelog(tmp_path) == tmp_path / "NEWS.txt"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "changelog.rst").write_text("")
    assert find_changelog(tmp_path) == tmp_path / "docs" / "changelog.rst"
    (tmp_path / "HISTORY.md").write_text("")
    (tmp_path / "HISTORY.rst").write_text("")
    assert find_changelog(tmp_path) == tmp_path / "HISTORY.rst"
    (tmp_path / "CHANGES.md").write_text("")
    assert find_changelog(tmp_path) == tmp_path / "CHANGES.md"
    (tmp_path / "Changelog.md").write_text("")  # names match case-insensitively
    assert find_changelog(tmp_path) == tmp_path / "Changelog.md"
    (tmp_path / "CHANGELOG.rst").write_text("")
    assert find_changelog(tmp_path) == tmp_path / "CHANGELOG.rst"


MARKDOWN = """\
# Changelog

## v1.1.0 (2024-02-01)

Some intro text.

- Top item one
  - nested detail
  continued lazily
- Top item two, fixes #12 and GH-7
* Third item

```python
# not a heading
- not a bullet
```

## v1.0.0

- Older item
"""


def test_markdown_nesting_prose_and_fences():
    notes = extract_release_notes(MARKDOWN, "1.1.0", "CHANGES.md")
    assert notes.found and notes.heading_label == "v1.1.0 (2024-02-01)"
    assert [(t.category, t.kind, t.text) for t in notes.tasks] == [
        (None, "paragraph", "Some intro text."),
        (None, "bullet", "Top item one\n- nested detail\ncontinued lazily"),
        (None, "bullet", "Top item two, fixes #12 and GH-7"),
        (None, "bullet", "Third item\n\n```python\n# not a heading\n- not a bullet\n```"),
    ]
    assert [(r.kind, r.id) for r in notes.tasks[2].references] == [("issue_or_pull", "12")]
    assert extract_release_notes(MARKDOWN, "v1.0.0", "CHANGES.md").tasks[0].text == "Older item"
    assert extract_release_notes(MARKDOWN, "1.2.0", "CHANGES.md").found is False


def test_reference_kinds():
    refs = extract_references(
        "x `#1 <https://github.com/o/r/issues/1>`__ [#2](https://github.com/o/r/pull/2) "
        "https://example.org/a. GHSA-abcd-efgh-ijkl CVE-2020-12345 ``#99 in code``"
    )
    assert [(r.kind, r.id, r.url, r.repository) for r in refs] == [
        ("issue", "1", "https://github.com/o/r/issues/1", "o/r"),
        ("pull", "2", "https://github.com/o/r/pull/2", "o/r"),
        ("link", None, "https://example.org/a", None),
        ("advisory", "GHSA-ABCD-EFGH-IJKL", None, None),
        ("cve", "CVE-2020-12345", None, None),
    ]


# --------------------------------------------------------------------------- L1 rules: dates, subheadings, roles, borrowed sections


JINJA_STYLE = """\
Version 3.0.1
-------------

Released 2021-05-18

Bug Fixes

-   Update MarkupSafe dependency to >= 2.0. :pr:`1418`
-   Mark top-level names as exported. :issue:`1426`

Enhancements:

-   Some improvement. :issue:`12`, :pr:`13`

Version 3.0.0
-------------

Released: 2021-05-11
"""


def test_release_dates_and_plain_text_subheadings_are_not_tasks():
    notes = extract_release_notes(JINJA_STYLE, "3.0.1", "CHANGES.rst")
    assert [(t.id, t.category, t.text.split(" :")[0]) for t in notes.tasks] == [
        ("T1", "Bug Fixes", "Update MarkupSafe dependency to >= 2.0."),
        ("T2", "Bug Fixes", "Mark top-level names as exported."),
        ("T3", "Enhancements", "Some improvement."),
    ]
    assert extract_release_notes(JINJA_STYLE, "3.0.0", "CHANGES.rst").tasks == []


def test_sphinx_issue_and_pr_roles_are_references():
    notes = extract_release_notes(JINJA_STYLE, "3.0.1", "CHANGES.rst")
    assert [[(r.kind, r.id, r.label) for r in t.references] for t in notes.tasks] == [
        [("pull", "1418", ":pr:`1418`")],
        [("issue", "1426", ":issue:`1426`")],
        [("issue", "12", ":issue:`12`"), ("pull", "13", ":pr:`13`")],
    ]
    assert ":pr:`1418`" in notes.tasks[0].text  # the text stays as written


def test_a_release_without_a_changelog_borrows_the_nearest_later_one(tmp_path):
    import shutil

    toy_dir = load_chain("toy").folder
    shutil.copytree(toy_dir, tmp_path / "toy")
    for version in ("0.2.0", "0.3.0"):  # these two releases ship no changelog
        (tmp_path / "toy" / "versions" / version / "CHANGELOG.md").unlink()
    chain = load_chain(str(tmp_path / "toy" / "chain.yaml"))
    notes = chain_release_notes(chain, "0.2.0")
    assert notes.found and notes.taken_from == "0.4.0" and notes.source_file == "CHANGELOG.md"
    assert notes.note == ("the 0.2.0 release ships no changelog; this section is from the changelog shipped in 0.4.0")
    assert [t.category for t in notes.tasks] == ["Added", "Fixed"]
    assert chain_release_notes(chain, "0.4.0").taken_from is None
    last = release_notes(tmp_path / "toy" / "versions" / "0.4.0", "0.4.0")
    assert last.found and last.taken_from is None


# --------------------------------------------------------------------------- pytest: a changelog at an unusual path


def test_pytest_release_notes_come_from_the_file_chain_yaml_names():
    """pytest's sdist ships a CHANGELOG.rst that only points to doc/en/changelog.rst, whose
    headings name the package first (``pytest 8.0.1 (2024-02-16)``)."""
    pytest8 = load_chain("pytest-8")
    assert pytest8.config.changelog == "doc/en/changelog.rst"
    notes = chain_release_notes(pytest8, "8.0.1")
    assert (notes.found, notes.source_file, notes.heading_label) == (True, "doc/en/changelog.rst", "8.0.1 (2024-02-16)")
    assert categories(notes) == {"Bug Fixes": 6}
    assert notes.tasks[0].references[0].id == "11875"
    # Without the chain's data, the usual file is found and has no section: nothing is guessed.
    default = release_notes(materialize(pytest8, "8.0.1").root, "8.0.1")
    assert (default.found, default.source_file) == (False, "CHANGELOG.rst")


def test_a_package_name_before_the_version_is_read_only_for_that_package():
    text = "Changelog\n=========\n\npytest 1.2.0 (2024-01-01)\n-------------------------\n\n- Fixed a thing.\n"
    assert extract_release_notes(text, "1.2.0", "changelog.rst", package="pytest").tasks[0].text == "Fixed a thing."
    other = extract_release_notes(text, "1.2.0", "changelog.rst", package="attrs")
    assert not other.found


def test_a_changelog_named_in_chain_yaml_but_missing_is_reported_as_not_shipped(tmp_path):
    notes = release_notes(tmp_path, "1.0.0", "doc/en/changelog.rst")
    assert not notes.found and "doc/en/changelog.rst" in notes.note


def test_link_text_wrapped_over_lines_is_one_label():
    text = "v1.0.0 (2022 Dec 2)\n-------------------\n\n- Add a thing. By `Spencer\n  Clark <https://github.com/spencerkclark>`_.\n"
    reference = extract_release_notes(text, "1.0.0", "whats-new.rst").tasks[0].references[0]
    assert (reference.kind, reference.label) == ("link", "Spencer Clark")
