"""A small stand-in for the GitHub REST API, over real HTTP, with an in-memory store.

It speaks the endpoints the reporting layer (``swechain_ci.github``) uses through the real
PyGithub client, under both base URL styles: the bare root (``http://HOST:PORT``, as
``https://api.github.com``) and GitHub Enterprise's ``http://HOST:PORT/api/v3``:

    GET   /user                                        the token's user (403 for an Actions app token)
    GET   /repos/{owner}/{repo}
    GET   /repos/{owner}/{repo}/issues/{n}             a pull request is an issue
    POST  /repos/{owner}/{repo}/issues                 a new issue (alerts)
    GET   /repos/{owner}/{repo}/pulls/{n}
    GET   /repos/{owner}/{repo}/issues/{n}/comments    paginated (per_page, page, Link header)
    POST  /repos/{owner}/{repo}/issues/{n}/comments
    GET   /repos/{owner}/{repo}/issues/comments/{id}
    PATCH /repos/{owner}/{repo}/issues/comments/{id}
    GET   /repos/{owner}/{repo}/commits/{sha}
    POST  /repos/{owner}/{repo}/statuses/{sha}
    GET   /repos/{owner}/{repo}/pulls                  open pull requests (head sha and head repository)
    GET   /repos/{owner}/{repo}/pulls/{n}/files        the paths a pull request changes
    GET   /repos/{owner}/{repo}/contents/{path}?ref=   a file (base64) or a folder listing at a commit
    GET   /repos/{owner}/{repo}/collaborators/{user}/permission
    GET   /repos/{owner}/{repo}/actions/workflows/{file}
    POST  /repos/{owner}/{repo}/actions/workflows/{id or file}/dispatches

Every request needs ``Authorization: token T`` (or ``Bearer T``) with a known token; a
token maps to a login, or to ``None`` for a GitHub Actions app token, for which
``GET /user`` fails with 403 as it does on GitHub and whose comments are authored by
``github-actions[bot]``. GitHub's limits are enforced: a comment body of more than
65,536 characters and a status description of more than 140 are refused with 422.
URLs in responses are built from the request's ``Host`` header and base prefix, so the
client may reach the server under any name (e.g. from a container, with ``host="0.0.0.0"``).
By default any ``owner/name`` is served from the one store; ``GitHubState(repository=...)``
makes every other repository 404. Pull request 1 exists; ``state.add_pull(n, head_sha, head_repo, files)``
adds others; ``state.add_file(sha, path, data)`` serves contents; ``state.permissions[login]`` is a
user's permission (``read`` if unset).

    with FakeGitHub() as gh:                     # or: url, state = start()
        os.environ["GITHUB_API_URL"] = gh.url    # or gh.enterprise_url
        ...
        gh.state.comments, gh.state.statuses, gh.state.requests
"""

from __future__ import annotations

import atexit
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local_server import LocalServer

ACTIONS_BOT = "github-actions[bot]"
COMMENT_LIMIT = 65_536
DESCRIPTION_LIMIT = 140
STATES = ("error", "failure", "pending", "success")
ENTERPRISE_PREFIX = "/api/v3"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Recorded:
    """One request as the server saw it; ``path`` is without the ``/api/v3`` prefix."""

    method: str
    path: str
    prefix: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    author: str
    created_at: str
    updated_at: str
    edits: int = 0


@dataclass
class CommitStatus:
    id: int
    sha: str
    state: str
    description: str | None
    context: str
    target_url: str | None
    creator: str
    created_at: str


