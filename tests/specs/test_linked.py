"""L1 with the text of the issues and pull requests its release notes link to: from the
reference's changelog_tasks.json on import, from the GitHub API (the real PyGithub against the
local stand-in) on render, cached under specs/<chain>/linked/."""

from __future__ import annotations

import json
import shutil

import pytest
from github_server import FakeGitHub, GitHubState

from swechain_ci.chain.definition import load_chain
from swechain_ci.errors import SwechainError
from swechain_ci.specs.published import import_specs
from swechain_ci.specs.render import write_l1

# The reference's shape (metadata/<chain>/<v>/metadata/v<v>_changelog_tasks.json), own words.
CHANGELOG_TASKS = [
    {
        "task_id": "task_1",
        "content": "Declare the typing helper for older Pythons in [#1150](https://github.com/jpadilla/pyjwt/issues/1150)",
        "github": [
            {
                "link": "https://github.com/jpadilla/pyjwt/issues/1150",
                "type": "issue",
                "content": "### GitHub Issue #1150 Import fails on Python 3.10\nThe package imports a helper it does not "
                "declare.\n\n## Expected Result\n\nIt imports.",
            },
            {
                "link": "https://github.com/jpadilla/pyjwt/pull/1151",
                "type": "pr",
                "content": "### GitHub Pull Request #1151 Declare typing_extensions\nAdds the dependency.",
            },
        ],
    }
]
SPECS_MD = (
    "# Upgrade Specification from 2.12.0 to 2.12.1\n\n## Additional Changes\n"
    "- Ensure that the package declares the typing helper it imports on older Pythons."
)


@pytest.fixture
def project(project_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("SWECHAIN_ROOT", str(project_copy))
    monkeypatch.setenv("SWECHAIN_HOME", str(tmp_path / "home"))
    return project_copy


def metadata(tmp_path, tasks) -> object:
    version = tmp_path / "metadata" / "pyjwt_2.0.0_to_2.12.1" / "2.12.1"
    (version / "synthetic").mkdir(parents=True)
    (version / "metadata").mkdir()
    (version / "synthetic" / "v2.12.1_specs.md").write_text(SPECS_MD)
    (version / "metadata" / "v2.12.1_changelog_tasks.json").write_text(json.dumps(tasks))
    return tmp_path / "metadata"


def test_importing_the_metadata_folder_caches_the_linked_text(project, tmp_path):
    report = import_specs(metadata(tmp_path, CHANGELOG_TASKS), load_chain("pyjwt"))
    assert report.rows[0].linked == 2
    cache = project / "specs" / "pyjwt" / "linked" / "jpadilla__pyjwt"
    issue = json.loads((cache / "1150.json").read_text())
    assert (issue["kind"], issue["title"]) == ("issue", "Import fails on Python 3.10")
    assert issue["body"] == "The package imports a helper it does not declare.\n\n## Expected Result\n\nIt imports."
    assert issue["source"].startswith("the reference's changelog_tasks.json")
    pull = json.loads((cache / "1151.json").read_text())
    assert (pull["kind"], pull["title"], pull["body"]) == ("pull", "Declare typing_extensions", "Adds the dependency.")


def test_a_malformed_changelog_tasks_file_stops_the_chain(project, tmp_path):
    broken = [{**CHANGELOG_TASKS[0], "github": "none"}]
    with pytest.raises(SwechainError, match=r"2.12.1: changelog_tasks.json: task 1: field github must be a list"):
        import_specs(metadata(tmp_path, broken), load_chain("pyjwt"))
    assert not (project / "specs" / "pyjwt" / "2.12.0-2.12.1" / "L3.md").exists()


def linked_toy(project) -> None:
    """Toy 0.3.0's notes link a pull request and an issue on GitHub (the copy only)."""
    changelog = project / "chains" / "toy" / "versions" / "0.3.0" / "CHANGELOG.md"
    text = changelog.read_text().replace(
        "the old name is removed.",
        "the old name is removed ([#12](https://github.com/toy/toyslug/pull/12), "
        "[#11](https://github.com/toy/toyslug/issues/11)).",
    )
    changelog.write_text(text)
    shutil.rmtree(project / "specs" / "toy" / "linked", ignore_errors=True)


def test_render_with_github_fetches_the_linked_text_once_and_l1_shows_it(project, monkeypatch):
    linked_toy(project)
    state = GitHubState()
    state.add_pull(12)
    state.pull_texts[12] = {"title": "Rename truncate to shorten", "body": "Keeps the signature.\r\n\r\nSee #11."}
    state.issues[11] = {"title": "truncate is a confusing name", "body": "It cuts, it does not truncate."}
    with FakeGitHub(state) as gh:
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        md, _, spec = write_l1("toy", "0.2.0", "0.3.0", github=True)
        fetched = len(state.requests_matching("GET", r"/issues/\d+$"))
        write_l1("toy", "0.2.0", "0.3.0", github=True)  # cached: no request
        again = len(state.requests_matching("GET", r"/issues/\d+$"))
    assert fetched == 2 and again == 2
    text = md.read_text()
    assert "followed by the title and text of each linked issue and pull request" in text
    assert (
        "  Pull request #12: Rename truncate to shorten\n\n  Keeps the signature.\n\n  See #11.\n\n"
        "  Issue #11: truncate is a confusing name\n\n  It cuts, it does not truncate.\n"
    ) in text
    assert [(t.kind, t.number, t.source.startswith("GitHub API http://127.0.0.1:")) for t in spec.linked] == [
        ("pull", 12, True),
        ("issue", 11, True),
    ]
    cache = project / "specs" / "toy" / "linked" / "toy__toyslug"
    assert sorted(p.name for p in cache.iterdir()) == ["11.json", "12.json"]
    # Rendering without --github (and with no API in reach) takes the cache: the same file.
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    assert write_l1("toy", "0.2.0", "0.3.0")[0].read_text() == text


def test_without_github_and_cache_the_links_are_listed_as_not_fetched(project):
    linked_toy(project)
    md, _, spec = write_l1("toy", "0.2.0", "0.3.0")
    assert spec.linked == []
    assert "The text of linked issues and pull requests was not fetched; each task lists its links." in md.read_text()


def test_the_github_api_out_of_reach_is_one_line(project, monkeypatch):
    linked_toy(project)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    with pytest.raises(SwechainError, match=r"cannot reach the GitHub API at http://127.0.0.1:9 .*without --github"):
        write_l1("toy", "0.2.0", "0.3.0", github=True)
