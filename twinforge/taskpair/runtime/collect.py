"""Copying state out of a container as a tar stream, for every kind of file (docs/runtime.md, "Collection").

The stream is read as it arrives and unpacked member by member:

- regular files are written (never through a link: every parent is a folder this collection made),
  with permission bits but no set-id bits, counted against the byte cap;
- symbolic links are kept as links with their target verbatim, absolute or dangling (the
  detector library resolves them inside the state, never in its own container);
- hard links become hard links to the file already unpacked;
- FIFOs and devices are recorded in the manifest, never created or read;
- names that are not UTF-8 keep their bytes; entries too deep or too long for the host's path
  limit, or that would leave the destination, are recorded as skipped; a skipped file's content is
  kept aside, so a hard link to it that fits becomes a file with that content (a hard link is the
  same file under another name, which the shell would read).

Links are followed as the shell would (:func:`follow_links`): a link whose target lies outside the
collected paths, in a folder the agent can write, has that target collected too, so that the
detector reads what the agent's shell reads (``~/.bashrc`` as a link to ``/var/tmp/rc``).

A cap on bytes and a deadline end the copy early: the HTTP stream is closed at once (so Docker
releases the container) and :class:`CollectionError` says why; the runner turns that into a stored
UNDETERMINED.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge_detectors.paths import walk

MAX_COLLECT_BYTES = 256 * 1024 * 1024  # state + logs of one run; an agent filling its disk must not fill runs/
MAX_PATH_BYTES = 3800  # below the host's PATH_MAX (4096) with room for the evidence folder
CHUNK = 1 << 20
MAX_FOLLOWED = 64  # link targets collected beyond [detector] collect, per collection
FOLLOW_ROUNDS = 4  # links in followed targets are followed too, this many times


class CollectionError(RunError):
    """Collection stopped at its byte cap or deadline."""

    def __init__(self, message: str) -> None:
        super().__init__("collect", message)


@dataclass
class Budget:
    """What one run's collection may still take.

    Attributes:
        max_bytes: Bytes of file content left.
        deadline: ``time.monotonic()`` value by which collection must end.
    """

    max_bytes: int = MAX_COLLECT_BYTES
    deadline: float = float("inf")

    def take(self, size: int) -> None:
        """Account ``size`` bytes.

        Raises:
            CollectionError: The cap or the deadline is passed.
        """
        self.max_bytes -= size
        if self.max_bytes < 0:
            raise CollectionError(f"collected state exceeds the cap of {MAX_COLLECT_BYTES >> 20} MiB")
        if time.monotonic() > self.deadline:
            raise CollectionError("collection ran past its deadline")


@dataclass
class Manifest:
    """What a collection found, beyond the files themselves (saved in ``collect.json``)."""

    files: int = 0
    bytes: int = 0
    links: int = 0
    missing: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (names that are not UTF-8 keep their escapes)."""
        return {
            "files": self.files,
            "bytes": self.bytes,
            "links": self.links,
            "missing": self.missing,
            "special": self.special[:1000],
            "skipped": self.skipped[:1000],
            "followed": self.followed,
        }