@dataclass
class GitHubState:
    """The in-memory store. Safe to read from the test thread; mutate through the methods."""

    repository: str | None = None  # None: any owner/name is served (from this one store)
    tokens: dict[str, str | None] = field(default_factory=lambda: {"test-token": "swechain-bot"})
    pulls: dict[int, str] = field(default_factory=lambda: {1: "a" * 40}, metadata={"doc": "number -> head sha"})
    issues: dict[int, dict[str, str]] = field(default_factory=dict, metadata={"doc": "number -> title, body"})
    pull_heads: dict[int, str] = field(default_factory=dict, metadata={"doc": "number -> head repository owner/name"})
    pull_files: dict[int, list[str]] = field(default_factory=dict)
    pull_texts: dict[int, dict[str, str]] = field(default_factory=dict, metadata={"doc": "number -> title, body"})
    contents: dict[tuple[str, str], bytes] = field(default_factory=dict, metadata={"doc": "(sha, path) -> bytes"})
    permissions: dict[str, str] = field(default_factory=dict)
    comments: list[Comment] = field(default_factory=list)
    statuses: list[CommitStatus] = field(default_factory=list)
    dispatches: list[dict[str, Any]] = field(default_factory=list, metadata={"doc": "workflow, ref, inputs"})
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ids: Any = field(default_factory=lambda: itertools.count(1001), repr=False)

    # -- seeding and queries ---------------------------------------------------------------

    def add_token(self, token: str, login: str | None) -> None:
        """``login=None``: a GitHub Actions app token (``GET /user`` is 403, author github-actions[bot])."""
        with self.lock:
            self.tokens[token] = login

    def add_pull(
        self, number: int, head_sha: str | None = None, head_repo: str | None = None, files: list[str] | None = None
    ) -> None:
        with self.lock:
            self.pulls[number] = head_sha or f"{number:040x}"
            if head_repo:
                self.pull_heads[number] = head_repo
            self.pull_files[number] = list(files or [])

    def add_file(self, sha: str, path: str, data: bytes) -> None:
        with self.lock:
            self.contents[(sha, path)] = data

    def add_comment(self, issue: int, body: str, author: str) -> Comment:
        """A comment as if someone else had written it (no request recorded)."""
        with self.lock:
            return self._new_comment(issue, body, author)

    def comments_on(self, issue: int) -> list[Comment]:
        with self.lock:
            return [c for c in self.comments if c.issue == issue]

    def requests_matching(self, method: str, pattern: str) -> list[Recorded]:
        """Recorded requests with this method whose path (without /api/v3) contains a match of the regex."""
        with self.lock:
            return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # -- internals -------------------------------------------------------------------------

    def _new_comment(self, issue: int, body: str, author: str) -> Comment:
        now = _now()
        comment = Comment(next(self._ids), issue, body, author, now, now)
        self.comments.append(comment)
        return comment


