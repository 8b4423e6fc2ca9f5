"""A local stand-in for the Hugging Face Hub's file API, as much of it as ``huggingface_hub``'s
``dataset_info`` and ``hf_hub_download`` use for a public dataset:

- ``GET /api/datasets/<owner>/<name>/revision/<rev>``: the dataset's info (``id``, ``sha``, ``siblings``);
- ``HEAD`` and ``GET /datasets/<owner>/<name>/resolve/<rev>/<path>``: a file, with ``ETag``,
  ``X-Repo-Commit`` and ``Content-Length`` (``<rev>`` is a branch name or the commit hash).

Unknown datasets, revisions and files get the Hub's 404 with its ``X-Error-Code`` header
(``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``). Every request is recorded.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from local_server import LocalServer


@dataclass
class Dataset:
    repo_id: str
    files: dict[str, bytes]
    branch: str = "main"

    @property
    def sha(self) -> str:
        h = hashlib.sha1()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name])
        return h.hexdigest()


@dataclass
class HubState:
    datasets: dict[str, Dataset] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)

    def add(self, dataset: Dataset) -> Dataset:
        self.datasets[dataset.repo_id] = dataset
        return dataset


class FakeHub(LocalServer):
    def __init__(self, state: HubState | None = None) -> None:
        super().__init__()
        self.state = state or HubState()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _reply(self, status: int, payload: bytes, headers: dict[str, str], body: bool) -> None:
                self.send_response(status)
                for key, value in {"Content-Length": str(len(payload)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                if body:
                    self.wfile.write(payload)

            def _error(self, code: str, message: str, body: bool) -> None:
                payload = json.dumps({"error": message}).encode()
                self._reply(404, payload, {"Content-Type": "application/json", "X-Error-Code": code}, body)

            def _serve(self, body: bool) -> None:
                path = unquote(urlsplit(self.path).path)
                state.requests.append((self.command, path))
                if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/revision/([^/]+)", path):
                    dataset = state.datasets.get(m.group(1))
                    if dataset is None:
                        return self._error("RepoNotFound", "Repository not found", body)
                    if m.group(2) not in (dataset.branch, dataset.sha):
                        return self._error("RevisionNotFound", f"Invalid rev id: {m.group(2)}", body)
                    info = {
                        "id": dataset.repo_id,
                        "sha": dataset.sha,
                        "private": False,
                        "siblings": [{"rfilename": name} for name in sorted(dataset.files)],
                    }
                    return self._reply(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, body)
                if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                    dataset = state.datasets.get(m.group(1))
                    if dataset is None:
                        return self._error("RepoNotFound", "Repository not found", body)
                    if m.group(2) not in (dataset.branch, dataset.sha):
                        return self._error("RevisionNotFound", f"Invalid rev id: {m.group(2)}", body)
                    data = dataset.files.get(m.group(3))
                    if data is None:
                        return self._error("EntryNotFound", f"{m.group(3)} does not exist", body)
                    headers = {
                        "Content-Type": "application/octet-stream",
                        "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                        "X-Repo-Commit": dataset.sha,
                    }
                    return self._reply(200, data, headers, body)
                return self._error("RepoNotFound", f"no route {path}", body)

        return Handler
