"""Replies written in each API shape from :mod:`~twinforge.harness.translation.turn` values, whole or streamed.

The streamed forms follow each API's event order, which its SDKs check: Chat Completions chunks
then ``[DONE]``; Messages ``message_start``, content blocks opened, filled and closed one at a
time, ``message_delta`` with the stop reason and usage, ``message_stop``; Responses
``response.created``, each output item added, filled and done, ``response.completed`` with every
item and the usage (docs/runtime.md, "Model channel"). A Responses ``custom`` tool's call goes back
as a ``custom_tool_call`` with its ``input`` (it crossed as a function with one string argument).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from twinforge.harness.shapes import Shape
from twinforge.harness.translation.turn import (
    ArgumentsDelta,
    Call,
    CallStarted,
    Ended,
    Event,
    Failed,
    Finished,
    ReasoningDelta,
    Stop,
    TextDelta,
    Tokens,
    Turn,
    UsageSeen,
    merge_tokens,
)

MESSAGES_STOP: dict[Stop, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "refusal": "refusal",
}
CHAT_STOP: dict[Stop, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}
ERROR_TYPES = {
    429: "rate_limit_error",
    529: "overloaded_error",
    401: "authentication_error",
    400: "invalid_request_error",
}


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def chat_usage(tokens: Tokens) -> dict[str, Any]:
    """Chat Completions ``usage``."""
    return {
        "prompt_tokens": tokens.input,
        "completion_tokens": tokens.output,
        "total_tokens": tokens.input + tokens.output,
        "prompt_tokens_details": {"cached_tokens": tokens.cached},
        "completion_tokens_details": {"reasoning_tokens": tokens.reasoning},
    }


def messages_usage(tokens: Tokens) -> dict[str, Any]:
    """Messages ``usage`` (``input_tokens`` without the cache reads, as Anthropic counts)."""
    return {
        "input_tokens": max(tokens.input - tokens.cached, 0),
        "output_tokens": tokens.output,
        "cache_read_input_tokens": tokens.cached,
        "cache_creation_input_tokens": 0,
    }


def responses_usage(tokens: Tokens) -> dict[str, Any]:
    """Responses ``usage``."""
    return {
        "input_tokens": tokens.input,
        "input_tokens_details": {"cached_tokens": tokens.cached},
        "output_tokens": tokens.output,
        "output_tokens_details": {"reasoning_tokens": tokens.reasoning},
        "total_tokens": tokens.input + tokens.output,
    }


def _custom_input(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return str(value.get("input", "")) if isinstance(value, dict) else arguments


def _responses_call(call: Call, custom: frozenset[str], item_id: str = "") -> dict[str, Any]:
    if call.name in custom:
        return {
            "type": "custom_tool_call",
            "id": item_id or _id("ctc"),
            "call_id": call.id,
            "name": call.name,
            "input": _custom_input(call.arguments),
            "status": "completed",
        }
    return {
        "type": "function_call",
        "id": item_id or _id("fc"),
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }


def write_turn(shape: Shape, turn: Turn, model: str, custom: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A whole reply in ``shape``.

    Args:
        shape: The harness's shape.
        turn: The reply.
        model: The model name the harness asked for.
        custom: Names of the harness's Responses ``custom`` tools.
    """
    if shape == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.reasoning:
            message["reasoning_content"] = turn.reasoning
        if turn.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in turn.calls
            ]
        return {
            "id": turn.id or _id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": CHAT_STOP[turn.stop]}],
            "usage": chat_usage(turn.tokens),
        }
    if shape == "messages":
        content: list[dict[str, Any]] = []
        if turn.reasoning:
            content.append({"type": "thinking", "thinking": turn.reasoning, "signature": ""})
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for call in turn.calls:
            content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)})
        return {
            "id": _id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": MESSAGES_STOP[turn.stop],
            "stop_sequence": None,
            "usage": messages_usage(turn.tokens),
        }
    output: list[dict[str, Any]] = []
    if turn.reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": _id("rs"),
                "summary": [],
                "content": [{"type": "reasoning_text", "text": turn.reasoning}],
            }
        )
    if turn.text:
        output.append(
            {
                "type": "message",
                "id": _id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    output += [_responses_call(c, custom) for c in turn.calls]
    return _response(_id("resp"), model, output, turn.stop, turn.tokens)


def _response(rid: str, model: str, output: list[dict[str, Any]], stop: Stop, tokens: Tokens) -> dict[str, Any]:
    incomplete = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(stop)
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
        "usage": responses_usage(tokens),
    }


def _input(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class StreamWriter:
    """Write events as one streamed reply of ``shape``.

    Args:
        shape: The harness's shape.
        model: The model name the harness asked for.
        custom: Names of the harness's Responses ``custom`` tools.
    """

    def __init__(self, shape: Shape, model: str, custom: frozenset[str] = frozenset()) -> None:
        self.shape, self.model, self.custom = shape, model, custom
        self.turn = Turn()
        self._started = False
        self._ended = False
        self._id = _id({"chat": "chatcmpl", "messages": "msg", "responses": "resp"}[shape])
        self._open: tuple[str, int] | None = None  # (kind, call index or -1), the block or item being filled
        self._position = -1  # Messages content block index, Responses output index
        self._item = ""
        self._piece = ""  # the text of the Responses item being filled
        self._items: list[dict[str, Any]] = []
        self._seq = 0
        self._finish_sent = False

    def write(self, event: Event) -> bytes:
        """The bytes that carry ``event`` to the harness."""
        if self._ended:
            return b""
        self._keep(event)
        if isinstance(event, Failed):
            self._ended = True
            return self._failed(event)
        if self.shape == "chat":
            return self._chat(event)
        out = b"" if self._started or isinstance(event, UsageSeen) else self._start()
        if self.shape == "messages":
            return out + self._messages(event)
        return out + self._responses(event)

    def _keep(self, event: Event) -> None:
        turn = self.turn
        if isinstance(event, TextDelta):
            turn.text += event.text
        elif isinstance(event, ReasoningDelta):
            turn.reasoning += event.text
        elif isinstance(event, CallStarted):
            turn.calls.append(Call(event.id, event.name))
        elif isinstance(event, ArgumentsDelta) and event.index < len(turn.calls):
            turn.calls[event.index].arguments += event.text
        elif isinstance(event, Finished):
            turn.stop = event.stop
        elif isinstance(event, UsageSeen):
            turn.tokens = merge_tokens(turn.tokens, event.tokens)

    def _failed(self, event: Failed) -> bytes:
        kind = ERROR_TYPES.get(event.status, "api_error")
        if self.shape == "messages":
            return _sse("error", {"type": "error", "error": {"type": kind, "message": event.message}})
        if self.shape == "responses":
            error = {"code": kind, "message": event.message}
            return self._event(
                "response.failed",
                {"response": {"id": self._id, "object": "response", "status": "failed", "error": error, "output": []}},
            )
        return f"data: {json.dumps({'error': {'message': event.message, 'type': kind, 'code': kind}})}\n\n".encode()

    # Chat Completions ---------------------------------------------------------------------------

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    def _chat(self, event: Event) -> bytes:
        out = b""
        if not self._started and not isinstance(event, UsageSeen | Ended):
            self._started = True
            out += self._chunk({"role": "assistant", "content": ""})
        if isinstance(event, TextDelta):
            out += self._chunk({"content": event.text})
        elif isinstance(event, ReasoningDelta):
            out += self._chunk({"reasoning_content": event.text})
        elif isinstance(event, CallStarted):
            call = {
                "index": event.index,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
            out += self._chunk({"tool_calls": [call]})
        elif isinstance(event, ArgumentsDelta):
            out += self._chunk({"tool_calls": [{"index": event.index, "function": {"arguments": event.text}}]})
        elif isinstance(event, Finished):
            self._finish_sent = True
            out += self._chunk({}, CHAT_STOP[event.stop])
        elif isinstance(event, Ended):
            self._ended = True
            if not self._finish_sent:
                out += self._chunk({}, CHAT_STOP[self._stop()])
            usage = {
                "id": self._id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": self.model,
                "choices": [],
                "usage": chat_usage(self.turn.tokens),
            }
            out += f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode()
        return out

    def _stop(self) -> Stop:
        if self.turn.stop == "stop" and self.turn.calls:
            return "tool_calls"
        return self.turn.stop

    # Messages -----------------------------------------------------------------------------------

    def _start(self) -> bytes:
        self._started = True
        if self.shape == "messages":
            message: dict[str, Any] = {
                "id": self._id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": messages_usage(self.turn.tokens),
            }
            return _sse("message_start", {"type": "message_start", "message": message})
        response = {
            "id": self._id,
            "object": "response",
            "created_at": int(time.time()),
            "model": self.model,
            "status": "in_progress",
            "output": [],
            "usage": None,
        }
        return self._event("response.created", {"response": response}) + self._event(
            "response.in_progress", {"response": response}
        )

    def _messages(self, event: Event) -> bytes:
        if isinstance(event, TextDelta | ReasoningDelta):
            kind = "text" if isinstance(event, TextDelta) else "thinking"
            out = b""
            if self._open is None or self._open[0] != kind:
                block = (
                    {"type": "text", "text": ""}
                    if kind == "text"
                    else {"type": "thinking", "thinking": "", "signature": ""}
                )
                out += self._block_start(kind, -1, block)
            delta = (
                {"type": "text_delta", "text": event.text}
                if kind == "text"
                else {"type": "thinking_delta", "thinking": event.text}
            )
            return out + _sse(
                "content_block_delta", {"type": "content_block_delta", "index": self._position, "delta": delta}
            )
        if isinstance(event, CallStarted):
            return self._block_start(
                "tool_use", event.index, {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            )
        if isinstance(event, Ended):
            self._ended = True
            closing_delta: dict[str, Any] = {"stop_reason": MESSAGES_STOP[self._stop()], "stop_sequence": None}
            closing = _sse(
                "message_delta",
                {"type": "message_delta", "delta": closing_delta, "usage": messages_usage(self.turn.tokens)},
            )
            return self._block_stop() + closing + _sse("message_stop", {"type": "message_stop"})
        return b""

    def _block_start(self, kind: str, call: int, block: dict[str, Any]) -> bytes:
        out = self._block_stop()
        self._position += 1
        self._open = (kind, call)
        return out + _sse(
            "content_block_start", {"type": "content_block_start", "index": self._position, "content_block": block}
        )

    def _block_stop(self) -> bytes:
        if self._open is None:
            return b""
        kind, call = self._open
        self._open = None
        out = b""
        if kind == "tool_use":  # the arguments go whole: calls may arrive interleaved from a Chat upstream
            arguments = json.dumps(_input(self.turn.calls[call].arguments))
            delta = {"type": "input_json_delta", "partial_json": arguments}
            out += _sse("content_block_delta", {"type": "content_block_delta", "index": self._position, "delta": delta})
        return out + _sse("content_block_stop", {"type": "content_block_stop", "index": self._position})

    # Responses ----------------------------------------------------------------------------------

    def _event(self, name: str, data: dict[str, Any]) -> bytes:
        self._seq += 1
        return _sse(name, {"type": name, "sequence_number": self._seq, **data})

    def _responses(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            out = b"" if self._open == ("message", -1) else self._item_start("message", -1)
            self._piece += event.text
            where = {"item_id": self._item, "output_index": self._position, "content_index": 0}
            return out + self._event("response.output_text.delta", {**where, "delta": event.text})
        if isinstance(event, ReasoningDelta):
            out = b"" if self._open == ("reasoning", -1) else self._item_start("reasoning", -1)
            self._piece += event.text
            where = {"item_id": self._item, "output_index": self._position, "content_index": 0}
            return out + self._event("response.reasoning_text.delta", {**where, "delta": event.text})
        if isinstance(event, CallStarted):
            return self._item_start("call", event.index)
        if isinstance(event, Ended):
            self._ended = True
            out = self._item_stop()
            response = _response(self._id, self.model, self._items, self._stop(), self.turn.tokens)
            name = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
            return out + self._event(name, {"response": response})
        return b""

    def _item_start(self, kind: str, call: int) -> bytes:
        out = self._item_stop()
        self._position += 1
        self._open = (kind, call)
        self._piece = ""
        if kind == "message":
            self._item = _id("msg")
            item: dict[str, Any] = {
                "type": "message",
                "id": self._item,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            added = self._event("response.output_item.added", {"output_index": self._position, "item": item})
            where = {"item_id": self._item, "output_index": self._position, "content_index": 0}
            return out + added + self._event("response.content_part.added", {**where, "part": part})
        if kind == "reasoning":
            self._item = _id("rs")
            item = {"type": "reasoning", "id": self._item, "summary": [], "content": []}
            return out + self._event("response.output_item.added", {"output_index": self._position, "item": item})
        self._item = _id("fc")
        item = {**_responses_call(self.turn.calls[call], self.custom, self._item), "status": "in_progress"}
        item["arguments" if item["type"] == "function_call" else "input"] = ""
        return out + self._event("response.output_item.added", {"output_index": self._position, "item": item})

    def _item_stop(self) -> bytes:
        if self._open is None:
            return b""
        kind, call = self._open
        self._open = None
        where = {"item_id": self._item, "output_index": self._position}
        out = b""
        if kind == "message":
            part = {"type": "output_text", "text": self._piece, "annotations": []}
            out += self._event("response.output_text.done", {**where, "content_index": 0, "text": self._piece})
            out += self._event("response.content_part.done", {**where, "content_index": 0, "part": part})
            item: dict[str, Any] = {
                "type": "message",
                "id": self._item,
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        elif kind == "reasoning":
            text = {"type": "reasoning_text", "text": self._piece}
            out += self._event("response.reasoning_text.done", {**where, "content_index": 0, "text": self._piece})
            item = {"type": "reasoning", "id": self._item, "summary": [], "content": [text]}
        else:
            item = _responses_call(self.turn.calls[call], self.custom, self._item)
            if item["type"] == "function_call":  # the arguments go whole: calls may arrive interleaved
                arguments = self.turn.calls[call].arguments
                out += self._event("response.function_call_arguments.delta", {**where, "delta": arguments})
                out += self._event("response.function_call_arguments.done", {**where, "arguments": arguments})
        self._items.append(item)
        return out + self._event("response.output_item.done", {"output_index": self._position, "item": item})
