"""Reporting to GitHub through the real PyGithub client: sticky PR comments, commit statuses, job summaries.

The client is configured from the environment as GitHub Actions provides it:
``GITHUB_API_URL`` (default ``https://api.github.com``; GitHub Enterprise gives
``https://HOST/api/v3``), ``GITHUB_TOKEN`` and ``GITHUB_REPOSITORY`` (``owner/name``).
Actions sets ``GITHUB_API_URL`` and ``GITHUB_REPOSITORY`` itself; ``GITHUB_TOKEN`` must be
passed to the step (``env: GITHUB_TOKEN: ${{ github.token }}``).

One sticky comment per agent per pull request: it carries a hidden marker
(``<!-- swechain-ci:scorecard agent=NAME -->``) as its first line and is found by that marker
at the start of the body AND by its author, our own login, so a comment someone else wrote (or
one of ours that only quotes the marker) is never touched.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import github
import requests
from github.GithubException import GithubException

from swechain_ci.errors import SwechainError
from swechain_ci.markdown import plain

DEFAULT_API_URL = "https://api.github.com"
ACTIONS_BOT = "github-actions[bot]"
AUTHOR_ENV = "SWECHAIN_COMMENT_AUTHOR"
COMMENT_LIMIT = 65_536  # characters GitHub accepts in a comment body
DESCRIPTION_LIMIT = 140  # characters of a commit status description
SUMMARY_LIMIT = 1024 * 1024  # bytes GitHub accepts in one step's job summary
STATES = ("pending", "success", "failure", "error")


def marker(agent: str) -> str:
    """The hidden line that identifies an agent's sticky comment; the name cannot end the HTML comment."""
    safe = re.sub(r"[\s<>]", "_", agent)
    return f"<!-- swechain-ci:scorecard agent={safe} -->"


# -- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitHubConfig:
    api_url: str
    token: str
    repository: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GitHubConfig:
        env = os.environ if env is None else env
        api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        if not re.match(r"https?://[^/]+", api_url):
            raise SwechainError(
                f"GITHUB_API_URL is {api_url!r}: set it to the API root, e.g. https://api.github.com "
                "or https://HOST/api/v3 for GitHub Enterprise (or unset it)"
            )
        token = env.get("GITHUB_TOKEN", "").strip()
        if not token:
            raise SwechainError(
                "GITHUB_TOKEN is not set: in a workflow step add `env: GITHUB_TOKEN: ${{ github.token }}`; "
                "locally export a token that can write to the repository"
            )
        repository = env.get("GITHUB_REPOSITORY", "").strip()
        if not repository:
            raise SwechainError(
                "GITHUB_REPOSITORY is not set: export GITHUB_REPOSITORY=owner/name (GitHub Actions sets it)"
            )
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise SwechainError(f"GITHUB_REPOSITORY is {repository!r}: it must be owner/name, e.g. octo-org/demo")
        return cls(api_url, token, repository)


# -- text limits --------------------------------------------------------------------------------


def fit_comment(text: str, artifact_url: str | None = None, limit: int = COMMENT_LIMIT) -> str:
    """``text`` if it fits in ``limit`` characters, else its first whole lines and a note linking the full results."""
    if len(text) <= limit:
        return text
    where = (
        f"the full results are in [the run's artifact]({artifact_url})"
        if artifact_url
        else "the full results are in the run's artifact (scorecard.md)"
    )
    total = text.count("\n") + 1

    def note(shown: int) -> str:
        return (
            f"\n\n**Truncated** to fit GitHub's {limit:,}-character comment limit "
            f"(first {shown} of {total} lines shown); {where}.\n"
        )

    budget = limit - len(note(total))
    cut = text.rfind("\n", 0, budget + 1)
    if cut <= 0:  # no line boundary in reach: one huge first line, cut inside it
        cut = max(budget, 0)
    kept = text[:cut]
    return kept + note(kept.count("\n") + 1)


def fit_description(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """One line of plain text (a status description is not Markdown): controls replaced, bounded."""
    return plain(text, limit)


def write_job_summary(
    markdown: str, limit: int = SUMMARY_LIMIT, environ: Mapping[str, str] | None = None
) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY``, keeping the whole file within ``limit`` bytes.

    What does not fit is cut at a line boundary and replaced by a note. Without the
    variable (a local run) nothing is written, a message says so, and ``None`` is returned.
    ``environ``: the job's variables, when taken out of the process (default: the process's).
    """
    name = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY", "").strip()
    if not name:
        print("GITHUB_STEP_SUMMARY is not set (not in GitHub Actions): no job summary written", file=sys.stderr)
        return None
    path = Path(name)
    used = path.stat().st_size if path.exists() else 0
    data = (markdown if markdown.endswith("\n") else markdown + "\n").encode()
    if used + len(data) > limit:
        note = (
            f"\n> **Truncated:** GitHub keeps at most {limit / 2**20:g} MiB of job summary per step; "
            "the full scorecard is in the run's artifact (scorecard.md).\n"
        ).encode()
        budget = limit - used - len(note)
        if budget < 0:
            print(f"{path} already holds {used:,} bytes: no room left in the job summary", file=sys.stderr)
            return path
        cut = data.rfind(b"\n", 0, budget)  # whole lines only, so never inside a UTF-8 character
        data = (data[: cut + 1] if cut >= 0 else b"") + note
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write(data)
    return path


def write_outputs(values: dict[str, str], environ: Mapping[str, str] | None = None) -> Path | None:
    """Set a step's outputs (``$GITHUB_OUTPUT``); nothing outside GitHub Actions."""
    name = (os.environ if environ is None else environ).get("GITHUB_OUTPUT", "").strip()
    if not name:
        return None
    for key, value in values.items():
        if "\n" in key or "\n" in value or "=" in key:
            raise ValueError(f"output {key!r} must be one line")
    path = Path(name)
    with path.open("a") as handle:
        handle.write("".join(f"{key}={value}\n" for key, value in values.items()))
    return path


