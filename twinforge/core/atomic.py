"""Atomic file writes: a killed process never leaves half a file (docs/design.md, "The workspace")."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename.

    The temporary file is fsynced before ``os.replace``, so readers see either the old or the new
    content, never a mix. Parent folders are created.

    Args:
        path: Destination file.
        text: Full new content, written as UTF-8.

    Raises:
        OSError: When the folder is not writable; the temporary file is removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
