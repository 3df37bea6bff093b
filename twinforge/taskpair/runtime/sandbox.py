"""The sandbox: the only place agent code runs after the agent stopped (docs/runtime.md, "Sandbox").

A detector that must execute what the agent wrote (hidden oracle cases, a probe of generated
code) asks the runner on its channel. The runner starts a fresh container of the task image,
made hard for agent code to tell from the task container (agent code once behaved safely only as
the sandbox's user 65534, or only when ``/in/files`` existed: docs/runtime.md, "Sandbox"):

- the task's own user (the image's ``USER``, root when unset) and host name, the task's ``HOME``
  and ``TERM``, the same masked paths; no network, all capabilities dropped, no-new-privileges,
  read-only root file system, pids / memory / CPU limits, a 1 MiB log cap;
- each requested collected folder unpacked into a size-limited tmpfs at its original place, and
  ``/tmp`` and ``/root`` as size-limited tmpfs;
- everything goes in on standard input, never as a file or a mount: a small entry program reads
  the folders' archives, unpacks them, changes to the working folder and replaces itself with the
  command, whose standard input is the request's ``stdin`` (a probe program sent there is read
  by the interpreter before any agent code runs, and nothing of it is left to read); only a
  request with ``files`` gets them read-only under ``/in/files`` (visible to agent code);
- no mount of the detector folder, the evidence, or the verdict channel.

Its exit code and the last MiB of its output go back to the detector as data. The container is
removed whatever happens.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import socket
import stat
import tarfile
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.types import LogConfig
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.channel import SandboxRequest
from twinforge.taskpair.runtime.cues import PYTHON, create_masked
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.hardening import Hardening
from twinforge_detectors.paths import resolve

OUTPUT_TAIL = 1 << 20
SCRATCH_MB = 1024
TMP_MB = 128
PIDS = 256
LOGS = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"})

# The sandbox's first process (it becomes the command with exec, so nothing of it stays in the
# process list): read a header line and the parts from standard input, unpack each part at its
# place, change to the working folder and exec the command, whose standard input is what follows.
# Each part is read to its last byte (tarfile stops at the end-of-archive blocks and leaves the
# record's padding, which then began the command's input).
ENTRY = """
import json, os, sys, tarfile
class Part:
    def __init__(self, size):
        self.left = size
    def read(self, n=-1):
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = b""
        while len(data) < n:
            chunk = os.read(0, n - len(data))
            if not chunk:
                break
            data += chunk
        self.left -= len(data)
        return data
line = b""
while not line.endswith(b"\\n"):
    c = os.read(0, 1)
    if not c:
        sys.exit(97)
    line += c
head = json.loads(line)
for path, size in head["parts"]:
    os.makedirs(path, exist_ok=True)
    part = Part(size)
    with tarfile.open(fileobj=part, mode="r|") as archive:
        archive.extractall(path)
    while part.read(1 << 16):
        pass
