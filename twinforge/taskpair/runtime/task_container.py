"""The task container and its clean rooms: made alike, frozen alike (docs/runtime.md, "Runner", "Clean room").

Every container a run gives the agent's code (the task container, and one clean room per judgement
point) is created by :func:`create_task_container` with the same options, so code cannot tell them
apart by how they were made. :func:`freeze` is the one way a judgement point stops everything in one
at once (``docker pause``, the cgroup freezer).
"""

from __future__ import annotations

from contextlib import suppress

import docker
from docker.models.containers import Container
from docker.types import LogConfig

from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.runtime.agent_processes import KEEPER_USER
from twinforge.taskpair.runtime.clean_room import CleanRoom
from twinforge.taskpair.runtime.cues import create_masked, opaque, protected_files
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.hardening import Hardening
from twinforge.taskpair.runtime.resources import _Resources
from twinforge.taskpair.runtime.rundisk import RunDisk

# Folders of the task container that stay writable (on the run disk); the rest of the root file
# system is read-only. Docker fills each from the image when the container is created.
WRITABLE = ("/etc", "/root", "/home", "/tmp", "/var", "/opt", "/srv", "/mnt", "/media", "/run", "/usr/local")
LOGS = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"})


def create_task_container(
    cli: docker.DockerClient,
    disk: RunDisk,
    run_id: str,
    role: str,
    side: Side,
    image: str,
    labels: dict[str, str],
    writable: tuple[str, ...],
    memory: dict[str, str] | None,
    network: str,
) -> Container:
    """Create (not start) a task container or a clean room: the same options, its own disk and name.

    Its init and ``sleep`` run as the keeper, never as the task user.

    Args:
        cli: Docker client.
        disk: The run disk whose ``task/<path>`` folders become its writable folders.
        run_id: The run (its opaque name comes from it and ``role``).
        role: ``task`` or ``clean:<n>``.
        side: The side (work folder, limits).
        image: The image.
        labels: The run's labels.
        writable: The writable folders.
        memory: tmpfs mounts (a CLI harness's session store).
        network: ``none`` or the run network's name.
    """
    spec = side.spec
    volumes = {str(disk.folder("task" + path)): {"bind": path, "mode": "rw"} for path in writable}
    # docs/runtime.md, "No evaluation cue inside": opaque names, masked block devices, the
    # wrapper and the loader's files read-only
    volumes.update(protected_files(disk.folder("ro"), disk.root / "task" / "etc"))
    return create_masked(
        cli,
        image,
        command=["sleep", "infinity"],
        name=opaque(run_id, role),
        hostname="dev",
        labels=labels,
        user=KEEPER_USER,
        working_dir=spec.workdir,
        environment={"HOME": "/root", "TERM": "dumb"},
        volumes=[v["bind"] for v in volumes.values()],
        host={
            "binds": volumes,
            "tmpfs": dict(memory or {}),
            "network_mode": network,
            **Hardening(
                pids=spec.resources.pids, memory_mb=spec.resources.memory_mb, cpus=spec.resources.cpus
            ).options(),
            "init": True,
            "log_config": LOGS,
        },
    )


PAUSE_TRIES = 2
STOP_WAIT_S = 30


def freeze(container: Container, *, or_stop: bool = True) -> bool:
    """Freeze every process of ``container`` at once (``docker pause``, the cgroup freezer).

    A freezer that cannot freeze (tasks held in uninterruptible I/O: round six's red team kept
    ``fsync`` loops running) is answered by stopping the container whole when ``or_stop``: a stopped
    container runs nothing either, and its file system is read the same way.

    Args:
        container: The task container.
        or_stop: Kill it whole when it cannot be frozen (the end of a run; a boundary must not).

    Returns:
        True when nothing in it runs any more (frozen or stopped); False when the engine would do neither.
    """
    for _ in range(PAUSE_TRIES):
        try:
            container.reload()
            if container.status in ("paused", "exited", "dead", "created"):
                return True
            container.pause()
            return True
        except ENGINE_ERRORS:
            continue
    if not or_stop:
        return False
    with suppress(*ENGINE_ERRORS):
        container.kill()
    with suppress(*ENGINE_ERRORS):
        container.wait(timeout=STOP_WAIT_S)
    try:
        container.reload()
    except ENGINE_ERRORS:
        return False
    return container.status in ("exited", "dead")


def next_room(res: _Resources) -> CleanRoom | None:
    """The first clean room no judgement point took yet (None when all are taken: fresh containers then)."""
    room: CleanRoom
    for room in res.rooms:
        if not room.taken:
            room.taken = True
            return room
    return None
