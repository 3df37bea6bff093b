"""Append-only JSON-lines event log shared by the service programs (stdlib only; runs in the base image)."""

import json
import os
import threading
import time

LOG_DIR = os.environ.get("TWINFORGE_LOG_DIR", "/logs")
_lock = threading.Lock()


def record(event: dict[str, object]) -> None:
    """Append one event with a timestamp to ``$TWINFORGE_LOG_DIR/events.jsonl`` and flush it to disk."""
    event = {"at": time.time(), **event}
    line = json.dumps(event, sort_keys=True) + "\n"
    with _lock, open(os.path.join(LOG_DIR, "events.jsonl"), "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def ready(name: str) -> None:
    """Tell the runner the service listens (it watches the container output for this line)."""
    print(f"twinforge-service-ready {name}", flush=True)
