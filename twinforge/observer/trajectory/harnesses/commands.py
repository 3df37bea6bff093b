"""The runner's command records (``agent/commands.jsonl``, written on the host) as ATIF.

A scripted agent (``twinforge run --commands``) has no model: its trajectory is the commands the
runner executed, one ``scripted`` agent step each (``llm_call_count`` 0), with the exit code and
output the runner saw (a command killed at its timeout has ``exception``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from twinforge.observer.trajectory.atif import Agent, AtifTrajectory
from twinforge.observer.trajectory.builder import AtifBuilder


def command_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``commands.jsonl`` (unreadable lines skipped; a missing file reads as none)."""
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("command"), str):
            records.append(record)
    return records


def read_commands(records: list[dict[str, Any]], task: str = "", final: str = "") -> AtifTrajectory:
    """One scripted step per command record; ``final`` is the agent's closing claim."""
    builder = AtifBuilder()
    if task:
        builder.message("user", task)
    for i, record in enumerate(records, start=1):
        call_id = f"command-{i}"
        step = builder.agent("", [(call_id, "bash", {"command": record["command"]})], scripted=True)
        code = record.get("exit_code")
        builder.result(
            step,
            call_id,
            str(record.get("output") or ""),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            exception="killed at the command timeout" if record.get("killed") else "",
        )
    return builder.build(Agent(name="scripted", version=""), submission=final)
