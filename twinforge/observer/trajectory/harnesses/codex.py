"""Codex CLI's ``exec --json`` output (0.146) as ATIF.

Events (as recorded in tests/data/harness-runs/codex/): ``thread.started``, ``turn.started``,
``item.started`` / ``item.updated`` / ``item.completed`` with an ``item`` of type ``reasoning``,
``agent_message`` (``text``), ``command_execution`` (``command`` as run, e.g. ``/bin/bash -lc
'...'``; ``aggregated_output``; ``exit_code``; ``status``), ``file_change`` (``changes``: ``path``,
``kind``), ``mcp_tool_call``, ``web_search``, ``todo_list`` or ``error`` (a warning of the CLI
itself), then ``turn.completed`` (``usage``) or ``turn.failed``. The stream has no model-call
boundaries: each completed action item is one agent step, carrying the reasoning and messages
since the previous action; text after the last action is a step of its own. With one action per
reply (what the weak models and the scripted upstream do) that is one step per model call.
"""

from __future__ import annotations

import shlex
from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
from twinforge.observer.trajectory.builder import AtifBuilder

_ACTIONS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def unwrap(command: str) -> str:
    """The script of ``/bin/bash -lc '<script>'`` (Codex runs every command that way), else ``command``."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and argv[1] in ("-lc", "-c"):
        return argv[2]
    return command


def _call(item: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    kind, item_id = str(item.get("type")), str(item.get("id", ""))
    if kind == "command_execution":
        return item_id, "shell", {"command": unwrap(str(item.get("command") or ""))}
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        return item_id, "apply_patch", {"changes": changes}
    return item_id, kind, {k: v for k, v in item.items() if k not in ("id", "type", "status")}


def read_codex(events: list[dict[str, Any]], task: str = "", version: str = "") -> AtifTrajectory:
    """Read Codex's JSON events (the ``harness.stdout.jsonl`` of a run)."""
    builder = AtifBuilder()
    if task:
        builder.message("user", task)
    texts: list[str] = []
    reasoning: list[str] = []
    last_text = ""
    thread = None
    for event in events:
        thread = thread or event.get("thread_id")
        item = event.get("item")
        if event.get("type") != "item.completed" or not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "agent_message":
            texts.append(str(item.get("text") or ""))
            last_text = texts[-1] or last_text
        elif kind == "reasoning":
            reasoning.append(str(item.get("text") or ""))
        elif kind in _ACTIONS:
            call = _call(item)
            step = builder.agent("\n".join(texts), [call], reasoning="\n".join(reasoning) or None)
            texts, reasoning = [], []
            code = item.get("exit_code")
            output = str(item.get("aggregated_output") or "")
            builder.result(
                step,
                call[0],
                output,
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                error=item.get("status") == "failed",
            )
    if texts or reasoning:
        builder.agent("\n".join(texts), reasoning="\n".join(reasoning) or None)
    kinds = [e.get("type") for e in events]
    status = "turn.failed" if "turn.failed" in kinds else "turn.completed" if "turn.completed" in kinds else ""
    return builder.build(
        Agent(name="codex", version=version), session_id=thread, exit_status=status, submission=last_text
    )
