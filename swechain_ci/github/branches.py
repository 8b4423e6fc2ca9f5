"""A chain run as a git branch: one commit per agent phase, pushed as it lands.

Each commit's tree is the agent's codebase after that phase, plus the run's
records under ``.swechain/`` (the run's folder, swechain_ci/records.py); the agent's own ``.swechain`` and
``.github`` are left out (``LEFT_OUT``). A run that stops
on one machine resumes on another from its branch: the records come back from
the branch head. Commits are written with git plumbing into the repository's
object store, so the user's working tree and index are never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from swechain_ci import progress
from swechain_ci.chain import trees
from swechain_ci.errors import SwechainError
from swechain_ci.records import RunFolder

RECORDS = ".swechain"
# What a run branch never carries from the agent's tree, in order, and why (the commit says so).
LEFT_OUT: tuple[tuple[str, str], ...] = (
    (RECORDS, "the harness's records folder: whatever the agent left at that name gives way to the records"),
    (".github", "workflow files: a run branch never carries them (the push would need the workflows permission)"),
)


class RunBranch:
    def __init__(self, repo: Path, branch: str, remote: str | None = None) -> None:
        self.repo, self.branch, self.remote = repo.resolve(), branch, remote
        found = subprocess.run(
            ["git", "-C", str(self.repo), "rev-parse", "--absolute-git-dir"], capture_output=True, text=True
        )
        if found.returncode != 0:
            raise SwechainError(f"--git-repo {repo} is not a git repository")
        self.git_dir = found.stdout.strip()
        if remote:
            self.git("remote", "get-url", remote)

    def git(self, *args: str, index: Path | None = None, work_tree: Path | None = None) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "swechain-ci",
            "GIT_AUTHOR_EMAIL": "swechain-ci@localhost",
            "GIT_COMMITTER_NAME": "swechain-ci",
            "GIT_COMMITTER_EMAIL": "swechain-ci@localhost",
        }
        if index:
            env["GIT_INDEX_FILE"] = str(index)
        command = ["git", f"--git-dir={self.git_dir}"] + ([f"--work-tree={work_tree}"] if work_tree else [])
        result = subprocess.run([*command, *args], cwd=work_tree or self.repo, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise SwechainError(f"git {args[0]} on {self.repo} failed: {result.stderr.strip()[-300:]}")
        return result.stdout.strip()

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def head(self) -> str | None:
        try:
            return self.git("rev-parse", "--verify", "--quiet", self.ref)
        except SwechainError:
            return None

    def fetch(self) -> None:
        """Bring the branch from the remote, if it exists there."""
        if not self.remote:
            return
        remote_heads = self.git("ls-remote", "--heads", self.remote, self.branch)
        if remote_heads:
            self.git("fetch", "--quiet", self.remote, f"+{self.ref}:{self.ref}")

    def restore_records(self, output: Path, replace: bool = False) -> bool:
        """Put the branch head's records into ``output``; False if the branch holds none.

        ``replace``: the branch is the run's truth (a job's view), so the folder's records
        give way to the branch's; otherwise ``output`` must be empty."""
        self.fetch()
        head = self.head()
        if head is None:
            return False
        listing = self.git("ls-tree", "-r", "--name-only", head, RECORDS)
        if not listing:
            return False
        if replace and output.is_dir() and any(output.iterdir()) and not RunFolder(output).record.is_file():
            raise SwechainError(f"{output} holds files but no run.json; give the run's own --output folder")
        archive = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "archive", head, RECORDS], capture_output=True, check=True
        ).stdout
        output.parent.mkdir(parents=True, exist_ok=True)
        incoming = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        try:
            trees.unpack_untrusted([archive], incoming, strip=RECORDS)
            if replace and output.exists():
                shutil.rmtree(output)
            output.mkdir(exist_ok=True)
            for item in incoming.iterdir():
                item.rename(output / item.name)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
        progress.say(f"restored the run's records from {self.branch} at {head[:10]}")
        return True

    def commit(self, code: Path, output: Path, message: str) -> str:
        """Commit the codebase with the run's records on top of the branch, and push it.

        What the branch must not carry is left out of the tree (``LEFT_OUT``), whatever the agent
        made of it, and the commit message says so; the whole code stays in the records' archives."""
        with tempfile.TemporaryDirectory(prefix="swechain-branch-") as tmp:
            staging = Path(tmp) / "tree"
            trees.copy_tree(code, staging)
            omitted = [f"{name} ({why})" for name, why in LEFT_OUT if _remove(staging / name)]
            trees.copy_tree(output, staging / RECORDS)
            index = Path(tmp) / "index"
            self.git("add", "--all", "--force", ".", index=index, work_tree=staging)
            tree = self.git("write-tree", index=index)
        if omitted:
            message += "\n\nLeft out of this tree (the whole code is in the records' code archives): " + "; ".join(
                omitted
            )
        parent = self.head()
        sha = self.git("commit-tree", tree, *(["-p", parent] if parent else []), "-m", message)
        self.git("update-ref", self.ref, sha, *([parent] if parent else []))
        if self.remote:
            self.git("push", "--quiet", self.remote, f"{self.ref}:{self.ref}")
        progress.say(f"committed {sha[:10]} to {self.branch}: {message.splitlines()[0]}")
        return sha


def _remove(path: Path) -> bool:
    """Remove whatever is at ``path`` (a file, a link, a folder) without following a link; True if
    something was there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return True
    if path.is_dir():
        shutil.rmtree(path)
        return True
    return False
