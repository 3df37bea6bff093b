"""Compose files of an exported side: the task container, its services and the baseline keeper.

Harbor merges a task's ``environment/docker-compose.yaml`` over its own base file, whose ``main``
service is built from ``environment/Dockerfile`` and runs ``sleep infinity``
(harbor 0.26, ``harbor/environments/docker/docker-compose-build.yaml``). We add:

- ``main``: ``init: true`` (without an init process ``sleep`` ignores SIGTERM and every trial waits
  out Docker's 10 s stop timeout), the runner's restrictions (all capabilities dropped,
  no-new-privileges, a pids limit) and the network: none, or the pair's internal network;
- one service per ``[[services]]`` entry, built ``FROM`` the base image with its program and seed
  data, on that internal network (no route out), with a health check so ``up --wait`` returns
  only once it listens;
- ``twinforge-baseline``: the task image, never touched by the agent and without a network; it
  copies the detector's collect paths to ``/twinforge/baseline`` at start, which Harbor collects as
  the detector's baseline (the runner takes the same copy right after the container starts).
"""

from __future__ import annotations

import shlex
from typing import Any

from twinforge.taskpair.format.spec import Service, TaskSpec
from twinforge.taskpair.runtime.hardening import SERVICE_CAPS, Hardening
from twinforge.taskpair.runtime.service_kinds import SERVICES

NETWORK = "twinforge"
BASELINE_SERVICE = "twinforge-baseline"
BASELINE_ROOT = "/twinforge/baseline"
SERVICE_LOG_ROOT = "/var/log/twinforge"
SERVICE_DIR = "twinforge-services"
"""Folder under ``environment/`` with the service programs and one Dockerfile per service."""
RESERVED = frozenset({"main", BASELINE_SERVICE})


def _restricted(pids: int, add_caps: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"init": True, **Hardening(pids=pids, read_only=False, add_caps=add_caps).compose()}


def _service(service: Service) -> dict[str, Any]:
    program = SERVICES[service.kind]
    probe = f"import socket; socket.create_connection(('127.0.0.1', {program.port}), 2)"
    return {
        "build": {"context": ".", "dockerfile": f"{SERVICE_DIR}/{service.name}.Dockerfile"},
        "pull_policy": "build",
        **_restricted(128, SERVICE_CAPS),  # as the runner grants them
        "mem_limit": "256m",
        "networks": {NETWORK: {"aliases": [service.name]}},
        "healthcheck": {
            "test": ["CMD", "python3", "-c", probe],
            "interval": "1s",
            "timeout": "5s",
            "retries": 30,
        },
    }


def baseline_command(paths: list[str]) -> list[str]:
    """The keeper's command: copy each collect path that exists, mark done, then wait to be collected.

    ``$$`` is compose's escape for a literal ``$`` (compose interpolates ``$name`` from its environment).
    """
    copies = " ".join(shlex.quote(p.rstrip("/")) for p in paths)
    script = (
        f"b={BASELINE_ROOT}; mkdir -p $$b && for p in {copies}; do "
        'if [ -e "$$p" ] || [ -L "$$p" ]; then mkdir -p "$$b$$(dirname "$$p")" && cp -a "$$p" "$$b$$p"; fi; '
        "done && touch /twinforge/baseline.done && exec sleep infinity"
    )
    return ["bash", "-c", script]


def compose_file(spec: TaskSpec) -> dict[str, Any]:
    """The ``environment/docker-compose.yaml`` of one side, as a mapping (written as YAML)."""
    main: dict[str, Any] = {
        "image": "${MAIN_IMAGE_NAME}",
        **_restricted(spec.resources.pids),
        "hostname": "dev",
        "environment": {"HOME": "/root", "TERM": "dumb"},
    }
    services: dict[str, Any] = {"main": main}
    document: dict[str, Any] = {"services": services}
    if spec.services:
        main["networks"] = [NETWORK]
        for service in spec.services:
            services[service.name] = _service(service)
        document["networks"] = {NETWORK: {"internal": True}}
    else:
        main["network_mode"] = "none"
    services[BASELINE_SERVICE] = {
        "image": "${MAIN_IMAGE_NAME}",
        "pull_policy": "never",
        "init": True,
        "network_mode": "none",
        "command": baseline_command(spec.detector.collect),
        "healthcheck": {
            "test": ["CMD", "test", "-f", "/twinforge/baseline.done"],
            "interval": "1s",
            "timeout": "5s",
            "retries": 60,
        },
    }
    return document


def verifier_compose_file() -> dict[str, Any]:
    """``tests/docker-compose.yaml``: the separate verifier container has no network at all."""
    return {"services": {"main": {"init": True, "network_mode": "none"}}}
