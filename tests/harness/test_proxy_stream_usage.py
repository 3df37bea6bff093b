"""Every call's tokens reach the records and the spend: cut streams counted, cache writes priced apart.

docs/runtime.md, "Model channel": "Usage of every stream" (a stream cut by either side is counted
from what it carried, with the upstream's tokenizer where it has one) and "Model settings" (a
prompt-cache write has its own price). Loopback only: the replay upstream (tests/support), which
also answers llama.cpp's ``/tokenize`` with one token a word.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.replay_upstream import Answer, recorded, replay_upstream
from tests.support.transcript import lines, wait_for_record
from twinforge.core.price import ModelPrice
from twinforge.core.settings import ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.stream_tokens import Counted, count, tokenize_url
from twinforge.runs.records import RecordsDB

PRICE = ModelPrice(input=3.0, cached_input=0.3, output=15.0)
SSE = {"content-type": "text/event-stream"}
WORDS = "word " * 10


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def long_messages_stream(deltas: int = 400, output_tokens: int = 4000) -> bytes:
    """A Messages stream whose usage comes at its end (message_delta), as the API sends it."""
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": None, "usage": {"input_tokens": 50, "output_tokens": 1}}  # fmt: skip
    parts = [
        event("message_start", {"type": "message_start", "message": start}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        *[
            event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": WORDS}},
            )
            for _ in range(deltas)
        ],
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output_tokens}},
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(parts)


def long_chat_stream(deltas: int = 200, usage: bool = True) -> bytes:
    """A Chat stream that reports its usage in its last chunk (include_usage), unless ``usage`` is false."""
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"content": WORDS}, "finish_reason": None}]}] * deltas
    chunks += [{**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    if usage:
        chunks += [{**base, "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 2000}}]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB, SpendMeter]]:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    spend = SpendMeter()
    server = ModelProxy(records, ping_after_s=30, ping_every_s=30, retry_waits_s=(), spend=spend).start()
    yield server, records, spend
    server.stop()


def priced(url: str, shape: str, provider: str = "openai-compatible") -> ModelSettings:
    return ModelSettings(base_url=url, model="m", provider=provider, api_shapes=[shape], price=PRICE)  # type: ignore[arg-type, list-item]


MESSAGES_REQUEST = {"model": "x", "max_tokens": 800, "stream": True, "messages": [{"role": "user", "content": "go"}]}


@pytest.mark.parametrize(("provider", "counted_by"), [("openai-compatible", "tokenizer"), ("anthropic", "estimate")])
def test_a_stream_the_client_cuts_records_the_tokens_it_carried(
    provider: str, counted_by: str, proxy: tuple[ModelProxy, RecordsDB, SpendMeter], tmp_path: Path
) -> None:
    server, records, spend = proxy
    log = tmp_path / "proxy.jsonl"
    held = Answer(long_messages_stream(), headers=SSE, hold_at=8000)
    with replay_upstream(held) as (url, replay):
        token = server.grant("client-cut", priced(url, "messages", provider), cap=5, seconds=60, log=log)
        headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
        with httpx.stream("POST", server.url + "/messages", json=MESSAGES_REQUEST, headers=headers, timeout=30) as r:
            assert replay.holding.wait(10)
            read = 0
            for chunk in r.iter_bytes():
                read += len(chunk)
                if read > 2000:
                    break  # the harness goes away after about 2 KB
        (line,) = wait_for_record(log)
        replay.release.set()
        grant = server.release(token)
    text = line["reply"]["text"]
    assert (line["status"], line["cut"]) == (499, "client") and len(text) > 1000
    assert (line["usage_source"], line["counted_by"]) == ("counted", counted_by)
    expected = len(text.split()) if counted_by == "tokenizer" else math.ceil(len(text) / 4)
    assert line["usage"]["completion_tokens"] == expected and line["usage"]["prompt_tokens"] == 50
    cost = (50 * PRICE.input + expected * PRICE.output) / 1e6
    assert line["cost_usd"] == pytest.approx(cost) and spend.spent_usd == pytest.approx(cost)
    assert grant.usage.completion_tokens == expected
    assert records.calls("client-cut")[0].completion_tokens == expected


def test_a_stream_the_upstream_cuts_records_the_tokens_it_carried(
    proxy: tuple[ModelProxy, RecordsDB, SpendMeter], tmp_path: Path
) -> None:
    """A Chat stream cut before its usage chunk: completion counted, prompt estimated from the request."""
    server, records, spend = proxy
    log = tmp_path / "proxy.jsonl"
    with replay_upstream(Answer(long_chat_stream(), headers=SSE, cut_at=9000)) as (url, _):
        token = server.grant("up-cut", priced(url, "chat"), cap=5, seconds=60, log=log)
        body = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "go " * 40}]}
        response = httpx.post(server.url + "/chat/completions", json=body, headers={"authorization": f"Bearer {token}"})
        server.release(token)
    assert b"stream cut by the upstream after 9000 bytes" in response.content
    (line,) = lines(log)
    assert (line["status"], line["cut"], line["usage_source"]) == (502, "upstream", "counted")
    words = len(line["reply"]["text"].split())
    assert words > 100 and line["usage"]["completion_tokens"] == words
    assert line["usage"]["prompt_tokens"] > 0  # estimated: the usage chunk never came
    assert spend.spent_usd == pytest.approx(line["cost_usd"]) and line["cost_usd"] > 0
    assert records.calls("up-cut")[0].completion_tokens == words


def test_a_chat_stream_without_usage_is_counted(
    proxy: tuple[ModelProxy, RecordsDB, SpendMeter], tmp_path: Path
) -> None:
    """An upstream that ignores ``include_usage``: the complete stream is counted, never recorded as 0 tokens."""
    server, _, spend = proxy
    log = tmp_path / "proxy.jsonl"
    silent = long_chat_stream(deltas=30, usage=False)
    with replay_upstream(Answer(silent, headers=SSE)) as (url, replay):
        token = server.grant("silent", priced(url, "chat"), cap=5, seconds=60, log=log)
        body = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        response = httpx.post(server.url + "/chat/completions", json=body, headers={"authorization": f"Bearer {token}"})
        server.release(token)
    assert response.status_code == 200 and replay.seen[0][1]["stream_options"] == {"include_usage": True}
    (line,) = lines(log)
    assert (line["status"], line["usage_source"], line["counted_by"]) == (200, "counted", "tokenizer")
    assert line["usage"]["completion_tokens"] == 300 and line["usage"]["prompt_tokens"] > 0
    assert spend.spent_usd == pytest.approx(line["cost_usd"]) and line["cost_usd"] > 0


def test_a_complete_stream_keeps_the_upstreams_own_usage(
    proxy: tuple[ModelProxy, RecordsDB, SpendMeter], tmp_path: Path
) -> None:
    server, _, _ = proxy
    log = tmp_path / "proxy.jsonl"
    with replay_upstream(Answer(long_messages_stream(deltas=20, output_tokens=333), headers=SSE)) as (url, _):
        token = server.grant("whole", priced(url, "messages"), cap=5, seconds=60, log=log)
        headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
        assert httpx.post(server.url + "/messages", json=MESSAGES_REQUEST, headers=headers).status_code == 200
        server.release(token)
    (line,) = lines(log)
    assert line["usage"]["completion_tokens"] == 333 and "usage_source" not in line


def test_a_cache_write_has_its_own_price() -> None:
    default = PRICE.cost(59, 7, 8, cache_write_tokens=12)
    assert default == pytest.approx((40 * 3.0 + 7 * 0.3 + 12 * 3.75 + 8 * 15.0) / 1e6)
    assert default > PRICE.cost(59, 7, 8)  # as plain input it cost less
    own = PRICE.model_copy(update={"cache_write": 6.0}).cost(59, 7, 8, cache_write_tokens=12)
    assert own == pytest.approx((40 * 3.0 + 7 * 0.3 + 12 * 6.0 + 8 * 15.0) / 1e6)
    assert PRICE.cost(10, 4, 0, cache_write_tokens=50) == pytest.approx((4 * 0.3 + 6 * 3.75) / 1e6)  # clipped


CACHE_REPLY = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": "hi"}],
               "usage": {"input_tokens": 40, "cache_creation_input_tokens": 12, "cache_read_input_tokens": 7,
                         "output_tokens": 8}}  # fmt: skip


@pytest.mark.parametrize("stream", [True, False])
def test_cache_writes_are_priced_at_their_rate_in_the_records_and_the_spend(
    stream: bool, proxy: tuple[ModelProxy, RecordsDB, SpendMeter], tmp_path: Path
) -> None:
    """Anthropic's recorded stream with cache reads and writes (final usage: 40 + 7 read + 12 written, 8 out)."""
    server, _, spend = proxy
    log = tmp_path / "proxy.jsonl"
    answer = (
        recorded("messages/sdk-cache-usage-streaming.sse")
        if stream
        else Answer(json.dumps(CACHE_REPLY).encode(), headers={"content-type": "application/json"}, chunked=False)
    )
    with replay_upstream(answer) as (url, _):
        token = server.grant("cache", priced(url, "messages", "anthropic"), cap=5, seconds=60, log=log)
        headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
        body = {**MESSAGES_REQUEST, "stream": stream}
        assert httpx.post(server.url + "/messages", json=body, headers=headers).status_code == 200
        grant = server.release(token)
    (line,) = lines(log)
    assert line["usage"] == {"prompt_tokens": 59, "cached_tokens": 7, "completion_tokens": 8, "cache_write_tokens": 12}
    expected = PRICE.cost(59, 7, 8, cache_write_tokens=12)
    assert line["cost_usd"] == pytest.approx(expected) and expected > PRICE.cost(59, 7, 8)
    assert spend.spent_usd == pytest.approx(expected) and grant.cost_usd == pytest.approx(expected)


def test_without_the_upstreams_tokenizer_the_count_is_the_documented_estimate() -> None:
    with socket.socket() as sock:  # a loopback port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    text = "a" * 41

    async def counted(settings: ModelSettings) -> Counted:
        async with httpx.AsyncClient() as client:
            return await count(text, settings, client)

    closed = ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m")
    hosted = ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m", provider="anthropic")
    assert tokenize_url(closed) == f"http://127.0.0.1:{port}/tokenize" and tokenize_url(hosted) is None
    for settings in (closed, hosted):
        assert asyncio.run(counted(settings)) == Counted(tokens=11, by="estimate")  # 41 characters / 4, rounded up
