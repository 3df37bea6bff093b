"""The model proxy's transcript (``proxy.jsonl``, written on the host) as ATIF.

Each line is one call the proxy forwarded or refused: ``n``, ``role`` (``agent``, ``side``,
``count_tokens``), ``shape`` (``chat``, ``responses``, ``messages``), ``usage``, ``refused``
(``cap``, ``deadline``, ...), ``request`` (the body the harness sent) and ``reply`` (``text``,
``tool_calls`` with ``name``, ``arguments``, ``id``). Every answered agent call is one agent step;
the results of its tool calls are in the next agent call's request, as the harness reported them
to the model (an Anthropic ``tool_result`` says ``is_error``; Codex's output says ``Process exited
with code N``). Refused calls are kept on the trajectory (``extra.proxy_refusals``), not as steps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
from twinforge.observer.trajectory.builder import AtifBuilder
from twinforge.observer.trajectory.tools import as_object

_EXIT = re.compile(r"(?:Process exited with code|Exit code:?|Command exited with code) (\d+)")


def transcript(path: Path) -> list[dict[str, Any]]:
    """The lines of a proxy transcript (unreadable lines skipped; a missing file reads as none)."""
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _block_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else json.dumps(content)


def tool_results(shape: str, request: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Tool results a request carries: call id -> (output text, reported as an error)."""
    found: dict[str, tuple[str, bool]] = {}
    if shape == "chat":
        for m in request.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool":
                found[str(m.get("tool_call_id", ""))] = (_block_text(m.get("content")), False)
    elif shape == "responses":
        for item in request.get("input") or []:
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"):
                found[str(item.get("call_id", ""))] = (_block_text(item.get("output")), False)
    else:
        for m in request.get("messages") or []:
            content = m.get("content") if isinstance(m, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = _block_text(block.get("content"))
                    found[str(block.get("tool_use_id", ""))] = (text, bool(block.get("is_error")))
    return found


def read_proxy(entries: list[dict[str, Any]], task: str = "", agent: Agent | None = None) -> AtifTrajectory:
    """Read a proxy transcript's agent calls.

    Args:
        entries: The transcript's lines (:func:`transcript`).
        task: The task text, when known.
        agent: The harness (default: named ``unknown``).
    """
    builder = AtifBuilder()
    if task:
        builder.message("user", task)
    calls = [e for e in entries if e.get("role") == "agent"]
    answered = [e for e in calls if isinstance(e.get("reply"), dict)]
    for i, entry in enumerate(answered):
        reply = entry["reply"]
        made = [c for c in reply.get("tool_calls") or [] if isinstance(c, dict)]
        step = builder.agent(
            str(reply.get("text") or ""),
            [(str(c.get("id", "")), str(c.get("name", "")), c.get("arguments")) for c in made],
        )
        usage = as_object(entry.get("usage"))
        builder.usage(step, usage.get("prompt_tokens"), usage.get("completion_tokens"), seconds=entry.get("seconds"))
        later = answered[i + 1].get("request") if i + 1 < len(answered) else None
        results = tool_results(str(entry.get("shape")), later) if isinstance(later, dict) else {}
        for call in made:
            call_id = str(call.get("id", ""))
            if call_id in results:
                text, error = results[call_id]
                code = _EXIT.search(text)
                builder.result(step, call_id, text, exit_code=int(code.group(1)) if code else None, error=error)
    refused = sorted({str(e["refused"]) for e in calls if e.get("refused")})
    last = next((str(e["reply"].get("text") or "") for e in reversed(answered)), "")
    return builder.build(
        agent or Agent(name="unknown", version=""),
        submission=last,
        model_calls=len([e for e in calls if not e.get("refused")]),
        proxy_refusals=refused,
    )
