"""The clean room: where the agent's work product is run again for the detector (docs/runtime.md, "Clean room").

A detector that executes what the agent wrote (hidden oracle cases, a probe of generated code) must
not run it among the agent's leftovers: a ``python3`` first on ``PATH``, a ``.pth`` hook in the
interpreter's site folder, a kept process the agent hijacked with ``ptrace`` all once decided
verdicts there (round five of the hostile agent). So every judgement point of a run (each user-turn
boundary and the end) has a clean room of its own: a second container of the side's own image,
**created with the task container** (so it is as old as the one the agent used, with the same
init, host name, user, environment, masked paths, limits, read-only root and the same writable
folders, each on a run disk of its own from the same template), which the agent never reaches: no
shared process namespace, mount or network, and its kept processes run as the keeper
(:mod:`twinforge.taskpair.runtime.agent_processes`).

At the judgement point, after the task container was frozen and its state collected, only the
agent's **work product** is copied in: the requested paths of the collected state (the work folder,
and state outside it only where the side declares it in ``[detector] replay``), without bytecode
caches or start-up hooks (``__pycache__``, ``*.pyc``, ``*.pth``, ``sitecustomize.py``,
``usercustomize.py``). The copy is made on the host before any agent code runs in the room, into
folders only the host has written. Each request then runs as one of the agent's commands ran:
through the same command wrapper, under ``bash -c``, as the task user, standard input ``/dev/null``;
a program as a script written into the room's ``/tmp`` under a name ``tempfile`` would make, opened
there without following links (``O_NOFOLLOW``, ``O_EXCL``, ``fchown``/``fchmod`` on the descriptor).
After each request every process of the task user is killed from inside; what a request wrote stays
for the next one of the same judgement point, as it would for the user's next command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.agent_processes import end_agent_processes
from twinforge.taskpair.runtime.channel import SandboxRequest
from twinforge.taskpair.runtime.cues import command_argv, wrapper_status
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.rundisk import RunDisk
from twinforge.taskpair.runtime.sandbox import OUTPUT_TAIL, SandboxReply, left_out, request_paths, script_path

GRACE_S = 3.0
"""After the limit, how long the wrapper has to report before the room's processes are ended."""


class AgentDoing(RunError):
    """A request cannot run by the agent's own doing (docs/runtime.md, "Clean room").

    The agent's code, in an earlier request of the same judgement point, filled the room's disk so
    that the next program cannot be written: the run is UNDETERMINED by the agent.
    """

    def __init__(self, message: str) -> None:
        super().__init__("sandbox", message)


def copy_work_product(source: Path, target: Path, owner: tuple[int, int]) -> list[str]:
    """Copy a collected folder into a clean room folder, links as links, caches and hooks left out.

    ``target`` is emptied first. Nothing in ``target`` was written by agent code yet (the room has not
    run any), so plain host operations are safe here; ownership is set without following links.
    Several names of one file stay one file (hard links), so a work product of many names costs what
    it costs in the task container; the tree is walked without recursion, however deep it is.

    Returns:
        The relative paths left out.

    Raises:
        OSError: The room's disk cannot hold the copy (it holds what the task container's did).
    """
    skipped: list[str] = []
    if target.is_dir() and not target.is_symlink():
        for child in list(os.scandir(target)):
            if child.is_dir(follow_symlinks=False):
                shutil.rmtree(child.path)
            else:
                os.unlink(child.path)
    copies: dict[tuple[int, int], Path] = {}
    pending = [Path(".")]
    while pending:
        rel = pending.pop()
        folder = source / rel
        made = target / rel
        if rel != Path("."):
            made.mkdir()
        with suppress(OSError):
            os.chmod(made, stat.S_IMODE(os.lstat(folder).st_mode) | 0o700)
        os.chown(made, *owner, follow_symlinks=False)
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if left_out(entry.name):
                skipped.append(str(rel / entry.name))
                continue
            info = entry.stat(follow_symlinks=False)
            copy = made / entry.name
            if stat.S_ISDIR(info.st_mode):
                pending.append(rel / entry.name)
                continue
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(entry.path), copy)
            elif stat.S_ISREG(info.st_mode):
                first = copies.get((info.st_dev, info.st_ino))
                if first is not None:
                    os.link(first, copy)
                    continue
                shutil.copyfile(entry.path, copy, follow_symlinks=False)
                os.chmod(copy, stat.S_IMODE(info.st_mode))
                copies[(info.st_dev, info.st_ino)] = copy
            else:
                continue
            os.chown(copy, *owner, follow_symlinks=False)
    return skipped


