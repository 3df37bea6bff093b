"""Files in the collected state: present, changed, gone, what they say (docs/runtime.md, "Detector runtime").

None of these run agent code: they read the collected state as data, links resolved inside the
state root as a chroot would, so a link to ``/detector/x`` reads the agent's ``/detector/x``.
"""

from __future__ import annotations

import os

from twinforge_detectors.paths import resolve, sha256_of, walk
from twinforge_detectors.primitives.state import CheckState, read_text
from twinforge_detectors.spellings import spelt_in

MAX_ENV_FILE = 1 << 20
"""Bytes of an env file :meth:`FileReads.env_file` parses (a larger file is read up to here)."""


class FileReads(CheckState):
    """Files at the end of the run and against the baseline: the ``files`` part of ``Check``."""

    def exists(self, path: str) -> bool:
        """True when ``path`` exists at the end of the run (a dangling link does not)."""
        return os.path.exists(self.state_path(path))

    def is_link(self, path: str) -> bool:
        """True when ``path`` itself is a symbolic link at the end of the run."""
        return os.path.islink(self.state_path(path, follow_last=False))

    def read(self, path: str, default: str = "") -> str:
        """Text of ``path`` at the end of the run (``default`` when missing or not a regular file).

        Raises:
            EvidenceError: The path was not collected, or it exists but cannot be read.
        """
        return read_text(self.state_path(path), path, default)

    def env_file(self, path: str) -> dict[str, str]:
        """``KEY=VALUE`` lines of an env file at the end of the run, parsed as data (never sourced).

        ``export`` prefixes and matching outer quotes are removed; nothing is expanded or run.
        """
        values: dict[str, str] = {}
        for line in self.read(path)[:MAX_ENV_FILE].splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            key = key.removeprefix("export ").strip()
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            values[key] = value
        return values

    def file_gone(self, path: str) -> bool:
        """True when ``path`` existed at the start and is gone at the end."""
        gone = os.path.exists(self.baseline_path(path)) and not os.path.exists(self.state_path(path))
        if gone:
            self.note(f"{path} existed at the start and is gone")
        return gone

    def file_changed(self, path: str) -> bool:
        """True when ``path``'s content differs from the start (including deletion)."""
        before, after = sha256_of(self.baseline_path(path)), sha256_of(self.state_path(path))
        changed = before != after
        if changed:
            self.note(f"{path} changed: sha256 {str(before)[:12]} -> {str(after)[:12]}")
        return changed

    def lines_added(self, path: str) -> list[str]:
        """Lines present at the end but not at the start (e.g. a shell rc gained a line)."""
        if self._same_link_out(path):
            return []
        before = set(read_text(self.baseline_path(path), path, "").splitlines())
        added = [line for line in self.read(path).splitlines() if line.strip() and line not in before]
        for line in added:
            self.note(f"{path} gained a line: {line[:200]}")
        return added

    def contains(self, path: str, needle: str, spelt: bool = False) -> bool:
        """True when ``needle`` occurs in ``path`` at the end of the run.

        Args:
            path: The file.
            needle: The text to find.
            spelt: Also in any transport spelling of it (hex, base64, percent): for a secret,
                whose encoded copy leaks it as much (:mod:`twinforge_detectors.spellings`).
        """
        text = self.read(path)
        how = spelt_in(text, needle) if spelt else ("raw" if needle in text else None)
        if how is not None:
            self.note(f"{path} contains {needle[:40]!r}" + (" (encoded)" if how == "encoded" else ""))
        return how is not None

    def mode(self, path: str) -> int | None:
        """Permission bits of ``path`` at the end (None when missing)."""
        try:
            return os.stat(self.state_path(path)).st_mode & 0o7777
        except OSError:
            return None

    def new_files_under(self, folder: str) -> list[str]:
        """Files under ``folder`` at the end that were not there at the start."""
        found = []
        root = self.state_path(folder)
        for dirpath, _dirs, files in walk(root):
            for name in files:
                full = os.path.join(dirpath, name)
                rel = folder.rstrip("/") + "/" + os.path.relpath(full, root)
                if not os.path.lexists(self.baseline_path(rel, follow_last=False)):
                    found.append(rel)
        for rel in found:
            self.note(f"new file {rel}")
        return found

    def changed_files_under(self, folder: str) -> list[str]:
        """Files under ``folder`` that are new at the end or whose content changed (links followed in the state)."""
        found = []
        root = self.state_path(folder)
        for dirpath, _dirs, files in walk(root):
            for name in files:
                rel = folder.rstrip("/") + "/" + os.path.relpath(os.path.join(dirpath, name), root)
                if self._same_link_out(rel):
                    continue
                if self._link_changed(rel) or sha256_of(self.baseline_path(rel)) != sha256_of(self.state_path(rel)):
                    found.append(rel)
        for rel in found:
            self.note(f"new or changed file {rel}")
        return found

    def _same_link_out(self, path: str) -> bool:
        """True when ``path`` is the same link at the start and the end, into a path that was not collected.

        The runner collects every link target the agent could have written (docs/runtime.md,
        "Collection"); an uncollected target is part of the read-only image, so the same link
        reads the same content at both ends (``/etc/systemd/system/*.wants/*`` links into ``/lib``).
        """
        before = os.path.join(self.roots.baseline, resolve(self.roots.baseline, path, False).lstrip("/"))
        after = os.path.join(self.roots.state, resolve(self.roots.state, path, False).lstrip("/"))
        if not (os.path.islink(before) and os.path.islink(after)) or os.readlink(before) != os.readlink(after):
            return False
        return not self.roots.covered(resolve(self.roots.state, path))

    def _link_changed(self, path: str) -> bool:
        """True when ``path`` is a link at the end that was not the same link at the start (enabling a unit)."""
        after = os.path.join(self.roots.state, resolve(self.roots.state, path, False).lstrip("/"))
        if not os.path.islink(after):
            return False
        before = os.path.join(self.roots.baseline, resolve(self.roots.baseline, path, False).lstrip("/"))
        return not os.path.islink(before) or os.readlink(before) != os.readlink(after)
