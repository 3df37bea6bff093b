"""Isolation and cleanup of run resources: no route off the machine, leftovers of crashed runs reaped."""

from __future__ import annotations

import socket
import subprocess

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from taskpair.exceptions import RunError
from twinforge.processes import process_alive


def reap(cli: docker.DockerClient, *, everything: bool = False) -> dict[str, int]:
    """Remove twinforge-labelled containers and networks of runs whose runner process is gone.

    Args:
        cli: Docker client.
        everything: Remove every twinforge run resource on this host, live runner or not.

    Returns:
        Counts of removed ``containers`` and ``networks``.
    """
    host = socket.gethostname()
    removed = {"containers": 0, "networks": 0}

    def stale(labels: dict[str, str]) -> bool:
        if labels.get("twinforge.host") != host:
            return False
        return everything or not process_alive(int(labels.get("twinforge.pid", "0") or 0))

    for container in cli.containers.list(all=True, filters={"label": "twinforge.run"}):
        if stale(container.labels):
            try:
                container.remove(force=True)
                removed["containers"] += 1
            except NotFound:
                pass
    for network in cli.networks.list(filters={"label": "twinforge.run"}):
        if stale(network.attrs.get("Labels") or {}):
            try:
                network.remove()
                removed["networks"] += 1
            except NotFound:
                pass
    return removed


def drop_default_route(container: Container) -> None:
    """Delete the default route Docker adds even on an internal network, from the host side.

    An internal network already has no forwarding off the machine; without a default route the
    container cannot even try: only the run's own subnet is reachable. The change is made with
    ``nsenter`` into the container's network namespace, so the container needs no capability.

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
