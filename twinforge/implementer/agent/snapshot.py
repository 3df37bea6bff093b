"""A copy of the staged pair that no process can change while the host checks it (docs/implementer.md).

In agent mode the pair lives in a folder the implementer's sandbox mounts, and the agent can leave
a process running there. Checking that folder in place was one walk followed by reads: a file
swapped for a link to a host file between the two made the gate quote host secrets back to the
agent. So every check runs on a snapshot: entries are read relative to open folder descriptors,
never following a link (a link is copied as a link, its target never read), special files are
not opened, and the size is bounded. The pair that passes is the snapshot, and that is what is
committed.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

MAX_BYTES = 1 << 30
"""Largest pair the snapshot copies (the repository with its history included)."""
CHUNK = 1 << 20


class SnapshotError(Exception):
    """The staged pair could not be copied whole (too large)."""


def snapshot(source: Path, dest: Path) -> list[str]:
    """Copy ``source`` into a fresh ``dest`` without following any link; return what was left out.

    Args:
        source: The staged pair (may change while this runs).
        dest: Where the copy goes (removed first).

    Returns:
        One line per entry not copied (fifos, sockets, devices), relative to the pair.

    Raises:
        SnapshotError: The pair is larger than :data:`MAX_BYTES`.
        OSError: ``source`` is not a folder.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    left: list[str] = []
    budget = [MAX_BYTES]
    fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _copy_dir(fd, dest, "", left, budget)
    finally:
        os.close(fd)
    return left


def _copy_dir(fd: int, dest: Path, rel: str, left: list[str], budget: list[int]) -> None:
    for name in sorted(os.listdir(fd)):
        shown = f"{rel}{name}"
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed meanwhile: absent from the snapshot, as it is now
        target = dest / name
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(name, dir_fd=fd), target)
        elif stat.S_ISDIR(info.st_mode):
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:  # swapped for a link or removed meanwhile
                left.append(f"{shown}/ (changed while it was copied)")
                continue
            try:
                target.mkdir()
                _copy_dir(child, target, f"{shown}/", left, budget)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(fd, name, target, shown, left, budget)
        else:
            left.append(f"{shown}: not a regular file")


def _copy_file(fd: int, name: str, target: Path, shown: str, left: list[str], budget: list[int]) -> None:
    try:
        source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError:  # swapped for a link (ELOOP) or removed meanwhile
        left.append(f"{shown} (changed while it was copied)")
        return
    try:
        info = os.fstat(source)
        if not stat.S_ISREG(info.st_mode):
            left.append(f"{shown}: not a regular file")
            return
        with open(target, "wb") as sink:
            while block := os.read(source, CHUNK):
                budget[0] -= len(block)
                if budget[0] < 0:
                    raise SnapshotError(f"the pair is larger than {MAX_BYTES >> 20} MiB")
                sink.write(block)
        os.chmod(target, stat.S_IMODE(info.st_mode) & 0o777)
    finally:
        os.close(source)
