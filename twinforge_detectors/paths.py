"""Where the detector's inputs live, and paths resolved inside them as the agent's machine would.

The collected state keeps links as links (docs/runtime.md, "Collection"). A link the agent made,
say ``requirements.txt -> /detector/x``, must not make the detector read its own files (or any
other file of the detector container) as if they were the agent's: every path is resolved inside
its root, as a chroot would, and never leaves it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from twinforge_detectors.errors import EvidenceError

MAX_LINK_HOPS = 40  # the kernel's own limit on symbolic links in one lookup (ELOOP)


def _collected_from_env() -> tuple[str, ...] | None:
    raw = os.environ.get("TWINFORGE_COLLECTED")
    if raw is None:
        return None
    try:
        paths = json.loads(raw)
    except ValueError:
        return None
    return tuple(p for p in paths if isinstance(p, str)) if isinstance(paths, list) else None


@dataclass
class Roots:
    """Where the detector container's inputs are mounted (overridable for tests).

    Attributes:
        collected: The in-container paths the evidence covers (``[detector] collect`` and the
            link targets the runner followed); ``None`` when unknown (every path counts as covered).
        watched: The runtime watches the run while the agent acts (twinforge's runner does; a Harbor
            export's verifier sets ``TWINFORGE_WATCHER=none``: it has no host watcher).
    """

    state: str = field(default_factory=lambda: os.environ.get("TWINFORGE_STATE", "/state"))
    baseline: str = field(default_factory=lambda: os.environ.get("TWINFORGE_BASELINE", "/baseline"))
    logs: str = field(default_factory=lambda: os.environ.get("TWINFORGE_LOGS", "/logs"))
    run: str = field(default_factory=lambda: os.environ.get("TWINFORGE_RUN", "/agent"))
    services: str = field(default_factory=lambda: os.environ.get("TWINFORGE_SERVICES", "/services"))
    collected: tuple[str, ...] | None = field(default_factory=_collected_from_env)
    watched: bool = field(default_factory=lambda: os.environ.get("TWINFORGE_WATCHER", "host") != "none")

    def covered(self, path: str) -> bool:
        """True when the in-container ``path`` lies in (or is) a collected path."""
        if self.collected is None:
            return True
        return any(path == c or path.startswith(c.rstrip("/") + "/") or c == "/" for c in self.collected)

    def require(self, asked: str, resolved: str) -> None:
        """Raise when ``asked`` resolves (through links) to a path the evidence does not cover.

        Raises:
            EvidenceError: ``resolved`` was not collected: the file's content is unknown, not missing.
        """
        if not self.covered(resolved):
            via = f" (through links, {resolved})" if resolved != asked else ""
            raise EvidenceError(f"{asked}{via} was not collected: add it to [detector] collect", by_agent=bool(via))


def inside(root: str, path: str, follow_last: bool = True) -> str:
    """Host path of ``path`` (absolute, as the agent saw it) under ``root``, links resolved inside ``root``.

    ``follow_last=False`` leaves a link in the last component as it is (``lstat`` semantics).

    Absolute link targets are taken relative to ``root`` and ``..`` stops at ``root``, so the result
    is always under ``root``. A lookup with more than 40 links, or a link loop, gives the unresolved
    path (which then reads as missing or as a link, never as another file).
    """
    return os.path.join(root, resolve(root, path, follow_last).lstrip("/"))


def resolve(root: str, path: str, follow_last: bool = True) -> str:
    """The in-container absolute path that ``path`` names once links are resolved inside ``root`` (see ``inside``)."""
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
                return "/" + "/".join([*done, part, *parts])
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p and p != "."] + parts
            continue
        done.append(part)
    return "/" + "/".join(done)


def sha256_of(path: str) -> str | None:
    """Hex sha256 of a regular file, or None when it does not exist or is not a regular file.

    Raises:
        EvidenceError: The file exists but cannot be read (its content is unknown, not absent).
    """
    if not os.path.isfile(path):
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EvidenceError(f"{path} exists but cannot be read: {exc.strerror or exc}", by_agent=True) from exc
    return digest.hexdigest()


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` without recursion and without following any link, even to classify it.

    The agent's tree can be as deep as the path limit allows; Python 3.11's recursive ``os.walk`` once
    ended a run with ``RecursionError`` (round six: the host's collection and the detector's reads
    alike), and its ``is_dir()`` follows links (a link to ``/proc/1/root`` was resolved on the host).
    Yields ``(dirpath, dirnames, filenames)`` top-down; a link, to a folder or not, is listed among
    ``filenames``. Pruning ``dirnames`` in place works as with ``os.walk``; a folder that cannot be
    listed is left out.
    """
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                real_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                real_dir = False
            (dirs if real_dir else files).append(entry.name)
        yield folder, dirs, files
        pending.extend(os.path.join(folder, d) for d in reversed(dirs))
