"""The sandbox interface every stage is typed against; ``sandbox.DockerSandbox`` implements it.

Two protocols, as inspect_ai's sandbox environments: a ``Sandbox`` builds and finds images,
runs one-shot containers (the hidden tests) and starts the agent's persistent container; a
``Container`` is that running container (commands as the agent user, files and trees in and
out, ending the agent's processes). Nothing outside the implementation sees the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from swechain_ci.chain.definition import Limits

if TYPE_CHECKING:
    from swechain_ci.containers.sandbox import BuildLimits

RUNNER_UID = 1001
AGENT_UID = 1000


@dataclass
class ContainerResult:
    exit_code: int | None
    timed_out: bool
    files: dict[str, bytes]
    logs_tail: str
    output_error: str | None = None


@dataclass
class ExecResult:
    exit_code: int
    output: bytes


@dataclass
class CommandOutcome:
    """A command an agent ran: its exit status (None if killed), output kept up to a limit."""

    exit_code: int | None
    output: str
    timed_out: bool
    truncated: bool
    output_bytes: int
    stopped: bool = False  # ``on_output`` asked to end it (a limit); its processes were ended


class Container(Protocol):
    """The persistent container an agent works in, at /app."""

    def run_command(
        self,
        command: list[str],
        timeout_s: float,
        output_limit: int,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        workdir: str = "/app",
        on_output: Callable[[bytes], bool] | None = None,
    ) -> CommandOutcome:
        """Run as the agent user, its whole process tree ended at ``timeout_s``; output bounded."""
        ...

    def exec(self, command: list[str], user: int = AGENT_UID, timeout_s: float | None = None) -> ExecResult:
        """A short command the harness runs (``user`` 0 for root)."""
        ...

    def kill_agent_processes(self) -> None:
        """End every process of the agent user, however it detached itself."""
        ...

    def put_file(self, path: str, content: bytes, uid: int = 0, mode: int = 0o644) -> None: ...

    def remove_path(self, path: str) -> None: ...

    def put_tree(self, archive: bytes, parent: str) -> None:
        """Unpack a tar archive under ``parent``."""
        ...

    def get_tree(self, path: str) -> Iterator[bytes]:
        """``path`` as a tar stream, closed when the reader stops."""
        ...

    def remove(self) -> None: ...


class Sandbox(Protocol):
    """Images, one-shot containers and the agent's container, on one engine."""

    def image_id(self, ref: str) -> str | None: ...

    def pull(self, ref: str) -> str | None: ...

    def import_image(self, tar_path: Path, ref: str) -> str: ...

    def build(
        self,
        context: Path,
        dockerfile: str,
        tag: str,
        buildargs: dict[str, str],
        log: Path,
        network: str = "none",
        limits: BuildLimits | None = None,
    ) -> str:
        """Build an image (with no network unless told otherwise) within ``limits``, the builder's output in ``log``."""
        ...

    def run_once(
        self,
        image: str,
        command: list[str],
        archives: list[tuple[str, bytes]],
        collect: str,
        limits: Limits,
        timeout_s: float,
        labels: dict[str, str],
        network: str = "none",
        user: str = str(RUNNER_UID),
        capabilities: list[str] | None = None,
        hosts: dict[str, str] | None = None,
        ipv6_loopback: bool = False,
    ) -> ContainerResult:
        """A fresh container: archives in, run, killed at the time limit, ``collect`` out, removed.
        ``hosts``: extra names its /etc/hosts maps (the chain's loopback-only ``pytest.hosts``);
        ``ipv6_loopback``: its loopback has ::1 (the chain's ``pytest.ipv6_loopback``)."""
        ...

    def start_agent_container(
        self, image: str, limits: Limits, labels: dict[str, str], network: str = "none"
    ) -> Container: ...

    def remove_labelled(self, labels: dict[str, str]) -> int:
        """Remove the containers carrying ``labels`` (left by a killed earlier process); how many."""
        ...
