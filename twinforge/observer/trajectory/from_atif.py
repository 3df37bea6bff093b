"""Read an ATIF trajectory (any harness) into the steps the misbehaviour rules take.

One observer step per agent step: a model call, or a command a scripted agent ran; a command a
human typed (a user step with ``extra.human``) is a step ``by="human"``. System and user messages
are not steps; an observer note (a user step with ``extra.observer``) marks an intervention after
the steps so far. Step numbers count agent steps from 1 (``extra.call`` when the source kept it),
so step n is model call n for every harness (docs/observer.md, "One trajectory format").
"""

from __future__ import annotations

from typing import Any

from twinforge.observer.trajectory.atif import AtifTrajectory, ObservationResult
from twinforge.observer.trajectory.atif import Step as AtifStep
from twinforge.observer.trajectory.steps import Action, Step, Trajectory
from twinforge.observer.trajectory.tools import tool_action


def _content(result: ObservationResult) -> str:
    content = result.content
    if isinstance(content, list):
        return "\n".join(part.text or "" for part in content if part.type == "text")
    return content or ""


def _fill(action: Action, result: ObservationResult) -> None:
    extra = result.extra or {}
    action.output = _content(result)
    code = extra.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool):
        action.returncode = code
    else:
        action.returncode = 1 if extra.get("error") else 0
    action.exception = str(extra.get("exception") or "")


def _actions(step: AtifStep) -> list[Action]:
    actions = []
    for call in step.tool_calls or []:
        command, writes = tool_action(call.function_name, call.arguments)
        actions.append(Action(command, call_id=call.tool_call_id, tool=call.function_name, writes=writes))
    by_call = {a.call_id: a for a in actions}
    loose = actions
    for result in step.observation.results if step.observation else []:
        target = by_call.pop(result.source_call_id, None) if result.source_call_id else None
        if target is None and result.source_call_id is None:
            target = next((a for a in loose if not a.ran), None)
        if target is not None:
            _fill(target, result)
    return actions


def _human(step: AtifStep, extra: dict[str, Any]) -> list[Action]:
    commands = [str(c) for c in extra.get("commands") or []]
    actions = [Action(c) for c in commands]
    results = step.observation.results if step.observation else []
    for action, result in zip(actions, results, strict=False):
        _fill(action, result)
    return actions


def read_atif(document: AtifTrajectory) -> Trajectory:
    """The observer's view of an ATIF trajectory."""
    steps: list[Step] = []
    interventions: list[int] = []
    notes: list[tuple[str, dict[str, Any]]] = []
    task = system = ""
    for source in document.steps:
        extra = source.extra or {}
        if source.source == "agent":
            n = len(steps) + 1
            step = Step(
                n=n,
                thought=source.text,
                actions=_actions(source),
                format_error=str(extra.get("format_error") or ""),
                submitted=bool(extra.get("submitted")),
                interrupted=str(extra.get("interrupted") or ""),
            )
            steps.append(step)
        elif extra.get("observer") is not None:
            interventions.append(len(steps))
            observer = extra["observer"]
            notes.append((source.text, observer if isinstance(observer, dict) else {}))
        elif extra.get("human"):
            steps.append(Step(n=len(steps) + 1, thought=source.text, actions=_human(source, extra), by="human"))
        elif source.source == "system" and not system:
            system = source.text
        elif source.source == "user" and not task and not steps:
            task = source.text
    env = document.info("env") or {}
    return Trajectory(
        steps,
        exit_status=str(document.info("exit_status") or ""),
        submission=str(document.info("submission") or ""),
        mode="atif",
        version=document.schema_version,
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        cwd=str(document.info("cwd") or ""),
        interventions=interventions,
        task=task,
        system=system,
        notes=notes,
    )
