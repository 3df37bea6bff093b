"""Diagnosis of a run: its misbehaviours with step numbers, its harness, and, for a failed twin, its cause.

``twinforge diagnose`` takes trajectory files (Mini-SWE-agent's or ATIF), run evidence folders
(``runs/<run-id>/``: any of the five harnesses, or a scripted agent) and run ids; a run id is
looked up by a :data:`RunLookup` (the workspace's ``runs/`` folders by default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from twinforge.observer.cause import TwinCause, declined, twin_cause
from twinforge.observer.exceptions import TrajectoryError
from twinforge.observer.findings import Finding
from twinforge.observer.rules import detect
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import Trajectory, load_trajectory, read_messages
from twinforge.observer.trajectory.from_atif import read_atif
from twinforge.observer.trajectory.run import load_run
from twinforge.observer.work import changed_files, work_of

Label = Literal["loop", "tool_failure", "refusal", "drift", "none"]
RunLookup = Callable[[str], Path | None]
"""A run id -> its evidence folder (``None``: unknown id)."""


class Diagnosis(BaseModel):
    """What went wrong in a trajectory.

    Attributes:
        label: The main problem: ``refusal`` (no work attempted and the words decline:
            :func:`twinforge.observer.cause.declined`) > ``loop`` > ``tool_failure`` > ``drift`` > ``none``.
        findings: Every misbehaviour found, with steps.
        steps: Number of steps (model calls, format errors included; commands of a scripted agent).
        exit_status: The harness's exit status.
        mode: The format the trajectory was read from (text, toolcall, responses, v1, atif).
        harness: The harness that ran (a run folder or ATIF file), '' when unknown.
        cause: For a capability twin that was not CAPABLE (read from a run folder): why.
    """

    label: Label
    findings: list[Finding]
    steps: int
    exit_status: str = ""
    mode: str = "unknown"
    harness: str = ""
    cause: TwinCause | None = None


def run_spec_for(trajectory: Trajectory, spec: RunSpec | None) -> RunSpec | None:
    """The spec with the run's own variables and working directory filled in where the spec is silent."""
    if spec is None:
        return None
    update: dict[str, Any] = {"env": {**trajectory.env, **spec.env}}
    if spec.workdir == "." and trajectory.cwd.startswith("/"):
        update["workdir"] = trajectory.cwd
    if "HOME" in update["env"] and "home" not in spec.model_fields_set:
        update["home"] = update["env"]["HOME"]
    return spec.model_copy(update=update)


def diagnose(trajectory: Trajectory, spec: RunSpec | None = None, harness: str = "") -> Diagnosis:
    """Diagnose a read trajectory."""
    steps = trajectory.steps
    findings = detect(steps, run_spec_for(trajectory, spec))
    refused = declined(trajectory, findings=tuple(findings)) is not None
    classes = {f.cls for f in findings}
    label: Label = (
        "refusal"
        if refused
        else "loop"
        if "reasoning" in classes
        else "tool_failure"
        if "tool_failure" in classes
        else "drift"
        if "drift" in classes
        else "none"
    )
    return Diagnosis(
        label=label,
        findings=findings,
        steps=len(steps),
        exit_status=trajectory.exit_status,
        mode=trajectory.mode,
        harness=harness,
    )


def diagnose_messages(messages: list[dict[str, Any]], spec: RunSpec | None = None, exit_status: str = "") -> Diagnosis:
    """Diagnose a live message list (2.x messages).

    Raises:
        TrajectoryError: A message is not an object or has a field of the wrong type.
    """
    trajectory = read_messages(messages)
    trajectory.exit_status = trajectory.exit_status or exit_status
    return diagnose(trajectory, spec)


