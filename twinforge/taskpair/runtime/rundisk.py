"""The run disk: a per-run file system of a fixed size that holds everything a run may write.

A container's writable layer lives on the host's disk with no size limit (overlay2 on ext4 has no
quota), so one ``fallocate -l 10G`` inside a task filled the host. Each run therefore gets a file
system of its own: an image file whose blocks are reserved up front (``posix_fallocate``, so the
host cannot run short later), ext4, loop-mounted. The task and service containers run with a
read-only root file system; the folders they may write (``/etc``, ``/root``, ``/tmp``, ``/var``,
``/usr/local``, the work folder, ...) are bind mounts of folders of the run disk, which start as a
sparse copy of a per-image template holding the image's content. When the disk is full, writes
fail with "No space left on device" and the runner ends the run (docs/runtime.md, "Limits").

Each disk has an owner file (pid, host, run id) so that the disks of a crashed runner are
unmounted and deleted by the next runner (``reap_disks``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

from twinforge.core.processes import process_alive
from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.runtime.cues import opaque

DISK_DIR_ENV = "TWINFORGE_DISK_DIR"
DEFAULT_DISK_DIR = Path("/var/tmp/twinforge-disks")
HOST_RESERVE_MB = 1024  # never take the host's last GiB, whatever the limit says
FULL_MARGIN_BYTES = 1 << 20  # less than this left counts as full (ext4 keeps a little back)
TEMPLATES = "templates"


def disk_dir() -> Path:
    """Where run disks live (``$TWINFORGE_DISK_DIR``, default ``/var/tmp/twinforge-disks``)."""
    return Path(os.environ.get(DISK_DIR_ENV) or DEFAULT_DISK_DIR)


def disk_root(run_id: str, role: str = "disk") -> Path:
    """Where one of the run's disks is mounted; its image file is the same path plus ``.img``.

    Args:
        run_id: The run.
        role: ``disk`` (the run disk) or ``evidence`` (the services' event logs).

    The name is opaque (docs/runtime.md, "No evaluation cue inside"): a loop device shows its
    backing file's path, and the run id names the pair and the side.
    """
    return disk_dir() / opaque(run_id, role)


def _run(args: list[str], step: str) -> None:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RunError("disk", f"{step} failed ({' '.join(args[:2])}): {(done.stderr or done.stdout).strip()[-300:]}")


def _mounted(path: Path) -> bool:
    target = str(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        return any(line.split()[4] == target for line in handle if len(line.split()) > 4)


@dataclass
class RunDisk:
    """One run's disk.

    Attributes:
        run_id: The run.
        size_mb: Its size (the run's disk limit), MiB.
        root: Where it is mounted on the host.
    """

    run_id: str
    size_mb: int
    root: Path

    @property
    def image(self) -> Path:
        """The backing file."""
        return self.root.parent / f"{self.root.name}.img"

    @property
    def owner(self) -> Path:
        """The owner file (pid, host, run id)."""
        return self.root.parent / f"{self.root.name}.json"

    def folder(self, name: str) -> Path:
        """A folder on the disk (created), e.g. ``task/etc``."""
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def free_bytes(self) -> int:
        """Bytes still free for the run."""
        stats = os.statvfs(self.root)
        return stats.f_bavail * stats.f_frsize

    def full(self) -> bool:
        """The run has used up its disk."""
        return self.free_bytes() < FULL_MARGIN_BYTES

    @classmethod
    def create(
        cls, run_id: str, size_mb: int, *, template: Path | None = None, reserve: bool = True, role: str = "disk"
    ) -> RunDisk:
        """Make and mount a disk of ``size_mb`` MiB for ``run_id``: a copy of ``template``, or freshly formatted.

        Args:
            run_id: The run (names the disk and its owner file).
            size_mb: The disk limit.
            template: A formatted disk image to start from (see :func:`template_for`), copied sparsely.
            reserve: Allocate every block on the host now, so that the run can never find the host full.
            role: Which of the run's disks (see :func:`disk_root`).

        Raises:
            RunError: The host has not enough free space (beyond a 1 GiB reserve), or formatting or
                mounting failed (the runner needs root for ``mount``); nothing is left behind.
        """
        base = disk_dir()
        base.mkdir(parents=True, exist_ok=True)
        free_mb = shutil.disk_usage(base).free >> 20
        if reserve and free_mb < size_mb + HOST_RESERVE_MB:
            raise RunError(
                "disk",
                f"the host has {free_mb} MiB free under {base}; a run needs its disk limit ({size_mb} MiB) "
                f"plus {HOST_RESERVE_MB} MiB kept for the host",
            )
        disk = cls(run_id, size_mb, disk_root(run_id, role))
        disk.owner.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "run": run_id}))
        try:
            if template is not None:
                _run(["cp", "--sparse=always", str(template), str(disk.image)], "copying the run disk's template")
            else:
                with open(disk.image, "wb") as handle:
                    handle.truncate(size_mb << 20)
                _run(
                    [
                        "mkfs.ext4",
                        "-q",
                        "-F",
                        "-m",
                        "0",
                        "-O",
                        "^has_journal",
                        "-E",
                        "lazy_itable_init=1,nodiscard",
                        str(disk.image),
                    ],
                    "formatting the run disk",
                )
            if reserve:
                with open(disk.image, "r+b") as handle:
                    os.posix_fallocate(handle.fileno(), 0, size_mb << 20)
            disk.root.mkdir(exist_ok=True)
            _run(["mount", "-o", "loop,nosuid,nodev", str(disk.image), str(disk.root)], "mounting the run disk")
        except BaseException:
            disk.remove()
            raise
        return disk

    def unmount(self, *, lazy: bool = True) -> str | None:
        """Unmount the disk (keeping its image file); returns what went wrong, or ``None``.

        Args:
            lazy: When the file system is busy, detach it lazily (``umount -l``): right for a run's
                disk that is deleted next. A template must not be lazily detached: its image file is
                copied next, and a busy file system flushes its last writes only when released.
        """
        if self.root.exists() and _mounted(self.root):
            done = subprocess.run(["umount", str(self.root)], capture_output=True, text=True)
            if done.returncode != 0:
                if not lazy:
                    return f"could not unmount {self.root}: {done.stderr.strip()}"
                detached = subprocess.run(["umount", "-l", str(self.root)], capture_output=True, text=True)
                if detached.returncode != 0:
                    return f"could not unmount {self.root}: {done.stderr.strip()}"
        with suppress(OSError):
            self.root.rmdir()
        return None

    def remove(self) -> str | None:
        """Unmount and delete the disk; returns what could not be done, or ``None``."""
        problem = self.unmount()
        for path in (self.image, self.owner):
            with suppress(FileNotFoundError):
                path.unlink()
        return problem


def template_for(cli: docker.DockerClient, image: str, size_mb: int, paths: tuple[str, ...]) -> Path:
    """The run-disk template of ``image``: a formatted disk whose ``task<path>`` folders hold the image's content.

    Built once per image, size and folder list (Docker copies the image's content into a new named
    volume when a container is created; the template is made that way, then every run starts from
    a sparse copy of it, so runs need no volumes and no copying). Kept in ``<disk dir>/templates``.

    Raises:
        RunError: Docker or the disk tools failed, the copy left ``/etc`` empty, or the template's
            disk could not be unmounted cleanly (it is not kept then).
    """
    image_id = str(cli.images.get(image).id).split(":")[-1][:16]
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:8]
    target = disk_dir() / TEMPLATES / f"{image_id}-{size_mb}-{digest}.img"
    # The gate starts a side's oracle and cheat runs at once: without the lock they built the same
    # template side by side, and one of those runs started with an empty work folder.
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "a") as lock:  # flock: threads and processes alike
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            _build_template(cli, image, size_mb, paths, target)
    return target


def _build_template(cli: docker.DockerClient, image: str, size_mb: int, paths: tuple[str, ...], target: Path) -> None:
    """Fill a fresh disk with ``image``'s content at ``paths`` (Docker's volume copy) and publish it as ``target``.

    Raises:
        RunError: Docker failed, the copy left ``/etc`` empty, or the disk could not be unmounted
            cleanly; nothing is published then and the disk is deleted.
    """
    image_id = target.name.split("-")[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    build_id = f"template-{image_id}-{secrets.token_hex(3)}"
    disk = RunDisk.create(build_id, size_mb, reserve=False)
    labels = {
        "twinforge": "1",
        "twinforge.run": build_id,
        "twinforge.pid": str(os.getpid()),
        "twinforge.host": socket.gethostname(),
    }
    volumes, container, problem, filled = [], None, None, False
    try:
        for path in paths:
            volumes.append(
                cli.volumes.create(
                    name=f"tf-{build_id}-{path.strip('/').replace('/', '-')}",
                    driver="local",
                    driver_opts={"type": "none", "o": "bind", "device": str(disk.folder("task" + path))},
                    labels=labels,
                )
            )
        container = cli.containers.create(
            image,
            command=["true"],
            labels=labels,
            volumes={v.name: {"bind": p, "mode": "rw"} for v, p in zip(volumes, paths, strict=True)},
        )
        if "/etc" in paths and not any((disk.root / "task" / "etc").iterdir()):
            problem = "Docker copied nothing of the image's /etc into it"
        filled = True
    except DockerException as exc:
        problem = f"could not fill it: {exc}"
    finally:
        if container is not None:
            with suppress(DockerException):
                container.remove(force=True)
        for volume in volumes:
            with suppress(DockerException):
                volume.remove(force=True)
        problem = problem or disk.unmount(lazy=False)
        if problem or not filled:  # any error, Ctrl-C included, deletes the half-built disk
            disk.remove()
    if problem:
        raise RunError("disk", f"the run-disk template of {image} was not kept: {problem}")
    os.replace(disk.image, target)
    disk.owner.unlink(missing_ok=True)


def reap_templates(image_ids: set[str]) -> int:
    """Delete templates of images that no longer exist (``image_ids``: the 64-hex ids present)."""
    folder = disk_dir() / TEMPLATES
    prefixes = {i.split(":")[-1][:16] for i in image_ids}
    removed = 0
    for path in folder.glob("*.img") if folder.is_dir() else []:
        if path.name.split("-")[0] not in prefixes:
            with suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            path.with_suffix(".lock").unlink(missing_ok=True)  # nobody builds for a gone image
    return removed


def reap_disks(*, everything: bool = False) -> int:
    """Unmount and delete run disks whose runner process is gone (or all of this host's).

    Returns:
        How many disks were removed.
    """
    base = disk_dir()
    if not base.is_dir():
        return 0
    host, removed = socket.gethostname(), 0
    for owner in base.glob("*.json"):
        try:
            data = json.loads(owner.read_text())
        except (OSError, ValueError):
            continue
        if data.get("host") != host or (not everything and process_alive(int(data.get("pid") or 0))):
            continue
        disk = RunDisk(str(data.get("run") or owner.stem), 0, base / owner.name.removesuffix(".json"))
        if disk.remove() is None:
            removed += 1
    return removed
