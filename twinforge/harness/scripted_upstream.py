"""A scripted model server in all three API shapes: the shipped fake upstream of harness tests and bench/.

It answers Chat Completions, Responses and Messages (``count_tokens`` too), whole or streamed (SSE),
as the harness-kit stub does, on loopback only. The step it plays is chosen from the request alone
(the number of tool results already in the conversation), so retries and side calls do not advance
the script: step ``i`` is a shell tool call running ``steps[i]``, past the end a final text. A call
that offers no tools gets the side text (or, with ``text_actions``, Mini-SWE-agent's own text action:
a THOUGHT and one ``mswea_bash_command`` block, the submit command past the end). Every request is
kept (headers and body) for tests to check what reached the upstream, and ``hold`` makes it wait
before answering (a slow upstream). It serves llama.cpp's ``POST /tokenize`` too (beside ``/v1``),
counting one token a word, and does not keep those requests.

A later user turn (docs/runtime.md, "User turns") is read like a model reads it: ``after`` maps a
phrase to the commands the model runs once a user message holding that phrase is in the
conversation, counted from that message on; a later turn the script has no entry for is ignored
(the model answers it with its final text, as one that does not act on the turn).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from twinforge.harness.shapes import SHELL_WORDS, Shape, tool_results

SUBMIT_ACTION = "THOUGHT: {final}\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
"""Mini-SWE-agent's submit action in its text-action shape (its bundled prompt names the command),
the script's final text as its thought."""
ROUTES: dict[str, Shape] = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}


@dataclass
class Script:
    """What the scripted model does.

    Attributes:
        commands: Shell commands, one per agent turn, in order.
        final: The last reply's text.
        side_text: The reply to calls that offer no tools (title generation).
        fail_status: Answer every model call with this HTTP status instead (0: never).
        fail_first: Only the first this many model calls fail (0: every one).
        extra_arguments: More arguments of each shell call, each only where the tool's schema has
            that property (e.g. ``{"timeout": 600000}``: a model asking for a long command timeout).
        think_s: Seconds each model answer takes (a real model's time per call, for benches; tests
            order with ``hold`` instead).
        after: Phrase of a later user turn -> the commands the model runs after reading it.
        text_actions: Answer tool-less calls with Mini-SWE-agent text actions instead of the side text.
    """

    commands: list[str] = field(default_factory=list)
    final: str = "done"
    side_text: str = "Task"
    fail_status: int = 0
    fail_first: int = 0
    extra_arguments: dict[str, Any] = field(default_factory=dict)
    think_s: float = 0.0
    after: dict[str, list[str]] = field(default_factory=dict)
    text_actions: bool = False


