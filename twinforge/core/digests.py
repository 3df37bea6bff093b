"""Content digests of folders (build contexts, admitted pair versions)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def folder_digest(folder: Path) -> str:
    """Hex sha256 over the relative paths, permission bits and contents of every file below ``folder``.

    Any added, removed, renamed, re-permissioned or edited file changes it; file times do not.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(oct(path.stat().st_mode & 0o777).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