class _Error(Exception):
    def __init__(self, status: int, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.payload: dict[str, Any] = {"message": message, "documentation_url": "https://docs.github.com/rest"}
        if errors:
            self.payload["errors"] = errors


class FakeGitHub(LocalServer):
    """The server; ``start``/``stop`` or a context manager. ``url`` is the root, ``enterprise_url`` has /api/v3."""

    def __init__(self, state: GitHubState | None = None, host: str = "127.0.0.1") -> None:
        super().__init__()
        self.state = state or GitHubState()
        self.host = host

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _handler(self.state)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def enterprise_url(self) -> str:
        return self.url + ENTERPRISE_PREFIX


def start(state: GitHubState | None = None, host: str = "127.0.0.1") -> tuple[str, GitHubState]:
    """Start a server for the rest of the process (stopped at exit); returns its root URL and store."""
    server = FakeGitHub(state, host).start()
    atexit.register(server.stop)
    return server.url, server.state


# -- the handler ------------------------------------------------------------------------------


def _handler(state: GitHubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def _serve(self, method: str) -> None:
            split = urlsplit(self.path)
            path, prefix = split.path, ""
            if path == ENTERPRISE_PREFIX or path.startswith(ENTERPRISE_PREFIX + "/"):
                path, prefix = path[len(ENTERPRISE_PREFIX) :] or "/", ENTERPRISE_PREFIX
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            with state.lock:
                state.requests.append(Recorded(method, path, prefix, parse_qs(split.query), headers, body))
            base = f"http://{self.headers.get('Host')}{prefix}"
            try:
                if isinstance(body, str):
                    raise _Error(400, "Problems parsing JSON")
                login = self._authenticate(headers)
                with state.lock:
                    status, payload, extra = _route(state, method, path, parse_qs(split.query), body, login, base)
            except _Error as exc:
                status, payload, extra = exc.status, exc.payload, {}
            self._send(status, payload, extra)

        def _authenticate(self, headers: dict[str, str]) -> str | None:
            value = headers.get("authorization", "")
            scheme, _, token = value.partition(" ")
            if scheme.lower() not in ("token", "bearer") or not token:
                raise _Error(401, "Requires authentication")
            with state.lock:
                if token not in state.tokens:
                    raise _Error(401, "Bad credentials")
                return state.tokens[token]

        def _send(self, status: int, payload: Any, extra: dict[str, str]) -> None:
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            if payload is not None:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-RateLimit-Limit", "5000")
            self.send_header("X-RateLimit-Remaining", "4999")
            self.send_header("X-RateLimit-Reset", "4102444800")
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


# -- routes (called with the store locked) -------------------------------------------------------

_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


def _user_json(login: str, base: str) -> dict[str, Any]:
    bot = login.endswith("[bot]")
    return {
        "login": login,
        "id": abs(hash(login)) % 10**8,
        "type": "Bot" if bot else "User",
        "url": f"{base}/users/{login}",
        "html_url": f"https://github.example/{login}",
        "site_admin": False,
    }


def _author(login: str | None) -> str:
    return login if login is not None else ACTIONS_BOT


def _comment_json(repo: str, c: Comment, base: str) -> dict[str, Any]:
    return {
        "id": c.id,
        "node_id": f"IC_{c.id}",
        "url": f"{base}/repos/{repo}/issues/comments/{c.id}",
        "html_url": f"https://github.example/{repo}/pull/{c.issue}#issuecomment-{c.id}",
        "issue_url": f"{base}/repos/{repo}/issues/{c.issue}",
        "body": c.body,
        "user": _user_json(c.author, base),
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "author_association": "NONE",
    }


def _issue_json(state: GitHubState, repo: str, number: int, base: str, pull: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": 500 + number,
        "number": number,
        "state": "open",
        "title": state.pull_texts.get(number, {}).get("title", f"Pull request {number}"),
        "user": _user_json("contributor", base),
        "body": state.pull_texts.get(number, {}).get("body", ""),
        "url": f"{base}/repos/{repo}/{'pulls' if pull else 'issues'}/{number}",
        "html_url": f"https://github.example/{repo}/pull/{number}",
        "comments_url": f"{base}/repos/{repo}/issues/{number}/comments",
        "comments": sum(1 for c in state.comments if c.issue == number),
    }
    if pull:
        head_repo = state.pull_heads.get(number, repo)
        data["head"] = {
            "sha": state.pulls[number],
            "ref": f"pr-{number}",
            "label": f"{head_repo.split('/')[0]}:pr-{number}",
            "repo": {
                "id": 43,
                "name": head_repo.split("/")[1],
                "full_name": head_repo,
                "url": f"{base}/repos/{head_repo}",
                "fork": head_repo != repo,
            },
        }
        data["base"] = {
            "sha": "b" * 40,
            "ref": "main",
            "repo": {"id": 42, "full_name": repo, "url": f"{base}/repos/{repo}"},
        }
        data["issue_url"] = f"{base}/repos/{repo}/issues/{number}"
    else:
        data["pull_request"] = {"url": f"{base}/repos/{repo}/pulls/{number}"}
    return data


def _plain_issue_json(state: GitHubState, repo: str, number: int, base: str) -> dict[str, Any]:
    issue = state.issues[number]
    return {
        "id": 900 + number,
        "number": number,
        "state": "open",
        "title": issue["title"],
        "body": issue["body"],
        "user": _user_json("swechain-bot", base),
        "url": f"{base}/repos/{repo}/issues/{number}",
        "html_url": f"https://github.example/{repo}/issues/{number}",
        "comments_url": f"{base}/repos/{repo}/issues/{number}/comments",
        "comments": sum(1 for c in state.comments if c.issue == number),
    }


def _page(items: list[Any], query: dict[str, list[str]], url: str) -> tuple[list[Any], dict[str, str]]:
    try:
        per_page = max(1, min(100, int(query.get("per_page", ["30"])[0])))
        page = max(1, int(query.get("page", ["1"])[0]))
    except ValueError:
        raise _Error(422, "Validation Failed") from None
    last = max(1, -(-len(items) // per_page))
    links = []
    if page < last:
        links += [
            f'<{url}?per_page={per_page}&page={page + 1}>; rel="next"',
            f'<{url}?per_page={per_page}&page={last}>; rel="last"',
        ]
    if page > 1:
        links += [
            f'<{url}?per_page={per_page}&page=1>; rel="first"',
            f'<{url}?per_page={per_page}&page={page - 1}>; rel="prev"',
        ]
    return items[(page - 1) * per_page : page * per_page], ({"Link": ", ".join(links)} if links else {})


def _too_long(resource: str, field_: str, limit: int) -> _Error:
    return _Error(
        422,
        "Validation Failed",
        [
            {
                "resource": resource,
                "code": "custom",
                "field": field_,
                "message": f"{field_} is too long (maximum is {limit} characters)",
            }
        ],
    )


def _route(
    state: GitHubState, method: str, path: str, query: dict[str, list[str]], body: Any, login: str | None, base: str
) -> tuple[int, Any, dict[str, str]]:
    if path == "/user" and method == "GET":
        if login is None:
            raise _Error(403, "Resource not accessible by integration")
        return 200, _user_json(login, base), {}
    m = re.fullmatch(_REPO + r"(?P<rest>/.*)?", path)
    repo, rest = (f"{m['owner']}/{m['repo']}", m["rest"] or "") if m else ("", "")
    if not m or state.repository not in (None, repo):
        raise _Error(404, "Not Found")

    if rest == "" and method == "GET":
        owner = m["owner"]
        return (
            200,
            {
                "id": 42,
                "name": m["repo"],
                "full_name": repo,
                "owner": _user_json(owner, base),
                "private": False,
                "url": f"{base}/repos/{repo}",
                "html_url": f"https://github.example/{repo}",
                "default_branch": "main",
            },
            {},
        )

    if rest == "/issues" and method == "POST":
        if not isinstance(body, dict) or not isinstance(body.get("title"), str) or not body["title"]:
            raise _Error(422, "Validation Failed", [{"resource": "Issue", "code": "missing_field", "field": "title"}])
        number = max([*state.pulls, *state.issues, 0]) + 1
        state.issues[number] = {"title": body["title"], "body": _body_field(body)}
        return 201, _plain_issue_json(state, repo, number, base), {}

    if (mm := re.fullmatch(r"/issues/(\d+)", rest)) and int(mm[1]) in state.issues and method == "GET":
        return 200, _plain_issue_json(state, repo, int(mm[1]), base), {}

    if rest == "/pulls" and method == "GET":
        items = [_issue_json(state, repo, n, base, pull=True) for n in sorted(state.pulls)]
        page, headers = _page(items, query, f"{base}/repos/{repo}/pulls")
        return 200, page, headers

    if (mm := re.fullmatch(r"/pulls/(\d+)/files", rest)) and method == "GET":
        number = int(mm[1])
        if number not in state.pulls:
            raise _Error(404, "Not Found")
        items = [
            {"sha": "c" * 40, "filename": name, "status": "modified", "additions": 1, "deletions": 0, "changes": 1}
            for name in state.pull_files.get(number, [])
        ]
        page, headers = _page(items, query, f"{base}/repos/{repo}/pulls/{number}/files")
        return 200, page, headers

    if (mm := re.fullmatch(r"/contents/(.+)", rest)) and method == "GET":
        path, ref = mm[1].strip("/"), query.get("ref", [""])[0]
        if (ref, path) in state.contents:
            data = state.contents[(ref, path)]
            return 200, _content_json(repo, path, data, base), {}
        listing = [(p, d) for (sha, p), d in state.contents.items() if sha == ref and p.rpartition("/")[0] == path]
        if not listing:
            raise _Error(404, "Not Found")
        return (
            200,
            [{**_content_json(repo, p, d, base), "content": None, "encoding": None} for p, d in sorted(listing)],
            {},
        )

    if (mm := re.fullmatch(r"/collaborators/([^/]+)/permission", rest)) and method == "GET":
        permission = state.permissions.get(mm[1], "read")
        return 200, {"permission": permission, "role_name": permission, "user": _user_json(mm[1], base)}, {}

    if mm := re.fullmatch(r"/(issues|pulls)/(\d+)", rest):
        number = int(mm[2])
        if method != "GET" or number not in state.pulls:
            raise _Error(404, "Not Found")
        return 200, _issue_json(state, repo, number, base, pull=mm[1] == "pulls"), {}

    if mm := re.fullmatch(r"/issues/(\d+)/comments", rest):
        number = int(mm[1])
        if number not in state.pulls and number not in state.issues:
            raise _Error(404, "Not Found")
        if method == "GET":
            items = [_comment_json(repo, c, base) for c in state.comments if c.issue == number]
            page, headers = _page(items, query, f"{base}/repos/{repo}/issues/{number}/comments")
            return 200, page, headers
        if method == "POST":
            text = _body_field(body)
            if len(text) > COMMENT_LIMIT:
                raise _too_long("IssueComment", "body", COMMENT_LIMIT)
            comment = state._new_comment(number, text, _author(login))
            return (
                201,
                _comment_json(repo, comment, base),
                {"Location": f"{base}/repos/{repo}/issues/comments/{comment.id}"},
            )

    if mm := re.fullmatch(r"/issues/comments/(\d+)", rest):
        comment = next((c for c in state.comments if c.id == int(mm[1])), None)
        if comment is None:
            raise _Error(404, "Not Found")
        if method == "GET":
            return 200, _comment_json(repo, comment, base), {}
        if method == "PATCH":
            text = _body_field(body)
            if len(text) > COMMENT_LIMIT:
                raise _too_long("IssueComment", "body", COMMENT_LIMIT)
            comment.body, comment.updated_at, comment.edits = text, _now(), comment.edits + 1
            return 200, _comment_json(repo, comment, base), {}

    if (mm := re.fullmatch(r"/commits/([0-9a-f]{40})", rest)) and method == "GET":
        return (
            200,
            {
                "sha": mm[1],
                "url": f"{base}/repos/{repo}/commits/{mm[1]}",
                "html_url": f"https://github.example/{repo}/commit/{mm[1]}",
            },
            {},
        )

    if (mm := re.fullmatch(r"/statuses/([^/]+)", rest)) and method == "POST":
        sha = mm[1]
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise _Error(422, f"No commit found for SHA: {sha}")
        if not isinstance(body, dict) or body.get("state") not in STATES:
            raise _Error(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "Status",
                        "code": "custom",
                        "field": "state",
                        "message": f"state must be one of {', '.join(STATES)}",
                    }
                ],
            )
        description = body.get("description")
        if description is not None and len(description) > DESCRIPTION_LIMIT:
            raise _too_long("Status", "description", DESCRIPTION_LIMIT)
        status = CommitStatus(
            next(state._ids),
            sha,
            body["state"],
            description,
            body.get("context") or "default",
            body.get("target_url"),
            _author(login),
            _now(),
        )
        state.statuses.append(status)
        return (
            201,
            {
                "id": status.id,
                "url": f"{base}/repos/{repo}/statuses/{sha}",
                "state": status.state,
                "description": status.description,
                "target_url": status.target_url,
                "context": status.context,
                "created_at": status.created_at,
                "updated_at": status.created_at,
                "creator": _user_json(status.creator, base),
            },
            {},
        )

    if (mm := re.fullmatch(r"/actions/workflows/([^/]+)", rest)) and method == "GET":
        name = mm[1]
        return (
            200,
            {
                "id": 7700 + len(name),
                "node_id": f"W_{name}",
                "name": name,
                "path": f".github/workflows/{name}",
                "state": "active",
                "url": f"{base}/repos/{repo}/actions/workflows/{name}",
                "html_url": f"https://github.example/{repo}/actions/workflows/{name}",
            },
            {},
        )

    if (mm := re.fullmatch(r"/actions/workflows/([^/]+)/dispatches", rest)) and method == "POST":
        if not isinstance(body, dict) or not isinstance(body.get("ref"), str):
            raise _Error(422, "Validation Failed", [{"resource": "Workflow", "code": "missing_field", "field": "ref"}])
        state.dispatches.append({"workflow": mm[1], "ref": body["ref"], "inputs": body.get("inputs") or {}})
        return 204, None, {}

    raise _Error(404, "Not Found")


def _content_json(repo: str, path: str, data: bytes, base: str) -> dict[str, Any]:
    import base64
    import hashlib

    return {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rpartition("/")[2],
        "path": path,
        "content": base64.b64encode(data).decode(),
        "sha": hashlib.sha1(data).hexdigest(),
        "url": f"{base}/repos/{repo}/contents/{path}",
    }


def _body_field(body: Any) -> str:
    if not isinstance(body, dict) or not isinstance(body.get("body"), str):
        raise _Error(422, "Validation Failed", [{"resource": "IssueComment", "code": "missing_field", "field": "body"}])
    return body["body"]
