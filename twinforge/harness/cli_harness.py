"""Coding-agent CLIs that run inside the task container (docs/runtime.md, "Harnesses").

Claude Code, Codex CLI, OpenCode and Pi execute their own tools, so unlike Mini-SWE-agent (whose
loop runs on the host and sends commands in) they run in the task container, on a layer that adds
the CLI (``twinforge.harness.layer``), headless, in their permissive mode, with their model pointed
at the model channel (``twinforge.taskpair.runtime.model_channel``): the run token is the only
credential in the container. Each adapter (one module per CLI) says how its CLI is configured,
started and stopped, and how its own output tells success from failure; this class does the rest:
files in place, one process under the command wrapper with the turn budget as its limit, its
output streamed to the host, a stop when the proxy refuses (after a grace period, since some CLIs
retry a refusal for minutes), and the run's ATIF trajectory read from the CLI's own output and the
proxy's transcript (``twinforge.observer.trajectory.run``).

A later user turn (docs/runtime.md, "User turns") starts the CLI again in the same container with
its own resume option and the session id its first turn used or reported, so it continues its
own session from its own session store. That store lives in the task container on a tmpfs
(:attr:`CliHarness.session_store`): kept while the container runs, never on the run disk, so never
in the detector's evidence. Each turn's output is a file of its own and ``agent/harness.json``
lists the turns, so the trajectory shows each later turn as a user step at the time it was sent
(``twinforge.observer.trajectory.turns``).
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException
from docker.models.containers import Container
from requests.exceptions import RequestException

from twinforge.core.atomic import atomic_write_text
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.install import PACKAGES, CliPackage
from twinforge.harness.layer import build_layer
from twinforge.harness.protocol import HarnessResult, ModelEndpoint
from twinforge.harness.shapes import Shape
from twinforge.observer.trajectory.harnesses.proxy import transcript
from twinforge.observer.trajectory.run import ATIF_FILE, CLI_READERS, json_lines, load_run
from twinforge.observer.trajectory.tools import tool_action
from twinforge.observer.trajectory.turns import calls_during, read_turn
from twinforge.taskpair.in_container import UNWRITABLE_FOLDERS
from twinforge.taskpair.runtime.cues import command_argv, wrapper_status
from twinforge.taskpair.runtime.model_channel import ModelChannel
from twinforge.taskpair.runtime.session import Session
from twinforge.taskpair.runtime.turns import UserTurns

MAX_STDOUT = 32 * 2**20
"""Bytes of the CLI's own output kept in the evidence."""
STDERR_FILE = "/tmp/.agent-harness.stderr"
PROMPT_FILE = "/tmp/.agent-task.txt"
HOME = "/root"
SESSION_STORE_OPTIONS = "size=64m,mode=0700"
"""tmpfs options of a CLI's session store (its transcripts are a few MiB at most)."""


@dataclass
class Launch:
    """How one CLI run starts.

    Attributes:
        argv: The command line (the CLI's entry first).
        env: Its whole environment (it runs under ``env -i``).
        files: Files put in place first, by absolute path (under ``/root`` or ``/tmp``, never in
            :attr:`CliHarness.session_store`, which a copy into the container does not reach).
        stdin_prompt: Feed the task on standard input instead of as an argument.
    """

    argv: list[str]
    env: dict[str, str]
    files: dict[str, str] = field(default_factory=dict)
    stdin_prompt: bool = False


@dataclass
class EndState:
    """What a CLI's own output says about how it ended."""

    exit_status: str
    final_message: str
    api_error: bool = False


class HarnessAttachment:
    """The runner's hooks for one in-container harness run: the layer and the model channel."""

    def __init__(
        self, package: CliPackage, version: str, channel: ModelChannel, session_store: tuple[str, ...] = ()
    ) -> None:
        self.package, self.version, self.channel = package, version, channel
        self.package_store = session_store
        self.layer_seconds = 0.0
        self.egress: list[dict[str, Any]] = []

    def image(self, cli: docker.DockerClient, image: str) -> str:
        """The task image with the CLI on top."""
        tag, self.layer_seconds = build_layer(cli, image, self.package, self.version)
        return tag

    def started(self, cli: docker.DockerClient, container: Container, labels: dict[str, str], base: str) -> None:
        """Start the model channel for the task container."""
        self.channel.started(cli, container, labels, base)

    def stopped(self, evidence: Path) -> None:
        """Close the channel; the blocked-connection log goes into the evidence."""
        self.egress = self.channel.stopped(evidence / "agent")

    def memory_folders(self) -> dict[str, str]:
        """The CLI's session store: tmpfs mounts of the task container (path -> mount options)."""
        return dict.fromkeys(self.package_store, SESSION_STORE_OPTIONS)


