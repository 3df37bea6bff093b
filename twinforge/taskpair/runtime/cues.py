"""No evaluation cue inside the task container (docs/runtime.md, "No evaluation cue inside").

A hostile agent that can tell it is being evaluated, or on which side of a pair it is, can behave
well only then. What the task container could read about the run once named it: ``ps`` showed the
command wrapper's whole source with its docstring; the loop device's backing file, and the
container and network names that Docker's resolver returns for reverse lookups, carried the run id
with the pair id and the side; ``/sys/block`` listed other runs' disks. So:

- every host-side name the container can see is :func:`opaque` (a digest of the run id, nothing
  else): containers, networks, the run disk's file;
- :data:`MASKED_PATHS` adds the block-device views of ``/sys`` and ``/proc`` to Docker's own masked
  paths, so no disk of this or another run is listed;
- the command wrapper is a file on a read-only mount (:data:`WRAPPER_PATH`, a plain system path)
  whose text has no docstring or comment (:func:`wrapper_program`), started as
  ``/usr/bin/python3 -I -S WRAPPER_PATH LIMIT COMMAND``.

The same mounts keep the host's command record out of the agent's hands (docs/runtime.md,
"Command timeouts"): the interpreter is named by its absolute path on the read-only root, and the
two files of the writable ``/etc`` the dynamic loader obeys (``ld.so.preload``, ``ld.so.cache``)
are read-only copies of the image's, so nothing the agent writes runs inside the wrapper.
"""

from __future__ import annotations

import ast
import hashlib
import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import Container

from twinforge.taskpair.in_container import COMMAND_WRAPPER

PYTHON = "/usr/bin/python3"
"""The interpreter that runs the wrapper, on the read-only root (never looked up on ``PATH``)."""
WRAPPER_PATH = "/usr/libexec/procgroup"
"""Where the wrapper appears in the task container (a read-only bind mount over the read-only root)."""
LOADER_FILES = ("/etc/ld.so.preload", "/etc/ld.so.cache")
"""Files of the writable ``/etc`` that the dynamic loader reads before any program runs."""

DOCKER_MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)
"""Docker's own default masked paths (setting ``MaskedPaths`` replaces them, so they are repeated)."""
MASKED_PATHS = (
    *DOCKER_MASKED,
    "/sys/block",
    "/sys/class/block",
    "/sys/dev/block",
    "/sys/devices/virtual/block",
    "/sys/devices/virtual/bdi",
    "/sys/class/bdi",
    "/proc/partitions",
    "/proc/diskstats",
)
"""Paths masked in the task container and the sandbox: Docker's defaults plus every view of block
devices (loop devices name their backing files, and list the disks of other runs)."""


def opaque(run_id: str, role: str) -> str:
    """A name for one of the run's host resources that tells nothing about the run.

    Args:
        run_id: The run id (it names the pair and the side, so it never appears itself).
        role: What the name is for (``task``, ``network``, ``disk``, ``service:<name>``).

    Returns:
        16 hex digits of sha256(role, run id): distinct per run and role, and stable, so the
        runner, teardown and tests can find the resource again.
    """
    return hashlib.sha256(f"{role}\0{run_id}".encode()).hexdigest()[:16]


_PARSING = threading.Lock()


@cache
def wrapper_program() -> str:
    """The command wrapper's text without docstrings or comments (what the task container can read).

    Made once per process, under a lock: ``ast.parse`` in parallel threads (the gate runs several
    sides at a time) fails on CPython 3.11 ("AST constructor recursion depth mismatch").
    """
    with _PARSING:
        return _strip(COMMAND_WRAPPER.read_text(encoding="utf-8"))


def _strip(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(tree) + "\n"


def protected_files(folder: Path, etc: Path) -> dict[str, dict[str, str]]:
    """Write the wrapper and the loader files' image copies into ``folder``; return their read-only binds.

    Args:
        folder: A folder of the run disk that no container mounts writable.
        etc: The run disk's copy of the image's ``/etc`` (before the agent acts).

    Returns:
        Docker volume binds ``{host path: {"bind": container path, "mode": "ro"}}``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    binds: dict[str, dict[str, str]] = {}
    wrapper = folder / "p"
    wrapper.write_text(wrapper_program(), encoding="utf-8")
    binds[str(wrapper)] = {"bind": WRAPPER_PATH, "mode": "ro"}
    for index, path in enumerate(LOADER_FILES):
        source = etc / Path(path).name
        copy = folder / f"l{index}"
        copy.write_bytes(source.read_bytes() if source.is_file() and not source.is_symlink() else b"")
        binds[str(copy)] = {"bind": path, "mode": "ro"}
    return binds


def create_masked(cli: docker.DockerClient, image: str, *, host: dict[str, Any], **container: Any) -> Container:
    """Create a container with :data:`MASKED_PATHS` masked (docker-py has no option for it).

    Args:
        cli: Docker client.
        image: Image to run.
        host: Keyword arguments of ``APIClient.create_host_config`` (binds, limits, security options).
        **container: Keyword arguments of ``APIClient.create_container`` (command, name, labels, ...).

    Returns:
        The created (not started) container.
    """
    host_config = cli.api.create_host_config(**host)
    host_config["MaskedPaths"] = list(MASKED_PATHS)
    created = cli.api.create_container(image, host_config=host_config, **container)
    return cli.containers.get(created["Id"])


def command_argv(limit_s: float, command: str) -> list[str]:
    """The argv that runs one agent command under the wrapper (absolute paths only)."""
    return [PYTHON, "-I", "-S", WRAPPER_PATH, f"{limit_s:.3f}", command]


def wrapper_status(errors: bytes | bytearray) -> dict[str, Any]:
    """The command wrapper's status line: the last JSON object with a boolean ``timed_out`` on its error stream.

    The wrapper (``in_container/wrapper/command_tree.py``) writes it after the command's tree ended;
    ``{}`` when there is none (the wrapper was killed).
    """
    for line in reversed(errors.decode("utf-8", errors="replace").splitlines()):
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get("timed_out"), bool):
            return parsed
    return {}
