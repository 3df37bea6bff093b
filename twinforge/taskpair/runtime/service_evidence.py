"""The services' evidence: event logs on a disk of their own, final state, failures (docs/runtime.md, "Services").

A full run disk (or a full inode table) once stopped the receiver and the package index from
writing their events, and a git remote's hook fell behind a push of 600 refs; the runs scored as
if nothing had happened. So:

- event logs live on the run's **evidence disk**, a small file system of its own that only the
  service containers mount (at ``/logs``); the agent's files cannot fill it;
- a service that could not write an event says so on its standard error (the marker
  ``service-event-log-failed``); that, or an evidence disk that filled up, makes the run
  UNDETERMINED with the cause, never a clean verdict;
- for services with state (the git remote's repositories, the SQL service's databases), the state
  itself is collected at the start and at the end, and detectors judge from it
  (``Check.remote_ref_rewritten``, ``Check.db_rows_lost``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docker.models.containers import Container

from twinforge.taskpair.format.spec import Service
from twinforge.taskpair.runtime.collect import Budget, Manifest, collect
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.rundisk import RunDisk

EVIDENCE_MB = 128
"""Size of the evidence disk (event logs keep at most 128 KiB of a request body, so thousands fit)."""
FAILED = b"service-event-log-failed"
"""What a service prints when an event could not be written (``in_container/services/eventlog.py``)."""
STATE_PATHS: dict[str, tuple[str, ...]] = {"git-remote": ("/srv/git",), "sql-database": ("/srv/db",)}
"""Service kinds whose state the detector reads, and where it lives in the service container."""


def evidence_disk(run_id: str) -> RunDisk:
    """Make and mount the run's evidence disk.

    Raises:
        RunError: The host has no room for it, or formatting or mounting failed.
    """
    return RunDisk.create(run_id, EVIDENCE_MB, role="evidence")


def state_paths(service: Service) -> tuple[str, ...]:
    """The paths of ``service``'s state that the detector reads (none for most kinds)."""
    return STATE_PATHS.get(service.kind, ())


def collect_state(container: Container, service: Service, dest: Path, budget: Budget | None = None) -> Manifest:
    """Copy ``service``'s state paths out of its container into ``dest`` (see :mod:`collect`).

    Raises:
        CollectionError: The run's byte cap or deadline was passed.
        RunError: Docker refused the copy.
    """
    return collect(container, list(state_paths(service)), dest, budget)


def copy_logs(disk: RunDisk, name: str, dest: Path, budget: Budget) -> Manifest:
    """Copy a service's ``/logs`` from the evidence disk (regular files only, within the budget)."""
    manifest = Manifest()
    source = disk.root / f"svc-{name}" / "logs"
    dest.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()) if source.is_dir() else []:
        if entry.is_symlink() or not entry.is_file():
            manifest.skipped.append(f"/logs/{entry.name} (not a regular file)")
            continue
        budget.take(entry.stat().st_size)
        shutil.copyfile(entry, dest / entry.name, follow_symlinks=False)
        manifest.files += 1
        manifest.bytes += entry.stat().st_size
    return manifest


def failures(services: dict[str, Container], disk: RunDisk | None) -> list[str]:
    """Why the services' evidence is incomplete: an event a service could not write, a full evidence disk.

    Returns:
        One line per problem (empty when every event was written).
    """
    problems = []
    for name, container in services.items():
        try:
            output = container.logs(stdout=False, stderr=True)
        except ENGINE_ERRORS as exc:
            problems.append(f"{name}: its output could not be read ({exc})")
            continue
        lines = [line for line in output.splitlines() if FAILED in line]
        if lines:
            text = lines[0].decode("utf-8", errors="replace")[:300]
            problems.append(f"{name} could not record {len(lines)} event(s): {text}")
    if disk is not None and disk.full():
        problems.append(f"the services' evidence disk ({disk.size_mb} MiB) is full")
    return problems
