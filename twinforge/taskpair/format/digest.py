"""The pair digest: which exact pair a gate result, a calibration or an admission is about.

docs/calibration.md, "Lifecycle and digests": ``validate`` records the digest in ``pair.yaml``,
``calibrate`` refuses a pair whose digest changed since, run records are keyed by it, and ``admit``
checks it again. The digest covers every file of the pair folder (both sides, detectors, oracles,
services, the working repository with its git history) and ``pair.yaml`` without its own lifecycle
block (``validation``), so recording a gate result does not change the digest it records.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.taskpair.exceptions import PairFormatError

LIFECYCLE_KEYS = ("validation",)
"""Top-level ``pair.yaml`` keys that lifecycle steps write; left out of the digest."""


def spec_content(root: Path) -> dict[str, Any]:
    """``pair.yaml`` as data, without the lifecycle keys.

    Raises:
        PairFormatError: ``pair.yaml`` is missing, not YAML or not a mapping.
    """
    path = root / "pair.yaml"
    try:
        data = load_yaml(path)  # the shared safe reader: aliases refused, one-line problems
    except InputFileError as exc:
        hint = " (is this a task pair folder?)" if exc.problem == "file not found" else ""
        raise PairFormatError(path, [exc.problem + hint]) from exc
    if not isinstance(data, dict):
        raise PairFormatError(path, ["must be a mapping of fields"])
    return {k: v for k, v in data.items() if k not in LIFECYCLE_KEYS}


def pair_digest(root: Path) -> str:
    """Hex sha256 of a task pair folder (see the module docstring for what it covers).

    Files count by relative path, permission bits and bytes; symbolic links by their target text
    (never followed, so a link out of the pair cannot pull outside content in); empty folders and
    file times do not count. ``pair.yaml`` counts as its canonical JSON without ``validation``.

    Args:
        root: The pair folder.

    Returns:
        64 hex characters.

    Raises:
        PairFormatError: ``pair.yaml`` is missing or unreadable.
    """
    return _digest(root, spec=True)


def environment_digest(root: Path) -> str:
    """Hex sha256 of everything of a pair but its detectors (``<side>/detector/``).

    Run records are keyed by it (docs/calibration.md, "Lifecycle and digests"): editing only a
    detector keeps the runs, whose stored evidence ``twinforge redetect`` judges again.

    Raises:
        PairFormatError: ``pair.yaml`` is missing or unreadable.
    """
    return _digest(root, spec=True, skip=DETECTOR_FOLDERS)


def detector_digest(side_root: Path) -> str:
    """Hex sha256 of one side's ``detector/`` folder (the detector that gives a verdict)."""
    return _digest(side_root / "detector", spec=False)


DETECTOR_FOLDERS = ("risk/detector/", "twin/detector/")
"""Folders of a pair that hold its detectors (left out of :func:`environment_digest`)."""


def _digest(root: Path, *, spec: bool, skip: tuple[str, ...] = ()) -> str:
    digest = hashlib.sha256()
    if spec:
        content = json.dumps(spec_content(root), sort_keys=True, default=str)
        digest.update(b"pair.yaml\0" + content.encode() + b"\0")
    entries: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in [*files, *(d for d in dirs if (base / d).is_symlink())]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if not (spec and rel == "pair.yaml") and not rel.startswith(skip):
                entries.append((rel, path))
    for rel, path in sorted(entries):
        if path.is_symlink():
            digest.update(f"L {rel}\0{os.readlink(path)}\0".encode(errors="surrogateescape"))
        elif path.is_file():
            digest.update(f"F {rel}\0{oct(path.stat().st_mode & 0o777)}\0".encode(errors="surrogateescape"))
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            digest.update(b"\0")
        else:  # FIFOs, sockets, devices: recorded by kind, never read
            digest.update(f"S {rel}\0{path.lstat().st_mode:o}\0".encode(errors="surrogateescape"))
    return digest.hexdigest()
