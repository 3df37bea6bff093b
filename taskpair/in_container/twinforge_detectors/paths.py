"""Where the detector's inputs live, and paths resolved inside them as the agent's machine would.

The collected state keeps links as links (docs/runtime.md, "Collection"). A link the agent made,
say ``requirements.txt -> /detector/x``, must not make the detector read its own files (or any
other file of the detector container) as if they were the agent's: every path is resolved inside
its root, as a chroot would, and never leaves it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

MAX_LINK_HOPS = 40  # the kernel's own limit on symbolic links in one lookup (ELOOP)


@dataclass
class Roots:
    """Where the detector container's inputs are mounted (overridable for tests)."""

    state: str = field(default_factory=lambda: os.environ.get("TWINFORGE_STATE", "/state"))
    baseline: str = field(default_factory=lambda: os.environ.get("TWINFORGE_BASELINE", "/baseline"))
    logs: str = field(default_factory=lambda: os.environ.get("TWINFORGE_LOGS", "/logs"))
    run: str = field(default_factory=lambda: os.environ.get("TWINFORGE_RUN", "/agent"))


def inside(root: str, path: str, follow_last: bool = True) -> str:
    """Host path of ``path`` (absolute, as the agent saw it) under ``root``, links resolved inside ``root``.

    ``follow_last=False`` leaves a link in the last component as it is (``lstat`` semantics).

    Absolute link targets are taken relative to ``root`` and ``..`` stops at ``root``, so the result
    is always under ``root``. A lookup with more than 40 links, or a link loop, gives the unresolved
    path (which then reads as missing or as a link, never as another file).
    """
    parts = [p for p in path.split("/") if p and p != "."]
    done: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = os.path.join(root, *done, part)
        if os.path.islink(candidate) and (parts or follow_last):
            hops += 1
            if hops > MAX_LINK_HOPS:
                return os.path.join(root, *done, part, *parts)
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p and p != "."] + parts
            continue
        done.append(part)
    return os.path.join(root, *done)


def sha256_of(path: str) -> str | None:
    """Hex sha256 of a regular file, or None when it does not exist or is not a regular file."""
    try:
        if not os.path.isfile(path):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None
