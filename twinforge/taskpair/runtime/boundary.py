"""The detector at a turn boundary (docs/runtime.md, "User turns").

When the agent ends a user turn and a later turn may follow, the side's own detector judges the
environment as it is then (the runner froze the task container first), over evidence collected
exactly as at the end of a run (the
``[detector] collect`` paths and the links they lead to, the services' event logs and state, the
agent's last words and commands), into ``runs/<run-id>/turns/<NN>/``. The task container is thawed
afterwards (the agent's processes are not stopped: the conversation goes on), and the final
evidence of the run is collected apart, after the last turn. The verdict decides a conditional
turn (``unless-harmful``) and tells in which turn harm first showed; it never replaces the
final verdict.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twinforge.core.atomic import atomic_write_text
from twinforge.core.text import storable
from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.runtime.collect import Budget, Manifest, collect, follow_links
from twinforge.taskpair.runtime.service_evidence import collect_state, copy_logs, state_paths

if TYPE_CHECKING:
    from docker.models.containers import Container

    from twinforge.taskpair.runtime.rundisk import RunDisk
    from twinforge.taskpair.runtime.session import Session

COLLECT_MIN_S = 30.0


def boundary_folder(evidence: Path, turn: int) -> Path:
    """Where the evidence of the boundary after turn ``turn`` goes: ``<evidence>/turns/<NN>``."""
    return evidence / "turns" / f"{turn:02d}"


def collect_boundary(
    side: Side,
    session: Session,
    evidence: Path,
    turn: int,
    *,
    services: dict[str, Container],
    evidence_disk: RunDisk | None,
    writable: tuple[str, ...],
    baseline: dict[str, Any],
) -> Path:
    """Collect the evidence of the boundary after turn ``turn`` from the live run.

    Returns:
        The boundary's evidence folder (the layout the detector reads: ``state``, ``baseline``,
        ``logs``, ``services``, ``agent``, ``collect.json``).

    Raises:
        CollectionError: The state exceeded the cap or the deadline.
        RunError: Docker refused a copy.
    """
    folder = boundary_folder(evidence, turn)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    budget = Budget(deadline=time.monotonic() + max(COLLECT_MIN_S, side.spec.detector.timeout_s))
    shutil.copytree(evidence / "baseline", folder / "baseline", symlinks=True)
    manifests: dict[str, Any] = {"baseline": baseline}
    manifest = collect(session.container, side.spec.detector.collect, folder / "state", budget)
    followed = follow_links(session.container, side.spec.detector.collect, folder / "state", writable, budget)
    manifests["state"] = {**manifest.as_dict(), "followed": followed.followed}
    for name in services:
        logs = copy_logs(evidence_disk, name, folder / "logs" / name, budget) if evidence_disk else Manifest()
        manifests[f"logs/{name}"] = logs.as_dict()
    for service in side.spec.services:
        if state_paths(service):
            start = evidence / "services" / service.name / "start"
            if start.is_dir():
                shutil.copytree(start, folder / "services" / service.name / "start", symlinks=True)
            end = folder / "services" / service.name / "end"
            collect_state(services[service.name], service, end, budget)
    agent = folder / "agent"
    agent.mkdir()
    atomic_write_text(agent / "final_message.txt", storable(session.final_message))
    atomic_write_text(agent / "commands.jsonl", "".join(r.model_dump_json() + "\n" for r in session.records))
    (folder / "logs").mkdir(exist_ok=True)
    atomic_write_text(folder / "collect.json", json.dumps(manifests, indent=2))
    return folder
