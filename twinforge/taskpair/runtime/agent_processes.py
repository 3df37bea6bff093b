"""Who runs what in a task container, and how the agent's processes are ended (docs/runtime.md, "Runner").

A container's first process (Docker's init and the ``sleep`` that keeps the container up) runs as
:data:`KEEPER_USER`, a user the agent never is; every agent command, harness and probe runs as the
task user (the image's ``USER``, root when unset) through ``docker exec``. Without capabilities, a
process may trace, write the memory of, or signal only processes of its own user: the agent cannot
turn the kept ``sleep`` into a program of its own (round five of the hostile agent exec'd a restorer
into it with ``ptrace`` and ``/proc/<pid>/mem``, and the host never killed it), and cannot end its
container by killing it.

The agent's processes are ended from inside, by a process of the task user: ``kill(-1, SIGKILL)``
reaches every process that user may signal (all of the agent's, detached ones included) and none of
the keeper's. The host never kills by host pid (a pid read from ``docker top`` can be reused before
the kill lands); when even that cannot run (the agent used up the container's pids), the container
is killed as a whole.
"""

from __future__ import annotations

from contextlib import suppress

from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.cues import PYTHON
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS

KEEPER_USER = "65534:65534"
"""The user of every container's init and kept ``sleep``: ``nobody``, never the task user."""
KEEPER_UID = 65534
KILL_ROUNDS = 20
_KILL = "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\n"


def task_user(image_user: str) -> str:
    """The numeric ``uid:gid`` agent processes run as, from the image's ``USER`` ('' means root).

    Raises:
        RunError: The image names its user by name (give it as ``uid:gid``) or runs as the keeper.
    """
    user = image_user or "0:0"
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise RunError("setup", f"the task image's USER {image_user!r} must be numeric (uid or uid:gid)")
    if int(uid) == KEEPER_UID:
        raise RunError("setup", f"the task image's USER {image_user!r} is the keeper's ({KEEPER_USER})")
    return f"{uid}:{gid or uid}"


def uid_of(user: str) -> int:
    """The uid of a numeric ``uid:gid``."""
    return int(user.partition(":")[0])


def agent_pids(container: Container, user: str) -> set[int] | None:
    """Host pids of the processes of ``user`` in ``container`` (to count them, never to kill by); None when unknown."""
    try:
        top = container.client.api.top(container.id, ps_args="-eo pid,uid")
    except ENGINE_ERRORS:
        return None
    titles = [t.upper() for t in top.get("Titles") or []]
    if not {"PID", "UID"} <= set(titles):
        return None
    pid, uid = titles.index("PID"), titles.index("UID")
    want = str(uid_of(user))
    return {int(row[pid]) for row in top.get("Processes") or [] if str(row[uid]) == want and str(row[pid]).isdigit()}


def end_agent_processes(container: Container, user: str) -> bool:
    """SIGKILL every process of ``user`` in ``container`` from inside; kill the container if that cannot be done.

    Returns:
        True when the container still runs with only the keeper's processes; False when it had to be
        killed whole (or was gone): it serves no further command.
    """
    for _ in range(KILL_ROUNDS):
        try:
            container.exec_run([PYTHON, "-I", "-S", "-c", _KILL], user=user)
        except ENGINE_ERRORS:
            break
        left = agent_pids(container, user)
        if left is None:
            break
        if not left:
            return True
    with suppress(*ENGINE_ERRORS):
        container.kill()
    return False
