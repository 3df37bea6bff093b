"""What one run created, and its teardown (docs/runtime.md, "Runner": every run is torn down).

Each removal is tried twice and reported, never raised: a teardown failure after the verdict is
recorded with the run and the verdict stands.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime import firewall
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.rundisk import RunDisk


@dataclass
class _Resources:
    """Everything one run created, so teardown can remove exactly that."""

    disk: RunDisk | None = None
    evidence: RunDisk | None = None
    blocked: bool = False
    network: Any = None
    services: dict[str, Container] = field(default_factory=dict)
    container: Container | None = None
    rooms: list[Any] = field(default_factory=list)
    """The run's clean rooms (:class:`~twinforge.taskpair.runtime.clean_room.CleanRoom`), one per judgement point."""
    writable: tuple[str, ...] = ()
    baseline: dict[str, Any] = field(default_factory=dict)
    watcher: Any = None
    """The run disk's watcher (:class:`~twinforge.taskpair.runtime.watcher.LayerWatcher`), from the agent's start."""


def teardown(cli: docker.DockerClient, run_id: str, res: _Resources) -> list[str]:
    """Remove everything of the run, each step on its own; returns what could not be removed.

    Args:
        cli: The Docker client.
        run_id: The run (its ``twinforge.run`` label).
        res: What the run created.


    Never raises: a Docker engine that does not answer (a timeout) is a problem to report, and
    each removal is tried twice before it is reported.
    """
    problems: list[str] = []
    if res.watcher is not None:  # its watches go before the disk is unmounted
        res.watcher.stop()
    label = {"label": f"twinforge.run={run_id}"}
    try:
        extra = cli.containers.list(all=True, filters=label, ignore_removed=True)
    except ENGINE_ERRORS:
        extra = []
    seen: set[str] = set()
    for item in [res.container, *(room.container for room in res.rooms), *res.services.values(), *extra]:
        if item is None or item.id in seen:
            continue
        seen.add(item.id)
        problem = _twice(partial(item.remove, force=True, v=False))
        if problem:
            problems.append(f"container {item.name}: {problem}")
    if res.network is not None:
        problem = _twice(res.network.remove)
        if problem:
            problems.append(f"network {res.network.name}: {problem}")
    if res.blocked:
        try:
            problem = firewall.unblock(run_id, os.getpid())
        except (OSError, RunError) as exc:
            problem = str(exc)
        if problem:
            problems.append(f"packet filter: {problem}")
    disks = [("run disk", res.disk), ("evidence disk", res.evidence), *(("clean room disk", r.disk) for r in res.rooms)]
    for what, disk in disks:
        if disk is None:
            continue
        try:
            problem = disk.remove()
        except OSError as exc:
            problem = str(exc)
        if problem:
            problems.append(f"{what}: {problem}")
    return problems


def _twice(remove: Callable[[], object]) -> str | None:
    """Call ``remove`` (a Docker removal); a second try after a failure; ``None`` when done or already gone."""
    problem = None
    for _ in range(2):
        try:
            remove()
            return None
        except NotFound:
            return None
        except ENGINE_ERRORS as exc:
            problem = f"{type(exc).__name__}: {exc}"
    return problem
