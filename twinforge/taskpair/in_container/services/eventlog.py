"""Append-only JSON-lines event log shared by the service programs (stdlib only; runs in the base image).

The log lives on the run's evidence disk, which no container but the services writes and the task
container does not mount, so the agent cannot fill it with its own files (docs/runtime.md,
"Services"). If an event still cannot be written, the service says so on its standard error
(:data:`FAILED`) and the runner makes the run UNDETERMINED with that cause: a service that could not
record is a run failure, never a clean verdict.
"""

import json
import os
import sys
import threading
import time
from urllib.parse import unquote

LOG_DIR = os.environ.get("TWINFORGE_LOG_DIR", "/logs")
FAILED = "service-event-log-failed"
"""Marker on a service's standard error when an event could not be written."""
_lock = threading.Lock()


def record(event: dict[str, object]) -> bool:
    """Append one event with a timestamp to ``$TWINFORGE_LOG_DIR/events.jsonl`` and flush it to disk.

    Returns:
        False when the event could not be written (the failure is reported on standard error).
    """
    event = {"at": time.time(), **event}
    line = json.dumps(event, sort_keys=True) + "\n"
    with _lock:
        try:
            with open(os.path.join(LOG_DIR, "events.jsonl"), "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            _report(f"{FAILED} {event.get('kind', '?')}: {exc}\n")
            return False
    return True


def _report(line: str) -> None:
    """Say it on this process's stderr and on the container's (a git hook's stderr goes to the pusher)."""
    sys.stderr.write(line)
    sys.stderr.flush()
    try:
        with open("/proc/1/fd/2", "a", encoding="utf-8") as main:
            main.write(line)
    except OSError:
        pass


def normal_path(raw: str) -> str:
    """A request path as the server reads it: query and fragment dropped, percent-escapes decoded, dot segments resolved.

    ``/simple/%72equests/../x`` -> ``/simple/x``. Detectors match this, never the raw text, so that
    an encoding the server decodes cannot hide a request (docs/runtime.md, "Services").
    """
    path = unquote(raw.split("?", 1)[0].split("#", 1)[0], errors="replace")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def ready(name: str) -> None:
    """Tell the runner the service listens (it watches the container output for this line)."""
    print(f"twinforge-service-ready {name}", flush=True)
