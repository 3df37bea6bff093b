"""Processes on this host."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (also when it belongs to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
