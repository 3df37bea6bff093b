"""A loopback upstream that replays recorded replies byte for byte, and can cut or hold them.

For the proxy's tests with real provider replies (tests/data/provider-replies) and broken
upstreams: each answer is sent as given, chunked or delimited by closing the connection; ``cut_at``
stops after that many body bytes and drops the connection (no end chunk); ``hold_at`` sends that
many bytes, then waits for :attr:`Replay.release` before the rest. ``POST /tokenize`` (llama.cpp's
tokenizer, beside ``/v1``) answers one token a word and is not an answer of the list.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.paths import DATA

REPLIES = DATA / "provider-replies"


@dataclass
class Answer:
    """One reply: status, headers, body; how it is framed; where it is cut or held."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = True
    cut_at: int | None = None
    hold_at: int | None = None


def recorded(name: str) -> Answer:
    """A fixture of tests/data/provider-replies as an answer (``.sse`` streamed, ``.json`` whole or an error)."""
    path = REPLIES / name
    if path.suffix == ".sse":
        return Answer(path.read_bytes(), headers={"content-type": "text/event-stream"})
    data = json.loads(path.read_text())
    if set(data) == {"status", "headers", "body"}:
        return Answer(json.dumps(data["body"]).encode(), data["status"], data["headers"], chunked=False)
    return Answer(path.read_bytes(), headers={"content-type": "application/json"}, chunked=False)


@dataclass
class Replay:
    """The server's state: the answers in order (the last repeats), the requests it got."""

    answers: list[Answer]
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    holding: threading.Event = field(default_factory=threading.Event)


def _handler(state: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path == "/tokenize":  # llama.cpp's tokenizer endpoint: one token a word, not an answer
                data = json.dumps({"tokens": list(range(len(str(json.loads(raw).get("content", "")).split())))})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())
                return
            state.seen.append((self.path, json.loads(raw or b"{}")))
            answer = state.answers[min(len(state.seen), len(state.answers)) - 1]
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            body = answer.body if answer.cut_at is None else answer.body[: answer.cut_at]
            if answer.chunked:
                self.send_header("transfer-encoding", "chunked")
            elif answer.cut_at is None:
                self.send_header("content-length", str(len(body)))
            else:
                self.send_header("connection", "close")  # the body ends where the connection does
            self.end_headers()
            first, rest = (body, b"") if answer.hold_at is None else (body[: answer.hold_at], body[answer.hold_at :])
            for part in (first, rest):
                if part:
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n" if answer.chunked else part)
                    self.wfile.flush()
                if part is first and answer.hold_at is not None:
                    state.holding.set()
                    state.release.wait(30)
            if answer.cut_at is not None:
                self.close_connection = True  # dropped: no end chunk, no more bytes
                return
            if answer.chunked:
                self.wfile.write(b"0\r\n\r\n")

    return Handler


@contextmanager
def replay_upstream(*answers: Answer) -> Iterator[tuple[str, Replay]]:
    """Serve ``answers`` on a free loopback port; yields ``(base URL ending in /v1, state)``."""
    state = Replay(list(answers))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


def fixture_path(name: str) -> Path:
    """The path of one fixture."""
    return REPLIES / name
