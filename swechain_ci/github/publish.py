"""Git with the job token, given only to the command that needs it, and the weekly leaderboard's publication.

The token never lands in ``.git/config`` (workflows check out with ``persist-credentials:
false``) nor on a command line: it reaches git as an ``http.<server>/.extraheader``
through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` in the one git
process's environment. Without ``GITHUB_TOKEN`` (a local run, a local remote) git runs as is.

The leaderboard is published as one commit on top of the remote branch's head *as it is
at push time*: it is rebuilt on the new head and pushed again when the branch moved in
between (someone merged while the weekly runs took hours). It is "unchanged" when the
leaderboard's content, all but its ``generated_at``, equals what the branch holds.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from swechain_ci import progress
from swechain_ci.errors import SwechainError
from swechain_ci.scoring.leaderboard import Leaderboard, render_markdown, render_png

DEFAULT_SERVER_URL = "https://github.com"
PUBLISH_IDENTITY = {
    "GIT_AUTHOR_NAME": "swechain-ci",
    "GIT_AUTHOR_EMAIL": "swechain-ci@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "swechain-ci",
    "GIT_COMMITTER_EMAIL": "swechain-ci@users.noreply.github.com",
}


def token_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Extra environment for one git process: the job token as an HTTP header for the server, if set."""
    environ = os.environ if environ is None else environ
    token = environ.get("GITHUB_TOKEN", "").strip()
    if not token:
        return {}
    server = (environ.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/")
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    count = int(environ.get("GIT_CONFIG_COUNT") or 0)
    return {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": f"http.{server}/.extraheader",
        f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {basic}",
    }


def git(
    repo: Path,
    *args: str,
    extra_env: Mapping[str, str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **(extra_env or {})}
    result = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, input=input_bytes)
    if check and result.returncode != 0:
        raise SwechainError(f"git {args[0]} in {repo} failed: {result.stderr.decode(errors='replace').strip()[-300:]}")
    return result


def fetch_branch(repo: Path, remote: str, branch: str) -> str | None:
    """Bring ``branch`` from ``remote`` into refs/heads (forced); its SHA, or None if the remote has none."""
    auth = token_env()
    listed = git(repo, "ls-remote", "--heads", remote, f"refs/heads/{branch}", extra_env=auth).stdout.decode().split()
    if not listed:
        return None
    git(repo, "fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/heads/{branch}", extra_env=auth)
    return listed[0]


def push_branch(repo: Path, remote: str, branch: str) -> str | None:
    """Push the local ``branch`` to ``remote``; its SHA, or None if there is no such local branch."""
    found = git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    if found.returncode != 0:
        return None
    git(repo, "push", "--quiet", remote, f"refs/heads/{branch}:refs/heads/{branch}", extra_env=token_env())
    return found.stdout.decode().strip()


# -- the weekly leaderboard -----------------------------------------------------------------------


def same_content(new: Leaderboard, old_json: bytes | None) -> bool:
    """True if the branch's leaderboard.json says what ``new`` says, ``generated_at`` aside."""
    if old_json is None:
        return False
    try:
        old = Leaderboard.model_validate_json(old_json)
    except ValidationError:
        return False  # unreadable or an older shape: publish the new one over it
    return old.model_dump(exclude={"generated_at"}) == new.model_dump(exclude={"generated_at"})


def _commit_files(repo: Path, parent: str, files: dict[str, bytes], message: str) -> str:
    """A commit on ``parent`` whose tree is the parent's with ``files`` (path -> content) written over it."""
    with tempfile.TemporaryDirectory(prefix="swechain-publish-") as tmp:
        index_env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", parent, extra_env=index_env)
        for path, data in files.items():
            blob = git(repo, "hash-object", "-w", "--stdin", input_bytes=data).stdout.decode().strip()
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", extra_env=index_env)
        tree = git(repo, "write-tree", extra_env=index_env).stdout.decode().strip()
    return (
        git(repo, "commit-tree", tree, "-p", parent, "-m", message, extra_env=PUBLISH_IDENTITY).stdout.decode().strip()
    )


def publish_leaderboard(
    board: Leaderboard,
    repo: Path,
    remote: str,
    branch: str,
    folder: str = "reports",
    message: str = "Leaderboard: weekly refresh",
    attempts: int = 5,
    week: str | None = None,
    extra_files: dict[str, bytes] | None = None,
) -> str | None:
    """Commit leaderboard.json/.md/.png under ``folder`` on top of ``remote``'s ``branch`` and push it,
    with the leaderboard also kept as ``week``'s history snapshot (``folder/history/<week>.json``) if given.

    ``extra_files`` (path -> content, e.g. the refresh record) are committed with it.
    Returns the pushed commit, or None if the branch already holds the same leaderboard (and the week's
    snapshot, and the extra files as they are).
    A push refused because the branch moved is retried on the new head, ``attempts`` times in all.
    """
    auth = token_env()
    folder = folder.strip("/")
    files = {
        f"{folder}/leaderboard.json": (board.model_dump_json(indent=2) + "\n").encode(),
        f"{folder}/leaderboard.md": render_markdown(board).encode(),
        f"{folder}/leaderboard.png": render_png(board),
    }
    snapshot = f"{folder}/history/{week}.json" if week else None
    if snapshot:
        files[snapshot] = files[f"{folder}/leaderboard.json"]
    files.update(extra_files or {})
    tracking = f"refs/swechain-publish/{branch}"
    for attempt in range(1, attempts + 1):
        git(repo, "fetch", "--quiet", remote, f"+refs/heads/{branch}:{tracking}", extra_env=auth)
        head = git(repo, "rev-parse", tracking).stdout.decode().strip()
        old = git(repo, "cat-file", "blob", f"{head}:{folder}/leaderboard.json", check=False)
        kept = snapshot is None or git(repo, "cat-file", "-e", f"{head}:{snapshot}", check=False).returncode == 0
        for path, data in (extra_files or {}).items():
            held = git(repo, "cat-file", "blob", f"{head}:{path}", check=False)
            kept = kept and held.returncode == 0 and held.stdout == data
        if kept and same_content(board, old.stdout if old.returncode == 0 else None):
            progress.say(f"leaderboard unchanged on {branch} at {head[:10]}: nothing to publish")
            return None
        commit = _commit_files(repo, head, files, message)
        pushed = git(repo, "push", "--quiet", remote, f"{commit}:refs/heads/{branch}", extra_env=auth, check=False)
        if pushed.returncode == 0:
            progress.say(f"published the leaderboard to {branch}: {commit[:10]} on {head[:10]}")
            return commit
        reason = pushed.stderr.decode(errors="replace").strip()
        if "rejected" not in reason and "non-fast-forward" not in reason and "fetch first" not in reason:
            raise SwechainError(f"pushing the leaderboard to {remote} {branch} failed: {reason[-300:]}")
        progress.say(f"{branch} moved while publishing (attempt {attempt} of {attempts}): building on its new head")
    raise SwechainError(
        f"{branch} kept moving: the leaderboard was not published after {attempts} attempts; run the workflow again"
    )
