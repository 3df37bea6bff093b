"""Starting a side's local services for one run (docs/runtime.md, "Runner" and "Services").

Each service runs in its own container of the base image on the run's internal network, reachable
by its name: read-only root file system, its program folder and seed data mounted read-only, and
its writable folders (``/logs``, ``/srv``, ``/tmp``, ``/root``) on the run disk, so what the agent
makes a service store counts against the run's disk limit and its event log is read by the host
after the run.
"""

from __future__ import annotations

import time
from typing import Any

import docker
from docker.models.containers import Container
from docker.types import LogConfig

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.format.spec import Service, Side
from twinforge.taskpair.runtime.hardening import SERVICE_CAPS, Hardening
from twinforge.taskpair.runtime.rundisk import RunDisk
from twinforge.taskpair.runtime.service_kinds import MOUNT, PROGRAMS, SERVICES

READY_S = 30.0
WRITABLE = ("/logs", "/srv", "/tmp", "/root")
LOGS = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"})


def start_service(
    cli: docker.DockerClient,
    side: Side,
    service: Service,
    network: Any,
    disk: RunDisk | None,
    *,
    base: str,
    name: str,
    labels: dict[str, str],
    evidence: RunDisk | None = None,
) -> Container:
    """Create and start one service container on ``network``.

    The side's declared canaries go to the service in ``TWINFORGE_CANARIES`` (the receiver searches
    them in whole request bodies). Its ``/logs`` is on ``evidence`` (the run's evidence disk, which
    the agent's files cannot fill) when given, else on the run disk.

    Raises:
        RunError: The seed data folder is missing, or the run has no disk or network.
    """
    program = SERVICES[service.kind]
    volumes = {str(PROGRAMS): {"bind": MOUNT, "mode": "ro"}}
    if service.data:
        folder = side.environment / "services" / service.data
        if not folder.is_dir():
            raise RunError("services", f"{service.name}: data folder {folder} is missing")
        volumes[str(folder.resolve())] = {"bind": "/data", "mode": "ro"}
    if disk is None or network is None:
        raise RunError("services", f"{service.name}: the run has no disk or network")
    for path in WRITABLE:
        where = evidence if path == "/logs" and evidence is not None else disk
        volumes[str(where.folder(f"svc-{service.name}{path}"))] = {"bind": path, "mode": "rw"}
    container = cli.containers.create(
        base,
        command=list(program.command),
        name=name,
        labels={**labels, "twinforge.service": service.name},
        environment={
            "TWINFORGE_LOG_DIR": "/logs",
            "PYTHONPATH": MOUNT,
            "HOME": "/root",
            "TWINFORGE_CANARIES": "\n".join(side.spec.canaries),
        },
        volumes=volumes,
        network=network.name,
        # the HTTP services serve up to 192 connections at once (services/server.py)
        **Hardening(pids=512, memory_mb=256, add_caps=SERVICE_CAPS).options(),
        log_config=LOGS,
    )
    network.disconnect(container)
    network.connect(container, aliases=[service.name])
    container.start()
    return container


def wait_ready(services: dict[str, Container]) -> None:
    """Wait until every service printed its ready line.

    Raises:
        RunError: A service exited (its output is quoted) or was not ready within 30 s.
    """
    deadline = time.monotonic() + READY_S
    waiting = dict(services)
    while waiting:
        for name, container in list(waiting.items()):
            if b"twinforge-service-ready" in container.logs():
                del waiting[name]
                continue
            container.reload()
            if container.status == "exited":
                raise RunError("services", f"{name} exited: {container.logs()[-1500:].decode(errors='replace')}")
        if waiting and time.monotonic() > deadline:
            raise RunError("services", f"not ready within {READY_S:.0f} s: {', '.join(waiting)}")
        if waiting:
            time.sleep(0.05)
