"""The trajectory of an in-container harness, read from the proxy's transcript (docs/observer.md, "Formats").

A CLI's own output (stream-json, ``--json`` events, its session log) is kept as evidence, but it is
written by a process the agent's commands share a container with. The proxy's transcript is written
on the host: each agent turn's reply (its text and tool calls) and, in the next turn's request, the
results of those calls as the harness reported them. This module turns it into a Mini-SWE-agent 2.x
tool-call trajectory (``messages`` with ``tool_calls`` and ``role: tool`` results), so ``diagnose``,
the INCAPABLE twin diagnosis and the disagreement flags read every harness the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twinforge.core.atomic import atomic_write_text

FORMAT = "mini-swe-agent-1.1"


def command_of(name: str, arguments: str) -> str:
    """The shell command of a tool call (``command`` / ``cmd``), else ``<tool> <arguments>`` for other tools."""
    try:
        args = json.loads(arguments) if arguments else {}
    except ValueError:
        return f"{name} {arguments[:2000]}"
    if isinstance(args, dict):
        for key in ("command", "cmd"):
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return value[-1] if len(value) == 3 and value[1] in ("-lc", "-c") else " ".join(value)
    return f"{name} {json.dumps(args)[:2000]}"


def _results(shape: str, request: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Tool results in a request's conversation: call id -> (output text, reported as an error)."""
    found: dict[str, tuple[str, bool]] = {}
    if shape == "chat":
        for m in request.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool":
                content = m.get("content")
                text = content if isinstance(content, str) else json.dumps(content)
                found[str(m.get("tool_call_id", ""))] = (text, False)
    elif shape == "responses":
        for item in request.get("input") or []:
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"):
                output = item.get("output")
                found[str(item.get("call_id", ""))] = (output if isinstance(output, str) else json.dumps(output), False)
    else:
        for m in request.get("messages") or []:
            for block in m.get("content") or [] if isinstance(m, dict) and isinstance(m.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    if isinstance(content, list):
                        content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
                    found[str(block.get("tool_use_id", ""))] = (str(content or ""), bool(block.get("is_error")))
    return found


def transcript_entries(log: Path) -> list[dict[str, Any]]:
    """The agent turns of a proxy transcript that were answered (refusals and side calls left out)."""
    entries = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("role") == "agent" and isinstance(entry.get("reply"), dict):
            entries.append(entry)
    return entries


def commands_between(log: Path, start: float, end: float) -> list[str]:
    """The commands of the agent turns the transcript recorded between ``start`` and ``end`` (Unix seconds)."""
    return [
        command_of(str(c.get("name", "")), str(c.get("arguments", "")))
        for entry in transcript_entries(log)
        if start <= float(entry.get("at") or 0) <= end
        for c in entry["reply"].get("tool_calls") or []
        if isinstance(c, dict)
    ]


def build_trajectory(
    log: Path, instruction: str, exit_status: str, final: str, later_turns: Sequence[tuple[float, str]] = ()
) -> dict[str, Any]:
    """A Mini-SWE-agent 2.x trajectory document from a proxy transcript.

    Args:
        log: The proxy's transcript of the run.
        instruction: Turn 1.
        exit_status: How the harness ended.
        final: The agent's last words.
        later_turns: ``(sent at, text)`` of each later user turn (Unix seconds): each becomes a user
            message before the first model call recorded after it was sent.
    """
    entries = transcript_entries(log)
    messages: list[dict[str, Any]] = [{"role": "user", "content": instruction}]
    pending = sorted(later_turns)
    for i, entry in enumerate(entries):
        while pending and float(entry.get("at") or 0) >= pending[0][0]:
            messages.append({"role": "user", "content": pending.pop(0)[1], "extra": {"user_turn": True}})
        reply = entry["reply"]
        calls = [c for c in reply.get("tool_calls") or [] if isinstance(c, dict)]
        actions = [
            {"command": command_of(str(c.get("name", "")), str(c.get("arguments", ""))), "tool_call_id": c.get("id")}
            for c in calls
        ]
        messages.append(
            {
                "role": "assistant",
                "content": reply.get("text", ""),
                "tool_calls": [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                    }
                    for c in calls
                ],
                "extra": {"actions": actions},
            }
        )
        later = entries[i + 1]["request"] if i + 1 < len(entries) else None
        results = _results(str(entry.get("shape")), later) if isinstance(later, dict) else {}
        for call in calls:
            if str(call.get("id")) in results:
                text, error = results[str(call.get("id"))]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id"),
                        "content": text,
                        "extra": {"raw_output": text, "returncode": 1 if error else 0},
                    }
                )
    messages += [{"role": "user", "content": text, "extra": {"user_turn": True}} for _, text in pending]
    return {
        "trajectory_format": FORMAT,
        "info": {"exit_status": exit_status, "submission": final, "source": "proxy transcript"},
        "messages": messages,
    }


def write_trajectory(
    log: Path,
    instruction: str,
    exit_status: str,
    final: str,
    path: Path,
    later_turns: Sequence[tuple[float, str]] = (),
) -> list[str]:
    """Write the trajectory file; returns the commands of the agent's tool calls in order."""
    document = build_trajectory(log, instruction, exit_status, final, later_turns)
    atomic_write_text(path, json.dumps(document, indent=1))
    return [a["command"] for m in document["messages"] for a in (m.get("extra") or {}).get("actions") or []]
