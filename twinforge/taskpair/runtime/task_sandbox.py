"""Agent code run again where it ran: in the task container, after the agent's processes are gone.

A detector that executes the agent's final code (hidden oracle cases, a probe) must not run it
anywhere that code can tell from its real use (docs/runtime.md, "Sandbox"). A fresh container
always differs somewhere: the copies of the state sat on a tmpfs (``/proc/self/mountinfo`` showed
it), the program came in as ``python3 -`` (``sys.argv == ['-']``), its init was seconds old, and
an R8 fix that applied only under those tells passed every hidden case while the user's code stayed
broken. So during a run the runner keeps the task container after the agent stopped: every process
but the container's init and its ``sleep`` is killed (the agent's, detached ones included), the
state is collected, and each sandbox request of the detector then runs in that container, as one
of the agent's commands ran:

- the same file systems (the run disk's folders where the agent left them, the read-only root),
  user, host name, environment, working folder and masked paths, the same init (so the same age);
- started through the same command wrapper (``/usr/libexec/procgroup``), under ``bash -c``, with
  standard input ``/dev/null`` and output and errors on one pipe;
- a program as a script file written into the container's ``/tmp`` with a ``tempfile``-style name
  (``/tmp/tmpk2j9x0qa.py``) and owned by the task user, removed afterwards.

After each request every process but init and ``sleep`` is killed again. What a request leaves in
the file system stays for the next one, as it would for the user's next command. When the agent
made that impossible (it ended its container by killing its ``sleep``, left processes that cannot
be killed, filled its disk or made ``/tmp`` unusable), a request is refused (:class:`AgentDoing`)
and the run is UNDETERMINED by the agent: a restarted container is younger than the one the agent
used, a fresh one shows its tmpfs, and code that behaved only there once passed every hidden case.
A request with ``stdin`` or ``files``, and every request when no task container is left (a detector
run again over saved evidence), runs in a fresh container instead
(``twinforge.taskpair.runtime.sandbox``).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.channel import SandboxRequest
from twinforge.taskpair.runtime.cues import command_argv
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.sandbox import OUTPUT_TAIL, SandboxReply, request_paths, script_path


class AgentDoing(RunError):
    """The agent's code cannot be run again where it ran, by the agent's own doing (docs/runtime.md, "Sandbox").

    It ended its container (killed its ``sleep``), left processes that cannot be killed, filled its
    disk, or made ``/tmp`` unusable: a restarted or fresh container would differ in ways its code can
    see, so the request is refused and the run is UNDETERMINED by the agent (``UndeterminedCause``).
    """

    def __init__(self, message: str) -> None:
        super().__init__("sandbox", message)


TOP_TRIES = 3
"""Times ``docker top`` is asked before the engine counts as not answering (a loaded host is slow)."""
GRACE_S = 3.0
"""After the limit, how long the wrapper has to report before the host kills (as for the agent's commands)."""
KILL_ROUNDS = 20


def container_pids(container: Container) -> dict[int, tuple[int, int]] | None:
    """Host pid -> (uid, gid) of each process of ``container`` (``docker top``); None when the engine is silent."""
    for _ in range(TOP_TRIES):
        try:
            top = container.client.api.top(container.id, ps_args="-eo pid,uid,gid")
            break
        except ENGINE_ERRORS:
            continue
    else:
        return None
    titles = [t.upper() for t in top.get("Titles") or []]
    if not {"PID", "UID", "GID"} <= set(titles):
        return None
    pid, uid, gid = titles.index("PID"), titles.index("UID"), titles.index("GID")
    found = {}
    for row in top.get("Processes") or []:
        if all(str(row[i]).isdigit() for i in (pid, uid, gid)):
            found[int(row[pid])] = (int(row[uid]), int(row[gid]))
    return found


def kill_except(container: Container, keep: set[int]) -> bool | None:
    """SIGKILL every process of ``container`` but ``keep`` (host pids), in rounds.

    Returns:
        True when none is left, False when some survived every round, None when the engine did not
        say which processes run (nothing is known: not the agent's doing).
    """
    for _ in range(KILL_ROUNDS):
        pids = container_pids(container)
        if pids is None:
            return None
        victims = set(pids) - keep
        if not victims:
            return True
        for pid in victims:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    left = container_pids(container)
    return None if left is None else not set(left) - keep


@dataclass
class TaskSandbox:
    """The task container kept after the agent stopped, where the detector's requests run.

    Attributes:
        container: The task container.
        tmp: The host folder that is the container's ``/tmp`` (a folder of the run disk).
        keep: Host pids of the container's init and its ``sleep``.
    """

    container: Container
    tmp: Path
    keep: set[int]
    lock: threading.Lock = field(default_factory=threading.Lock)
    problem: str = ""
    """Why requests cannot run here ('' while they can)."""
    by_agent: bool = True
    """Whether ``problem`` is the agent's doing (else the engine's)."""

    @classmethod
    def after_agent(cls, container: Container, tmp: Path, keep: set[int], *, oom: bool = False) -> TaskSandbox:
        """Stop everything the agent left running in ``container`` and keep the container for the detector.

        A container that is no longer running (the agent killed its ``sleep``) or whose processes
        cannot all be killed (then it is killed whole) cannot serve requests: they are refused as
        the agent's doing, unless the memory limit ended it (``oom``: a run failure recorded apart).
        """
        problem, by_agent = "", True
        try:
            container.reload()
            if container.status != "running":
                problem = "the agent ended its own task container"
            else:
                killed = kill_except(container, keep)
                if killed is None:
                    problem, by_agent = "the engine did not say which processes run in the task container", False
                elif not killed:
                    problem = "the agent left processes in its container that could not be killed"
                if problem:
                    container.kill()
        except ENGINE_ERRORS as exc:
            problem, by_agent = f"the task container does not answer ({exc})", False
        if oom:
            problem, by_agent = "the task container hit its memory limit", False
        return cls(container, tmp, keep, problem=problem, by_agent=by_agent)

    def stop(self) -> None:
        """Kill the container (before teardown, or when it will not serve requests)."""
        with suppress(*ENGINE_ERRORS):
            self.container.kill()

    def run(self, request: SandboxRequest, *, state: Path, default_path: str, timeout_s: float) -> SandboxReply | None:
        """Run one request in the task container; ``None`` when it must run in a fresh container instead.

        Args:
            request: The detector's request.
            state: The run's collected state (the request's paths must have been collected).
            default_path: The path used when the request names none.
            timeout_s: Wall-clock limit (the wrapper kills the command's whole tree there).

        Raises:
            RunError: A path was not collected, or the engine failed while the command ran.
        """
        if request.stdin or request.files:
            return None
        _paths, _sources, cwd = request_paths(request, state, default_path)
        if self.problem:
            message = f"{self.problem}: its code cannot be run again where it ran"
            raise AgentDoing(message) if self.by_agent else RunError("sandbox", message)
        with self.lock:
            owner = self._ready()
            argv = list(request.command)
            script = None
            if request.script is not None:
                script = script_path()
                host = self.tmp / Path(script).name
                try:
                    host.write_text(request.script, encoding="utf-8")
                    os.chown(host, *owner)
                    host.chmod(0o600)
                except OSError as exc:  # the agent filled its disk: no room for the program here
                    with suppress(OSError):
                        host.unlink()
                    raise AgentDoing(f"the probe's program cannot be written to /tmp ({exc.strerror or exc})") from exc
                argv.append(script)
            try:
                reply = self._exec(shlex.join(argv), cwd, request.env, timeout_s)
                if script is not None and f"can't open file '{script}'" in reply.stdout:
                    raise AgentDoing("the agent made /tmp unusable: the probe's program cannot be opened there")
                return reply
            finally:
                kill_except(self.container, self.keep)
                if script is not None:
                    with suppress(OSError):
                        (self.tmp / Path(script).name).unlink()

    def _ready(self) -> tuple[int, int]:
        """The task user's (uid, gid): the image's numeric ``USER`` (root when unset), else its init's.

        Raises:
            RunError: The container stopped after the agent (not the agent's doing: its processes
                were gone) or the engine does not answer.
        """
        try:
            self.container.reload()
        except ENGINE_ERRORS as exc:
            raise RunError("sandbox", f"the task container does not answer ({exc})") from exc
        if self.container.status != "running":
            raise RunError("sandbox", "the task container stopped after the agent's processes were gone")
        user = str(self.container.attrs.get("Config", {}).get("User") or "")
        uid, _, gid = user.partition(":")
        if not user:
            return 0, 0
        if uid.isdigit():
            return int(uid), int(gid) if gid.isdigit() else int(uid)
        pids = container_pids(self.container) or {}
        owners = [pids[p] for p in sorted(self.keep) if p in pids]
        if not owners:
            raise RunError("sandbox", f"the task user {user!r} has no process to read its ids from")
        return owners[-1]

    def _exec(self, command: str, cwd: str, env: dict[str, str], timeout_s: float) -> SandboxReply:
        api = self.container.client.api
        try:
            exec_id = api.exec_create(
                self.container.id, command_argv(timeout_s, command), workdir=cwd, environment=env or None
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except ENGINE_ERRORS as exc:
            raise RunError("sandbox", f"the task container did not run the request: {exc}") from exc
        fired = threading.Event()

        def backstop() -> None:
            fired.set()
            kill_except(self.container, self.keep)

        timer = threading.Timer(timeout_s + GRACE_S, backstop)
        timer.daemon = True
        timer.start()
        out, errors = bytearray(), bytearray()
        try:
            for chunk, err in stream:
                if chunk:
                    out += chunk
                    if len(out) > 2 * OUTPUT_TAIL:
                        del out[: len(out) - OUTPUT_TAIL]
                if err and len(errors) < OUTPUT_TAIL:
                    errors += err[: OUTPUT_TAIL - len(errors)]
        except ENGINE_ERRORS:
            pass
        finally:
            timer.cancel()
        status = _status(errors.decode("utf-8", errors="replace"))
        try:
            code = api.exec_inspect(exec_id).get("ExitCode")
        except ENGINE_ERRORS:
            code = None
        timed_out = bool(status.get("timed_out")) or fired.is_set()
        text = out[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
        return SandboxReply(int(code) if code is not None and not timed_out else -9, text, "", timed_out)


def _status(errors: str) -> dict[str, Any]:
    """The wrapper's status line (the last JSON object on its own error stream)."""
    for line in reversed(errors.splitlines()):
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get("timed_out"), bool):
            return parsed
    return {}