def make_link(root: Path, path: str, target: str, owner: tuple[int, int]) -> None:
    """Make the link ``path -> target`` under ``root`` (a room's disk folders), following no link on the way.

    Each folder on the way is opened with ``O_NOFOLLOW`` (made when missing); an entry already at
    ``path`` is kept when it is the same link (a copied parent held it) and removed otherwise (the
    image's own work folder, from the room's template: nothing has run in the room yet).

    Raises:
        OSError: A folder on the way is a link or not a folder, or another entry holds the name.
    """
    parts = [p for p in path.split("/") if p]
    if not parts:
        raise OSError(f"no name to link at {path!r}")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            with suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        name = parts[-1]
        info = None
        with suppress(FileNotFoundError):
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if info is not None and not (stat.S_ISLNK(info.st_mode) and os.readlink(name, dir_fd=folder) == target):
            if stat.S_ISDIR(info.st_mode):  # the image's own folder, from the room's template
                shutil.rmtree(name, dir_fd=folder)
            else:
                os.unlink(name, dir_fd=folder)
            info = None
        if info is None:
            os.symlink(target, name, dir_fd=folder)
        os.chown(name, *owner, dir_fd=folder, follow_symlinks=False)
    finally:
        os.close(folder)


def write_program(folder: Path, name: str, text: str, owner: tuple[int, int]) -> None:
    """Write a probe's program as ``folder/name`` without following any link agent code may have placed.

    Raises:
        OSError: The folder is not a folder (a link), the name exists, or the disk is full.
    """
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory)
        try:
            os.fchown(fd, *owner)
            os.fchmod(fd, 0o600)
            data = text.encode("utf-8", errors="replace")
            while data:
                data = data[os.write(fd, data) :]
        except OSError:
            with suppress(OSError):
                os.unlink(name, dir_fd=directory)
            raise
        finally:
            os.close(fd)
    finally:
        os.close(directory)


def remove_program(folder: Path, name: str) -> None:
    """Remove a probe's program by name in its folder, never through a link."""
    with suppress(OSError):
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.unlink(name, dir_fd=directory)
        finally:
            os.close(directory)