class CliHarness:
    """Base of the four CLI adapters.

    Args:
        version: The CLI's version (default: the reference study's).
        permission: The permission mode, recorded with every run: ``bypass`` (the study's: every
            tool runs unasked) or a stricter mode the adapter supports.
        refusal_grace_s: Seconds a CLI gets to stop by itself after the proxy refused a call.
    """

    name = "cli"
    shape: Shape = "chat"
    refusal_status = 401
    permissions: tuple[str, ...] = ("bypass",)
    """Permission modes, the study's permissive one first (the default)."""
    any_version = True
    """Any npm version can be installed (``twinforge harness setup NAME --version``)."""
    call_cap = False
    """The study caps model calls for Mini-SWE-agent only: a CLI has the turn budget alone."""
    min_memory_mb = 1536
    unwritable_folders: tuple[str, ...] = ()
    """Project folders the CLI would install into at start: unwritable while it runs (found in the
    working folder and above it; their modes come back after the run)."""
    session_store: tuple[str, ...] = ()
    """Where the CLI keeps its sessions (the folders its resume option reads): tmpfs mounts of the
    task container, out of the run disk and so out of the detector's evidence."""

    def __init__(self, version: str | None = None, permission: str = "bypass", refusal_grace_s: float = 5.0) -> None:
        if permission not in self.permissions:
            raise HarnessError(
                f"{self.name}: unknown permission mode {permission!r}; valid: {', '.join(self.permissions)}"
            )
        self.package: CliPackage = PACKAGES[self.name]
        self.version = version or self.package.version
        self.permission = permission
        self.refusal_grace_s = refusal_grace_s
        self._attachment: HarnessAttachment | None = None
        self.commands: list[str] = []
        self.session_ref = ""
        """This run's session id where the adapter chooses it (a UUID made per run)."""

    @classmethod
    def default_version(cls) -> str:
        """The reference study's version, pinned in :data:`twinforge.harness.install.PACKAGES`."""
        return PACKAGES[cls.name].version

    @property
    def key(self) -> str:
        """How runs are keyed in the records: ``name@version:mode`` (docs/calibration.md, "Harnesses")."""
        return f"{self.name}@{self.version}:{self.permission}"

    def api_shape(self, endpoint: ModelEndpoint) -> Shape:
        """The API shape this CLI speaks in a run on ``endpoint`` (recorded in ``harness.json``)."""
        return self.shape

    def extra_body(self) -> dict[str, Any]:
        """Nothing is added to a CLI's requests."""
        return {}

    def grant_options(self) -> dict[str, Any]:
        """How the proxy treats this harness: its stop status, and that it offers native tools."""
        return {"refusal_status": self.refusal_status, "expects_tools": True}

    def attachment(self, proxy: tuple[str, int]) -> HarnessAttachment:
        """The runner hooks of one run: the layer and a fresh model channel to ``proxy``."""
        self._attachment = HarnessAttachment(self.package, self.version, ModelChannel(proxy), self.session_store)
        return self._attachment

    # per CLI ------------------------------------------------------------------------------------

    def launch(
        self,
        endpoint: ModelEndpoint,
        base_url: str,
        instruction: str,
        workdir: str,
        command_timeout_s: float,
        resume: str | None = None,
    ) -> Launch:
        """The CLI's files, environment and command line.

        Args:
            endpoint: The model endpoint (its token and model name; the URL is ``base_url``).
            base_url: The model channel's address inside the task container (no ``/v1``).
            instruction: The task (turn 1), or what the user says in a later turn.
            workdir: The working folder.
            command_timeout_s: The side's per-command budget (``[agent] command_timeout_s``, 30 s by
                default; docs/design.md): set as the CLI's own shell-command timeout.
            resume: The session to continue (a later user turn), as :meth:`session_of` gave it;
                ``None`` starts the run's session.
        """
        raise NotImplementedError

    def session_of(self, events: list[dict[str, Any]]) -> str | None:
        """The session a turn ran in, from the CLI's own JSON output (``None``: it said none)."""
        raise NotImplementedError

    def end_state(self, events: list[dict[str, Any]], exit_code: int) -> EndState:
        """Read how the run ended from the CLI's own JSON output."""
        raise NotImplementedError

    # the run ------------------------------------------------------------------------------------

    def run(
        self,
        session: Session,
        instruction: str,
        endpoint: ModelEndpoint,
        trajectory: Path,
        turns: UserTurns | None = None,
    ) -> HarnessResult:
        """Run the CLI on ``instruction`` in the session's task container until it stops.

        With ``turns``, each time the CLI leaves its print mode by itself (no API error, no time-out)
        the user's next turn, if any, is sent by starting the CLI again on its own session
        (:meth:`launch` with ``resume``).
        """
        if self._attachment is None:
            raise HarnessError(f"{self.name}: the run was started without the harness attachment")
        evidence = trajectory.parent / "agent"
        evidence.mkdir(parents=True, exist_ok=True)
        self.session_ref = str(uuid.uuid4())
        if turns is not None:
            turns.start()
        text, number, resume = instruction, 1, None
        runs: list[dict[str, Any]] = []
        while True:
            state, timed_out, record = self._turn(session, endpoint, evidence, text, number, resume)
            runs.append(record)
            resume = record["session"] = self.session_of(json_lines(evidence / record["stdout"])) or resume
            if turns is None:
                break
            normal = not (state.api_error or timed_out or session.overtime)
            if normal and resume is None and number <= len(turns.turns):
                session.failure = session.failure or f"harness: {self.name} named no session in turn {number}"
                normal = False
            upcoming = turns.next(
                end=state.exit_status,
                final_message=state.final_message,
                normal=normal,
                commands=self._turn_commands(trajectory.parent, record, text),
            )
            if upcoming is None:
                break
            text, number = upcoming.text, upcoming.number
        summary = {
            "harness": self.key,
            "api_shape": self.api_shape(endpoint),
            **{k: v for k, v in runs[-1].items() if k not in ("turn", "said", "sent_at")},
            "layer_build_seconds": round(self._attachment.layer_seconds, 3),
            "turns": runs,
        }
        (evidence / "harness.json").write_text(json.dumps(summary, indent=1))
        document = load_run(trajectory.parent)
        document.extra = {**(document.extra or {}), "exit_status": state.exit_status, "submission": state.final_message}
        path = trajectory.parent / ATIF_FILE
        atomic_write_text(path, document.model_dump_json(indent=1, exclude_none=True))
        self.commands = [
            tool_action(call.function_name, call.arguments)[0]
            for step in document.steps
            for call in step.tool_calls or []
        ]
        over = timed_out or session.overtime
        calls = int(document.info("model_calls", len(self.commands)))
        return HarnessResult(state.exit_status, state.final_message, calls, over, path, time_exceeded=over)

    def _turn_commands(self, folder: Path, record: dict[str, Any], said: str) -> int:
        """The tool calls of one user turn: its own output read as ATIF (else its calls in the proxy transcript)."""
        calls = calls_during(transcript(folder / "proxy.jsonl"), record["sent_at"], None)
        events = json_lines(folder / "agent" / record["stdout"])
        document, _ = read_turn(CLI_READERS[self.name], events, calls, said, self.version)
        return sum(len(step.tool_calls or []) for step in document.steps)

    def _turn(
        self, session: Session, endpoint: ModelEndpoint, evidence: Path, text: str, number: int, resume: str | None
    ) -> tuple[EndState, bool, dict[str, Any]]:
        """One CLI process: a user turn; returns how it ended, whether it timed out, and its record."""
        if self._attachment is None:
            raise HarnessError(f"{self.name}: the run was started without the harness attachment")
        spec = session.side.spec
        launch = self.launch(
            endpoint, self._attachment.channel.base_url, text, spec.workdir, spec.agent.command_timeout_s, resume
        )
        files = {**launch.files, PROMPT_FILE: text}
        _put_files(session.container, files)
        env = " ".join(shlex.quote(f"{k}={v}") for k, v in launch.env.items())
        command = f"cd {shlex.quote(spec.workdir)} && exec env -i {env} {shlex.join(launch.argv)} 2>{STDERR_FILE}"
        if launch.stdin_prompt:
            command += f" <{PROMPT_FILE}"
        locked = _unwritable(session.container, "lock", spec.workdir, *self.unwritable_folders)
        limit = max(1.0, session.deadline - time.monotonic())
        started, sent_at = time.monotonic(), time.time()
        suffix = "" if number == 1 else f".turn-{number:02d}"
        stdout = evidence / f"harness{suffix}.stdout.jsonl"
        try:
            exit_code, timed_out = self._stream(session, command, limit, stdout, endpoint.refused)
        finally:
            if locked:
                _unwritable(session.container, "restore", json.dumps(locked))
        seconds = time.monotonic() - started
        state = self.end_state(json_lines(stdout), exit_code)
        if timed_out:
            state.exit_status = "TimeExceeded"
        _copy_out(session.container, STDERR_FILE, evidence / f"harness{suffix}.stderr.txt")
        record: dict[str, Any] = {
            "turn": number,
            "sent_at": round(sent_at, 3),
            "exit_code": exit_code,
            "seconds": round(seconds, 3),
            "argv": launch.argv,
            "env": sorted(k for k in launch.env if "TOKEN" not in k and "KEY" not in k),
            "exit_status": state.exit_status,
            "api_error": state.api_error,
            "unwritable_during_run": [path for path, _ in locked],
            "stdout": stdout.name,
        }
        if number > 1:
            record["said"] = text
        return state, timed_out, record

    def _stream(
        self, session: Session, command: str, limit: float, stdout: Path, refused: threading.Event | None
    ) -> tuple[int, bool]:
        api = session.container.client.api
        # The wrapper as the read-only file every session mounts, by absolute paths: its text on a
        # command line would show in `ps` inside the container (docs/runtime.md, "No evaluation cue inside").
        exec_id = api.exec_create(session.container.id, command_argv(limit, command), user=session.user)["Id"]
        done = threading.Event()

        def watch() -> None:
            if refused is not None and _wait_either(refused, done) and not done.wait(self.refusal_grace_s):
                session.kill_all()

        threading.Thread(target=watch, daemon=True).start()
        backstop = threading.Timer(limit + 5, session.kill_all)
        backstop.daemon = True
        backstop.start()
        errors = bytearray()
        kept = 0
        try:
            with stdout.open("wb") as out:
                for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                    if chunk_out and kept < MAX_STDOUT:
                        out.write(chunk_out[: MAX_STDOUT - kept])
                        kept += len(chunk_out)
                    if chunk_err and len(errors) < 65536:
                        errors += chunk_err
        except (DockerException, RequestException):
            pass
        finally:
            done.set()
            backstop.cancel()
        status = wrapper_status(errors)
        return int(status.get("exit", -1)), bool(status.get("timed_out"))


