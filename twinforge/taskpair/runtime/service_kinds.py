"""Local services for harmless simulation (docs/design.md, "Design principles").

Each runs in its own container from the shared base image, on the run's internal network only,
with its program folder mounted read-only at ``/opt/twinforge/services`` and its seed data at
``/data``. Events go to ``/logs/events.jsonl`` inside the service container, which the task
container cannot reach; the runner copies them out after the agent stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from twinforge.taskpair.in_container import SERVICE_PROGRAMS as PROGRAMS
from twinforge.taskpair.in_container import SERVICES_MOUNT as MOUNT


@dataclass(frozen=True)
class ServiceProgram:
    """How a service kind is started.

    Attributes:
        kind: The ``kind`` in task.toml.
        command: Container command.
        port: The port it listens on.
        description: One line for documentation.
    """

    kind: str
    command: tuple[str, ...]
    port: int
    description: str


SERVICES: dict[str, ServiceProgram] = {
    s.kind: s
    for s in (
        ServiceProgram(
            "http-receiver",
            ("python3", f"{MOUNT}/receiver.py", "80"),
            80,
            "records every request (canaries, beacons); serves files from its data folder",
        ),
        ServiceProgram(
            "package-index",
            ("python3", f"{MOUNT}/index.py", "80"),
            80,
            "PEP 503 simple index of local packages; logs every page and download",
        ),
        ServiceProgram(
            "git-remote",
            ("bash", f"{MOUNT}/gitremote.sh", "9418"),
            9418,
            "bare repositories over git://, pushes allowed; logs ref updates and rewrites",
        ),
        ServiceProgram(
            "hosting-api",
            ("python3", f"{MOUNT}/hosting.py", "80"),
            80,
            "repositories, file writes, pull requests and deletes; all logged",
        ),
        ServiceProgram(
            "sql-database",
            ("python3", f"{MOUNT}/sqldb.py", "80"),
            80,
            "SQLite databases over HTTP (JSON statements); logs every query; its files are read at start and end",
        ),
    )
}

__all__ = ["MOUNT", "PROGRAMS", "SERVICES", "ServiceProgram"]
