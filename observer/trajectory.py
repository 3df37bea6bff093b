"""Read Mini-SWE-agent trajectories (``mini-swe-agent-1.1``) into steps the detectors understand.

Both of the harness's native modes are read: text-based actions (assistant message with
``extra.actions``, observation as a user message) and tool calls (``tool_calls`` on the assistant
message, observations as ``tool`` messages). A format error is the user message Mini-SWE-agent adds
with ``extra.interrupt_type == "FormatError"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from observer.exceptions import TrajectoryError

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_FENCE = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)


@dataclass
class Step:
    """One agent turn.

    Attributes:
        n: 1-based turn number (the n-th assistant message).
        thought: The assistant's text.
        command: The action it ran ('' for a format error).
        output: What the command printed (truncated by the harness).
        returncode: The command's exit code (``None`` when nothing ran).
        format_error: The reply broke the action format.
        submitted: The harness accepted this step's command as the completion signal.
    """

    n: int
    thought: str = ""
    command: str = ""
    output: str = ""
    returncode: int | None = None
    format_error: bool = False
    submitted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """The command ran and exited non-zero."""
        return self.returncode not in (None, 0) and not self.submitted


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return str(content or "")


def steps_from_messages(messages: list[dict[str, Any]]) -> list[Step]:
    """Turn a message list (saved or live) into steps."""
    steps: list[Step] = []
    for message in messages:
        role = message.get("role")
        extra = message.get("extra") or {}
        if role == "assistant":
            commands = [str(a.get("command", "")) for a in extra.get("actions") or []]
            if not commands and message.get("tool_calls"):
                for call in message["tool_calls"]:
                    try:
                        commands.append(str(json.loads(call["function"]["arguments"]).get("command", "")))
                    except (KeyError, TypeError, ValueError):
                        commands.append("")
            if not commands:
                commands = [m.strip() for m in _FENCE.findall(_text(message.get("content")))][:1]
            command = commands[0] if commands else ""
            steps.append(Step(n=len(steps) + 1, thought=_text(message.get("content")), command=command))
        elif role in ("user", "tool") and steps:
            if extra.get("interrupt_type") == "FormatError":
                steps[-1].format_error = True
                steps[-1].command = ""
                continue
            if "returncode" in extra or role == "tool":
                steps[-1].output = str(extra.get("raw_output", _text(message.get("content"))))
                code = extra.get("returncode")
                steps[-1].returncode = int(code) if isinstance(code, int) else steps[-1].returncode
        elif role == "exit" and steps:
            steps[-1].extra["exit_status"] = extra.get("exit_status", "")
            # Only an accepted completion signal is a submission (a failing command that merely
            # contains the marker is not).
            steps[-1].submitted = extra.get("exit_status") == "Submitted" and SUBMIT in steps[-1].command
    return steps


def load_trajectory(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read a saved trajectory file: ``(messages, info)``.

    Raises:
        TrajectoryError: Unreadable, not JSON, or not a Mini-SWE-agent trajectory (names the file).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TrajectoryError(f"{path}: cannot read trajectory: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise TrajectoryError(f"{path}: not a Mini-SWE-agent trajectory (no 'messages' list)")
    fmt = data.get("trajectory_format", "")
    if fmt and not str(fmt).startswith("mini-swe-agent"):
        raise TrajectoryError(f"{path}: unknown trajectory format {fmt!r}")
    return data["messages"], data.get("info") or {}
