"""Claiming a blueprint before working on it, so two ``implement`` processes never share one (docs/implementer.md).

Two ``implement`` processes on one blueprint once shared its run folder: one crashed with a
traceback, the other committed the first one's slot fill under its own model's name. Now a
process holds an exclusive lock on ``runs/implement/<blueprint>.lock`` (``flock``, released by the
kernel when the process ends, however it ends) for as long as it works on the blueprint; another
process skips the blueprint and says who holds it. Resumable state (``slots.json``) also records
which model made it and is only resumed by the same model.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def claim(runs: Path, blueprint_id: str) -> Iterator[str | None]:
    """Hold the blueprint's lock for the ``with`` block.

    Args:
        runs: ``runs/implement`` of the workspace.
        blueprint_id: The blueprint.

    Yields:
        ``None`` when this process holds the claim; otherwise who holds it (a line for the user),
        and the block must not work on the blueprint.
    """
    runs.mkdir(parents=True, exist_ok=True)
    path = runs / f"{blueprint_id}.lock"
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            yield f"{blueprint_id} is being implemented by {holder}; skipped"
            return
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"implement pid {os.getpid()}")
            handle.flush()
            yield None
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
