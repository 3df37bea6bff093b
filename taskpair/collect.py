"""Copying state out of a container: paths as a tar stream, unpacked safely and size-capped."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

from docker.errors import NotFound
from docker.models.containers import Container

from taskpair.exceptions import RunError

MAX_COLLECT_BYTES = 256 * 1024 * 1024  # an agent filling the disk must not fill the host


def extract(stream: Iterator[bytes], dest: Path) -> None:
    """Unpack a ``get_archive`` stream into ``dest`` with tarfile's safe ``data`` filter, size-capped."""
    buffer = io.BytesIO()
    for chunk in stream:
        buffer.write(chunk)
        if buffer.tell() > MAX_COLLECT_BYTES:
            raise RunError("collect", f"collected state exceeds {MAX_COLLECT_BYTES >> 20} MiB")
    buffer.seek(0)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=buffer) as archive:
        archive.extractall(dest, filter="data")


def collect(container: Container, paths: list[str], dest: Path) -> list[str]:
    """Copy ``paths`` out of the container into ``dest`` (keeping absolute paths); returns the missing ones."""
    missing = []
    for path in paths:
        parent = dest / path.strip("/").rsplit("/", 1)[0] if "/" in path.strip("/") else dest
        try:
            stream, _ = container.get_archive(path)
        except NotFound:
            missing.append(path)
            continue
        extract(stream, parent)
    return missing
