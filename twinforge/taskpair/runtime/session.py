"""A live run: the task container is up; the agent acts through :meth:`Session.exec`.

Each command runs under the command wrapper (``in_container/wrapper/command_tree.py``, docs/runtime.md,
"Command timeouts"): an isolated Python process in the container, started by absolute paths from a
read-only mount, that is a child subreaper of the command, so at the timeout it kills the command's
whole tree, new sessions and double forks included. The exit code is the engine's (the wrapper
exits with the command's), never a line the container prints. The host keeps
a backstop: if the wrapper does not report within the limit plus a grace period (it was killed,
stopped or tampered with), every process of the task user is killed from inside, never by host pid
(``twinforge.taskpair.runtime.agent_processes``).
Output is streamed and only its tail is kept, so a command that prints gigabytes costs nothing.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from docker.errors import APIError, DockerException
from docker.models.containers import Container
from pydantic import BaseModel
from requests.exceptions import RequestException

from twinforge.core.text import storable
from twinforge.taskpair.format.outcomes import Outcome, UndeterminedCause, Verdict
from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.runtime.agent_processes import end_agent_processes
from twinforge.taskpair.runtime.cues import command_argv, wrapper_status
from twinforge.taskpair.runtime.rundisk import RunDisk
from twinforge.taskpair.runtime.turn_records import TurnRecord

MAX_OUTPUT_CHARS = 64 * 1024
MAX_STATUS_BYTES = 64 * 1024
GRACE_S = 3.0  # after the limit, how long the wrapper has to report before the host kills


class CommandRecord(BaseModel):
    """One command the agent ran, as the host saw it (the agent cannot edit this record)."""

    command: str
    exit_code: int
    output: str
    seconds: float
    killed: bool
    output_bytes: int = 0
    """Bytes the command printed (``output`` keeps the last 64 KiB)."""


class RunResult(BaseModel):
    """Everything a run produced; saved as ``runs/<run-id>/result.json``.

    Attributes:
        run_id: Unique id, also the label on every Docker resource of the run.
        pair: Pair id.
        side: ``risk`` or ``twin``.
        outcome: COMPROMISED / COMPLETED / INCOMPLETE / STOPPED / UNDETERMINED / OVERTIME.
        verdict: The detector's verdict, ``None`` when it failed.
        detector_error: Why there is no verdict (the failing step: collect, detector, serialise, ...).
        undetermined_cause: Whose doing an UNDETERMINED outcome is (the agent's, the pair's or the
            infrastructure's); ``None`` for every other outcome.
        overtime: The wall-clock turn budget ran out (a memory kill is not OVERTIME; see ``oom_killed``).
        oom_killed: The task container hit its memory limit: a run failure, UNDETERMINED with that cause
            unless the verdict shows harm or the goal (docs/runtime.md, "Limits").
        disk_full: The run used up its disk limit (the agent was stopped there).
        commands: How many commands ran.
        timings: Seconds per phase (setup, agent, collect, detector, teardown, total).
        evidence_dir: Where the evidence lives.
        image: The task image the run used (the sandbox of a detector rerun uses it too).
        agent_error: The agent or harness raised instead of ending (the run was still judged).
        cleanup_error: What failed after the detector gave its verdict (teardown); the verdict and
            its outcome stand (docs/calibration.md, "Outcomes").
        detector_digest: Digest of the side's ``detector/`` folder that judged the run.
        turns: The run's user turns (start, end, model calls, commands, the detector at each
            boundary); empty for a run that did not record turns (docs/runtime.md, "User turns").
        harm_turn: The turn in which harm first showed (``None`` unless the verdict is harmful).
    """

    run_id: str
    pair: str
    side: str
    outcome: Outcome
    verdict: Verdict | None
    detector_error: str | None = None
    undetermined_cause: UndeterminedCause | None = None
    overtime: bool = False
    oom_killed: bool = False
    disk_full: bool = False
    commands: int = 0
    timings: dict[str, float] = {}
    evidence_dir: str
    image: str = ""
    agent_error: str | None = None
    cleanup_error: str | None = None
    detector_digest: str = ""
    turns: list[TurnRecord] = []
    harm_turn: int | None = None


@dataclass
class Session:
    """A live run: the task container is up with its services; the agent acts through :meth:`exec`.

    Attributes:
        run_id: The run id.
        side: The side being run.
        container: The task container.
        deadline: ``time.monotonic()`` value at which the turn budget ends.
        records: Commands run so far.
        disk: The run disk (its free space is checked after each command).
        user: The task user (numeric ``uid:gid``) every command runs as; the container's init and
            ``sleep`` run as the keeper (docs/runtime.md, "Runner").
        ended: Why the agent can act no more (disk full, container gone); '' while it can.
    """

    run_id: str
    side: Side
    container: Container
    deadline: float
    records: list[CommandRecord] = field(default_factory=list)
    overtime: bool = False
    final_message: str = ""
    result: RunResult | None = None
    disk: RunDisk | None = None
    user: str = "0:0"
    ended: str = ""
    disk_full: bool = False
    failure: str = ""
    """Why the run cannot be judged safe whatever the detector says short of harm or the goal (a harness
    that offered no task tools, a missing model channel log); '' when none (docs/runtime.md, "Runner")."""
    turns: list[TurnRecord] = field(default_factory=list)
    """The user turns so far (``twinforge.taskpair.runtime.turns.UserTurns`` keeps them)."""
    judge: Callable[[int], tuple[Verdict | None, str | None]] | None = None
    """The side's detector over evidence collected now, for the end of turn ``n`` (set by the runner;
    docs/runtime.md, "User turns")."""

    def exec(self, command: str, timeout_s: float | None = None) -> CommandRecord:
        """Run one shell command in the task container's work folder; its whole tree is killed at the timeout.

        The per-command timeout is the task's (30 s by default) unless ``timeout_s`` is given; no
        command runs past the turn deadline. A command refused for lack of time marks the run
        overtime; after the run disk filled up or the container ended, commands are refused.
        """
        remaining = self.deadline - time.monotonic()
        if self.ended or remaining <= 0:
            if not self.ended:
                self.overtime = True
            reason = self.ended or "turn budget exhausted"
            record = CommandRecord(command=storable(command), exit_code=-1, output=reason, seconds=0, killed=True)
            self.records.append(record)
            return record
        limit = max(0.1, min(timeout_s or self.side.spec.agent.command_timeout_s, remaining))
        started = time.monotonic()
        output, size, status, exit_code, backstop = self._run(command, limit)
        killed = bool(status.get("timed_out")) or backstop
        if killed and time.monotonic() >= self.deadline - 0.05:
            self.overtime = True
        if self.disk is not None and self.disk.full():
            self.disk_full = True
            self.ended = f"the run's disk limit ({self.disk.size_mb} MiB) is used up; the run ended"
            output += f"\n[{self.ended}]"
        record = CommandRecord(
            command=storable(command),
            exit_code=exit_code,
            output=output[-MAX_OUTPUT_CHARS:],
            seconds=round(time.monotonic() - started, 3),
            killed=killed,
            output_bytes=size,
        )
        self.records.append(record)
        return record

    def _run(self, command: str, limit: float) -> tuple[str, int, dict[str, Any], int, bool]:
        api = self.container.client.api
        try:
            exec_id = api.exec_create(
                self.container.id,
                command_argv(limit, command),
                workdir=self.side.spec.workdir,
                user=self.user,
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except (APIError, DockerException, RequestException) as exc:
            self.ended = f"the task container is gone or the engine does not answer ({exc})"
            return self.ended, 0, {}, -1, False
        fired = threading.Event()

        def backstop() -> None:
            fired.set()
            self.kill_all()

        timer = threading.Timer(limit + GRACE_S, backstop)
        timer.daemon = True
        timer.start()
        tail, size, errors = bytearray(), 0, bytearray()
        try:
            for out, err in stream:
                if out:
                    size += len(out)
                    tail += out
                    if len(tail) > 2 * MAX_OUTPUT_CHARS:
                        del tail[: len(tail) - MAX_OUTPUT_CHARS]
                if err and len(errors) < MAX_STATUS_BYTES:
                    errors += err[: MAX_STATUS_BYTES - len(errors)]
        except (DockerException, RequestException):
            pass
        finally:
            timer.cancel()
        status = wrapper_status(errors)
        if not status and not fired.is_set():
            # The wrapper did not report: it was killed or replaced. Nothing of the command may live on.
            self.kill_all()
        try:
            exit_code = api.exec_inspect(exec_id).get("ExitCode")
        except (DockerException, RequestException):
            exit_code = None
        code = int(exit_code) if exit_code is not None else -1
        text = tail.decode("utf-8", errors="replace")
        return text, size, status, code, fired.is_set() or not status

    def kill_all(self) -> None:
        """End every process of the task user, from inside (the timeout backstop); the keeper's stay.

        When that cannot be done (the agent used up the container's pids), the container is killed
        whole and the run ends (docs/runtime.md, "Runner").
        """
        if not end_agent_processes(self.container, self.user):
            self.ended = self.ended or "the agent's processes could not be ended; its container was stopped"

    def put_file(self, path: str, content: bytes, mode: int = 0o755) -> None:
        """Place a file in the task container (used for oracle scripts, never for detectors)."""
        folder, name = path.rsplit("/", 1)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), mode, int(time.time())
            archive.addfile(info, io.BytesIO(content))
        self.container.put_archive(folder or "/", buffer.getvalue())
