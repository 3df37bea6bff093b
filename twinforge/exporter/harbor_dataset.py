"""The dataset manifest of an export: Harbor's ``dataset.toml`` with twinforge's evidence per task.

Harbor 0.26 ``harbor/models/dataset/manifest.py`` (DatasetManifest): ``[dataset]`` name in
``org/name`` form, ``[[tasks]]`` with ``name`` and ``digest = "sha256:<hex>"``, free ``[metadata]``.
The digest is Harbor's task content hash (``harbor/publisher/packager.py``, Packager): sha256 over
``<relative path> NUL <sha256 of the file> LF`` for the task's publishable files in path order,
without Harbor's default ignores. The tests check it against Harbor's own Packager.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from pathlib import Path
from typing import Any

_SINGLE_FILES = ("task.toml", "instruction.md", "README.md", "trajectory.json")
_FOLDERS = ("environment", "tests", "solution", "steps")
_IGNORED_NAMES = ("*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")  # Packager.DEFAULT_IGNORES


def _ignored(relative: str) -> bool:
    parts = relative.split("/")
    return "__pycache__" in parts[:-1] or any(fnmatch.fnmatch(parts[-1], p) for p in _IGNORED_NAMES)


def _files(task_dir: Path) -> list[str]:
    found = [name for name in _SINGLE_FILES if (task_dir / name).is_file()]
    for folder in _FOLDERS:
        for dirpath, dirnames, filenames in os.walk(task_dir / folder):
            dirnames.sort()
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_file():
                    found.append(path.relative_to(task_dir).as_posix())
    return sorted(r for r in found if not _ignored(r))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def content_digest(task_dir: Path) -> str:
    """Harbor's content digest of a task folder, ``sha256:<64 hex>``."""
    outer = hashlib.sha256()
    for relative in _files(task_dir):
        outer.update(f"{relative}\0{_file_sha256(task_dir / relative)}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def drop_none(value: Any) -> Any:
    """A copy of ``value`` without ``None`` entries (TOML has no null)."""
    if isinstance(value, dict):
        return {str(k): drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [drop_none(v) for v in value if v is not None]
    return value


def manifest(name: str, description: str, tasks: dict[str, Path], metadata: dict[str, Any]) -> dict[str, Any]:
    """The ``dataset.toml`` mapping.

    Args:
        name: Dataset name, ``org/name``.
        description: One line.
        tasks: Harbor task name -> its folder (digested here).
        metadata: Per-task evidence, keyed by task name.
    """
    return {
        "schema_version": "1.0",
        "dataset": {"name": name, "description": description, "keywords": ["twinforge", "safety", "task-pairs"]},
        "tasks": [{"name": task, "digest": content_digest(folder)} for task, folder in sorted(tasks.items())],
        "metadata": drop_none({"generator": "twinforge export --format harbor", "tasks": metadata}),
    }
