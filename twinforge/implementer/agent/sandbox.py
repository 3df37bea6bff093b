"""The implementing agent's sandbox: a container from the local base image (docs/implementer.md).

The pair folder is mounted read-write at ``/pair``; guidelines, the closest reference pair, the
detector library and the blueprint read-only. No network at all, no Docker socket, all capabilities
dropped, CPU / memory / pids limits, the host user's uid. The container carries the runner's labels,
so a crashed implement is reaped like a crashed run (``twinforge env reap``).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from contextlib import suppress
from pathlib import Path
from types import TracebackType

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from twinforge.implementer.exceptions import ImplementerError
from twinforge.taskpair.runtime.engine import base_image_tag, client
from twinforge.taskpair.runtime.hardening import Hardening
from twinforge.taskpair.runtime.session import MAX_OUTPUT_CHARS, CommandRecord

PAIR = "/pair"
"""Where the pair folder is mounted (read-write; the agent's working folder)."""


class Sandbox:
    """A running sandbox container; :meth:`exec` runs one command (the :class:`twinforge.harness.Shell` protocol).

    Args:
        run_id: Label value and container name suffix.
        pair: Host folder mounted at ``/pair`` read-write.
        read_only: ``{host path: container path}`` mounted read-only.
        command_timeout_s: Default per-command timeout, seconds (docs/design.md, "Execution and outcomes": 30 s).
        memory_mb: Memory limit.
        cpus: CPU quota in cores.
        cli: Docker client (default: the local engine).

    Raises:
        ImplementerError: The base image is missing or the container does not start.
    """

    def __init__(
        self,
        run_id: str,
        pair: Path,
        read_only: dict[Path, str],
        *,
        command_timeout_s: float = 30.0,
        memory_mb: int = 1024,
        cpus: float = 1.0,
        cli: docker.DockerClient | None = None,
    ) -> None:
        self.run_id = run_id
        self.pair = pair
        self.command_timeout_s = command_timeout_s
        self.records: list[CommandRecord] = []
        self.cli = cli or client()
        volumes = {str(pair.resolve()): {"bind": PAIR, "mode": "rw"}}
        volumes |= {str(host.resolve()): {"bind": inner, "mode": "ro"} for host, inner in read_only.items()}
        labels = {
            "twinforge": "1",
            "twinforge.run": run_id,
            "twinforge.pid": str(os.getpid()),
            "twinforge.host": socket.gethostname(),
            "twinforge.sandbox": "implementer",
        }
        try:
            self.container: Container = self.cli.containers.create(
                base_image_tag(),
                command=["sleep", "infinity"],
                name=f"tf-{run_id}-{secrets.token_hex(2)}",
                hostname="dev",
                labels=labels,
                working_dir=PAIR,
                user=f"{os.getuid()}:{os.getgid()}",
                environment={"HOME": "/tmp", "TERM": "dumb", "PAGER": "cat", "GIT_CONFIG_NOSYSTEM": "1"},
                volumes=volumes,
                network_mode="none",
                **Hardening(pids=256, memory_mb=memory_mb, cpus=cpus, read_only=False).options(),
            )
            self.container.start()
        except DockerException as exc:
            raise ImplementerError(f"sandbox {run_id} did not start: {exc} (run `twinforge env setup`)") from exc

    def exec(self, command: str, timeout_s: float | None = None) -> CommandRecord:
        """Run one shell command in ``/pair``, killed inside the container at the timeout."""
        limit = timeout_s or self.command_timeout_s
        started = time.monotonic()
        result = self.container.exec_run(["timeout", "-s", "KILL", f"{limit:.1f}", "bash", "-c", command], workdir=PAIR)
        output = (result.output or b"").decode("utf-8", errors="replace")
        record = CommandRecord(
            command=command,
            exit_code=int(result.exit_code if result.exit_code is not None else -1),
            output=output[-MAX_OUTPUT_CHARS:],
            seconds=round(time.monotonic() - started, 3),
            killed=result.exit_code in (124, 137),
        )
        self.records.append(record)
        return record

    def close(self) -> None:
        """Remove the container (the pair folder stays on the host)."""
        with suppress(NotFound, DockerException):
            self.container.remove(force=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
