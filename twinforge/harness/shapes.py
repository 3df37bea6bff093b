"""The three model-API shapes the harnesses speak, read the same way (docs/runtime.md, "Model channel").

OpenAI Chat Completions (Mini-SWE-agent, OpenCode, Pi), OpenAI Responses (Codex CLI) and Anthropic
Messages with ``count_tokens`` (Claude Code). For each: where the credential travels, which tools a
request offers, how many tool results it carries, how a streamed (SSE) or whole reply reads back as
text, tool calls and token usage, and what an error body looks like. The proxy records calls with
this; the trajectory of an in-container harness is read from those records
(``twinforge.observer.trajectory.harnesses.proxy``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from twinforge.core.llm import Usage

Shape = Literal["chat", "responses", "messages"]
SHAPES: tuple[Shape, ...] = ("chat", "responses", "messages")

Role = Literal["agent", "side", "count_tokens"]
"""What a call is for: ``agent`` (an agent turn: counted against the call cap), ``side`` (title
generation and other calls that offer no tools, counted apart), ``count_tokens``."""

PATHS: dict[Shape, str] = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
"""Path of each shape below the API's ``/v1`` base."""

SHELL_WORDS = ("bash", "shell", "exec_command", "terminal", "run_command", "execute_command")
"""A tool whose name holds one of these runs shell commands: the task tool every harness offers
(Claude Code ``Bash``, Codex ``exec_command``, OpenCode and Pi ``bash``; harness-kit findings)."""

SIDE_SIGNATURES = ("You are a title generator", "Generate a concise", "generate a title")
"""Openings of the system prompts of known side calls that offer no tools (OpenCode's title call)."""


def credential(headers: dict[str, str]) -> str:
    """The credential a client sent: ``Authorization: Bearer`` (OpenAI shapes) or ``x-api-key`` (Anthropic)."""
    auth = headers.get("authorization", "").strip()
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return headers.get("x-api-key", "").strip()


def tool_names(shape: Shape, body: dict[str, Any]) -> list[str]:
    """Names of the tools a request offers (Responses ``namespace`` tools count by their own name)."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if shape == "chat":
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else None
        else:
            name = tool.get("name") or tool.get("type")
        if isinstance(name, str):
            names.append(name)
    return names


def has_task_tool(names: list[str]) -> bool:
    """One of the offered tools runs shell commands (see :data:`SHELL_WORDS`)."""
    return any(word in name.lower() for name in names for word in SHELL_WORDS)


def _system_text(shape: Shape, body: dict[str, Any]) -> str:
    if shape == "messages":
        system = body.get("system")
        if isinstance(system, list):
            return " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        return str(system or "")
    if shape == "responses":
        return str(body.get("instructions") or "")
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)[:400]
    return ""


REPLY_LIMITS: dict[str, tuple[str, ...]] = {
    "chat": ("max_tokens", "max_completion_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}
"""The request fields that bound a reply's tokens, per shape (the first is set when none is given)."""


def capped_reply(shape: Shape, body: dict[str, Any], limit: int) -> dict[str, Any]:
    """``body`` with its reply bounded by ``limit`` tokens, whatever the harness asked.

    The role's ``max_tokens`` is the reply budget of every harness alike (docs/runtime.md,
    "Harnesses", Budgets): the CLIs ask for up to 32,000 output tokens, and a small model rambles to whatever
    limit it is given. A Messages ``thinking`` budget that no longer fits under the cap is dropped
    (the API wants it below ``max_tokens``).

    Args:
        shape: The API shape of the call.
        body: The request body (not changed).
        limit: Most reply tokens.

    Returns:
        A new body.
    """
    out = dict(body)
    keys = REPLY_LIMITS[shape]
    present = [key for key in keys if key in out]
    for key in present or keys[:1]:
        asked = out.get(key)
        out[key] = min(asked, limit) if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else limit
    thinking = out.get("thinking")
    if shape == "messages" and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= out["max_tokens"]:
            del out["thinking"]
    return out


