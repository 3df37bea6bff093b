"""A live run: the task container is up; the agent acts through :meth:`Session.exec`."""

from __future__ import annotations

import io
import tarfile
import time
from dataclasses import dataclass, field

from docker.models.containers import Container
from pydantic import BaseModel

from taskpair.format import Side
from taskpair.outcomes import Outcome, Verdict

MAX_OUTPUT_CHARS = 64 * 1024


class CommandRecord(BaseModel):
    """One command the agent ran, as the host saw it (the agent cannot edit this record)."""

    command: str
    exit_code: int
    output: str
    seconds: float
    killed: bool


class RunResult(BaseModel):
    """Everything a run produced; saved as ``runs/<run-id>/result.json``.

    Attributes:
        run_id: Unique id, also the label on every Docker resource of the run.
        pair: Pair id.
        side: ``risk`` or ``twin``.
        outcome: COMPROMISED / COMPLETED / INCOMPLETE / STOPPED / UNDETERMINED / OVERTIME.
        verdict: The detector's verdict, ``None`` when it failed.
        detector_error: Why there is no verdict.
        overtime: The turn budget ran out or a resource limit stopped the agent.
        oom_killed: The task container hit its memory limit.
        commands: How many commands ran.
        timings: Seconds per phase (setup, agent, collect, detector, teardown, total).
        evidence_dir: Where the evidence lives.
    """

    run_id: str
    pair: str
    side: str
    outcome: Outcome
    verdict: Verdict | None
    detector_error: str | None = None
    overtime: bool = False
    oom_killed: bool = False
    commands: int = 0
    timings: dict[str, float] = {}
    evidence_dir: str


@dataclass
class Session:
    """A live run: the task container is up with its services; the agent acts through :meth:`exec`.

    Attributes:
        run_id: The run id.
        side: The side being run.
        container: The task container.
        deadline: ``time.monotonic()`` value at which the turn budget ends.
        records: Commands run so far.
    """

    run_id: str
    side: Side
    container: Container
    deadline: float
    records: list[CommandRecord] = field(default_factory=list)
    overtime: bool = False
    final_message: str = ""
    result: RunResult | None = None

    def exec(self, command: str, timeout_s: float | None = None) -> CommandRecord:
        """Run one shell command in the task container's work folder, killed inside the container at the timeout.

        The per-command timeout is the task's (30 s by default) unless ``timeout_s`` is given; no
        command runs past the turn deadline. A command refused for lack of time marks the run overtime.
        """
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.overtime = True
            record = CommandRecord(
                command=command, exit_code=-1, output="turn budget exhausted", seconds=0, killed=True
            )
            self.records.append(record)
            return record
        limit = min(timeout_s or self.side.spec.agent.command_timeout_s, remaining)
        started = time.monotonic()
        result = self.container.exec_run(
            ["timeout", "-s", "KILL", f"{limit:.1f}", "bash", "-c", command], workdir=self.side.spec.workdir
        )
        output = (result.output or b"").decode("utf-8", errors="replace")
        killed = result.exit_code in (124, 137)
        if killed and time.monotonic() >= self.deadline - 0.05:
            self.overtime = True
        record = CommandRecord(
            command=command,
            exit_code=int(result.exit_code if result.exit_code is not None else -1),
            output=output[-MAX_OUTPUT_CHARS:],
            seconds=round(time.monotonic() - started, 3),
            killed=killed,
        )
        self.records.append(record)
        return record

    def put_file(self, path: str, content: bytes, mode: int = 0o755) -> None:
        """Place a file in the task container (used for oracle scripts, never for detectors)."""
        folder, name = path.rsplit("/", 1)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), mode, int(time.time())
            archive.addfile(info, io.BytesIO(content))
        self.container.put_archive(folder or "/", buffer.getvalue())
