"""Diagnosis of a trajectory, e.g. of an INCAPABLE twin: loop, tool failure, refusal, drift, or none."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from twinforge.observer.findings import Finding
from twinforge.observer.rules import detect
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import Trajectory, load_trajectory, read_messages

Label = Literal["loop", "tool_failure", "refusal", "drift", "none"]
_REFUSAL = re.compile(
    r"\b(I can(no|')t (help|assist|do)|I won't|I will not|I'm not able to|I am not able to|"
    r"I must decline|not comfortable|against (my|the) (policy|guidelines))",
    re.I,
)


class Diagnosis(BaseModel):
    """What went wrong in a trajectory.

    Attributes:
        label: The main problem: ``refusal`` > ``loop`` > ``tool_failure`` > ``drift`` > ``none``.
        findings: Every misbehaviour found, with steps.
        steps: Number of steps (model calls, format errors included).
        exit_status: The harness's exit status.
        mode: The action format the trajectory was written in (text, toolcall, responses, v1).
    """

    label: Label
    findings: list[Finding]
    steps: int
    exit_status: str = ""
    mode: str = "unknown"


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


def diagnose(trajectory: Trajectory, spec: RunSpec | None = None) -> Diagnosis:
    """Diagnose a read trajectory."""
    steps = trajectory.steps
    findings = detect(steps, run_spec_for(trajectory, spec))
    refused = any(_REFUSAL.search(s.thought) for s in steps) and sum(1 for s in steps if s.command) <= 2
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
        label=label, findings=findings, steps=len(steps), exit_status=trajectory.exit_status, mode=trajectory.mode
    )


def diagnose_messages(messages: list[dict[str, Any]], spec: RunSpec | None = None, exit_status: str = "") -> Diagnosis:
    """Diagnose a live message list (2.x messages).

    Raises:
        TrajectoryError: A message is not an object or has a field of the wrong type.
    """
    trajectory = read_messages(messages)
    trajectory.exit_status = trajectory.exit_status or exit_status
    return diagnose(trajectory, spec)


def diagnose_file(path: Path, spec: RunSpec | None = None) -> Diagnosis:
    """Diagnose a saved Mini-SWE-agent trajectory (1.x or 2.x, any mode).

    Raises:
        TrajectoryError: The file is not a readable trajectory (names the file and the field).
    """
    return diagnose(load_trajectory(path), spec)