def _unwritable(container: Container, *args: str) -> list[list[Any]]:
    """Run ``unwritable.py`` in the task container (``lock WORKDIR NAME...`` or ``restore JSON``).

    Returns:
        For ``lock``, ``[[path, old mode], ...]`` of the folders made unwritable; ``[]`` otherwise.

    Raises:
        HarnessError: ``lock`` failed (the CLI must not start with its install folders writable).
    """
    if args[0] == "lock" and len(args) < 3:
        return []
    script = UNWRITABLE_FOLDERS.read_text(encoding="utf-8")
    try:
        done = container.exec_run(["python3", "-I", "-S", "-c", script, *args], demux=True, user="0:0")
    except DockerException as exc:
        if args[0] == "lock":
            raise HarnessError(f"could not make {args[2:]} unwritable: {exc}") from exc
        return []
    out, err = done.output
    if args[0] != "lock":
        return []
    if done.exit_code != 0:
        raise HarnessError(f"could not make {args[2:]} unwritable: {(err or b'').decode('utf-8', 'replace')[-300:]}")
    locked: list[list[Any]] = json.loads((out or b"[]").decode())
    return locked


def _wait_either(first: threading.Event, second: threading.Event) -> bool:
    """Wait until ``first`` or ``second`` is set; True when ``first`` was."""
    while not second.is_set():
        if first.wait(0.2):
            return True
    return False


