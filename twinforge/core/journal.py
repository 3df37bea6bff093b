"""The write journal: which files twinforge wrote and has not committed yet (docs/workspace.md).

Before twinforge writes a file of the workspace it records the file's path and the sha256 of the
bytes it is about to write under ``.twinforge/journal/``; a successful commit clears the entry. A
process killed between the write and the commit leaves the entry, so the next run can commit that
file, and only that file, and only while it still holds exactly those bytes. A file a person
edited (before or after twinforge wrote it) never matches and is left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from twinforge.core.atomic import atomic_write_text


def content_sha256(data: bytes) -> str:
    """sha256 of a file's bytes, hex."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    """One uncommitted write.

    Attributes:
        path: The file, relative to the workspace.
        sha256: sha256 of the bytes twinforge wrote.
        pid: The process that wrote it.
    """

    path: str
    sha256: str
    pid: int


class Journal:
    """The journal folder of one workspace.

    Callers hold the workspace lock around :meth:`record` + the write, and around a commit and its
    :meth:`clear`, so entries and files never disagree for another twinforge process.

    Args:
        folder: ``.twinforge/journal``.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _entry_file(self, path: str) -> Path:
        return self.folder / (hashlib.sha256(path.encode()).hexdigest()[:24] + ".json")

    def record(self, path: str, data: bytes) -> None:
        """Note that ``data`` is about to be written to ``path`` (call before writing)."""
        entry = {"path": path, "sha256": content_sha256(data), "pid": os.getpid()}
        atomic_write_text(self._entry_file(path), json.dumps(entry))

    def get(self, path: str) -> JournalEntry | None:
        """The entry of ``path``, if twinforge wrote it and has not committed it."""
        return self._load(self._entry_file(path))

    def owns(self, path: str, data: bytes) -> bool:
        """True when ``path`` holds exactly the bytes twinforge last wrote there, uncommitted."""
        entry = self.get(path)
        return entry is not None and entry.sha256 == content_sha256(data)

    def entries(self) -> list[JournalEntry]:
        """Every entry, sorted by path."""
        if not self.folder.is_dir():
            return []
        found = [self._load(p) for p in self.folder.glob("*.json")]
        return sorted((e for e in found if e is not None), key=lambda e: e.path)

    def clear(self, paths: Iterable[str]) -> None:
        """Drop the entries of ``paths`` (after they were committed, or given up)."""
        for path in paths:
            self._entry_file(path).unlink(missing_ok=True)

    @staticmethod
    def _load(file: Path) -> JournalEntry | None:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            return JournalEntry(str(data["path"]), str(data["sha256"]), int(data.get("pid", 0)))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a missing or damaged entry marks nothing as twinforge's