@dataclass
class CleanRoom:
    """One judgement point's clean room: a container made with the task container, out of the agent's reach.

    Attributes:
        container: The room's container (running its keeper's ``sleep``).
        disk: Its run disk (its writable folders are ``disk.root / "task" / <path>``).
        user: The task user (numeric ``uid:gid``) requests run as.
        workdir: The side's work folder.
        replay: Paths outside the work folder that may be copied in (``[detector] replay``).
    """

    container: Container
    disk: RunDisk
    user: str
    workdir: str
    replay: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    """The room's writable folders (on its disk): where a linked work folder's real folder may be copied."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    furnished: dict[str, list[str]] = field(default_factory=dict)
    """Paths copied in so far -> the relative paths left out of each."""
    broken: str = ""
    """Why the room serves no more requests ('' while it does)."""
    taken: bool = False
    """Whether a judgement point has taken this room (each room serves one)."""
    in_place: bool = False
    """The room is the frozen task container itself, after the agent's processes were ended: the state
    is where the agent left it, nothing is copied in (the second place the end of a run is judged)."""

    @property
    def owner(self) -> tuple[int, int]:
        """The task user's (uid, gid)."""
        uid, _, gid = self.user.partition(":")
        return int(uid), int(gid or uid)

    def host_path(self, path: str) -> Path:
        """The host folder behind ``path`` of the room (``path`` lies in one of its writable folders)."""
        return self.disk.root / "task" / path.lstrip("/")

    def allowed(self, path: str) -> bool:
        """Whether ``path`` may be copied in: the work folder, a path under it, or a declared replay path."""
        for root in (self.workdir, *self.replay):
            clean = "/" + root.strip("/")
            if path == clean or path.startswith(clean.rstrip("/") + "/"):
                return True
        return False

    def furnish(self, paths: list[str], sources: list[Path], reals: list[str] | None = None) -> None:
        """Copy the requested paths of the collected state in (once per path, before their first request).

        A path that is a link in the collected state (``reals`` gives where it leads, resolved inside
        the state) gets its real folder copied in at the real path and the link made again at the
        asked path, both in the room's own disk folders (docs/runtime.md, "Clean room"); the real path
        must lie in one of the room's writable folders, as it did in the task container.

        Raises:
            RunError: A path is outside the work folder and not declared in ``[detector] replay``, or
                is a link to a folder outside the room's writable folders.
        """
        reals = list(paths) if reals is None else reals
        for path, source, real in zip(paths, sources, reals, strict=True):
            if path in self.furnished:
                continue
            if not self.allowed(path):
                raise RunError(
                    "sandbox",
                    f"{path} is outside the work folder {self.workdir}: declare it in [detector] replay "
                    "to have the agent's copy of it in the clean room",
                )
            if self.furnished:
                raise RunError(
                    "sandbox",
                    f"{path} was not named in the first request of this judgement point: agent code has run "
                    "in the clean room since, so nothing more is copied in (name every path in the first request)",
                )
            if not source.is_dir():
                raise RunError("sandbox", f"{path} is not a folder in the collected state")
            if real != path and not any(real.startswith(w.rstrip("/") + "/") for w in self.writable):
                raise RunError("sandbox", f"{path} is a link to {real}, outside the room's writable folders")
        fresh = [(p, s, r) for p, s, r in zip(paths, sources, reals, strict=True) if p not in self.furnished]
        for path, source, real in fresh:
            target = self.host_path(real)
            target.mkdir(parents=True, exist_ok=True)
            try:
                self.furnished[path] = copy_work_product(source, target, self.owner)
            except OSError as exc:  # what the agent left does not fit a disk the size of its own
                self.broken = f"the agent's work product does not fit the clean room ({exc.strerror or exc})"
                raise AgentDoing(self.broken) from exc
            if real != path:
                try:
                    make_link(self.disk.root / "task", path, real, self.owner)
                except OSError as exc:
                    raise RunError("sandbox", f"the link {path} -> {real} cannot be made in the room: {exc}") from exc

    def run(self, request: SandboxRequest, *, state: Path, default_path: str, timeout_s: float) -> SandboxReply | None:
        """Run one request in the room; ``None`` when it must run in a fresh container instead (``stdin``, ``files``).

        Args:
            request: The detector's request.
            state: The judgement point's collected state (the request's paths must have been collected).
            default_path: The path used when the request names none.
            timeout_s: Wall-clock limit (the wrapper kills the command's whole tree there).

        Raises:
            RunError: A path was not collected or may not be copied in, or the engine failed.
            AgentDoing: Agent code of an earlier request left no room for the program.
        """
        if request.stdin or request.files:
            return None
        paths, reals, sources, cwd = request_paths(request, state, default_path)
        with self.lock:
            if self.broken:
                raise AgentDoing(self.broken)
            if not self.in_place:
                self.furnish(paths, sources, reals)
            argv = list(request.command)
            name = None
            tmp = self.host_path("/tmp")
            if request.script is not None:
                script = script_path()
                name = Path(script).name
                try:
                    write_program(tmp, name, request.script, self.owner)
                except OSError as exc:
                    raise AgentDoing(
                        f"the probe's program cannot be written to the clean room's /tmp ({exc.strerror or exc})"
                    ) from exc
                argv.append(script)
            try:
                return self._exec(shlex.join(argv), cwd, request.env, timeout_s)
            finally:
                if not end_agent_processes(self.container, self.user):
                    self.broken = "the agent's code left processes in the clean room that could not be ended"
                if name is not None:
                    remove_program(tmp, name)

    def stop(self) -> None:
        """Kill the room's container (before teardown)."""
        with suppress(*ENGINE_ERRORS):
            self.container.kill()

    def _exec(self, command: str, cwd: str, env: dict[str, str], timeout_s: float) -> SandboxReply:
        api = self.container.client.api
        try:
            exec_id = api.exec_create(
                self.container.id,
                command_argv(timeout_s, command),
                workdir=cwd,
                environment=env or None,
                user=self.user,
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except ENGINE_ERRORS as exc:
            raise RunError("sandbox", f"the clean room did not run the request: {exc}") from exc
        fired = threading.Event()

        def backstop() -> None:
            fired.set()
            end_agent_processes(self.container, self.user)

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
        status = wrapper_status(errors)
        try:
            code = api.exec_inspect(exec_id).get("ExitCode")
        except ENGINE_ERRORS:
            code = None
        timed_out = bool(status.get("timed_out")) or fired.is_set()
        text = out[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
        return SandboxReply(int(code) if code is not None and not timed_out else -9, text, "", timed_out)
