"""Write the observer's view of a run (e.g. read from Mini-SWE-agent's own file) as ATIF."""

from __future__ import annotations

from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
from twinforge.observer.trajectory.builder import AtifBuilder
from twinforge.observer.trajectory.steps import Action, Trajectory

SHELL_TOOL = "bash"
"""The tool name a text action is written under (Mini-SWE-agent's text actions are bash commands)."""


def _call(action: Action, n: int, i: int) -> tuple[str, str, Any]:
    call_id = action.call_id or f"call-{n}-{i}"
    return call_id, action.tool or SHELL_TOOL, {"command": action.command}


def to_atif(
    trajectory: Trajectory,
    agent: Agent,
    *,
    session_id: str | None = None,
    scripted: bool = False,
    extra: dict[str, Any] | None = None,
) -> AtifTrajectory:
    """The ATIF form of ``trajectory``: system and task, then one agent step per step, notes in place.

    Args:
        trajectory: The observer's view of the run.
        agent: The harness (name, version, model).
        session_id: The run id.
        scripted: Every step is a command no model chose (``twinforge run --commands``).
        extra: More of twinforge's trajectory fields (``harness``, ``sources``, ...).
    """
    builder = AtifBuilder()
    if trajectory.system:
        builder.message("system", trajectory.system)
    if trajectory.task:
        builder.message("user", trajectory.task)
    notes = list(zip(trajectory.interventions, trajectory.notes, strict=False))
    for step in trajectory.steps:
        while notes and notes[0][0] < step.n:
            _, (text, record) = notes.pop(0)
            builder.message("user", text, observer=record or {})
        if step.by == "human":
            made = builder.message("user", step.thought, human=True, commands=[a.command for a in step.actions])
            for action in step.actions:
                if action.ran:
                    builder.result(made, None, action.output, exit_code=action.returncode, exception=action.exception)
            continue
        calls = [_call(a, step.n, i) for i, a in enumerate(step.actions)]
        made = builder.agent(
            step.thought,
            calls,
            scripted=scripted,
            format_error=step.format_error,
            submitted=step.submitted,
            interrupted=step.interrupted,
        )
        for (call_id, _, _), action in zip(calls, step.actions, strict=True):
            if action.ran:
                builder.result(made, call_id, action.output, exit_code=action.returncode, exception=action.exception)
    for _, (text, record) in notes:
        builder.message("user", text, observer=record or {})
    fields = {
        "exit_status": trajectory.exit_status,
        "submission": trajectory.submission,
        "env": trajectory.env,
        "cwd": trajectory.cwd,
        **(extra or {}),
    }
    return builder.build(agent, session_id=session_id, **fields)
