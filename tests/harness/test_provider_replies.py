"""The proxy and the translation against replies real providers sent (tests/data/provider-replies, ORIGIN.md).

Each recorded reply is served byte for byte by a loopback upstream: passed through in its own shape
it must reach the harness unchanged and be recorded with its usage; translated into the other
shapes it must be read by that provider's own SDK with the same tool calls, text and tokens. Broken
upstreams (a 429 with ``retry-after``, an overloaded error inside a stream, a stream cut by the
upstream or by the harness) must be recorded as they ended, never as a complete 200.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.harness.test_proxy_shapes import golden, send
from tests.support.replay_upstream import Answer, fixture_path, recorded, replay_upstream
from twinforge.core.settings import ModelSettings
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.shapes import SHAPES, Shape
from twinforge.harness.translation.readers import StreamReader, read_turn
from twinforge.harness.translation.turn import Turn
from twinforge.runs.records import RecordsDB

STREAMS = {
    "chat/gpt-5-tool-streaming.sse": ("chat", ["weather"], 145, 89),
    "chat/gpt-4o-multi-tool-streaming.sse": ("chat", ["add", "multiply"], None, None),
    "chat/gpt-5-text-streaming.sse": ("chat", [], None, None),
    "responses/gpt-5-tool-streaming.sse": ("responses", ["weather"], None, None),
    "responses/gpt-5-text-streaming.sse": ("responses", [], None, None),
    "responses/gpt-4o-multi-tool-streaming.sse": ("responses", ["add", "multiply"], None, None),
    "messages/sonnet-4-thinking-tool-streaming.sse": ("messages", ["weather"], None, None),
    "messages/sonnet-4-multi-tool-streaming.sse": ("messages", ["add", "multiply"], None, None),
    "messages/sdk-tool-use-streaming.sse": ("messages", ["get_weather"], 377, 65),
    "messages/sdk-cache-usage-streaming.sse": ("messages", [], 59, 8),
    "messages/sdk-refusal-streaming.sse": ("messages", [], 20, 120),
}
"""Streamed fixtures: their shape, the tools they call, and (where checked) input and output tokens."""
WHOLE = {
    "chat/gpt-5-tool.json": "chat",
    "responses/gpt-5-tool.json": "responses",
    "messages/sonnet-4-tool.json": "messages",
}
TOOLS: dict[str, Any] = {"type": "object", "properties": {"location": {"type": "string"}}}


def settings(url: str, shape: str) -> ModelSettings:
    return ModelSettings(base_url=url, model="m", api_shapes=[shape])  # type: ignore[list-item]


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB]]:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    server = ModelProxy(records, ping_after_s=30, ping_every_s=30, retry_waits_s=(0.01, 0.01)).start()
    yield server, records
    server.stop()


def expected(name: str) -> Turn:
    shape = STREAMS[name][0] if name in STREAMS else WHOLE[name]
    if name.endswith(".json"):
        return read_turn(shape, json.loads(fixture_path(name).read_text()))  # type: ignore[arg-type]
    reader = StreamReader(shape)  # type: ignore[arg-type]
    reader.feed(fixture_path(name).read_bytes())
    reader.end()
    assert reader.complete and reader.failed is None and reader.malformed == 0
    return reader.turn


def ask(server: ModelProxy, token: str, shape: Shape, stream: bool) -> Any:
    """One request in ``shape`` through the official SDK; returns its final message / response / completion."""
    if shape == "messages":
        client = anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key=token, max_retries=0)
        kwargs: Any = {"model": "m", "max_tokens": 512, "messages": [{"role": "user", "content": "weather?"}],
                       "tools": [{"name": "weather", "input_schema": TOOLS}]}  # fmt: skip
        if stream:
            with client.messages.stream(**kwargs) as events:
                return events.get_final_message()
        return client.messages.create(**kwargs)
    gpt = openai.OpenAI(base_url=server.url, api_key=token, max_retries=0)
    if shape == "responses":
        tools: Any = [{"type": "function", "name": "weather", "parameters": TOOLS}]
        if stream:
            with gpt.responses.stream(model="m", input="weather?", tools=tools) as events:
                return events.get_final_response()
        return gpt.responses.create(model="m", input="weather?", tools=tools)
    chat_tools: Any = [{"type": "function", "function": {"name": "weather", "parameters": TOOLS}}]
    messages: Any = [{"role": "user", "content": "weather?"}]
    if stream:
        with gpt.chat.completions.stream(model="m", messages=messages, tools=chat_tools) as chunks:
            return chunks.get_final_completion()
    return gpt.chat.completions.create(model="m", messages=messages, tools=chat_tools)


def calls_and_text(shape: Shape, reply: Any) -> tuple[list[tuple[str, Any]], str]:
    """Tool calls (name, parsed arguments) and text of an SDK reply object."""
    if shape == "messages":
        calls = [(b.name, b.input) for b in reply.content if b.type == "tool_use"]
        return calls, "".join(b.text for b in reply.content if b.type == "text")
    if shape == "responses":
        calls = [(i.name, json.loads(i.arguments)) for i in reply.output if i.type == "function_call"]
        return calls, reply.output_text
    message = reply.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    return calls, message.content or ""


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_recorded_stream_passes_through_unchanged_with_its_usage(
    name: str, proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    shape, tools, prompt, completion = STREAMS[name]
    server, records = proxy
    with replay_upstream(recorded(name)) as (url, _):
        token = server.grant("pass", settings(url, shape), cap=5, seconds=60)
        headers = {"authorization": f"Bearer {token}", "x-api-key": token, "anthropic-version": "2023-06-01"}
        path = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}[shape]
        body = {"model": "m", "stream": True, "messages": [], "input": "x", "max_tokens": 64}
        response = httpx.post(server.url + path, json=body, headers=headers, timeout=30)
        server.release(token)
    assert response.content == fixture_path(name).read_bytes()
    (row,) = records.calls("pass")
    assert row.status == 200 and row.error is None
    turn = expected(name)
    assert [c.name for c in turn.calls] == tools
    if prompt is not None:
        assert (row.prompt_tokens, row.completion_tokens) == (prompt, completion)
    assert (row.prompt_tokens, row.completion_tokens) == (turn.tokens.input, turn.tokens.output)


@pytest.mark.parametrize("client", SHAPES)
@pytest.mark.parametrize("name", sorted(STREAMS) + sorted(WHOLE))
def test_a_recorded_reply_reaches_every_other_shape_through_its_sdk(
    name: str, client: Shape, proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    shape: Shape = STREAMS[name][0] if name in STREAMS else WHOLE[name]  # type: ignore[assignment]
    if client == shape:
        pytest.skip("passed through (test_a_recorded_stream_passes_through_unchanged_with_its_usage)")
    server, records = proxy
    with replay_upstream(recorded(name)) as (url, replay):
        token = server.grant("translated", settings(url, shape), cap=5, seconds=60)
        if "refusal" in name and client == "chat":  # a refusal reaches Chat as its content filter stop
            with pytest.raises(openai.ContentFilterFinishReasonError):
                ask(server, token, client, stream=True)
            server.release(token)
            return
        reply = ask(server, token, client, stream=name.endswith(".sse"))
        server.release(token)
    ((path, _),) = replay.seen
    assert path.endswith({"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}[shape])
    turn = expected(name)
    calls, text = calls_and_text(client, reply)
    assert calls == [(c.name, json.loads(c.arguments or "{}")) for c in turn.calls]
    assert text == turn.text
    (row,) = records.calls("translated")
    assert row.status == 200 and (row.prompt_tokens, row.completion_tokens) == (turn.tokens.input, turn.tokens.output)


@pytest.mark.parametrize(("name", "shape", "cli"), [("messages/rate-limit-429.json", "messages", "claude"),
                                                    ("chat/rate-limit-429.json", "chat", "pi")])  # fmt: skip
def test_a_rate_limit_with_retry_after_is_retried_then_ends_the_run(
    name: str, shape: str, cli: str, proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    server, records = proxy
    ok = {"messages": "messages/sdk-tool-use-streaming.sse", "chat": "chat/gpt-5-tool-streaming.sse"}[shape]
    with replay_upstream(recorded(name), recorded(ok)) as (url, replay):
        token = server.grant("passing-429", settings(url, shape), cap=5, seconds=60)
        assert send(server, token, golden(cli)[0]).status_code == 200
        server.release(token)
    assert len(replay.seen) == 2
    (row,) = records.calls("passing-429")
    assert row.status == 200 and "answered on attempt 2" in str(row.error)
    with replay_upstream(recorded(name)) as (url, replay):
        token = server.grant("failing-429", settings(url, shape), cap=5, seconds=60)
        refused = send(server, token, golden(cli)[0])
        grant = server.release(token)
    message = json.loads(fixture_path(name).read_text())["body"]["error"]["message"]
    assert refused.status_code == 401 and grant.upstream_failure == f"HTTP 429: {message}"
    assert len(replay.seen) == 3  # the proxy's own retries, each after the upstream's retry-after


@pytest.mark.parametrize("client", SHAPES)
def test_an_overloaded_error_inside_a_stream_ends_the_run(client: Shape, proxy: tuple[ModelProxy, RecordsDB]) -> None:
    """Anthropic's documented mid-stream ``overloaded_error`` after HTTP 200: recorded as 529, the run ends."""
    server, records = proxy
    with replay_upstream(recorded("messages/overloaded-mid-stream.sse")) as (url, _):
        token = server.grant("overloaded", settings(url, "messages"), cap=5, seconds=60)
        with pytest.raises((anthropic.APIError, openai.APIError, RuntimeError)):  # Responses: no response.completed
            ask(server, token, client, stream=True)
        grant = server.release(token)
    (row,) = records.calls("overloaded")
    assert row.status == 529 and "Overloaded" in str(row.error)
    assert grant.upstream_failure == "HTTP 529: Overloaded"


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("up", ["chat", "messages"])
def test_a_stream_cut_by_the_upstream_is_recorded_as_cut(
    chunked: bool, up: Shape, proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    """OpenCode's request; the upstream answers 429, then a 200 whose stream stops mid-body."""
    server, records = proxy
    name = {"chat": "chat/gpt-5-tool-streaming.sse", "messages": "messages/sdk-tool-use-streaming.sse"}[up]
    cut = Answer(
        fixture_path(name).read_bytes(), headers={"content-type": "text/event-stream"}, chunked=chunked, cut_at=900
    )
    with replay_upstream(
        recorded(f"{up}/rate-limit-429.json") if up == "messages" else recorded("chat/rate-limit-429.json"), cut
    ) as (url, _):
        token = server.grant("cut", settings(url, up), cap=5, seconds=60, log=tmp_path / "p.jsonl")
        response = send(server, token, golden("opencode")[1])
        assert send(server, token, golden("opencode")[1]).status_code == 401  # the run ended
        grant = server.release(token)
    assert response.status_code == 200 and b"stream cut by the upstream after 900 bytes" in response.content
    first = records.calls("cut")[0]
    assert first.status == 502 and "stream cut by the upstream after 900 bytes" in str(first.error)
    line = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert (line["cut"], line["received_bytes"], line["upstream_status"]) == ("upstream", 900, 200)
    assert grant.refused == "upstream" and "stream cut" in str(grant.upstream_failure)


def test_a_stream_the_harness_closes_is_recorded_as_cut_by_the_client(
    proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    server, records = proxy
    name = "responses/gpt-5-tool-streaming.sse"
    held = Answer(fixture_path(name).read_bytes(), headers={"content-type": "text/event-stream"}, hold_at=600)
    recorded_event = threading.Event()
    log = tmp_path / "p.jsonl"
    with replay_upstream(held) as (url, replay):
        token = server.grant("client-cut", settings(url, "responses"), cap=5, seconds=60, log=log)
        body = {**golden("codex")[0]["body"], "stream": True}
        with httpx.stream(
            "POST", server.url + "/responses", json=body, headers={"authorization": f"Bearer {token}"}, timeout=30
        ) as response:
            assert replay.holding.wait(10)
            next(response.iter_raw())  # the first bytes arrived; the harness goes away
        for _ in range(200):  # the proxy records the call once it notices the closed connection
            if log.exists() and log.read_text().strip():
                recorded_event.set()
                break
            recorded_event.wait(0.05)
        replay.release.set()
        server.release(token)
    (row,) = records.calls("client-cut")
    assert row.status == 499 and "the harness closed the stream" in str(row.error)
    assert json.loads(log.read_text().splitlines()[0])["cut"] == "client"
