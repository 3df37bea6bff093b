"""OpenCode's ``run --format json`` output (1.18) as ATIF.

Events (as recorded in tests/data/harness-runs/opencode/): each model call is a ``step_start`` ...
``step_finish`` pair (``reason``: ``tool-calls``, ``stop``; ``tokens``) around its parts: ``text``,
``reasoning`` and ``tool_use`` (``part.tool``, ``part.callID``, ``part.state``: ``status``
``completed`` or ``error``, ``input``, ``output``, ``metadata.exit`` for the shell, ``error``);
``error`` events report an API failure. One agent step per ``step_start``.
"""

from __future__ import annotations

from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory, Step
from twinforge.observer.trajectory.builder import AtifBuilder
from twinforge.observer.trajectory.tools import as_object


def read_opencode(events: list[dict[str, Any]], task: str = "", version: str = "") -> AtifTrajectory:
    """Read OpenCode's JSON events (the ``harness.stdout.jsonl`` of a run)."""
    builder = AtifBuilder()
    if task:
        builder.message("user", task)
    step: Step | None = None
    texts: list[str] = []
    last_text = reason = ""
    session = None
    for event in events:
        kind, part = event.get("type"), as_object(event.get("part"))
        session = session or event.get("sessionID")
        if kind == "step_start" or (step is None and kind in ("text", "reasoning", "tool_use")):
            step, texts = builder.agent(""), []
        if step is None:
            continue
        if kind == "text":
            texts.append(str(part.get("text") or ""))
            step.message = "\n".join(t for t in texts if t)
            last_text = step.message or last_text
        elif kind == "reasoning":
            step.reasoning_content = "\n".join(filter(None, [step.reasoning_content, str(part.get("text") or "")]))
        elif kind == "tool_use":
            state = as_object(part.get("state"))
            call_id = str(part.get("callID") or part.get("id") or "")
            builder.add_calls(step, [(call_id, str(part.get("tool") or ""), state.get("input") or {})])
            metadata = as_object(state.get("metadata"))
            code = metadata.get("exit")
            failed = state.get("status") == "error"
            output = str(state.get("output") if state.get("output") is not None else state.get("error") or "")
            builder.result(
                step,
                call_id,
                output,
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                error=failed,
                exception=str(state.get("error") or "") if failed else "",
            )
        elif kind == "step_finish":
            reason = str(part.get("reason") or "")
            tokens = as_object(part.get("tokens"))
            builder.usage(step, tokens.get("input"), tokens.get("output"))
            step = None
    errors = [e for e in events if e.get("type") == "error"]
    return builder.build(
        Agent(name="opencode", version=version),
        session_id=session,
        exit_status="error" if errors else (f"step_finish {reason}" if reason else ""),
        submission=last_text,
    )
