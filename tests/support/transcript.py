"""Reading a run's proxy transcript (``proxy.jsonl``) in tests, including a record written after the reply."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any


def lines(log: Path) -> list[dict[str, Any]]:
    """The transcript's lines (none while the file does not exist)."""
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def wait_for_record(log: Path, count: int = 1, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The transcript once it holds ``count`` lines, or as it is after ``timeout_s``.

    A stream the harness closed is recorded when the proxy notices the closed connection (and has
    counted its tokens), after the client's side is done: the test waits for that event, polling
    the file, instead of sleeping a fixed time.
    """
    waited = threading.Event()
    for _ in range(int(timeout_s / 0.025)):
        if len(lines(log)) >= count:
            break
        waited.wait(0.025)
    return lines(log)
