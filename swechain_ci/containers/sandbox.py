"""The sandbox on Docker, the real backend: ``DockerSandbox`` (and the ``AgentContainer`` it
starts) implement the protocols of ``containers/protocol.py``.

Containers get no network, run as non-root users, with memory, CPU and pids
limits, bounded logs, and wall-clock limits enforced from the host.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests
import urllib3.exceptions
from docker.types import LogConfig

from swechain_ci.chain.definition import Limits
from swechain_ci.chain.trees import CappedStream
from swechain_ci.containers.protocol import (
    AGENT_UID,
    RUNNER_UID,
    CommandOutcome,
    ContainerResult,
    ExecResult,
)
from swechain_ci.errors import SwechainError

LABEL = "swechain-ci"
# What the host reads of one evaluation's output folder, all files together.
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
# What the eval supervisor, root in its container, keeps: starting the tests as the runner,
# giving the runner its scratch folder, ending the runner's processes. Nothing else.
SUPERVISOR_CAPABILITIES = ["SETUID", "SETGID", "CHOWN", "KILL"]
LOG_CONFIG = LogConfig(type=LogConfig.types.JSON, config={"max-size": "10m", "max-file": "1"})


@dataclass(frozen=True)
class BuildLimits:
    """What one image build may use: each RUN container's memory and CPU share, the whole build's
    wall clock, the image's size. From SWECHAIN_BUILD_MEMORY_GB, SWECHAIN_BUILD_CPU_SHARES,
    SWECHAIN_BUILD_SECONDS and SWECHAIN_BUILD_SIZE_GB, else these defaults."""

    memory_bytes: int = 8 * 2**30
    cpu_shares: int = 512  # half the default weight: builds yield to evaluations
    seconds: int = 3600
    size_bytes: int = 10 * 2**30

    @classmethod
    def from_env(cls) -> BuildLimits:
        def number(name: str, default: float) -> float:
            text = os.environ.get(name, "").strip()
            try:
                value = float(text) if text else default
            except ValueError:
                raise SwechainError(f"{name}={text!r} is not a number") from None
            if value <= 0:
                raise SwechainError(f"{name}={text!r} must be above 0")
            return value

        default = cls()
        return cls(
            memory_bytes=int(number("SWECHAIN_BUILD_MEMORY_GB", default.memory_bytes / 2**30) * 2**30),
            cpu_shares=int(number("SWECHAIN_BUILD_CPU_SHARES", default.cpu_shares)),
            seconds=int(number("SWECHAIN_BUILD_SECONDS", default.seconds)),
            size_bytes=int(number("SWECHAIN_BUILD_SIZE_GB", default.size_bytes / 2**30) * 2**30),
        )

    def container_limits(self) -> dict[str, int]:
        return {"memory": self.memory_bytes, "memswap": self.memory_bytes, "cpushares": self.cpu_shares}


def hardening(limits: Limits) -> dict:
    return {
        "network_mode": "none",
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,
        "nano_cpus": int(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "log_config": LOG_CONFIG,
    }


def read_tar_files(
    chunks: Iterator[bytes], limit: int = MAX_OUTPUT_BYTES, what: str = "the container's output"
) -> dict[str, bytes]:
    """The regular files of a tar stream by name (first folder stripped), read as a stream and
    never more than ``limit`` bytes in all: an oversized or malformed archive is a
    ``SwechainError``, never a host out of memory."""
    files = {}
    stream = io.BufferedReader(CappedStream(chunks, limit, what))
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as tar:
            for member in tar:
                if member.isreg():
                    handle = tar.extractfile(member)
                    name = member.name.split("/", 1)[-1]
                    files[name] = handle.read() if handle else b""
    except tarfile.TarError as exc:
        raise SwechainError(f"{what} is not a readable archive ({exc})") from None
    finally:
        stream.close()
    return files


def archive_chunks(container, path: str) -> Iterator[bytes]:
    """A container path as a tar stream whose connection is released when the reader stops, also
    early (at a size cap): an abandoned export keeps the engine from removing the container.
    Closing the SDK's stream releases its response (nothing else holds it)."""
    chunks, _ = container.get_archive(path, chunk_size=2 * 2**20)
    try:
        yield from chunks
    finally:
        chunks.close()


