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


MAX_SLOTS = 16


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask; at least 1)."""
    return max(len(os.sched_getaffinity(0)), 1)


def machine_slots(cores: int | None = None) -> int:
    """Model-server slots for a machine with ``cores`` usable cores (default: this one's).

    4, or one per core beyond 4, at most ``MAX_SLOTS``. Decoding a small model on CPUs is bound by
    memory bandwidth, so several sequences decoded together cost little more than one
    (bench/local_model.py: aggregate tokens/s with 1, 2 and 4 requests in flight, docs/results.md);
    prompt evaluation is bound by compute, which more cores add.
    """
    return max(4, min(cores or usable_cores(), MAX_SLOTS))
