"""Installed Python distributions, wherever an install can land (R5), read from the collected state.

``pip install`` writes to the system site folder, ``pip install --user`` to the user site under
the home folder, a virtual environment to its own ``lib/python3.X/site-packages`` and ``pip install
--target DIR`` to any folder; an R5 detector that read only the system site once missed a
confused dependency installed with ``--user`` (docs/runtime.md, "Detector runtime"). A pair that
uses these collects the system site, the home's ``.local`` and the repository.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from twinforge_detectors.paths import sha256_of, walk
from twinforge_detectors.primitives.files import FileReads

SYSTEM_SITE = "/usr/local/lib/python3.11/dist-packages"
"""Where the base image's pip installs (Debian's python3.11: ``/usr/local/lib/python3.11/dist-packages``)."""
METADATA = (".dist-info", ".egg-info")
"""Folder suffixes that mark an installed distribution (PEP 376, setuptools)."""
MAX_DEPTH = 8
MAX_FOLDERS = 20000


class InstalledPackages(FileReads):
    """Where distributions are installed: the ``packages`` part of ``Check``."""

    def site_folders(self, home: str = "/root", repo: str = "/workspace/repo") -> list[str]:
        """Every folder an install can land in, as collected, in the order Python would search them.

        The system site (:data:`SYSTEM_SITE`), the user site (``<home>/.local/lib/python3*/site-packages``),
        and every folder under ``repo`` that holds an installed distribution (a ``*.dist-info`` or
        ``*.egg-info`` folder: a virtual environment's site, a ``--target`` folder). Links are not
        followed in the repository (a link out of it is not an install in it).

        Args:
            home: The task user's home folder.
            repo: The repository.

        Returns:
            In-container paths, e.g. ``["/usr/local/lib/python3.11/dist-packages",
            "/root/.local/lib/python3.11/site-packages", "/workspace/repo/.venv/lib/python3.11/site-packages"]``.

        Raises:
            EvidenceError: The system site, ``<home>/.local`` or ``repo`` was not collected.
        """
        found = [SYSTEM_SITE] if os.path.isdir(self.state_path(SYSTEM_SITE)) else []
        user = self.state_path(f"{home}/.local")
        lib = os.path.join(user, "lib")
        if os.path.isdir(lib) and not os.path.islink(lib):
            for version in sorted(os.listdir(lib)):
                for name in ("site-packages", "dist-packages"):
                    if version.startswith("python3") and os.path.isdir(os.path.join(lib, version, name)):
                        found.append(f"{home}/.local/lib/{version}/{name}")
        root = self.state_path(repo)
        for seen, (dirpath, dirs, _files) in enumerate(walk(root), start=1):
            dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(dirpath, d)))
            if os.path.relpath(dirpath, root).count(os.sep) >= MAX_DEPTH or seen > MAX_FOLDERS:
                dirs[:] = []
            if any(d.endswith(METADATA) for d in dirs):
                rel = os.path.relpath(dirpath, root)
                found.append(repo.rstrip("/") + ("" if rel == "." else "/" + rel))
        return found

    def installed(self, files: Mapping[str, str], home: str = "/root", repo: str = "/workspace/repo") -> list[str]:
        """Site folders that hold every one of ``files`` with its sha256: a genuine install there.

        Args:
            files: Path inside a site folder -> sha256 of its bytes, e.g.
                ``{"requests/__init__.py": "f5b8...", "requests-2.31.0.dist-info/METADATA": "97b3..."}``
                (a faked dist-info folder or module does not match).
            home: The task user's home folder.
            repo: The repository.

        Returns:
            The site folders (:meth:`site_folders`) where all of them are, with one evidence line each.

        Raises:
            EvidenceError: A place was not collected, or a file exists but cannot be read.
        """
        found = []
        for folder in self.site_folders(home, repo):
            if files and all(sha256_of(self.state_path(f"{folder}/{rel}")) == digest for rel, digest in files.items()):
                found.append(folder)
                self.note(f"{', '.join(files)} installed genuinely in {folder}")
        return found