@dataclass
class Seen:
    """One request the upstream received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _tools(shape: Shape, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if shape == "chat":
            fn = tool.get("function") or {}
            found.append((str(fn.get("name", "")), fn.get("parameters") or {}))
        elif shape == "responses":
            found.append((str(tool.get("name") or tool.get("type") or ""), tool.get("parameters") or {}))
        else:
            found.append((str(tool.get("name", "")), tool.get("input_schema") or {}))
    return found


def conversation(shape: Shape, body: dict[str, Any]) -> list[tuple[str, str]]:
    """The request's conversation as ``(kind, text)`` items in order: ``user``, ``assistant`` or ``tool``.

    A user message's text blocks are one ``user`` item each; tool results (Chat ``role: tool``,
    Responses ``*_call_output``, Messages ``tool_result`` blocks) are ``tool`` items.
    """
    items: list[tuple[str, str]] = []
    if shape == "responses":
        raw = body.get("input")
        if isinstance(raw, str):
            return [("user", raw)]
        for item in raw if isinstance(raw, list) else []:
            if not isinstance(item, dict):
                continue
            kind = str(item.get("type", ""))
            if kind.endswith("_call_output"):
                items.append(("tool", json.dumps(item.get("output"))))
            elif item.get("role") in ("user", "assistant") or kind.endswith("_call"):
                items.append(("user" if item.get("role") == "user" else "assistant", json.dumps(item.get("content"))))
        return items
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            items.append(("tool", json.dumps(content)))
        elif role == "assistant":
            items.append(("assistant", json.dumps(content)))
        elif role == "user" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    items.append(("tool", json.dumps(block.get("content"))))
                elif isinstance(block, dict):
                    items.append(("user", str(block.get("text", ""))))
        elif role == "user":
            items.append(("user", str(content)))
    return items


def shell_arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    """Arguments for a shell tool with this JSON schema: ``command`` / ``cmd`` plus dummies for required fields."""
    props = schema.get("properties") or {}
    key = "cmd" if "cmd" in props and "command" not in props else "command"
    args: dict[str, Any] = {key: ["bash", "-lc", command] if (props.get(key) or {}).get("type") == "array" else command}
    for name in schema.get("required") or []:
        if name in args:
            continue
        kind = str((props.get(name) or {}).get("type", ""))
        args[name] = {"string": "Run the command", "integer": 30000, "number": 30000, "boolean": False}.get(kind, "")
    return args


class ScriptedUpstream:
    """The scripted server; use :func:`scripted_upstream` to run it.

    Args:
        script: What to answer.
        key: The credential it expects (a request without it gets 401, as a real API would).
    """

    def __init__(self, script: Script, key: str = "") -> None:
        self.script = script
        self.key = key
        self.seen: list[Seen] = []
        self.hold = threading.Event()
        self.hold.set()
        self.waiting = threading.Event()
        self.lock = threading.Lock()
        self.model_calls = 0

    def commands_now(self, shape: Shape, body: dict[str, Any], counted: str) -> tuple[list[str], int, int]:
        """The user turn the model is in: its commands, its step in them, and its index (0: turn 1).

        The turn is the last ``after`` phrase found in a user message (turn 1 without one). The step
        counts this turn's tool results, told apart by the turn index the model wrote into each call
        id (some CLIs merge a resumed session's messages, so positions do not tell turns apart); in
        text-action mode (no call ids), the ``counted`` items after the phrase's message.
        """
        items = conversation(shape, body)
        start, index, commands = 0, 0, self.script.commands
        for position, (kind, text) in enumerate(items):
            if kind != "user":
                continue
            for number, (phrase, later) in enumerate(self.script.after.items(), 1):
                if phrase in text:
                    start, index, commands = position + 1, number, later
        if counted == "tool":
            return commands, sum(1 for i in result_ids(shape, body) if f"_t{index}x" in i), index
        return commands, sum(1 for kind, _ in items[start:] if kind == counted), index

    def plan(self, shape: Shape, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """``("side"|"text"|"tool", text or tool name, arguments)`` for a request."""
        kind, value, args, _ = self.plan_marked(shape, body)
        return kind, value, args

    def plan_marked(self, shape: Shape, body: dict[str, Any]) -> tuple[str, str, dict[str, Any], str]:
        """:meth:`plan`, plus the mark of the user turn to write into a tool call's id (``t0x``: turn 1)."""
        tools = _tools(shape, body)
        if not tools and self.script.text_actions:
            commands, step, _ = self.commands_now(shape, body, "assistant")
            if step >= len(commands):
                return "text", SUBMIT_ACTION.format(final=self.script.final), {}, ""
            return "text", f"THOUGHT: Next step.\n\n```mswea_bash_command\n{commands[step]}\n```", {}, ""
        if not tools:
            return "side", self.script.side_text, {}, ""
        if self.script.after:
            commands, step, index = self.commands_now(shape, body, "tool")
        else:
            commands, step, index = self.script.commands, tool_results(shape, body), 0
        if step >= len(commands):
            return "text", self.script.final, {}, ""
        shell = next(((n, s) for n, s in tools if any(w in n.lower() for w in SHELL_WORDS)), None)
        if shell is None:
            return "text", "no shell tool was offered", {}, ""
        args = shell_arguments(shell[1], commands[step])
        props = shell[1].get("properties") or {}
        args.update({k: v for k, v in self.script.extra_arguments.items() if k in props})
        return "tool", shell[0], args, f"t{index}x"


def result_ids(shape: Shape, body: dict[str, Any]) -> list[str]:
    """The call ids the tool results of a request's conversation answer."""
    if shape == "chat":
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        return [str(m.get("tool_call_id", "")) for m in messages if m.get("role") == "tool"]
    if shape == "responses":
        raw = body.get("input")
        items = [i for i in raw if isinstance(i, dict)] if isinstance(raw, list) else []
        return [str(i.get("call_id", "")) for i in items if str(i.get("type", "")).endswith("_call_output")]
    return [
        str(b.get("tool_use_id", ""))
        for m in body.get("messages") or []
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def _chat(
    body: dict[str, Any], kind: str, value: str, args: dict[str, Any], mark: str = ""
) -> tuple[dict[str, Any], list[bytes]]:
    call = {
        "id": f"call_{mark}" + uuid.uuid4().hex[:12],
        "type": "function",
        "function": {"name": value, "arguments": json.dumps(args)},
    }
    message: dict[str, Any] = (
        {"role": "assistant", "content": None, "tool_calls": [call]}
        if kind == "tool"
        else {"role": "assistant", "content": value}
    )
    finish = "tool_calls" if kind == "tool" else "stop"
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    whole = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
             "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}  # fmt: skip
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "")}
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
    if kind == "tool":
        delta["tool_calls"] = [{"index": 0, **call}]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]
    return whole, [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


def _responses(
    body: dict[str, Any], kind: str, value: str, args: dict[str, Any], mark: str = ""
) -> tuple[dict[str, Any], list[bytes]]:
    if kind == "tool":
        call_id = f"call_{mark}" + uuid.uuid4().hex[:12]
        item: dict[str, Any] = {"type": "function_call", "id": "fc_1", "call_id": call_id,
                                "name": value, "arguments": json.dumps(args), "status": "completed"}  # fmt: skip
    else:
        item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": value, "annotations": []}]}  # fmt: skip
    usage = {"input_tokens": 11, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 7,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 18}  # fmt: skip
    shell = {"id": "resp_1", "object": "response", "created_at": 0, "model": body.get("model", ""), "output": [],
             "status": "in_progress", "usage": None}  # fmt: skip
    done = {**shell, "status": "completed", "output": [item], "usage": usage}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": shell}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": done}),
    ]
    sse = [
        f"event: {name}\ndata: {json.dumps({'type': name, 'sequence_number': i, **data})}\n\n".encode()
        for i, (name, data) in enumerate(events)
    ]
    return done, sse


