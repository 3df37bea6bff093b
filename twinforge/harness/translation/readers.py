"""Replies of each API shape read into :mod:`~twinforge.harness.translation.turn` values, whole or as SSE arrives.

:class:`StreamReader` also tells whether a stream reached its shape's own end (Chat Completions
``[DONE]`` or a ``finish_reason``, Messages ``message_stop``, Responses ``response.completed`` /
``incomplete`` / ``failed``): a stream that stopped before that was cut, whatever the HTTP status
said (docs/runtime.md, "Model channel").
"""

from __future__ import annotations

import json
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
    Started,
    Stop,
    TextDelta,
    Tokens,
    Turn,
    UsageSeen,
    count,
    merge_tokens,
)

CHAT_STOPS: dict[str, Stop] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
MESSAGES_STOPS: dict[str, Stop] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}
ERROR_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "authentication_error": 401,
    "permission_error": 403,
    "invalid_request_error": 400,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_exceeded": 429,
    "server_error": 500,
}
"""HTTP status of an in-stream error by its type or code (Anthropic's error types, OpenAI's codes)."""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def chat_tokens(usage: Any) -> Tokens:
    """Chat Completions ``usage`` (with ``prompt_tokens_details`` and ``completion_tokens_details``)."""
    usage = _dict(usage)
    return Tokens(
        input=count(usage.get("prompt_tokens")),
        cached=count(_dict(usage.get("prompt_tokens_details")).get("cached_tokens")),
        output=count(usage.get("completion_tokens")),
        reasoning=count(_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")),
        seen=bool(usage),
    )


def messages_tokens(usage: Any) -> Tokens:
    """Messages ``usage``: ``input_tokens`` excludes cache reads and writes, which are added here."""
    usage = _dict(usage)
    cached = count(usage.get("cache_read_input_tokens"))
    written = count(usage.get("cache_creation_input_tokens"))
    return Tokens(
        input=count(usage.get("input_tokens")) + cached + written,
        cached=cached,
        output=count(usage.get("output_tokens")),
        seen=bool(usage),
        written=written,
    )


def responses_tokens(usage: Any) -> Tokens:
    """Responses ``usage`` (``input_tokens_details.cached_tokens``, ``output_tokens_details.reasoning_tokens``)."""
    usage = _dict(usage)
    return Tokens(
        input=count(usage.get("input_tokens")),
        cached=count(_dict(usage.get("input_tokens_details")).get("cached_tokens")),
        output=count(usage.get("output_tokens")),
        reasoning=count(_dict(usage.get("output_tokens_details")).get("reasoning_tokens")),
        seen=bool(usage),
    )


def _error(payload: Any) -> Failed:
    error = _dict(payload)
    kind = str(error.get("type") or error.get("code") or "")
    return Failed(str(error.get("message") or kind or "upstream error"), ERROR_STATUS.get(kind, 502))


def _responses_stop(response: dict[str, Any], calls: int) -> Stop:
    reason = _dict(response.get("incomplete_details")).get("reason")
    if reason == "max_output_tokens":
        return "length"
    if reason == "content_filter":
        return "content_filter"
    return "tool_calls" if calls else "stop"


def read_turn(shape: Shape, payload: Any) -> Turn:
    """A whole reply of ``shape`` (its JSON body) as a :class:`Turn`; unknown parts are skipped."""
    body = _dict(payload)
    turn = Turn(id=str(body.get("id") or ""), model=str(body.get("model") or ""))
    if shape == "chat":
        choice = _dict((body.get("choices") or [None])[0])
        message = _dict(choice.get("message"))
        turn.text = str(message.get("content") or message.get("refusal") or "")
        turn.reasoning = str(message.get("reasoning_content") or message.get("reasoning") or "")
        for call in message.get("tool_calls") or []:
            function = _dict(_dict(call).get("function"))
            turn.calls.append(
                Call(
                    str(_dict(call).get("id") or ""),
                    str(function.get("name") or ""),
                    str(function.get("arguments") or ""),
                )
            )
        turn.stop = CHAT_STOPS.get(str(choice.get("finish_reason")), "stop")
        turn.tokens = chat_tokens(body.get("usage"))
    elif shape == "messages":
        for block in body.get("content") or []:
            block = _dict(block)
            if block.get("type") == "text":
                turn.text += str(block.get("text") or "")
            elif block.get("type") == "thinking":
                turn.reasoning += str(block.get("thinking") or "")
            elif block.get("type") == "tool_use":
                turn.calls.append(
                    Call(str(block.get("id") or ""), str(block.get("name") or ""), json.dumps(block.get("input") or {}))
                )
        turn.stop = MESSAGES_STOPS.get(str(body.get("stop_reason")), "stop")
        turn.tokens = messages_tokens(body.get("usage"))
    else:
        for item in body.get("output") or []:
            _responses_item(turn, _dict(item))
        turn.stop = _responses_stop(body, len(turn.calls))
        turn.tokens = responses_tokens(body.get("usage"))
    return turn


def _responses_item(turn: Turn, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "message":
        for part in item.get("content") or []:
            part = _dict(part)
            turn.text += str(part.get("text") or part.get("refusal") or "")
    elif kind == "reasoning":
        parts = [*(item.get("content") or []), *(item.get("summary") or [])]
        turn.reasoning += "".join(str(_dict(p).get("text") or "") for p in parts)
    elif kind == "function_call":
        turn.calls.append(
            Call(str(item.get("call_id") or ""), str(item.get("name") or ""), str(item.get("arguments") or ""))
        )
    elif kind == "custom_tool_call":
        turn.calls.append(
            Call(
                str(item.get("call_id") or ""),
                str(item.get("name") or ""),
                json.dumps({"input": item.get("input", "")}),
            )
        )


class SseSplitter:
    """Split SSE bytes into ``(event, data)`` as they arrive (comments skipped, ``data`` lines joined)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``."""
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        found = []
        while (end := self._buffer.find(b"\n\n")) >= 0:
            block, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
            name, data = "", []
            for line in block.decode("utf-8", errors="replace").split("\n"):
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
            if data:
                found.append((name, "\n".join(data)))
        return found

    def rest(self) -> list[tuple[str, str]]:
        """An event the stream ended inside of, without its blank line (servers that omit the last one)."""
        tail, self._buffer = self._buffer, b""
        return self.feed(tail + b"\n\n") if tail.strip() else []


class StreamReader:
    """Read one streamed reply of ``shape`` into events, keeping the whole :class:`Turn` too.

    Attributes:
        turn: The reply so far.
        complete: The stream reached its shape's end (see the module docstring).
        failed: The upstream reported an error inside the stream.
        malformed: Events that were not JSON.
    """

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.turn = Turn()
        self.complete = False
        self.failed: Failed | None = None
        self.malformed = 0
        self._sse = SseSplitter()
        self._calls: dict[Any, int] = {}
        self._started = False
        self._argued: set[Any] = set()  # Responses output items whose deltas arrived

    def feed(self, chunk: bytes) -> list[Event]:
        """Events in ``chunk`` (any split of the byte stream)."""
        return self._events(self._sse.feed(chunk))

    def end(self) -> list[Event]:
        """Events of a last event without its blank line."""
        return self._events(self._sse.rest())

    def _events(self, raw: list[tuple[str, str]]) -> list[Event]:
        out: list[Event] = []
        for _, data in raw:
            if data.strip() == "[DONE]":
                out.append(Ended())
                continue
            try:
                event = json.loads(data)
            except ValueError:
                self.malformed += 1
                continue
            if isinstance(event, dict):
                out.extend(self._read(event))
        for event in out:
            self._keep(event)
        return out

    def _keep(self, event: Event) -> None:
        turn = self.turn
        if isinstance(event, Started):
            turn.id, turn.model = turn.id or event.id, turn.model or event.model
        elif isinstance(event, TextDelta):
            turn.text += event.text
        elif isinstance(event, ReasoningDelta):
            turn.reasoning += event.text
        elif isinstance(event, CallStarted):
            turn.calls.append(Call(event.id, event.name))
        elif isinstance(event, ArgumentsDelta) and event.index < len(turn.calls):
            turn.calls[event.index].arguments += event.text
        elif isinstance(event, Finished):
            turn.stop = event.stop
            self.complete = self.complete or self.shape == "chat"  # a finish_reason ends a Chat reply
        elif isinstance(event, UsageSeen):
            turn.tokens = merge_tokens(turn.tokens, event.tokens)
        elif isinstance(event, Failed):
            self.failed = event
        elif isinstance(event, Ended):
            self.complete = True

    def _call(self, key: Any, id: str, name: str) -> CallStarted:
        self._calls[key] = len(self._calls)
        return CallStarted(self._calls[key], id or f"call_{len(self._calls)}", name)

    def _read(self, event: dict[str, Any]) -> list[Event]:
        if self.shape == "chat":
            return self._chat(event)
        if self.shape == "messages":
            return self._messages(event)
        return self._responses(event)

    def _chat(self, event: dict[str, Any]) -> list[Event]:
        if "error" in event:
            return [_error(event["error"])]
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(Started(str(event.get("id") or ""), str(event.get("model") or "")))
        for choice in event.get("choices") or []:
            choice = _dict(choice)
            delta = _dict(choice.get("delta"))
            if delta.get("reasoning_content") or delta.get("reasoning"):
                out.append(ReasoningDelta(str(delta.get("reasoning_content") or delta.get("reasoning"))))
            if delta.get("content") or delta.get("refusal"):
                out.append(TextDelta(str(delta.get("content") or delta.get("refusal"))))
            for part in delta.get("tool_calls") or []:
                part = _dict(part)
                function = _dict(part.get("function"))
                key = part.get("index", len(self._calls))
                if key not in self._calls:
                    out.append(self._call(key, str(part.get("id") or ""), str(function.get("name") or "")))
                if function.get("arguments"):
                    out.append(ArgumentsDelta(self._calls[key], str(function["arguments"])))
            if choice.get("finish_reason"):
                out.append(Finished(CHAT_STOPS.get(str(choice["finish_reason"]), "stop")))
        if isinstance(event.get("usage"), dict):
            out.append(UsageSeen(chat_tokens(event["usage"])))
        return out

    def _messages(self, event: dict[str, Any]) -> list[Event]:
        kind = event.get("type")
        if kind == "message_start":
            message = _dict(event.get("message"))
            return [
                Started(str(message.get("id") or ""), str(message.get("model") or "")),
                UsageSeen(messages_tokens(message.get("usage"))),
            ]
        if kind == "content_block_start":
            block = _dict(event.get("content_block"))
            if block.get("type") == "tool_use":
                return [self._call(event.get("index"), str(block.get("id") or ""), str(block.get("name") or ""))]
            text = str(block.get("text") or block.get("thinking") or "")
            if text:
                return [ReasoningDelta(text) if block.get("type") == "thinking" else TextDelta(text)]
            return []
        if kind == "content_block_delta":
            delta = _dict(event.get("delta"))
            if delta.get("type") == "text_delta":
                return [TextDelta(str(delta.get("text") or ""))]
            if delta.get("type") == "thinking_delta":
                return [ReasoningDelta(str(delta.get("thinking") or ""))]
            if delta.get("type") == "input_json_delta" and event.get("index") in self._calls:
                return [ArgumentsDelta(self._calls[event.get("index")], str(delta.get("partial_json") or ""))]
            return []
        if kind == "message_delta":
            out: list[Event] = []
            stop = _dict(event.get("delta")).get("stop_reason")
            if stop:
                out.append(Finished(MESSAGES_STOPS.get(str(stop), "stop")))
            if isinstance(event.get("usage"), dict):
                out.append(UsageSeen(messages_tokens(event["usage"])))
            return out
        if kind == "message_stop":
            return [Ended()]
        if kind == "error":
            return [_error(event.get("error"))]
        return []

    def _responses(self, event: dict[str, Any]) -> list[Event]:
        kind = str(event.get("type") or "")
        if kind == "response.created":
            response = _dict(event.get("response"))
            return [Started(str(response.get("id") or ""), str(response.get("model") or ""))]
        where = event.get("output_index")
        if kind == "response.output_item.added":
            item = _dict(event.get("item"))
            if item.get("type") in ("function_call", "custom_tool_call"):
                return [self._call(where, str(item.get("call_id") or ""), str(item.get("name") or ""))]
            return []
        if kind == "response.output_item.done":
            item = _dict(event.get("item"))
            if where in self._argued:  # its text or arguments came as deltas
                return []
            if item.get("type") in ("message", "reasoning"):  # a server that sends whole items only
                whole = Turn()
                _responses_item(whole, item)
                if whole.text:
                    return [TextDelta(whole.text)]
                return [ReasoningDelta(whole.reasoning)] if whole.reasoning else []
            if where not in self._calls:
                return []
            self._argued.add(where)
            if item.get("type") == "custom_tool_call":
                return [ArgumentsDelta(self._calls[where], json.dumps({"input": item.get("input", "")}))]
            return [ArgumentsDelta(self._calls[where], str(item.get("arguments") or ""))]
        if kind == "response.function_call_arguments.delta" and where in self._calls:
            self._argued.add(where)
            return [ArgumentsDelta(self._calls[where], str(event.get("delta") or ""))]
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            self._argued.add(where)
            return [TextDelta(str(event.get("delta") or ""))]
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            self._argued.add(where)
            return [ReasoningDelta(str(event.get("delta") or ""))]
        if kind in ("response.completed", "response.incomplete"):
            response = _dict(event.get("response"))
            stop = _responses_stop(response, len(self._calls))
            return [UsageSeen(responses_tokens(response.get("usage"))), Finished(stop), Ended()]
        if kind == "response.failed":
            response = _dict(event.get("response"))
            return [_error(response.get("error")), Ended()]
        if kind == "error":
            return [_error(event.get("error") if isinstance(event.get("error"), dict) else event)]
        return []
