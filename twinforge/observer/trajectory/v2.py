"""Steps from Mini-SWE-agent 2.x messages (``trajectory_format: mini-swe-agent-1.1``, and live runs).

How 2.4.6 writes each mode (``agents/default.py``, ``models/utils/actions_*.py``):

- every model call that parsed is one assistant message with ``extra.actions`` (``command`` and, for
  tool calls, ``tool_call_id``); the Responses-API models save the response object itself
  (``object: response``, ``output`` items) instead of a chat message;
- each executed action gets one observation: a ``user`` message (text actions, or commands a human
  typed), a ``tool`` message with ``tool_call_id`` (chat tool calls), or a ``function_call_output``
  item with ``call_id`` (Responses API); ``extra`` holds ``raw_output``, ``returncode``,
  ``exception_info``; actions not executed get ``returncode -1`` and "action was not executed";
- a reply that did not parse (no action, several text actions, an unknown tool, bad arguments) is
  NOT saved as an assistant message: a ``user`` message with ``extra.interrupt_type ==
  "FormatError"`` stands for the whole call (text mode keeps the rejected reply in
  ``extra.model_response``; tool-call modes keep the raw response in ``extra.response``);
- the completion signal raises ``Submitted`` inside the environment, so the submitting step gets
  no observation at all (nor do the step's other actions), and an ``exit`` message follows; limits
  (``LimitsExceeded``, ``TimeExceeded``), ``RepeatedFormatError`` and uncaught exceptions also end
  with an ``exit`` message carrying ``extra.exit_status``;
- other interrupts (``UserInterruption``, ``UserRejection``, ``UserNewTask``) are ``user`` messages
  with their ``interrupt_type``; twinforge's observer adds ``user`` messages with ``extra.observer``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from twinforge.observer.trajectory.model import MessageExtra, TrajectoryMessage
from twinforge.observer.trajectory.steps import Action, Mode, Step, Trajectory

_FENCE = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)
_ERROR_TAG = re.compile(r"<error>\s*(.*?)\s*</error>", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>(-?\d{1,9})</returncode>")
_NO_EXTRA = MessageExtra()
FORMAT_ERROR = "FormatError"


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts with ``text`` (chat or Responses API)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _calls_text(calls: list[Any]) -> str:
    """Tool calls of a rejected or raw reply, shown as ``name(arguments)`` lines."""
    lines = []
    for call in calls:
        if isinstance(call, dict):
            inner = call.get("function")
            function: dict[str, Any] = inner if isinstance(inner, dict) else call
            lines.append(f"{function.get('name')}({str(function.get('arguments', ''))[:500]})")
    return "\n".join(lines)


def reply_text(response: Any, calls: bool = True) -> str:
    """The reply inside a saved raw response (chat completion or Responses API object), '' if none.

    Args:
        response: ``extra.response`` of a format error, or a saved Responses-API object.
        calls: Also show the reply's tool calls as ``name(arguments)`` lines.
    """
    if not isinstance(response, dict):
        return ""
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            made = message.get("tool_calls") if calls else None
            parts = [text_of(message.get("content")), _calls_text(made if isinstance(made, list) else [])]
            return "\n".join(p for p in parts if p)
    output = response.get("output")
    if isinstance(output, list):
        texts = [text_of(i.get("content")) for i in output if isinstance(i, dict) and i.get("type") == "message"]
        made = [i for i in output if isinstance(i, dict) and i.get("type") == "function_call"] if calls else []
        return "\n".join(t for t in [*texts, _calls_text(made)] if t)
    return ""


def _command_of(arguments: Any) -> str | None:
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) else None


def _actions(message: TrajectoryMessage, extra: MessageExtra) -> list[Action]:
    """The actions of a model reply: ``extra.actions`` as the harness parsed them.

    Messages written by other tools may lack ``extra.actions``; then the tool calls, or a single
    ``mswea_bash_command`` block, are read the way the harness would parse them.
    """
    if extra.actions is not None:
        return [Action(a.command, call_id=a.tool_call_id or "") for a in extra.actions]
    found: list[Action] = []
    for call in message.tool_calls or []:
        command = _command_of(call.function.arguments if call.function else None)
        if command is not None:
            found.append(Action(command, call_id=call.id or ""))
    for item in message.output if isinstance(message.output, list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call":
            command = _command_of(item.get("arguments"))
            if command is not None:
                found.append(Action(command, call_id=str(item.get("call_id") or item.get("id") or "")))
    if not found and not message.tool_calls:
        fences = _FENCE.findall(text_of(message.content))
        found = [Action(fences[0].strip())] if len(fences) == 1 else []
    return found


def _fill(action: Action, message: TrajectoryMessage, extra: MessageExtra) -> None:
    """Record an observation's result on its action."""
    content = text_of(message.content) or text_of(message.output)
    action.output = extra.raw_output if extra.raw_output is not None else content
    if extra.returncode is not None:
        action.returncode = extra.returncode
    else:
        match = _RETURNCODE.search(content)
        action.returncode = int(match.group(1)) if match else -1
    action.exception = extra.exception_info or ""