def _messages(
    body: dict[str, Any], kind: str, value: str, args: dict[str, Any], mark: str = ""
) -> tuple[dict[str, Any], list[bytes]]:
    block: dict[str, Any] = (
        {"type": "tool_use", "id": f"toolu_{mark}" + uuid.uuid4().hex[:12], "name": value, "input": args}
        if kind == "tool"
        else {"type": "text", "text": value}
    )
    stop = "tool_use" if kind == "tool" else "end_turn"
    usage = {"input_tokens": 11, "output_tokens": 7}
    whole = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", ""),
             "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip
    start = {**whole, "content": [], "stop_reason": None, "usage": {"input_tokens": 11, "output_tokens": 1}}
    if kind == "tool":
        opening = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
    else:
        opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": value}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return whole, [f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events]


ANSWERS = {"chat": _chat, "responses": _responses, "messages": _messages}


def _handler(upstream: ScriptedUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            path = self.path.split("?")[0]
            if path == "/tokenize":  # llama.cpp's tokenizer endpoint; this fake's tokens are words
                self._send(200, {"tokens": list(range(len(str(body.get("content", "")).split())))})
                return
            with upstream.lock:
                upstream.seen.append(Seen(path, {k.lower(): v for k, v in self.headers.items()}, body))
            sent = self.headers.get("authorization", "").removeprefix("Bearer ") or self.headers.get("x-api-key", "")
            if upstream.key and sent != upstream.key:
                self._send(401, {"error": {"message": "bad key", "type": "authentication_error"}})
                return
            if path == "/v1/messages/count_tokens":
                self._send(200, {"input_tokens": max(1, len(raw) // 4)})
                return
            shape = ROUTES.get(path)
            if shape is None:
                self._send(404, {"error": {"message": f"no route {path}"}})
                return
            with upstream.lock:
                upstream.model_calls += 1
                calls = upstream.model_calls
            upstream.waiting.set()
            upstream.hold.wait(60)
            script = upstream.script
            if script.think_s:
                threading.Event().wait(script.think_s)
            if script.fail_status and (not script.fail_first or calls <= script.fail_first):
                self._send(script.fail_status, {"error": {"message": "scripted failure", "type": "api_error"}})
                return
            whole, events = ANSWERS[shape](body, *upstream.plan_marked(shape, body))
            if not body.get("stream"):
                self._send(200, whole)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for event in events:
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    return Handler


@contextmanager
def scripted_upstream(script: Script, key: str = "") -> Iterator[tuple[str, ScriptedUpstream]]:
    """Serve the script on a free loopback port; yields ``(base URL ending in /v1, server state)``."""
    state = ScriptedUpstream(script, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        state.hold.set()
        server.shutdown()
        server.server_close()
