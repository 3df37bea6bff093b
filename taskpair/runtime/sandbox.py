"""The sandbox: the only place agent code runs after the agent stopped (docs/runtime.md, "Sandbox").

A detector that must execute what the agent wrote (hidden oracle cases, a probe of generated
code) asks the runner on its channel. The runner starts a fresh container of the task image:

- no network, all capabilities dropped, no-new-privileges, user 65534 (nobody), read-only root
  file system, pids / memory / CPU limits, a 1 MiB log cap;
- each requested collected path unpacked (by the sandbox's own ``tar``, as nobody) into a
  size-limited tmpfs at its original place, ``/tmp`` a size-limited tmpfs, inputs read-only at
  ``/in``;
- no mount of the detector folder, the evidence, or the verdict channel.

Its exit code and the last MiB of its output go back to the detector as data. The container is
removed whatever happens.
"""

from __future__ import annotations

import os
import shlex
import shutil
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
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS

NOBODY = 65534
OUTPUT_TAIL = 1 << 20
SCRATCH_MB = 1024
TMP_MB = 128
PIDS = 256
LOGS = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"})


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


def _tar_of(source: Path, target: Path) -> None:
    """Tar the contents of ``source`` (not the folder itself) as nobody's; links stay links, special files stay out."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            return None
        info.uid = info.gid = NOBODY
        info.uname = info.gname = ""
        return info

    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as archive:
        if source.is_dir() and not source.is_symlink():
            for child in sorted(os.listdir(source)):
                archive.add(source / child, arcname=child, filter=owned)
        elif source.is_file() and not source.is_symlink():
            archive.add(source, arcname=source.name, filter=owned)


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
    paths = [_clean_path(p) for p in (request.paths or [default_path])]
    sources = []
    for path in paths:
        source = state / path.lstrip("/")
        if not os.path.lexists(source):
            raise RunError("sandbox", f"{path} was not collected; add it to [detector] collect")
        if stat.S_ISLNK(os.lstat(source).st_mode):
            raise RunError("sandbox", f"{path} is a link in the collected state; name the real folder")
        sources.append(source)
    cwd = _clean_path(request.cwd) if request.cwd else paths[0]
    inputs = Path(tempfile.mkdtemp(prefix="tf-sandbox-"))
    container = None
    try:
        (inputs / "files").mkdir()
        for index, source in enumerate(sources):
            _tar_of(source, inputs / f"state-{index}.tar")
        for file_name, text in request.files.items():
            (inputs / "files" / file_name).write_text(text, encoding="utf-8")
        (inputs / "stdin").write_text(request.stdin, encoding="utf-8")
        os.chmod(inputs, 0o755)
        unpack = " && ".join(
            f"tar -x -f /in/state-{i}.tar -C {shlex.quote(p)}" for i, p in enumerate(paths) if sources[i].is_dir()
        )
        script = f'set -e; {unpack or "true"}; cd {shlex.quote(cwd)}; exec "$@" < /in/stdin'
        tmpfs = {"/tmp": f"size={TMP_MB}m,mode=1777,exec"}
        for path, source in zip(paths, sources, strict=True):
            if source.is_dir():
                tmpfs[path] = f"size={SCRATCH_MB}m,uid={NOBODY},gid={NOBODY},exec"
        container = cli.containers.create(
            image,
            command=["/bin/sh", "-c", script, "sandbox", *request.command],
            name=name,
            labels={**labels, "twinforge.sandbox": "1"},
            user=f"{NOBODY}:{NOBODY}",
            environment={"HOME": "/tmp", "LANG": "C.UTF-8", **request.env},
            working_dir="/",
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=True,
            tmpfs=tmpfs,
            volumes={str(inputs): {"bind": "/in", "mode": "ro"}},
            mem_limit=f"{memory_mb}m",
            memswap_limit=f"{memory_mb}m",
            nano_cpus=int(1e9),
            pids_limit=PIDS,
            log_config=LOGS,
            init=True,
        )
        live.add(container)
        container.start()
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
        shutil.rmtree(inputs, ignore_errors=True)
