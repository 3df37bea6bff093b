"""Did the kernel kill a process of a container at its memory limit? (docs/runtime.md, "Limits").

Docker's ``State.OOMKilled`` only says so when the container's own init was killed (it is set
when the container exits); a command the agent runs is a child of that init, so its memory kill
leaves the flag false and the container running. Docker's ``oom`` event comes asynchronously,
so waiting for it would be a race. The kernel's own counter is exact and synchronous: the
``oom_kill`` line of the container's memory cgroup (``memory.oom_control`` on cgroup v1,
``memory.events`` on cgroup v2, kernel 4.13 or newer), found through ``/proc/<pid>/cgroup`` of the
container's init on the host. Read it before the container is stopped (its cgroup goes with it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_oom_kills(pid: int, *, proc: Path = Path("/proc"), root: Path = CGROUP_ROOT) -> int | None:
    """How many processes the kernel killed in the memory cgroup of host process ``pid``.

    Args:
        pid: A host pid inside the container (its init: ``State.Pid``).
        proc: The host's ``/proc`` (a folder in tests).
        root: Where the cgroup file systems are mounted (a folder in tests).

    Returns:
        The ``oom_kill`` count, or ``None`` when the process, its cgroup or the counter cannot be
        read (an old kernel, another layout): the caller then knows nothing, not "no kill".
    """
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        relative = path.lstrip("/")
        if "memory" in controllers.split(","):  # cgroup v1: the memory hierarchy
            candidates.append(root / "memory" / relative / "memory.oom_control")
        elif parts[0] == "0" and controllers == "":  # cgroup v2: the unified hierarchy
            candidates.append(root / relative / "memory.events")
    for candidate in candidates:
        try:
            text = candidate.read_text()
        except OSError:
            continue
        for row in text.splitlines():
            key, _, value = row.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def memory_killed(attrs: dict[str, Any], *, proc: Path = Path("/proc"), root: Path = CGROUP_ROOT) -> bool:
    """True when the container's init or any of its processes was killed at the memory limit.

    Args:
        attrs: The container's inspect data (``container.attrs`` after ``reload()``).
        proc: The host's ``/proc`` (a folder in tests).
        root: Where the cgroup file systems are mounted (a folder in tests).
    """
    state = attrs.get("State") or {}
    if state.get("OOMKilled"):
        return True
    pid = state.get("Pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    return bool(cgroup_oom_kills(pid, proc=proc, root=root))