def _is_observation(message: TrajectoryMessage, extra: MessageExtra) -> bool:
    if message.role == "tool" or message.type == "function_call_output":
        return True
    return message.role == "user" and bool({"returncode", "raw_output"} & extra.model_fields_set)


def _format_error_reason(content: str) -> str:
    match = _ERROR_TAG.search(content)
    reason = match.group(1) if match else (content.strip().splitlines() or ["format error"])[0]
    return reason.strip()[:300] or "format error"


def read_v2(messages: list[TrajectoryMessage]) -> Trajectory:
    """Turn validated 2.x messages into a :class:`Trajectory` (see the module docstring for the rules)."""
    steps: list[Step] = []
    by_call: dict[str, Action] = {}
    pending: list[Action] = []  # text-mode actions waiting for their observation, in order
    modes: set[Mode] = set()
    exit_status = submission = system = task = ""
    interventions: list[int] = []
    notes: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        extra = message.extra or _NO_EXTRA
        if message.role == "system" and not system:
            system = text_of(message.content)
        elif message.role == "exit":
            exit_status = extra.exit_status or text_of(message.content)
            submission = extra.submission or ""
        elif extra.interrupt_type == FORMAT_ERROR:
            rejected = extra.model_response if extra.model_response is not None else reply_text(extra.response)
            if extra.model_response is not None:
                modes.add("text")
            reason = _format_error_reason(text_of(message.content))
            steps.append(Step(n=len(steps) + 1, thought=rejected, format_error=reason))
            pending = []
        elif message.role == "assistant" or message.object == "response":
            actions = _actions(message, extra)
            thought = (
                text_of(message.content) if message.object != "response" else reply_text(message.model_dump(), False)
            )
            steps.append(Step(n=len(steps) + 1, thought=thought, actions=actions))
            by_call.update({a.call_id: a for a in actions if a.call_id})
            pending = [a for a in actions if not a.call_id]
            called = message.tool_calls or any(a.call_id for a in actions)
            modes.add("responses" if message.object == "response" else "toolcall" if called else "text")
        elif extra.interrupt_type:
            if steps and any(not a.ran for a in steps[-1].actions):
                steps[-1].interrupted = extra.interrupt_type
        elif extra.observer is not None:
            interventions.append(len(steps))
            notes.append((text_of(message.content), extra.observer))
        elif message.role == "user" and extra.actions and not _is_observation(message, extra):
            actions = [Action(a.command) for a in extra.actions]
            steps.append(Step(n=len(steps) + 1, thought=text_of(message.content), actions=actions, by="human"))
            pending = list(actions)
        elif _is_observation(message, extra):
            call_id = message.tool_call_id or message.call_id or ""
            target = by_call.pop(call_id, None) if call_id else (pending.pop(0) if pending else None)
            if target is not None:
                _fill(target, message, extra)
        elif message.role == "user" and not task and not steps:
            task = text_of(message.content)
    if exit_status == "Submitted":
        last = next((s for s in reversed(steps) if s.actions), None)
        if last is not None:
            last.submitted = True
    mode: Mode = modes.pop() if len(modes) == 1 else "unknown"
    return Trajectory(
        steps, exit_status, submission, mode, interventions=interventions, task=task, system=system, notes=notes
    )
