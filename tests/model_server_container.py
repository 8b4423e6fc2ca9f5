"""The scripted model server (tests/model_server.py) in a container without network, for the
real vendor CLIs: the agent container joins its network namespace
(``SWECHAIN_EGRESS_NETWORK=container:<id>``), so the CLI reaches only the server, at
``SWECHAIN_AGENT_BASE_URL=http://127.0.0.1:8080``.

``toy_scenario()`` scripts the toy chain for every step: Build runs a shell command (the
step's gold patch, and a module the package imports, which its edit breaks, so the hidden check grants a Fix),
reads the spec with the CLI's read tool, and edits a file with its edit tool; Fix reads the
Fix report, then edits the break away.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

import docker

from swechain_ci.chain import sources, trees
from swechain_ci.chain.definition import load_chain
from swechain_ci.containers.images import ensure_base
from swechain_ci.containers.sandbox import DockerSandbox

SERVER = Path(__file__).resolve().parent / "model_server.py"
PORT = 8080
BASE_URL = f"http://127.0.0.1:{PORT}"
BROKEN = "/app/code/src/toyslug/_scripted.py"  # imported by the package: broken, every test errors
INIT = "/app/code/src/toyslug/__init__.py"


def toy_scenario(extra_build: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    chain = load_chain("toy")
    phases: dict[str, list[dict[str, Any]]] = {}
    for prev, next_ in zip(chain.versions, chain.versions[1:], strict=False):
        patch = trees.diff(sources.materialize(chain, prev).code, sources.materialize(chain, next_).code)
        encoded = base64.b64encode(patch.encode()).decode()
        phases[f"{next_}/build"] = [
            *(extra_build or []),
            {
                "bash": f"cd /app/code && sed -i '/_scripted/d' {INIT} && echo {encoded} | base64 -d | git apply -p1 && "
                f"printf 'def scripted():\\n    return 1\\n' > {BROKEN} && "
                f"echo 'from toyslug import _scripted  # noqa' >> {INIT} && echo applied with $(command -v python)"
            },
            {"read": "/app/SPEC.md"},
            {"read": BROKEN},
            {"edit": [BROKEN, "def scripted():", "def scripted(:"]},
            {"text": "Build done."},
        ]
        phases[f"{next_}/fix"] = [
            {"read": "/app/FIX_REPORT.md"},
            {"read": BROKEN},
            {"edit": [BROKEN, "def scripted(:", "def scripted():"]},
            {"text": "Fix done."},
        ]
    return {"phases": phases}


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ModelServer:
    """The server container; ``requests()`` reads what the CLIs sent it."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        sandbox = DockerSandbox()
        image = ensure_base(sandbox, "3.11")
        self.client = sandbox.client
        self.container = self.client.containers.create(
            image,
            ["python3", "/srv/model_server.py", "/srv/scenario.json", str(PORT)],
            network_mode="none",
            labels={"swechain-ci": "test-model-server"},
        )
        self.container.put_archive(
            "/srv", _tar({"model_server.py": SERVER.read_bytes(), "scenario.json": json.dumps(scenario).encode()})
        )
        self.container.start()
        for _ in range(50):
            if b"model server on" in self.container.logs():
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the model server did not start: {self.container.logs()[-2000:]!r}")

    @property
    def network(self) -> str:
        return f"container:{self.container.id}"

    def env(self) -> dict[str, str]:
        """What a run needs to reach the server."""
        return {"SWECHAIN_EGRESS_NETWORK": self.network, "SWECHAIN_AGENT_BASE_URL": BASE_URL}

    def requests(self) -> list[dict[str, Any]]:
        result = self.container.exec_run(["cat", "/srv/requests.jsonl"])
        if result.exit_code != 0:
            return []
        return [json.loads(line) for line in result.output.decode().splitlines() if line.strip()]

    def remove(self) -> None:
        with contextlib.suppress(docker.errors.DockerException):
            self.container.remove(force=True)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
