"""Claude Code's ``--output-format stream-json`` output (2.1.x) as ATIF.

Lines (as recorded in tests/data/harness-runs/claude-code/): ``system``/``init`` (cwd, session,
model, version); ``assistant`` events, one per content block of a model reply (``text``,
``thinking``, ``tool_use``), the blocks of one reply in a row; ``user`` events holding the
``tool_result`` blocks (``is_error``; a failing shell command's result starts ``Exit code N``);
and the closing ``result`` line (``result`` text, ``is_error``, ``terminal_reason``). One agent
step per reply: a reply's blocks are the ``assistant`` events between two ``user`` events that
share a message id.
"""

from __future__ import annotations

import re
from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory, Step
from twinforge.observer.trajectory.builder import AtifBuilder
from twinforge.observer.trajectory.tools import as_object

_EXIT = re.compile(r"^(?:Error: )?Exit code (\d+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def read_claude_code(events: list[dict[str, Any]], task: str = "", version: str = "") -> AtifTrajectory:
    """Read Claude Code's stream-json events (the ``harness.stdout.jsonl`` of a run)."""
    builder = AtifBuilder()
    init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
    if task:
        builder.message("user", task)
    step: Step | None = None
    step_id = ""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: dict[str, Step] = {}
    for event in events:
        kind = event.get("type")
        message = as_object(event.get("message"))
        if kind == "assistant":
            blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
            if step is None or str(message.get("id", "")) != step_id:
                texts, reasoning = [], []
                step = builder.agent("", timestamp=event.get("timestamp"), model=message.get("model"))
                step_id = str(message.get("id", ""))
            texts += [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
            reasoning += [str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"]
            step.message = "\n".join(t for t in texts if t)
            step.reasoning_content = "\n".join(r for r in reasoning if r) or None
            for block in blocks:
                if block.get("type") == "tool_use":
                    call = (str(block.get("id", "")), str(block.get("name", "")), block.get("input") or {})
                    builder.add_calls(step, [call])
                    calls[call[0]] = step
        elif kind == "user":
            step = None
            for block in message.get("content") or [] if isinstance(message.get("content"), list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                owner = calls.get(str(block.get("tool_use_id", "")))
                if owner is None:
                    continue
                text = _text(block.get("content"))
                code = _EXIT.match(text)
                builder.result(
                    owner,
                    str(block.get("tool_use_id")),
                    text,
                    exit_code=int(code.group(1)) if code else None,
                    error=bool(block.get("is_error")),
                )
    result: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "result"), {})
    status = (
        "api_error" if result.get("is_error") else str(result.get("terminal_reason") or result.get("subtype") or "")
    )
    return builder.build(
        Agent(
            name="claude-code", version=str(init.get("claude_code_version") or version), model_name=init.get("model")
        ),
        session_id=init.get("session_id"),
        exit_status=status,
        submission=str(result.get("result") or ""),
        cwd=init.get("cwd"),
    )
