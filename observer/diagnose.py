"""Diagnosis of a trajectory, e.g. of an INCAPABLE twin: loop, tool failure, refusal, drift, or none."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from observer.detectors import detect
from observer.findings import Finding, RunSpec
from observer.trajectory import load_trajectory, steps_from_messages

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
        steps: Number of agent turns.
        exit_status: The harness's exit status.
    """

    label: Label
    findings: list[Finding]
    steps: int
    exit_status: str = ""


def diagnose_messages(messages: list[dict[str, Any]], spec: RunSpec | None = None, exit_status: str = "") -> Diagnosis:
    """Diagnose a message list."""
    steps = steps_from_messages(messages)
    findings = detect(steps, spec)
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
    return Diagnosis(label=label, findings=findings, steps=len(steps), exit_status=exit_status)


def diagnose_file(path: Path, spec: RunSpec | None = None) -> Diagnosis:
    """Diagnose a saved Mini-SWE-agent trajectory.

    Raises:
        TrajectoryError: The file is not a readable trajectory.
    """
    messages, info = load_trajectory(path)
    return diagnose_messages(messages, spec, str(info.get("exit_status", "")))