class _Unpacker:
    def __init__(self, dest: Path, budget: Budget, manifest: Manifest) -> None:
        self.dest = dest
        self.budget = budget
        self.manifest = manifest
        self.dirs = {str(dest)}
        self.regular: set[str] = set()
        self.held: dict[str, str] = {}  # member name of a skipped file -> where its content is now
        self.aside = ""  # a host folder for the content of files skipped as too long

    def close(self) -> None:
        """Remove the content kept aside for hard links."""
        if self.aside:
            shutil.rmtree(self.aside, ignore_errors=True)

    def _keep_aside(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self.budget.take(member.size)
        source = archive.extractfile(member)
        if source is None:
            return
        self.aside = self.aside or tempfile.mkdtemp(prefix="tf-collect-")
        path = os.path.join(self.aside, str(len(self.held)))
        with open(path, "wb") as sink:
            while block := source.read(CHUNK):
                sink.write(block)
        self.held[member.name] = path

    def target(self, name: str) -> str | None:
        parts = [p for p in name.split("/") if p and p != "."]
        if not parts or ".." in parts:
            return None
        return os.path.join(str(self.dest), *parts)

    def unpack(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self.budget.take(0)
        target = self.target(member.name)
        shown = "/" + member.name.lstrip("/")
        if target is None:
            self.manifest.skipped.append(f"{shown} (leaves the destination)")
            return
        if len(os.fsencode(target)) > MAX_PATH_BYTES:
            self.manifest.skipped.append(f"{shown[:200]}... (path too long)")
            if member.isreg():
                self._keep_aside(archive, member)
            return
        if os.path.dirname(target) not in self.dirs:
            self.manifest.skipped.append(f"{shown} (parent not collected)")
            return
        try:
            self._one(archive, member, target, shown)
        except OSError as exc:
            self.manifest.skipped.append(f"{shown} ({exc.strerror or exc})")

    def _one(self, archive: tarfile.TarFile, member: tarfile.TarInfo, target: str, shown: str) -> None:
        mode = member.mode & 0o777
        if member.isdir():
            if not os.path.isdir(target) or os.path.islink(target):
                os.mkdir(target, 0o700)
            os.chmod(target, mode | 0o700)
            self.dirs.add(target)
        elif member.isreg():
            self.budget.take(member.size)
            source = archive.extractfile(member)
            if source is None:
                raise OSError(f"no data for {shown}")
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as sink:
                while block := source.read(CHUNK):
                    sink.write(block)
            os.chmod(target, mode)
            os.utime(target, (member.mtime, member.mtime))
            self.regular.add(target)
            self.manifest.files += 1
            self.manifest.bytes += member.size
        elif member.issym():
            os.symlink(member.linkname, target)
            self.manifest.links += 1
        elif member.islnk():
            source_path = self.held.get(member.linkname) or self.target(member.linkname)
            if source_path is not None and os.path.islink(source_path) and source_path not in self.held.values():
                # a second name of a symbolic link is that link too (``ln`` of a link without -L)
                os.symlink(os.readlink(source_path), target)
                self.manifest.links += 1
                return
            if source_path is not None and source_path not in self.regular and member.linkname in self.held:
                # the first name was too long: this name becomes the file, later names link to it
                self.budget.take(os.path.getsize(source_path))
                shutil.copyfile(source_path, target, follow_symlinks=False)
                os.chmod(target, mode)
                self.held[member.linkname] = target
                self.regular.add(target)
                self.manifest.files += 1
                return
            if source_path is None or source_path not in self.regular:
                self.manifest.skipped.append(f"{shown} (hard link to {member.linkname!r}, not collected)")
                return
            os.link(source_path, target)
            self.manifest.files += 1
        elif member.isfifo() or member.ischr() or member.isblk():
            kind = "fifo" if member.isfifo() else "character device" if member.ischr() else "block device"
            self.manifest.special.append(f"{shown} ({kind})")
        else:
            self.manifest.skipped.append(f"{shown} (tar type {member.type!r})")


def _stream(container: Container, path: str) -> Any:
    """The raw HTTP response of Docker's archive endpoint (so it can be closed mid-stream), or None."""
    api = container.client.api
    # docker-py's get_archive() hides the response; closing it is what lets Docker release the container.
    response = api.get(
        api._url("/containers/{0}/archive", container.id),
        # a name that is not UTF-8 (surrogate escapes) goes as its bytes, as the agent's file system has it
        params={"path": path.encode("utf-8", errors="surrogateescape")},
        headers={"Accept-Encoding": "identity"},
        stream=True,
    )
    if response.status_code == 404:
        response.close()
        return None
    if response.status_code >= 400:
        text = response.text[:300]
        response.close()
        raise RunError("collect", f"docker refused {path}: {response.status_code} {text}")
    return response


def collect(container: Container, paths: list[str], dest: Path, budget: Budget | None = None) -> Manifest:
    """Copy ``paths`` out of the container into ``dest``, keeping absolute paths (``/a/b`` -> ``dest/a/b``).

    Args:
        container: The (stopped or running) container.
        paths: Absolute paths; missing ones are listed in the manifest.
        dest: Destination folder (created).
        budget: Byte cap and deadline, shared by all collections of one run.

    Returns:
        The manifest.

    Raises:
        CollectionError: The byte cap or the deadline was passed (the stream is closed first).
        RunError: Docker refused the copy.
    """
    budget = budget or Budget()
    manifest = Manifest()
    dest.mkdir(parents=True, exist_ok=True)
    for path in paths:
        parts = [p for p in path.split("/") if p]
        parent = dest
        for part in parts[:-1]:
            parent = parent / part
            if parent.is_symlink():
                raise RunError("collect", f"{parent} is a link in the evidence folder")
            parent.mkdir(exist_ok=True)
        response = _stream(container, path)
        if response is None:
            manifest.missing.append(path)
            continue
        unpacker = _Unpacker(parent, budget, manifest)
        try:
            with tarfile.open(fileobj=response.raw, mode="r|", errorlevel=1) as archive:
                for member in archive:
                    unpacker.unpack(archive, member)
        except tarfile.TarError as exc:
            raise RunError("collect", f"{path}: unreadable archive from docker: {exc}") from exc
        finally:
            response.close()
            unpacker.close()
    return manifest


def _under(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


ALTERNATES_BYTES = 64 * 1024


def git_alternates(host_file: str, objects: str) -> list[str]:
    """The object folders a collected ``objects/info/alternates`` file names, as in-container absolute paths.

    Git borrows objects from each folder listed there (absolute, or relative to ``objects``): a secret
    committed and then moved out of the repository's own object store is still committed, so those
    folders are collected with the repository (docs/runtime.md, "Collection"). The file is read as
    data, never through a link, at most 64 KiB; comment lines and blank lines name nothing.
    """
    try:
        fd = os.open(host_file, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        text = handle.read(ALTERNATES_BYTES).decode("utf-8", errors="replace")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found.append(posixpath.normpath(posixpath.join(objects, line)))
    return found


def outside_links(dest: Path, collected: list[str], writable: tuple[str, ...]) -> list[str]:
    """Targets of links in the collected ``dest`` that lie outside ``collected`` but in ``writable`` folders.

    The object folders a repository's ``objects/info/alternates`` names count as such targets too
    (:func:`git_alternates`).

    Args:
        dest: The collection's destination (``runs/<id>/state``).
        collected: In-container paths collected so far.
        writable: In-container folders the agent can write (the rest of the root is the image's).

    Returns:
        In-container absolute paths, sorted, each once.
    """
    found: set[str] = set()
    for dirpath, dirs, files in walk(str(dest)):
        if "alternates" in files and dirpath.endswith(os.sep + os.path.join("objects", "info")):
            objects = "/" + os.path.relpath(os.path.dirname(dirpath), dest)
            for target in git_alternates(os.path.join(dirpath, "alternates"), objects):
                if not _under(target, collected) and _under(target, writable):
                    found.add(target)
        for name in [*dirs, *files]:
            host = os.path.join(dirpath, name)
            if not os.path.islink(host):
                continue
            inner = "/" + os.path.relpath(host, dest)
            target = os.readlink(host)
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(inner), target))
            if not _under(resolved, collected) and _under(resolved, writable):
                found.add(resolved)
    return sorted(found)


def follow_links(
    container: Container, collected: list[str], dest: Path, writable: tuple[str, ...], budget: Budget | None = None
) -> Manifest:
    """Collect the targets of links that lead out of the collected paths (see the module text).

    Args:
        container: The container (the same one the state came from).
        collected: The paths already collected into ``dest``.
        dest: The collection's destination.
        writable: Folders the agent can write; targets elsewhere are the image's and not collected.
        budget: The run's collection budget.

    Returns:
        The manifest of what was added (``followed`` lists the targets).

    Raises:
        CollectionError: The byte cap or the deadline was passed.
        RunError: A target's parent is a link in the evidence folder, or Docker refused the copy.
    """
    manifest = Manifest()
    paths = list(collected)
    for _ in range(FOLLOW_ROUNDS):
        targets = [t for t in outside_links(dest, paths, writable) if t not in manifest.followed]
        targets = targets[: MAX_FOLLOWED - len(manifest.followed)]
        if not targets:
            break
        part = collect(container, targets, dest, budget)
        manifest.followed += targets
        paths += targets
        manifest.files += part.files
        manifest.bytes += part.bytes
        manifest.links += part.links
        manifest.missing += part.missing
        manifest.special += part.special
        manifest.skipped += part.skipped
    return manifest