def single_file_tar(name: str, content: bytes, uid: int, mode: int = 0o644) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.uid, info.gid, info.mtime = len(content), mode, uid, uid, int(time.time())
        tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class DockerSandbox:
    def __init__(self) -> None:
        try:
            self.client = docker.from_env(timeout=300)
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise SwechainError(
                f"no Docker engine reachable ({str(exc).splitlines()[0][:160]}): start one with "
                "`dockerd --bridge=none --iptables=false &` (scripts/setup does it) or point DOCKER_HOST at it"
            ) from None

    # images -----------------------------------------------------------------

    def image_id(self, ref: str) -> str | None:
        try:
            return self.client.images.get(ref).id
        except docker.errors.ImageNotFound:
            return None

    def pull(self, ref: str) -> str | None:
        try:
            return self.client.images.pull(ref).id
        except docker.errors.APIError:
            return None

    def import_image(self, tar_path: Path, ref: str) -> str:
        repository, _, tag = ref.rpartition(":")
        with open(tar_path, "rb") as handle:
            self.client.api.import_image_from_data(handle.read(), repository=repository, tag=tag)
        image = self.image_id(ref)
        if image is None:
            raise SwechainError(f"docker import did not produce {ref}")
        return image

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
        """Build (with no network unless told otherwise) within ``limits``, streaming the builder's
        output to ``log``. Each RUN's container gets the memory and CPU limits; the build ends at
        its time limit (the engine cancels a build whose client leaves); an image over the size
        limit is removed."""
        limits = limits or BuildLimits.from_env()
        log.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + limits.seconds
        with open(log, "w") as out:
            stream = self.client.api.build(
                path=str(context),
                dockerfile=dockerfile,
                tag=tag,
                buildargs=buildargs,
                network_mode=network,
                rm=True,
                forcerm=True,
                decode=True,
                labels={LABEL: "image"},
                container_limits=limits.container_limits(),
                timeout=limits.seconds,  # no output for that long ends the build too
            )
            try:
                for chunk in stream:
                    if "stream" in chunk:
                        out.write(chunk["stream"])
                    if "error" in chunk:
                        out.write(chunk["error"])
                        raise SwechainError(f"image build of {tag} failed: {chunk['error'].strip()} (log: {log})")
                    if time.monotonic() > deadline:
                        raise SwechainError(f"image build of {tag} took over {limits.seconds} s: ended (log: {log})")
            except docker.errors.APIError as exc:
                raise SwechainError(f"image build of {tag} failed: {exc} (log: {log})") from None
            except (requests.RequestException, urllib3.exceptions.HTTPError):  # silent past the limit
                raise SwechainError(f"image build of {tag} took over {limits.seconds} s: ended (log: {log})") from None
            finally:
                stream.close()
        image = self.image_id(tag)
        if image is None:
            raise SwechainError(f"image build of {tag} produced no image (log: {log})")
        size = self.client.images.get(image).attrs.get("Size", 0)
        if size > limits.size_bytes:
            self.client.images.remove(tag, force=True)
            raise SwechainError(
                f"image {tag} is {size / 2**30:.1f} GiB, over the build limit of {limits.size_bytes / 2**30:.1f} GiB: "
                f"removed (log: {log}; SWECHAIN_BUILD_SIZE_GB raises the limit)"
            )
        return image

    # one-shot containers ----------------------------------------------------

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
        """A fresh container: copy archives in, run, kill at the time limit, copy ``collect`` out.
        ``network`` is ``none`` but for the operator's opt-in network probe of gold code; ``hosts``
        are extra /etc/hosts names (loopback only, validated with the chain); ``ipv6_loopback``
        gives the loopback its ::1 (Docker disables IPv6 in a container without a network)."""
        container = self.client.containers.create(
            image,
            command,
            user=user,
            working_dir="/work",
            labels={LABEL: "eval", **labels},
            tmpfs={"/tmp": "rw,nosuid,nodev,size=1g,mode=1777"},
            cap_add=capabilities or None,
            extra_hosts=hosts or None,
            sysctls={"net.ipv6.conf.lo.disable_ipv6": "0"} if ipv6_loopback else None,
            **{**hardening(limits), "network_mode": network},
        )
        try:
            for destination, archive in archives:
                container.put_archive(destination, archive)
            container.start()
            timed_out = False
            try:
                status = container.wait(timeout=timeout_s)
                exit_code = status.get("StatusCode")
            except Exception:  # requests' ReadTimeout or ConnectionError: the limit passed
                timed_out = True
                container.kill()
                exit_code = None
            logs = container.logs(tail=200).decode(errors="replace")
            files, output_error = {}, None
            try:
                files = read_tar_files(archive_chunks(container, collect), what=f"the output folder {collect}")
            except docker.errors.NotFound:
                pass
            except SwechainError as exc:
                output_error = str(exc)
            return ContainerResult(exit_code, timed_out, files, logs[-8000:], output_error)
        finally:
            container.remove(force=True)

    # persistent agent containers -------------------------------------------

    def start_agent_container(
        self, image: str, limits: Limits, labels: dict[str, str], network: str = "none"
    ) -> AgentContainer:
        """The persistent agent container. Its init runs as root (without capabilities) so
        that ending every process of the agent user never ends the container itself."""
        options = hardening(limits)
        options["network_mode"] = network
        container = self.client.containers.run(
            image,
            ["sleep", "infinity"],
            detach=True,
            user="0",
            working_dir="/app",
            labels={LABEL: "agent", **labels},
            init=True,
            **options,
        )
        return AgentContainer(container)

    def remove_labelled(self, labels: dict[str, str]) -> int:
        """Remove containers a killed earlier process left behind."""
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        stale = self.client.containers.list(all=True, filters=filters)
        for container in stale:
            container.remove(force=True)
        return len(stale)