def _put_files(container: Container, files: dict[str, str]) -> None:
    """Put files under their writable top folder (``/root`` or ``/tmp``; the root file system is read-only)."""
    by_top: dict[str, dict[str, str]] = {}
    for path, content in files.items():
        top, _, rest = path.lstrip("/").partition("/")
        by_top.setdefault("/" + top, {})[rest] = content
    for top, entries in by_top.items():
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            folders: set[str] = set()
            for rest, content in entries.items():
                parts = rest.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    folder = "/".join(parts[:i])
                    if folder not in folders:
                        folders.add(folder)
                        info = tarfile.TarInfo(folder)
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                        archive.addfile(info)
                data = content.encode()
                info = tarfile.TarInfo(rest)
                info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
                archive.addfile(info, io.BytesIO(data))
        container.put_archive(top, buffer.getvalue())


def _copy_out(container: Container, path: str, dest: Path, limit: int = 2**20) -> None:
    """Copy the tail of one regular file out of the container (best effort: it is only a log)."""
    try:
        stream, _ = container.get_archive(path)
        data = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            member = archive.next()
            handle = archive.extractfile(member) if member is not None and member.isfile() else None
            if handle is not None:
                dest.write_bytes(handle.read()[-limit:])
    except (DockerException, RequestException, tarfile.TarError, OSError):
        return
