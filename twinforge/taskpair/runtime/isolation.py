"""Isolation and cleanup of run resources (docs/runtime.md, "Network isolation", "Teardown and reaping").

Every container, volume and network of a run carries the labels ``twinforge.run``,
``twinforge.pid`` and ``twinforge.host``; its packet-filter rules and its run disk carry the same
pid. ``reap`` removes what belongs to runner processes that no longer exist, in dependency order:
containers, then volumes, then networks, then rules, then disks.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from twinforge.core.processes import process_alive
from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.firewall import reap_rules
from twinforge.taskpair.runtime.rundisk import reap_disks, reap_templates


def _stale(everything: bool) -> Callable[[dict[str, str]], bool]:
    host = socket.gethostname()

    def stale(labels: dict[str, str]) -> bool:
        if labels.get("twinforge.host") != host:
            return False
        return everything or not process_alive(int(labels.get("twinforge.pid", "0") or 0))

    return stale


def reap(cli: docker.DockerClient, *, everything: bool = False) -> dict[str, int]:
    """Remove twinforge run resources whose runner process is gone.

    Args:
        cli: Docker client.
        everything: Remove every twinforge run resource on this host, live runner or not.

    Returns:
        Counts of removed ``containers``, ``volumes``, ``networks``, ``rules``, ``disks`` and disk
        ``templates`` (of images that no longer exist).
    """
    stale = _stale(everything)
    removed = {"containers": 0, "volumes": 0, "networks": 0, "rules": 0, "disks": 0, "templates": 0}
    for container in cli.containers.list(all=True, filters={"label": "twinforge.run"}, ignore_removed=True):
        if stale(container.labels):
            try:
                container.remove(force=True)
                removed["containers"] += 1
            except NotFound:
                pass
    for volume in cli.volumes.list(filters={"label": "twinforge.run"}):
        if stale(volume.attrs.get("Labels") or {}):
            try:
                volume.remove(force=True)
                removed["volumes"] += 1
            except (NotFound, DockerException):
                pass
    for network in cli.networks.list(filters={"label": "twinforge.run"}):
        if stale(network.attrs.get("Labels") or {}):
            try:
                network.remove()
                removed["networks"] += 1
            except NotFound:
                pass
    removed["rules"] = reap_rules(everything=everything)
    removed["disks"] = reap_disks(everything=everything)
    try:
        removed["templates"] = reap_templates({str(image.id) for image in cli.images.list(all=True)})
    except DockerException:
        removed["templates"] = 0
    return removed


def leftovers(cli: docker.DockerClient, run_id: str) -> dict[str, int]:
    """Docker resources still labelled with ``run_id`` (tests count them after a run)."""
    label = {"label": f"twinforge.run={run_id}"}
    return {
        "containers": len(cli.containers.list(all=True, filters=label, ignore_removed=True)),
        "volumes": len(cli.volumes.list(filters=label)),
        "networks": len(cli.networks.list(filters=label)),
    }


def drop_default_route(container: Container) -> None:
    """Delete the default route Docker adds even on an internal network, from the host side.

    Defence in depth next to the packet-filter rules (``twinforge.taskpair.runtime.firewall``): without a default
    route only the run's own subnet is even addressable. The change is made with ``nsenter`` into
    the container's network namespace, so the container needs no capability.

    Raises:
        RunError: The route could not be removed (the run does not start without isolation).
    """
    container.reload()
    pid = container.attrs["State"]["Pid"]
    done = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "ip", "route", "del", "default"], capture_output=True, text=True
    )
    if done.returncode != 0 and "No such process" not in done.stderr:
        raise RunError("isolation", f"could not remove the default route of {container.name}: {done.stderr.strip()}")