class AgentContainer:
    """The persistent per-run container an agent works in, at /app."""

    def __init__(self, container) -> None:
        self.container = container

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
        """Run as the agent user with a wall-clock limit that ends the whole process tree.

        Output streams to ``log``; the returned (and recorded) output keeps at most
        ``output_limit`` bytes, so a flood costs neither memory nor disk. ``on_output`` sees
        every chunk as it arrives (kept or not); when it returns True, every agent process
        is ended at once.
        """
        api = self.container.client.api
        exec_id = api.exec_create(
            self.container.id,
            command,
            user=str(AGENT_UID),
            workdir=workdir,
            environment=env or {},
        )["Id"]
        stream = api.exec_start(exec_id, stream=True, demux=False)
        kept = bytearray()
        seen = 0
        done = threading.Event()
        stopped = threading.Event()

        def pump() -> None:
            nonlocal seen
            # Closed in the finally, before ``done`` is set (a with-block would close it after).
            handle = open(log, "ab") if log else None  # noqa: SIM115
            try:
                for chunk in stream:
                    seen += len(chunk)
                    room = output_limit - len(kept)
                    if room > 0:
                        kept.extend(chunk[:room])
                        if handle:
                            handle.write(chunk[:room])
                            handle.flush()  # the step log shows the output as it comes
                    # After the log: whatever ``on_output`` shows is already in the step log.
                    if on_output and not stopped.is_set() and on_output(chunk):
                        stopped.set()
                        self.kill_agent_processes()
            finally:
                if handle:
                    handle.close()
                close = getattr(stream, "close", None)
                if close:
                    close()
                done.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = not done.wait(timeout_s)
        if timed_out:
            self.kill_agent_processes()
            done.wait(30)
        inspected = api.exec_inspect(exec_id)
        exit_code = None if timed_out or inspected.get("Running") else inspected.get("ExitCode")
        return CommandOutcome(
            exit_code=exit_code,
            output=bytes(kept).decode(errors="replace"),
            timed_out=timed_out,
            truncated=seen > output_limit,
            output_bytes=seen,
            stopped=stopped.is_set(),
        )

    def kill_agent_processes(self) -> None:
        """End every process of the agent user, however it detached itself."""
        self.container.exec_run(["sh", "-c", "kill -9 -1"], user=str(AGENT_UID))

    def exec(self, command: list[str], user: int = AGENT_UID, timeout_s: float | None = None) -> ExecResult:
        if timeout_s is not None:
            command = ["timeout", "-s", "KILL", str(int(timeout_s)), *command]
        result = self.container.exec_run(command, user=str(user), workdir="/app", demux=False)
        return ExecResult(result.exit_code, result.output or b"")

    def put_file(self, path: str, content: bytes, uid: int = 0, mode: int = 0o644) -> None:
        directory, _, name = path.rpartition("/")
        self.container.put_archive(directory or "/", single_file_tar(name, content, uid, mode))

    def remove_path(self, path: str) -> None:
        self.exec(["rm", "-rf", path])

    def put_tree(self, archive: bytes, parent: str) -> None:
        self.container.put_archive(parent, archive)

    def get_tree(self, path: str) -> Iterator[bytes]:
        return archive_chunks(self.container, path)

    def remove(self) -> None:
        with contextlib.suppress(docker.errors.DockerException):
            self.container.remove(force=True)
