"""A stub HTTP endpoint on loopback: the shipped fake server of tests and bench/ (OpenAI and Anthropic shapes).

It lives beside the scripted model (:mod:`twinforge.core.llm.scripted`) so ``bench/`` never imports
``tests/``; it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


def openai_reply(text: str, finish: str = "stop") -> dict[str, Any]:
    """An OpenAI chat-completion response body carrying ``text`` (token usage 11 + 7)."""
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def openai_refusal(text: str) -> dict[str, Any]:
    """OpenAI's refusal shape: ``message.content`` null and ``message.refusal`` set (structured outputs)."""
    reply = openai_reply("")
    reply["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": text}
    return reply


def anthropic_reply(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A Messages API reply with these content blocks."""
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": "claude-stub",
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 9},
        "content": content,
    }


def anthropic_tool_reply(name: str, tool_input: Any, stop_reason: str = "tool_use") -> dict[str, Any]:
    """A forced tool call; ``tool_input`` may be an object or (as some proxies send it) a JSON string."""
    return anthropic_reply([{"type": "tool_use", "id": "toolu_stub", "name": name, "input": tool_input}], stop_reason)


@contextmanager
def stub_server(handler: Handler, delay_s: float = 0.0) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``handler(path, body) -> (status, json)`` on 127.0.0.1; yields (base_url, received bodies)."""
    received: list[dict[str, Any]] = []

    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            received.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            if delay_s:
                time.sleep(delay_s)
            status, payload = handler(self.path, body)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()
