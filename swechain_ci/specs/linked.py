"""The text of the issues and pull requests a release note links to, for L1.

The paper's L1 carries it: the reference fetches each linked issue or pull request's title and
body (``gh issue/pr view``) into ``v<next>_changelog_tasks.json`` (``github[]``, ``content``
``### GitHub Issue #<n> <title>`` then the body). Here it is one cache per chain,
``specs/<chain>/linked/<owner>__<name>/<number>.json`` (:class:`LinkedText`), committed with the
specifications so that rendering needs no network, filled from two places:

- ``specs import`` of the reference's ``metadata/`` folder: its ``changelog_tasks.json``;
- ``specs render --github``: the GitHub API through PyGithub (``GITHUB_API_URL``, ``GITHUB_TOKEN``),
  only for links not cached yet (a chain the paper does not have).

``render.py`` puts the cached text of each task's links under the task in ``L1.md``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from swechain_ci.chain.definition import Chain
from swechain_ci.errors import SwechainError
from swechain_ci.models import StrictTyped
from swechain_ci.records import read_model, write_model
from swechain_ci.specs.changelog import Reference
from swechain_ci.specs.store import spec_dir

BODY_LIMIT = 20_000  # characters of a body kept (issue threads can be long; the agent reads it whole)
_LINK = re.compile(r"https?://github\.com/([\w.-]+/[\w.-]+)/(issues|pull)/(\d+)")
_HEADING = re.compile(r"^###\s+GitHub\s+(Issue|Pull Request)\s+#(\d+)\s?(.*)$")


class LinkedText(StrictTyped):
    schema_version: Literal[1] = 1
    repository: str  # owner/name
    number: int
    kind: Literal["issue", "pull"]
    title: str
    body: str
    url: str
    source: str  # where the text came from


def _path(chain: Chain, repository: str, number: int) -> Path:
    owner, _, name = repository.partition("/")
    return spec_dir(chain) / "linked" / f"{owner}__{name}" / f"{number}.json"


def cached(chain: Chain, reference: Reference) -> LinkedText | None:
    key = linkable(reference)
    if key is None:
        return None
    path = _path(chain, *key)
    return read_model(path, LinkedText) if path.is_file() else None


def linkable(reference: Reference) -> tuple[str, int] | None:
    """(repository, number) of an issue or pull request reference on GitHub, else None."""
    if reference.kind not in ("pull", "issue", "issue_or_pull") or not reference.repository or not reference.id:
        return None
    return (reference.repository, int(reference.id)) if reference.id.isdigit() else None


def store(chain: Chain, text: LinkedText) -> Path:
    path = _path(chain, text.repository, text.number)
    write_model(path, text)
    return path


def from_changelog_tasks(tasks: Any, where: str) -> list[LinkedText]:
    """The linked texts of the reference's ``v<next>_changelog_tasks.json``."""
    if not isinstance(tasks, list):
        raise SwechainError(f"{where}: changelog_tasks.json: expected a list of tasks, got {type(tasks).__name__}")
    found: list[LinkedText] = []
    for index, task in enumerate(tasks, start=1):
        items = task.get("github", []) if isinstance(task, dict) else None
        if not isinstance(items, list):
            raise SwechainError(f"{where}: changelog_tasks.json: task {index}: field github must be a list")
        for item in items:
            if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("link", "content")):
                raise SwechainError(
                    f"{where}: changelog_tasks.json: task {index}: a github item needs link and content strings"
                )
            link = _LINK.search(item["link"])
            first, _, body = item["content"].partition("\n")
            heading = _HEADING.match(first)
            if not link or not heading:
                continue  # not an issue or pull request on GitHub (the reference fetches only those)
            found.append(
                LinkedText(
                    repository=link.group(1),
                    number=int(link.group(3)),
                    kind="pull" if heading.group(1) == "Pull Request" or item.get("type") == "pr" else "issue",
                    title=heading.group(3).strip(),
                    body=body[:BODY_LIMIT],
                    url=item["link"],
                    source=f"the reference's changelog_tasks.json ({where})",
                )
            )
    return found


def fetch_missing(
    chain: Chain, references: list[Reference], base_url: str | None = None, token: str | None = None
) -> list[LinkedText]:
    """The linked texts not cached yet, fetched with PyGithub and cached."""
    import os

    from github import Auth, Github, GithubException

    wanted = sorted({k for r in references if (k := linkable(r)) and not _path(chain, *k).is_file()})
    if not wanted:
        return []
    base = base_url or os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    secret = token if token is not None else os.environ.get("GITHUB_TOKEN")
    client = Github(base_url=base, auth=Auth.Token(secret) if secret else None, retry=None, timeout=30, lazy=True)
    fetched = []
    try:
        for repository, number in wanted:
            try:
                issue = client.get_repo(repository).get_issue(number)
                text = LinkedText(
                    repository=repository,
                    number=number,
                    kind="pull" if issue.pull_request is not None else "issue",
                    title=issue.title or "",
                    body=(issue.body or "")[:BODY_LIMIT],
                    url=issue.html_url or f"https://github.com/{repository}/issues/{number}",
                    source=f"GitHub API {base}",
                )
            except GithubException as exc:
                if exc.status == 404:
                    continue  # gone or never there: listed as a link without text
                raise SwechainError(
                    f"GitHub API {base}: {repository}#{number}: {exc.status} {getattr(exc, 'data', '') or ''}"
                    f"; set GITHUB_TOKEN (rate limits) or render without --github"
                ) from None
            except OSError as exc:
                raise SwechainError(f"cannot reach the GitHub API at {base} ({exc}); render without --github") from None
            store(chain, text)
            fetched.append(text)
    finally:
        client.close()
    return fetched