def diagnose_twin(
    path: Path,
    outcome: str,
    *,
    completed: bool | None = None,
    proxy_refusals: tuple[str, ...] = (),
    run_error: str = "",
    spec: RunSpec | None = None,
) -> Diagnosis:
    """Diagnose a twin run from its trajectory file or evidence folder and name why it was not CAPABLE.

    Args:
        path: A trajectory file (Mini-SWE-agent or ATIF) or a run's evidence folder (any harness);
            a folder's ``state`` against its ``baseline`` and its verdict's oracle cases add to the
            evidence of work (:mod:`twinforge.observer.work`).
        outcome: The run's outcome.
        completed: The detector's ``completed`` (``None``: no verdict).
        proxy_refusals: Why the proxy refused calls (``cap``, ``deadline``); a run folder adds its own.
        run_error: The detector's or the run's error.
        spec: The drift spec, if any.

    Returns:
        The diagnosis with ``cause`` set (``None`` for a CAPABLE run): :func:`twinforge.observer.cause.twin_cause`.

    Raises:
        TrajectoryError: No readable trajectory (names the file and the field).
    """
    changed: tuple[str, ...] = ()
    passed = 0
    if path.is_dir():
        document = load_run(path)
        trajectory = read_atif(document)
        harness = str(document.info("harness", document.agent.name))
        proxy_refusals = (*proxy_refusals, *(str(r) for r in document.info("proxy_refusals") or ()))
        changed = changed_files(path / "state", path / "baseline")
        passed = _oracle_cases_passed(path / "result.json")
    else:
        trajectory, harness = load_trajectory(path), ""
    found = diagnose(trajectory, spec, harness=harness)
    found.cause = twin_cause(
        trajectory,
        outcome,
        completed=completed,
        proxy_refusals=proxy_refusals,
        run_error=run_error,
        findings=found.findings,
        work=work_of(trajectory, changed=changed, oracle_passed=passed),
    )
    return found


def _oracle_cases_passed(result: Path) -> int:
    """Hidden oracle cases the verdict of ``result.json`` records as passed (0 when none or unreadable)."""
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    verdict = data.get("verdict") if isinstance(data, dict) else None
    oracles = verdict.get("oracles") if isinstance(verdict, dict) else None
    if not isinstance(oracles, list):
        return 0
    return sum(len(o["passed"]) for o in oracles if isinstance(o, dict) and isinstance(o.get("passed"), list))


def diagnose_run(folder: Path, spec: RunSpec | None = None) -> Diagnosis:
    """Diagnose a run from its evidence folder (any harness); a failed twin gets its cause.

    Raises:
        TrajectoryError: The folder holds no readable trajectory (names the file and the field).
    """
    try:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {}
    if isinstance(result, dict) and result.get("side") == "twin":
        verdict = result.get("verdict") if isinstance(result.get("verdict"), dict) else {}
        return diagnose_twin(
            folder,
            str(result.get("outcome", "")),
            completed=verdict.get("completed") if verdict else None,
            run_error="; ".join(str(result[k]) for k in ("detector_error", "agent_error") if result.get(k)),
            spec=spec,
        )
    document = load_run(folder)
    return diagnose(read_atif(document), spec, harness=str(document.info("harness", document.agent.name)))


def diagnose_file(path: Path, spec: RunSpec | None = None) -> Diagnosis:
    """Diagnose a saved trajectory file (Mini-SWE-agent 1.x or 2.x in any mode, or ATIF) or a run folder.

    Raises:
        TrajectoryError: The file is not a readable trajectory (names the file and the field).
    """
    if path.is_dir():
        return diagnose_run(path, spec)
    return diagnose(load_trajectory(path), spec)


def runs_folder_lookup(runs_dir: Path) -> RunLookup:
    """Find a run id's evidence folder under a workspace's ``runs/`` (calibration, evaluation and scripted runs)."""

    def lookup(run_id: str) -> Path | None:
        if not run_id or "/" in run_id or run_id.startswith("."):
            return None
        for folder in (runs_dir / run_id, runs_dir / "scripted" / run_id):
            if folder.is_dir():
                return folder
        return None

    return lookup


def resolve(target: str, lookup: RunLookup | None = None) -> Path:
    """The file or folder ``target`` names: an existing path, else a run id.

    Raises:
        TrajectoryError: Neither a path nor a known run id.
    """
    path = Path(target)
    if path.exists():
        return path
    found = lookup(target) if lookup is not None else None
    if found is None:
        where = " or a run id of this workspace" if lookup is not None else " (run ids need a workspace)"
        raise TrajectoryError(f"{target}: not a trajectory file, a run folder{where}")
    return found
