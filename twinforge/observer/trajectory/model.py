"""The trajectory file as Mini-SWE-agent writes it, as pydantic models (only the fields twinforge reads).

Sources (mini-swe-agent 2.4.6 and 1.17.5): ``agents/default.py`` (``serialize``/``save``, the
``exit`` message, format errors added as user messages), ``models/utils/actions_text.py``,
``actions_toolcall.py`` and ``actions_toolcall_response.py`` (actions, observations, format
errors per mode), ``environments/docker.py`` (the completion signal), and 1.x
``run/utils/save.py`` (``trajectory_format: mini-swe-agent-1``). Unknown fields are allowed (the
harness adds fields between versions); fields twinforge reads must have their documented type.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ActionRecord(_Open):
    """An entry of ``extra.actions``: the parsed command and, for tool calls, its call id."""

    command: str
    tool_call_id: str | None = None


class MessageExtra(_Open):
    """``extra`` of a message: Mini-SWE-agent's own bookkeeping."""

    actions: list[ActionRecord] | None = None
    raw_output: str | None = None
    returncode: int | None = None
    exception_info: str | None = None
    interrupt_type: str | None = None
    model_response: str | None = None
    exit_status: str | None = None
    submission: str | None = None
    observer: dict[str, Any] | None = None
    response: Any = None


class ToolFunction(_Open):
    """``function`` of a chat tool call."""

    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class ToolCall(_Open):
    """A chat-completions tool call on an assistant message."""

    id: str | None = None
    function: ToolFunction | None = None


class TrajectoryMessage(_Open):
    """One entry of ``messages``: a chat message, a Responses-API item, or the ``exit`` message."""

    role: str | None = None
    type: str | None = None
    object: str | None = None
    content: str | list[Any] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    call_id: str | None = None
    output: str | list[Any] | None = None
    extra: MessageExtra | None = None


class TrajectoryInfo(_Open):
    """``info``: exit status, submission, and the configuration the run used."""

    exit_status: str | None = None
    submission: str | None = None
    mini_version: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class TrajectoryFile(_Open):
    """A saved trajectory: ``{"info": ..., "messages": [...], "trajectory_format": ...}``."""

    messages: list[TrajectoryMessage]
    info: TrajectoryInfo | None = None
    trajectory_format: str = ""
