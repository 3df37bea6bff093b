"""The model proxy records every forwarded call, whatever the upstream returns (docs/runtime.md).

A raw upstream on loopback answers each call with one hostile shape; every call must leave a row in
``proxy_calls`` and a line in the transcript, and the harness must get the upstream's answer back
(a failure of the upstream itself, 5xx or 401/429, ends the run instead: tests/harness/test_proxy_shapes.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from twinforge.core.settings import ModelSettings
from twinforge.harness.proxy import ModelProxy, read_reply
from twinforge.runs.records import RecordsDB

HTML = b"<html><body><h1>404 Not Found</h1></body></html>"
REPLIES: list[tuple[int, str, bytes]] = [
    (200, "application/json", json.dumps({"choices": [], "usage": "lots"}).encode()),
    (200, "application/json", json.dumps([{"choices": []}, 2]).encode()),
    (404, "text/html", HTML),
    (
        200,
        "application/json",
        json.dumps({"choices": [], "usage": {"prompt_tokens": "12", "completion_tokens": -5}}).encode(),
    ),
    (200, "application/json", b'{"choices": [], "usage": {"prompt_tokens": 1e400}}'),
    (422, "application/octet-stream", b"\xff\xfe\x00 not utf-8 \x80"),
    (
        200,
        "application/json",
        json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}).encode(),
    ),
]


@pytest.fixture
def hostile_upstream() -> Iterator[str]:
    calls = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            status, media, body = REPLIES[min(calls["n"], len(REPLIES) - 1)]
            calls["n"] += 1
            self.send_response(status)
            self.send_header("content-type", media)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def test_every_forwarded_call_is_recorded_whatever_comes_back(hostile_upstream: str, tmp_path: Path) -> None:
    db = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    proxy = ModelProxy(db).start()
    try:
        token = proxy.grant(
            "run-h", ModelSettings(base_url=hostile_upstream, model="m"), cap=50, seconds=60, log=tmp_path / "p.jsonl"
        )
        client = httpx.Client(base_url=proxy.url, timeout=10, headers={"authorization": f"Bearer {token}"})
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        answers = [client.post("/chat/completions", json=body) for _ in REPLIES]
        bad = client.post("/chat/completions", content=b"[1, 2", headers={"content-type": "application/json"})
        grant = proxy.release(token)
    finally:
        proxy.stop()
    assert [a.status_code for a in answers] == [r[0] for r in REPLIES]  # the harness sees the upstream's answer
    assert answers[2].content == HTML
    assert bad.status_code == 400
    calls = db.calls("run-h")
    assert [c.n for c in calls if c.status != 400] == list(range(1, len(REPLIES) + 1))  # each forwarded call once
    errors = {c.n: c.error or "" for c in calls if c.status != 400}
    assert "malformed usage" in errors[1] and "JSON list" in errors[2] and "not JSON" in errors[3]
    assert "malformed usage" in errors[4] and "not JSON" in errors[6] and errors[7] == ""
    assert [c.prompt_tokens for c in calls if c.status != 400] == [0, 0, 0, 12, 0, 0, 3]
    assert grant.calls == len(REPLIES) and grant.usage.prompt_tokens == 15 and grant.usage.completion_tokens == 4
    assert any(c.status == 400 and "not a JSON object" in (c.error or "") for c in calls)
    transcript = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(transcript) == len(REPLIES) + 1
    assert transcript[2]["response"]["raw"].startswith("<html>")


def test_records_survive_a_broken_records_database(hostile_upstream: str, tmp_path: Path) -> None:
    db = RecordsDB(f"sqlite:///{tmp_path / 'r.db'}")
    db.engine.dispose()
    (tmp_path / "r.db").unlink()
    (tmp_path / "r.db").mkdir()  # the database file is gone and cannot come back
    proxy = ModelProxy(db).start()
    try:
        token = proxy.grant(
            "run-x", ModelSettings(base_url=hostile_upstream, model="m"), cap=5, seconds=60, log=tmp_path / "p.jsonl"
        )
        reply = httpx.post(
            f"{proxy.url}/chat/completions",
            json={"model": "m", "messages": []},
            headers={"authorization": f"Bearer {token}"},
            timeout=10,
        )
        grant = proxy.release(token)
    finally:
        proxy.stop()
    assert reply.status_code == 200 and grant.record_errors == 1
    (entry,) = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert entry["n"] == 1 and "record_error" in entry  # the transcript still holds the call


@pytest.mark.parametrize(
    ("content", "tokens", "problem"),
    [
        (b'{"usage": {"prompt_tokens": 2, "completion_tokens": 1}}', (2, 1), None),
        (b'{"usage": null}', (0, 0), None),
        (b'{"usage": [1, 2]}', (0, 0), "malformed usage"),
        (b'{"usage": {"prompt_tokens": true}}', (0, 0), "malformed usage"),
        (b'"just a string"', (0, 0), "JSON str"),
        (b"", (0, 0), "not JSON"),
    ],
)
def test_read_reply_shapes(content: bytes, tokens: tuple[int, int], problem: str | None) -> None:
    _, usage, found = read_reply(content)
    assert (usage.prompt_tokens, usage.completion_tokens) == tokens
    assert (found is None) if problem is None else (found is not None and problem in found)
