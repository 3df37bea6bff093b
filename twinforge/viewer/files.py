"""Route parameters and files, read so that no path outside the workspace is ever served.

docs/viewer.md, "Hostile content": ids in URLs are checked against their patterns before they touch
the file system; files are opened only below a known folder, never through a symbolic link (the
evidence folders hold copies of state the agent wrote, links included), and read up to a cap.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from twinforge.viewer.exceptions import NotFound

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
"""Run ids: ``<pair>-<side>-k<n>-<hex>`` (calibration/jobs.py); no slash, no leading dot."""
PAIR_ID = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
"""Pair ids: the ``Name`` pattern of pair.yaml (taskpair/format/spec.py)."""
BLUEPRINT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
"""Blueprint ids: ``S2-R3-7f3a9c2e`` (cell, then hex)."""
MAX_READ = 64 * 2**20
"""Largest evidence file read (a 40-call proxy transcript is a few MB)."""


def checked(kind: str, value: str, pattern: re.Pattern[str]) -> str:
    """``value`` when it matches ``pattern``.

    Raises:
        NotFound: It does not (the route answers 404 and touches no file).
    """
    if not pattern.fullmatch(value):
        raise NotFound(f"{kind} {value[:80]!r}")
    return value


def _no_links(base: Path, path: Path) -> bool:
    """Every component of ``path`` below ``base`` exists and none is a symbolic link."""
    try:
        rel = path.relative_to(base)
    except ValueError:
        return False
    current = base
    for part in rel.parts:
        if part in ("..", ""):
            return False
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


def inside(base: Path, *parts: str) -> Path | None:
    """``base/parts...`` when it exists below ``base`` with no symbolic link on the way, else ``None``."""
    path = base.joinpath(*parts)
    return path if _no_links(base, path) else None


def read_bytes(base: Path, *parts: str, limit: int = MAX_READ) -> bytes | None:
    """The first ``limit`` bytes of a regular file below ``base`` (``None``: absent, a link, not a file)."""
    path = inside(base, *parts)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit)


def read_text(base: Path, *parts: str, limit: int = MAX_READ) -> str | None:
    """Like :func:`read_bytes`, decoded as UTF-8 with undecodable bytes replaced."""
    data = read_bytes(base, *parts, limit=limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_json(base: Path, *parts: str) -> Any:
    """A JSON file below ``base``, or ``None`` when it is absent or not JSON."""
    text = read_text(base, *parts)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def read_jsonl(base: Path, *parts: str) -> list[Any]:
    """The JSON lines of a file below ``base`` (lines that are not JSON are skipped)."""
    text = read_text(base, *parts) or ""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def tree(base: Path, limit: int = 2000) -> list[tuple[str, bool]]:
    """Files and folders below ``base`` as ``(relative path, is_dir)``, sorted, links not followed.

    At most ``limit`` entries (a pair's working repository is small; ``.git`` internals are skipped).
    """
    out: list[tuple[str, bool]] = []
    for root, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        rel_root = Path(root).relative_to(base)
        for name in dirs:
            out.append((str(rel_root / name), True))
        for name in sorted(files):
            out.append((str(rel_root / name), False))
        if len(out) >= limit:
            break
    return sorted(out)[:limit]