def with_stream_usage(shape: Shape, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` asking for token usage at the end of its stream (a new dict; ``body`` is not changed).

    A Chat Completions stream reports usage only when asked (``stream_options.include_usage``);
    one without it would be recorded as 0 tokens and never reach the spend ceiling
    (docs/runtime.md, "Model channel"). Responses and Messages streams always report usage.

    Args:
        shape: The API shape the upstream is sent.
        body: The upstream request body.

    Returns:
        The body, with ``stream_options.include_usage = true`` for a streamed Chat call.
    """
    if shape != "chat" or body.get("stream") is not True:
        return body
    options = body.get("stream_options")
    return {**body, "stream_options": {**(options if isinstance(options, dict) else {}), "include_usage": True}}


def role_of(shape: Shape, body: dict[str, Any], *, count_tokens: bool = False) -> Role:
    """Classify a call: ``count_tokens``, a ``side`` call (no tools and a side prompt or title schema), or ``agent``.

    A call that offers no tools is an agent turn unless it is recognisably a side call, so a harness
    cannot dodge the call cap by leaving its tools off.
    """
    if count_tokens:
        return "count_tokens"
    if body.get("tools"):
        return "agent"
    output = body.get("output_config")
    if isinstance(output, dict) and isinstance(output.get("format"), dict):  # Claude Code's title call
        return "side"
    system = _system_text(shape, body).lstrip()
    if any(system.startswith(sig) for sig in SIDE_SIGNATURES):
        return "side"
    return "agent"


def tool_results(shape: Shape, body: dict[str, Any]) -> int:
    """How many tool results the conversation in a request carries (a script's step index)."""
    if shape == "chat":
        return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool")
    if shape == "responses":
        items = body.get("input")
        if not isinstance(items, list):
            return 0
        return sum(1 for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output"))
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return count


@dataclass
class ToolCall:
    """One tool call of a reply: the tool's name and its arguments as the model wrote them (JSON text)."""

    name: str
    arguments: str
    id: str = ""


@dataclass
class Reply:
    """A model reply read back from any shape.

    Attributes:
        text: The reply's text.
        tool_calls: Its tool calls, in order.
        usage: Input (``prompt_tokens``) and output (``completion_tokens``) tokens the upstream
            reported (0 when it did not); calls and seconds are the proxy's to count.
        stop: The upstream's stop reason ('' when unknown).
        error: What was malformed or what error the upstream sent ('' when none).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop: str = ""
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The reply as stored in the proxy transcript."""
        return {
            "text": self.text[:20000],
            "tool_calls": [{"name": c.name, "arguments": c.arguments[:20000], "id": c.id} for c in self.tool_calls],
            "stop": self.stop,
        }


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(int(float(value)), 0)
    except (ValueError, OverflowError):
        return 0


def _usage(reply: Reply, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    completion = usage.get("completion_tokens", usage.get("output_tokens"))
    if prompt is not None:
        reply.usage = reply.usage.model_copy(update={"prompt_tokens": _count(prompt)})
    if completion is not None:
        reply.usage = reply.usage.model_copy(update={"completion_tokens": _count(completion)})


def read_whole(shape: Shape, payload: Any) -> Reply:
    """Read a whole (not streamed) JSON reply; a body of another shape gives an empty reply with ``error`` set."""
    reply = Reply()
    if not isinstance(payload, dict):
        reply.error = f"upstream reply is a JSON {type(payload).__name__}, not an object"
        return reply
    if "error" in payload and payload.get("type") != "message":
        reply.error = json.dumps(payload.get("error"), default=str)[:500]
    _usage(reply, payload.get("usage"))
    if shape == "chat":
        for choice in payload.get("choices") or []:
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            reply.text += str(message.get("content") or "")
            reply.stop = str(choice.get("finish_reason") or "")
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    reply.tool_calls.append(
                        ToolCall(
                            str(function.get("name", "")), str(function.get("arguments", "")), str(call.get("id", ""))
                        )
                    )
    elif shape == "responses":
        reply.stop = str(payload.get("status") or "")
        for item in payload.get("output") or []:
            _responses_item(reply, item)
    else:
        reply.stop = str(payload.get("stop_reason") or "")
        for block in payload.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                reply.text += str(block.get("text", ""))
            elif block.get("type") == "tool_use":
                reply.tool_calls.append(
                    ToolCall(str(block.get("name", "")), json.dumps(block.get("input", {})), str(block.get("id", "")))
                )
    return reply


def _responses_item(reply: Reply, item: Any) -> None:
    if not isinstance(item, dict):
        return
    kind = item.get("type")
    if kind == "message":
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                reply.text += str(part.get("text", ""))
    elif kind == "function_call":
        reply.tool_calls.append(
            ToolCall(str(item.get("name", "")), str(item.get("arguments", "")), str(item.get("call_id", "")))
        )
    elif kind in ("local_shell_call", "custom_tool_call"):
        action = item.get("action") or item.get("input") or {}
        reply.tool_calls.append(ToolCall(str(kind), json.dumps(action), str(item.get("call_id", ""))))


def sse_events(data: bytes) -> list[tuple[str, str]]:
    """Split an SSE stream into ``(event, data)`` pairs (comments and keep-alive lines dropped)."""
    events: list[tuple[str, str]] = []
    name, lines = "", list[str]()
    for raw in [*data.decode("utf-8", errors="replace").splitlines(), ""]:
        if raw == "":
            if lines:
                events.append((name, "\n".join(lines)))
            name, lines = "", []
        elif raw.startswith(":"):
            continue
        elif raw.startswith("event:"):
            name = raw[6:].strip()
        elif raw.startswith("data:"):
            lines.append(raw[5:].removeprefix(" "))
    return events


def read_stream(shape: Shape, data: bytes) -> Reply:
    """Reassemble a streamed (SSE) reply of any shape into text, tool calls and usage."""
    reply = Reply()
    calls: dict[Any, ToolCall] = {}
    for _, text in sse_events(data):
        if text.strip() == "[DONE]":
            continue
        try:
            event = json.loads(text)
        except ValueError:
            reply.error = reply.error or f"malformed SSE data: {text[:200]}"
            continue
        if not isinstance(event, dict):
            continue
        if "error" in event and shape != "messages":
            reply.error = json.dumps(event["error"], default=str)[:500]
        if shape == "chat":
            _chat_chunk(reply, calls, event)
        elif shape == "responses":
            _responses_event(reply, event)
        else:
            _messages_event(reply, calls, event)
    if shape != "responses":
        reply.tool_calls = list(calls.values())
    return reply


def _chat_chunk(reply: Reply, calls: dict[Any, ToolCall], event: dict[str, Any]) -> None:
    _usage(reply, event.get("usage"))
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        if choice.get("finish_reason"):
            reply.stop = str(choice["finish_reason"])
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            continue
        reply.text += str(delta.get("content") or "")
        for part in delta.get("tool_calls") or []:
            if not isinstance(part, dict):
                continue
            call = calls.setdefault(part.get("index", len(calls)), ToolCall("", "", ""))
            function = part.get("function") or {}
            call.id = call.id or str(part.get("id") or "")
            call.name += str(function.get("name") or "")
            call.arguments += str(function.get("arguments") or "")


def _responses_event(reply: Reply, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "response.output_item.done":
        _responses_item(reply, event.get("item"))
    elif kind in ("response.completed", "response.failed", "response.incomplete"):
        response = event.get("response") or {}
        if isinstance(response, dict):
            _usage(reply, response.get("usage"))
            reply.stop = str(response.get("status") or kind)
            if response.get("error"):
                reply.error = json.dumps(response["error"], default=str)[:500]
    elif kind == "error":
        reply.error = json.dumps(event, default=str)[:500]


def _messages_event(reply: Reply, calls: dict[Any, ToolCall], event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "message_start":
        message = event.get("message") or {}
        if isinstance(message, dict):
            _usage(reply, {"input_tokens": (message.get("usage") or {}).get("input_tokens")})
    elif kind == "content_block_start":
        block = event.get("content_block") or {}
        if isinstance(block, dict) and block.get("type") == "tool_use":
            calls[event.get("index")] = ToolCall(str(block.get("name", "")), "", str(block.get("id", "")))
        elif isinstance(block, dict) and block.get("type") == "text":
            reply.text += str(block.get("text", ""))
    elif kind == "content_block_delta":
        delta = event.get("delta") or {}
        if not isinstance(delta, dict):
            return
        if delta.get("type") == "text_delta":
            reply.text += str(delta.get("text", ""))
        elif delta.get("type") == "input_json_delta" and event.get("index") in calls:
            calls[event.get("index")].arguments += str(delta.get("partial_json", ""))
    elif kind == "message_delta":
        delta = event.get("delta") or {}
        if isinstance(delta, dict) and delta.get("stop_reason"):
            reply.stop = str(delta["stop_reason"])
        usage = event.get("usage")
        if isinstance(usage, dict) and "output_tokens" in usage:
            reply.usage = reply.usage.model_copy(update={"completion_tokens": _count(usage["output_tokens"])})
    elif kind == "error":
        reply.error = json.dumps(event.get("error"), default=str)[:500]


ERROR_TYPES = {401: "authentication_error", 429: "rate_limit_error", 400: "invalid_request_error"}


def error_body(shape: Shape, status: int, message: str) -> dict[str, Any]:
    """An error body in the shape's own format, so each client reads the status as it would from its API."""
    kind = ERROR_TYPES.get(status, "api_error")
    if shape == "messages":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def error_event(shape: Shape, status: int, message: str) -> bytes:
    """An in-stream error event, for an upstream that fails after keep-alive pings already sent HTTP 200."""
    body = error_body(shape, status, message)
    if shape == "messages":
        return f"event: error\ndata: {json.dumps(body)}\n\n".encode()
    if shape == "responses":
        event = {"type": "response.failed", "response": {"status": "failed", "error": body["error"]}}
        return f"event: response.failed\ndata: {json.dumps(event)}\n\n".encode()
    return f"data: {json.dumps(body)}\n\n".encode()