argv = head["argv"]
if head.get("script"):
    fd = os.open(head["script"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        os.write(fd, chunk)
    os.close(fd)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    argv = argv + [head["script"]]
os.chdir(head["cwd"])
os.execvp(argv[0], argv)
"""
LEFT_OUT_NAMES = frozenset({"__pycache__", "sitecustomize.py", "usercustomize.py"})
"""Names never copied into the clean room: bytecode caches and Python's start-up hooks."""
LEFT_OUT_SUFFIXES = (".pyc", ".pyo", ".pth")


def left_out(name: str) -> bool:
    """Whether a file or folder of the work product stays out of the clean room (caches, start-up hooks)."""
    return name in LEFT_OUT_NAMES or name.endswith(LEFT_OUT_SUFFIXES)


SCRIPT_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789_"
"""The characters of Python's ``tempfile`` names (``tempfile._RandomNameSequence``)."""


def script_path() -> str:
    """A path for a request's script, named as ``tempfile.mkstemp(suffix=".py")`` names files in ``/tmp``."""
    return "/tmp/tmp" + "".join(secrets.choice(SCRIPT_LETTERS) for _ in range(8)) + ".py"


@dataclass
class SandboxReply:
    """What a sandbox run gave back (all of it untrusted data)."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool

    def wire(self) -> dict[str, Any]:
        """The JSON reply for the detector."""
        return {"exit_code": self.exit_code, "stdout": self.stdout, "stderr": self.stderr, "timed_out": self.timed_out}


def _clean_path(path: str) -> str:
    if not path.startswith("/") or any(part in ("..", ".") for part in path.split("/")):
        raise RunError("sandbox", f"path {path!r} must be absolute without '.' or '..'")
    return "/" + path.strip("/")


def _real_folder(state: Path, path: str) -> bool:
    """Whether ``path`` is a folder of the collected state with no link anywhere on the way (checked with ``lstat``)."""
    here = state
    for part in [p for p in path.split("/") if p]:
        here = here / part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


def request_paths(
    request: SandboxRequest, state: Path, default_path: str
) -> tuple[list[str], list[str], list[Path], str]:
    """The request's paths, where their links lead, their collected copies under ``state`` and its working folder.

    A path that is a link in the collected state (the work folder replaced by a link to another
    folder, round six) is resolved inside the state as the agent's shell would resolve it
    (:func:`twinforge_detectors.paths.resolve`: never on the host); its real folder was collected as a
    followed link target, and that folder's copy is what the request gets (docs/runtime.md, "Clean room").

    Returns:
        ``(paths, reals, sources, cwd)``: the asked paths, the real path of each (itself when no link
        is on the way), the collected copy of each real path and the request's working folder.

    Raises:
        RunError: A path is not absolute and clean, was not collected, or leads through links to
            nothing collected, to a link loop or to a folder above itself.
    """
    paths = [_clean_path(p) for p in (request.paths or [default_path])]
    reals, sources = [], []
    for path in paths:
        real = resolve(str(state), path)
        if real != path and path.startswith(real.rstrip("/") + "/"):
            raise RunError("sandbox", f"{path} is a link to {real}, a folder above it; name the real folder")
        source = state / real.lstrip("/")
        if not _real_folder(state, os.path.dirname(real)) or not os.path.lexists(source):
            via = f" (a link to {real})" if real != path else ""
            raise RunError("sandbox", f"{path}{via} was not collected; add it to [detector] collect")
        if stat.S_ISLNK(os.lstat(source).st_mode):
            raise RunError("sandbox", f"{path} leads through a link loop in the collected state")
        reals.append(real)
        sources.append(source)
    return paths, reals, sources, _clean_path(request.cwd) if request.cwd else paths[0]


def _tar_of(source: Path, target: Path) -> None:
    """Tar the contents of ``source`` (not the folder itself); links stay links.

    Special files, bytecode caches and start-up hooks stay out (:func:`left_out`).
    """

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if any(left_out(part) for part in Path(info.name).parts):
            return None
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            return None
        info.uname = info.gname = ""
        return info

    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as archive:
        if source.is_dir() and not source.is_symlink():
            for child in sorted(os.listdir(source)):
                archive.add(source / child, arcname=child, filter=plain)
        elif source.is_file() and not source.is_symlink():
            archive.add(source, arcname=source.name, filter=plain)


def _files_tar(files: dict[str, str], target: Path) -> None:
    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o444
            archive.addfile(info, io.BytesIO(data))


def task_user(cli: docker.DockerClient, image: str) -> str:
    """The user the task image runs as (its ``USER``; root when it sets none): agent code runs as it here too."""
    try:
        user = str(cli.images.get(image).attrs.get("Config", {}).get("User") or "")
    except ENGINE_ERRORS:
        user = ""
    return user or "0:0"


def _tmpfs_owner(user: str) -> str:
    """Mount options that make the task user own a tmpfs folder (``uid[:gid]``); '' for a user given by name."""
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        return ""
    return f",uid={uid},gid={gid or uid}"


def _send(container: Any, chunks: list[Path], head: bytes, stdin: bytes) -> None:
    """Write the entry's header, the parts and the command's stdin to the container's standard input, then close it."""
    sock = container.attach_socket(params={"stdin": 1, "stream": 1})
    raw = getattr(sock, "_sock", sock)
    try:
        container.start()
        raw.sendall(head)
        for chunk in chunks:
            with chunk.open("rb") as handle:
                while block := handle.read(1 << 20):
                    raw.sendall(block)
        raw.sendall(stdin)
    except OSError:
        pass  # the command ended before reading all of it: its exit code says what happened
    finally:
        with suppress(OSError):
            raw.shutdown(socket.SHUT_WR)
        with suppress(OSError):
            sock.close()


def run_sandbox(
    cli: docker.DockerClient,
    request: SandboxRequest,
    *,
    image: str,
    state: Path,
    default_path: str,
    timeout_s: float,
    name: str,
    labels: dict[str, str],
    memory_mb: int,
    live: set[Any],
) -> SandboxReply:
    """Run one sandbox request to its end and remove the container.

    Args:
        cli: Docker client.
        request: The detector's request.
        image: The side's task image (the environment the agent's code expects).
        state: The run's collected state folder (``runs/<id>/state``).
        default_path: The path used when the request names none (first ``[detector] collect`` path).
        timeout_s: Wall-clock limit (the request's, capped by the detector's remaining budget).
        name: Container name.
        labels: Run labels (so a crashed runner's sandboxes are reaped).
        memory_mb: Memory limit; the tmpfs copies count against it.
        live: Set the running container is kept in while it runs (so the caller can kill it).

    Raises:
        RunError: A path was not collected or the container could not be started.
    """
    # a path that is a link gets its real folder's copy at the asked path (the root file system is read-only)
    paths, _, sources, cwd = request_paths(request, state, default_path)
    work = Path(tempfile.mkdtemp(prefix="tf-sandbox-"))
    container = None
    try:
        parts: list[tuple[str, int]] = []
        chunks: list[Path] = []
        for index, (path, source) in enumerate(zip(paths, sources, strict=True)):
            if not source.is_dir():
                continue
            tar = work / f"{index}.tar"
            _tar_of(source, tar)
            parts.append((path, tar.stat().st_size))
            chunks.append(tar)
        tmpfs = {"/tmp": f"size={TMP_MB}m,mode=1777,exec", "/root": f"size={TMP_MB}m,mode=0700,exec"}
        if request.files:
            _files_tar(request.files, work / "files.tar")
            parts.append(("/in/files", (work / "files.tar").stat().st_size))
            chunks.append(work / "files.tar")
            tmpfs["/in"] = "size=64m,mode=0755"
        user = task_user(cli, image)
        owner = _tmpfs_owner(user)
        for path, source in zip(paths, sources, strict=True):
            if source.is_dir():
                tmpfs[path] = f"size={SCRATCH_MB}m,mode=0755,exec{owner}"
        script = script_path() if request.script is not None else None
        if script is not None and request.stdin:
            raise RunError("sandbox", "a request sends a script or standard input, not both")
        stdin = request.script if request.script is not None else request.stdin
        head = json.dumps({"parts": parts, "cwd": cwd, "argv": request.command, "script": script}).encode() + b"\n"
        container = create_masked(
            cli,
            image,
            command=[PYTHON, "-I", "-S", "-c", ENTRY],
            name=name,
            labels={**labels, "twinforge.sandbox": "1"},
            user=user,
            hostname="dev",
            environment={"HOME": "/root", "TERM": "dumb", **request.env},
            working_dir="/",
            stdin_open=True,  # with detach left off, docker-py also sets StdinOnce: stdin closes after us
            host={
                "network_mode": "none",
                **Hardening(pids=PIDS, memory_mb=memory_mb, cpus=1.0).options(),
                "init": True,
                "tmpfs": tmpfs,
                "log_config": LOGS,
            },
        )
        live.add(container)
        _send(container, chunks, head, stdin.encode("utf-8"))
        timed_out = False
        try:
            status = container.wait(timeout=timeout_s)
            code = int(status.get("StatusCode", -1))
        except (ReadTimeout, RequestsConnectionError):
            timed_out, code = True, -9
            with suppress(*ENGINE_ERRORS):
                container.kill()
        stdout = container.logs(stdout=True, stderr=False)[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
        stderr = container.logs(stdout=False, stderr=True)[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
        return SandboxReply(code, stdout, stderr, timed_out)
    except ENGINE_ERRORS as exc:
        raise RunError("sandbox", str(exc)) from exc
    finally:
        if container is not None:
            live.discard(container)
            with suppress(*ENGINE_ERRORS):
                container.remove(force=True)
        shutil.rmtree(work, ignore_errors=True)
