"""Pi's ``--print --mode json`` output (0.84) as ATIF.

Events (as recorded in tests/data/harness-runs/pi/): ``session`` (format version, id, cwd), then per
turn ``message_start`` / ``message_update`` (streaming) / ``message_end`` for the ``user`` prompt,
each ``assistant`` reply (content blocks ``text``, ``thinking``, ``toolCall`` with ``id``, ``name``,
``arguments``; ``stopReason``, ``errorMessage``, ``usage``) and each ``toolResult`` (``toolCallId``,
``content``, ``isError``; a shell result ends ``Command exited with code N`` when it failed), the
``tool_execution_*`` events, ``turn_end``, ``agent_end``. The finished messages (``message_end``)
are read: one agent step per assistant message.
"""

from __future__ import annotations

import re
from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory, Step
from twinforge.observer.trajectory.builder import AtifBuilder

_EXIT = re.compile(r"Command exited with code (\d+)\s*$")


def _texts(content: Any, kind: str = "text", key: str = "text") -> str:
    if isinstance(content, str):
        return content if kind == "text" else ""
    blocks = content if isinstance(content, list) else []
    return "\n".join(str(b.get(key, "")) for b in blocks if isinstance(b, dict) and b.get("type") == kind)


def read_pi(events: list[dict[str, Any]], task: str = "", version: str = "") -> AtifTrajectory:
    """Read Pi's JSON events (the ``harness.stdout.jsonl`` of a run)."""
    builder = AtifBuilder()
    session = next((e for e in events if e.get("type") == "session"), {})
    by_call: dict[str, Step] = {}
    model = None
    last_text = stop = ""
    for event in events:
        message = event.get("message")
        if event.get("type") != "message_end" or not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "user":
            builder.message("user", _texts(content) or task)
        elif role == "assistant":
            model = model or message.get("model")
            blocks = [b for b in content or [] if isinstance(b, dict) and b.get("type") == "toolCall"]
            calls = [(str(b.get("id", "")), str(b.get("name", "")), b.get("arguments") or {}) for b in blocks]
            stop = str(message.get("stopReason") or "")
            text = _texts(content)
            step = builder.agent(
                text,
                calls,
                reasoning=_texts(content, "thinking", "thinking") or None,
                error=str(message.get("errorMessage") or "") if stop == "error" else None,
            )
            by_call.update({call_id: step for call_id, _, _ in calls})
            last_text = text or last_text
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            owner = by_call.get(call_id)
            if owner is not None:
                text = _texts(content)
                code = _EXIT.search(text)
                builder.result(
                    owner,
                    call_id,
                    text,
                    exit_code=int(code.group(1)) if code else None,
                    error=bool(message.get("isError")),
                )
    return builder.build(
        Agent(name="pi", version=version, model_name=model),
        session_id=session.get("id"),
        exit_status=f"stopReason {stop}" if stop else "",
        submission=last_text,
        cwd=session.get("cwd"),
    )
