"""The self-hosted runner's job-started hook: only trusted workflows from the default branch run here.

A ``pull_request`` run uses the workflow files of the pull request's merge commit, so a fork
can edit any workflow to ``runs-on: self-hosted``; the workflow files cannot protect the
runner. This hook runs on the runner itself before every job (``ACTIONS_RUNNER_HOOK_JOB_STARTED``,
installed by ``scripts/install-runner-hook``) and refuses, with a non-zero exit that fails the
job before any of its steps, every job that is not one of ``TRUSTED_WORKFLOWS`` started by one
of its trusted events from the default branch of this repository. It reads only what the
runner gives it: ``GITHUB_EVENT_NAME``, ``GITHUB_WORKFLOW_REF``
(``owner/repo/.github/workflows/<file>@<ref>``), ``GITHUB_REF``, ``GITHUB_REPOSITORY`` and the
event payload at ``GITHUB_EVENT_PATH``.

Standard library only, so the runner runs it with its own ``python3 -I`` before any checkout;
the installed copy lives outside every job's workspace.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

# The workflows that have self-hosted jobs, and the events each may start them with. Everything
# else (pull_request, pull_request_target, workflow_run, push, any other file) is refused.
# tests/github/test_runner_hook.py checks that this is exactly what .github/workflows holds.
TRUSTED_WORKFLOWS: dict[str, tuple[str, ...]] = {
    "agent-smoke.yml": ("issue_comment", "workflow_dispatch"),
    "chain-build.yml": ("workflow_dispatch",),
    "chain-run.yml": ("workflow_dispatch",),
    "weekly.yml": ("schedule", "workflow_dispatch"),
}
# Who may start an issue_comment job here (the smoke workflow checks write access again).
MAINTAINER_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
# Set in the runner's .env by the installer: the one repository (owner/name) this runner serves,
# and optionally its default branch (else the event's repository.default_branch).
REPOSITORY_ENV = "SWECHAIN_RUNNER_REPOSITORY"
DEFAULT_BRANCH_ENV = "SWECHAIN_RUNNER_DEFAULT_BRANCH"
WORKFLOW_REF = re.compile(r"(?P<repo>[^/@]+/[^/@]+)/\.github/workflows/(?P<file>[^/@]+)@(?P<ref>.+)")


class Refused(Exception):
    """Why a job may not run on this runner (one line)."""


class Job:
    """The job as the runner describes it: its environment and its event payload."""

    def __init__(self, env: Mapping[str, str], event: dict[str, Any]) -> None:
        self.env, self.event = env, event
        self.name = env.get("GITHUB_EVENT_NAME", "")
        self.repository = env.get("GITHUB_REPOSITORY", "")
        self.ref = env.get("GITHUB_REF", "")
        found = WORKFLOW_REF.fullmatch(env.get("GITHUB_WORKFLOW_REF", ""))
        self.workflow_repo, self.workflow, self.workflow_ref = (
            (found["repo"], found["file"], found["ref"]) if found else ("", "", "")
        )

    def default_branch(self) -> str:
        configured = self.env.get(DEFAULT_BRANCH_ENV, "").strip()
        repository = self.event.get("repository")
        return configured or (repository.get("default_branch", "") if isinstance(repository, dict) else "")


def _repository(job: Job) -> None:
    expected = job.env.get(REPOSITORY_ENV, "").strip()
    if not expected:
        raise Refused(
            f"{REPOSITORY_ENV} is not set on this runner: run scripts/install-runner-hook --repository OWNER/NAME"
        )
    if job.repository.lower() != expected.lower():
        raise Refused(f"the job is of repository {job.repository or '(none)'}; this runner serves {expected} only")
    repository = job.event.get("repository")  # every payload since 2022, schedule's too
    named = repository.get("full_name", "") if isinstance(repository, dict) else ""
    if named and named.lower() != expected.lower():
        raise Refused(f"the event's repository is {named}, not {expected}")


def _fork(job: Job) -> None:
    pull = job.event.get("pull_request")
    if isinstance(pull, dict):
        head = (pull.get("head") or {}).get("repo") or {}
        if head.get("fork") or (head.get("full_name") or "").lower() != job.repository.lower():
            raise Refused(
                f"a {job.name} job of pull request #{pull.get('number')} from {head.get('full_name') or 'a deleted fork'}: "
                "pull requests never run on this runner"
            )


def _event(job: Job) -> None:
    trusted = sorted({event for events in TRUSTED_WORKFLOWS.values() for event in events})
    if job.name not in trusted:
        raise Refused(f"event {job.name or '(none)'} never runs on this runner (trusted events: {', '.join(trusted)})")


def _workflow(job: Job) -> None:
    if not job.workflow:
        raise Refused(
            f"GITHUB_WORKFLOW_REF is {job.env.get('GITHUB_WORKFLOW_REF', '')!r}, not owner/repo/.github/workflows/FILE@REF"
        )
    if job.workflow_repo.lower() != job.repository.lower():
        raise Refused(f"workflow {job.workflow} is from {job.workflow_repo}, not {job.repository}")
    events = TRUSTED_WORKFLOWS.get(job.workflow)
    if events is None:
        raise Refused(
            f"workflow {job.workflow} has no job for this runner (trusted: {', '.join(sorted(TRUSTED_WORKFLOWS))})"
        )
    if job.name not in events:
        raise Refused(f"workflow {job.workflow} runs here on {', '.join(events)} only, not on {job.name}")


def _default_branch(job: Job) -> None:
    branch = job.default_branch()
    if not branch:
        raise Refused(f"the default branch is unknown: set {DEFAULT_BRANCH_ENV} on this runner")
    wanted = f"refs/heads/{branch}"
    if job.workflow_ref != wanted:
        raise Refused(
            f"workflow {job.workflow} is the file at {job.workflow_ref}, not on the default branch ({wanted}): "
            "dispatch it from the default branch"
        )
    if job.ref != wanted:
        raise Refused(f"the job's ref is {job.ref or '(none)'}, not the default branch ({wanted})")


def _commenter(job: Job) -> None:
    if job.name != "issue_comment":
        return
    comment = job.event.get("comment") or {}
    association = comment.get("author_association", "")
    if association not in MAINTAINER_ASSOCIATIONS:
        raise Refused(
            f"a comment by {(comment.get('user') or {}).get('login', '(unknown)')} ({association or 'no association'}) "
            "starts nothing on this runner"
        )


# Checked in order; the first refusal is the job's one-line error.
RULES: tuple[tuple[str, Callable[[Job], None]], ...] = (
    ("repository", _repository),
    ("fork", _fork),
    ("event", _event),
    ("workflow", _workflow),
    ("default branch", _default_branch),
    ("commenter", _commenter),
)


def check(env: Mapping[str, str], event: dict[str, Any]) -> str:
    """What the job is, if it may run here; else raises ``Refused``."""
    job = Job(env, event)
    for _, rule in RULES:
        rule(job)
    return f"{job.workflow} ({job.name}) from {job.workflow_ref}"


def read_event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH", "")
    try:
        with open(path, encoding="utf-8") as handle:
            event = json.load(handle)
    except (OSError, ValueError) as exc:
        raise Refused(f"cannot read the event payload GITHUB_EVENT_PATH={path!r} ({type(exc).__name__})") from None
    if not isinstance(event, dict):
        raise Refused(f"the event payload at {path} is not a JSON object")
    return event


def main(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        accepted = check(env, read_event(env))
    except Refused as exc:
        text = str(exc).replace("\n", " ").replace("%", "%25")
        print(f"::error title=swechain-ci runner::job refused: {text}")
        return 1
    print(f"swechain-ci runner: job accepted: {accepted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