# -- the client ---------------------------------------------------------------------------------


def _describe(exc: GithubException, action: str, config: GitHubConfig) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    message = data.get("message") or str(exc.data or "") or "no message"
    details = [
        e.get("message") or f"{e.get('field')}: {e.get('code')}"
        for e in data.get("errors") or []
        if isinstance(e, dict)
    ]
    text = f"GitHub refused to {action}: {exc.status} {message}" + (f" ({'; '.join(details)})" if details else "")
    hint = {
        401: "check GITHUB_TOKEN (wrong or expired token)",
        403: (
            "the token lacks permission: give the workflow `permissions: pull-requests: write, statuses: write` "
            "(pull requests from forks get a read-only token)"
        ),
        404: f"check GITHUB_REPOSITORY ({config.repository}), the number or SHA given, GITHUB_API_URL "
        f"({config.api_url}), and that the token can see the repository",
    }.get(exc.status or 0)
    return text + (f": {hint}" if hint else "")


class GitHubReporter:
    """Comments and statuses on one repository. ``client_options`` go to ``github.Github``
    (e.g. ``seconds_between_writes``; PyGithub's defaults throttle writes to one a second)."""

    def __init__(self, config: GitHubConfig, comment_author: str | None = None, **client_options: Any) -> None:
        self.config = config
        self.client = github.Github(
            base_url=config.api_url, auth=github.Auth.Token(config.token), lazy=True, **client_options
        )
        self._author = comment_author

    @classmethod
    def from_env(cls, **client_options: Any) -> GitHubReporter:
        """From ``GITHUB_API_URL``/``GITHUB_TOKEN``/``GITHUB_REPOSITORY``; ``SWECHAIN_COMMENT_AUTHOR`` names our login."""
        return cls(GitHubConfig.from_env(), os.environ.get(AUTHOR_ENV, "").strip() or None, **client_options)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> GitHubReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, action: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except GithubException as exc:
            raise SwechainError(_describe(exc, action, self.config)) from None
        except requests.RequestException as exc:
            raise SwechainError(
                f"cannot reach the GitHub API at {self.config.api_url} to {action} ({type(exc).__name__}): "
                "check GITHUB_API_URL and the network"
            ) from None

    @property
    def repo(self) -> Any:
        return self.client.get_repo(self.config.repository)

    def comment_author(self) -> str:
        """Whose comments are ours: ``SWECHAIN_COMMENT_AUTHOR``, else the token's login, else
        ``github-actions[bot]`` (an Actions token cannot read ``GET /user``: 403)."""
        if self._author is None:
            retry_log = logging.getLogger("github.GithubRetry")  # logs the expected 403 at INFO otherwise
            level = retry_log.level
            retry_log.setLevel(logging.WARNING)
            try:
                self._author = self.client.get_user().login
            except GithubException as exc:
                if exc.status != 403:
                    raise SwechainError(_describe(exc, "tell whose token this is (GET /user)", self.config)) from None
                self._author = ACTIONS_BOT
            except requests.RequestException as exc:
                raise SwechainError(
                    f"cannot reach the GitHub API at {self.config.api_url} ({type(exc).__name__}): "
                    "check GITHUB_API_URL and the network"
                ) from None
            finally:
                retry_log.setLevel(level)
        return self._author

    def find_comment(self, pr_number: int, agent: str) -> Any | None:
        """Our sticky comment for ``agent`` on the pull request, the oldest if there are several."""
        author = self.comment_author().lower()
        tag = marker(agent)
        issue = self.repo.get_issue(pr_number)

        def scan() -> Any | None:
            for comment in issue.get_comments():
                # the marker opens our comment: one quoted anywhere else (another agent's text) never matches
                body = comment.body or ""
                if body.startswith(tag) and comment.user is not None and comment.user.login.lower() == author:
                    return comment
            return None

        return self._call(f"list the comments of pull request #{pr_number}", scan)

    def upsert_comment(
        self, pr_number: int, agent: str, body: str, artifact_url: str | None = None
    ) -> tuple[int, bool]:
        """Edit the agent's sticky comment in place, or create it; returns (comment id, created)."""
        text = fit_comment(f"{marker(agent)}\n{body}", artifact_url)
        existing = self.find_comment(pr_number, agent)
        if existing is None:
            issue = self.repo.get_issue(pr_number)
            created = self._call(f"comment on pull request #{pr_number}", issue.create_comment, text)
            return created.id, True
        self._call(f"edit comment {existing.id} on pull request #{pr_number}", existing.edit, text)
        return existing.id, False

    def set_commit_status(
        self, sha: str, state: str, description: str, context: str = "swechain-ci", target_url: str | None = None
    ) -> int:
        """Post a commit status; returns its id. ``description`` is cut to 140 characters."""
        if state not in STATES:
            raise SwechainError(f"commit status state {state!r}: use one of {', '.join(STATES)}")
        if not re.fullmatch(r"[0-9a-fA-F]{40}", sha):
            raise SwechainError(
                f"commit SHA {sha!r}: give the full 40-character SHA (for a pull request, "
                "${{ github.event.pull_request.head.sha }})"
            )
        options: dict[str, str] = {"description": fit_description(description), "context": context}
        if target_url:
            options["target_url"] = target_url
        commit = self.repo.get_commit(sha.lower())
        status = self._call(f"set the commit status of {sha[:12]}", commit.create_status, state, **options)
        return status.id

    def dispatch_workflow(self, workflow: str, ref: str, inputs: dict[str, str]) -> None:
        """Start ``workflow`` (its file name) on ``ref`` with ``inputs``: how a chain run continues itself."""
        found = self._call(f"find workflow {workflow}", self.repo.get_workflow, workflow)
        started = self._call(f"dispatch workflow {workflow} on {ref}", found.create_dispatch, ref, inputs)
        if started is False:
            raise SwechainError(f"GitHub refused to dispatch {workflow} on {ref}: check the ref and the inputs")

    # -- pull requests, read through the API (never from an artifact) -------------------------------

    def pull_for_head(self, head_sha: str, head_repository: str) -> int | None:
        """The open pull request whose head is ``head_sha`` in ``head_repository`` (owner/name), if exactly one."""

        def scan() -> list[int]:
            found = []
            for pull in self.repo.get_pulls(state="open"):
                head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
                if pull.head.sha == head_sha and (head_repo or "").lower() == head_repository.lower():
                    found.append(pull.number)
            return found

        numbers = self._call(f"list the open pull requests (for head {head_sha[:12]})", scan)
        return numbers[0] if len(numbers) == 1 else None

    def pull_head(self, number: int) -> tuple[str, str]:
        """(head SHA, head repository owner/name) of a pull request."""
        pull = self._call(f"read pull request #{number}", self.repo.get_pull, number)
        if pull.head.repo is None:
            raise SwechainError(f"pull request #{number}'s head repository is gone (deleted fork): nothing to read")
        return pull.head.sha, pull.head.repo.full_name

    def pull_files(self, number: int) -> list[str]:
        """The paths a pull request changes."""
        return self._call(
            f"list the files of pull request #{number}",
            lambda: [f.filename for f in self.repo.get_pull(number).get_files()],
        )

    def file_at(self, path: str, sha: str, repository: str | None = None) -> bytes | None:
        """A file's bytes at a commit (of ``repository``, default ours), or None if it does not exist there."""

        def read() -> bytes | None:
            repo = self.client.get_repo(repository) if repository else self.repo
            try:
                found = repo.get_contents(path, ref=sha)
            except GithubException as exc:
                if exc.status == 404:
                    return None
                raise
            return None if isinstance(found, list) else found.decoded_content

        return self._call(f"read {path} at {sha[:12]}", read)

    def names_at(self, folder: str, sha: str, repository: str | None = None) -> list[str]:
        """The file names in a folder at a commit (empty if there is no such folder)."""

        def read() -> list[str]:
            repo = self.client.get_repo(repository) if repository else self.repo
            try:
                found = repo.get_contents(folder, ref=sha)
            except GithubException as exc:
                if exc.status == 404:
                    return []
                raise
            return sorted(item.name for item in (found if isinstance(found, list) else []) if item.type == "file")

        return self._call(f"list {folder} at {sha[:12]}", read)

    def permission(self, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none``: the user's permission on the repository."""
        return self._call(f"read {login}'s permission", self.repo.get_collaborator_permission, login)


# -- one-call conveniences, configured from the environment -------------------------------------


def upsert_comment(pr_number: int, agent: str, body: str, artifact_url: str | None = None) -> tuple[int, bool]:
    with GitHubReporter.from_env() as reporter:
        return reporter.upsert_comment(pr_number, agent, body, artifact_url)


def set_commit_status(
    sha: str, state: str, description: str, context: str = "swechain-ci", target_url: str | None = None
) -> int:
    with GitHubReporter.from_env() as reporter:
        return reporter.set_commit_status(sha, state, description, context, target_url)
