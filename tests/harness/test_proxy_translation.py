"""The proxy translates between Messages, Chat Completions and Responses where the upstream lacks the harness's shape.

The four CLIs' golden requests (tests/data/harness-kit) are replayed through the proxy to the
scripted upstream serving one shape only: the upstream must see its own shape (tools and tool
results carried, so its script advances), the harness must get its own shape back (read by the
providers' own SDKs where one exists), and the records must hold both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.harness.test_proxy_shapes import KEY, SHELL, golden, send
from twinforge.core.settings import ModelPrice, ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.scripted_upstream import Script, scripted_upstream
from twinforge.harness.shapes import PATHS, SHAPES, Shape, read_stream
from twinforge.runs.records import RecordsDB

CLIENT: dict[str, Shape] = {"claude": "messages", "codex": "responses", "opencode": "chat", "pi": "chat"}
COMMAND = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
TOOL = {"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": COMMAND}}


def model(url: str, shapes: list[str], **extra: Any) -> ModelSettings:
    return ModelSettings(
        base_url=url, model="upstream-model", api_key_env="TF_TEST_UPSTREAM_KEY", api_shapes=shapes, **extra
    )  # type: ignore[arg-type]


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB]]:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    server = ModelProxy(records, ping_after_s=5, ping_every_s=5, retry_waits_s=(0.01,)).start()
    yield server, records
    server.stop()


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    monkeypatch.setenv("TF_TEST_UPSTREAM_KEY", KEY)
    with scripted_upstream(Script(commands=["echo hello > proof.txt"]), key=KEY) as served:
        yield served


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()]


@pytest.mark.parametrize("cli", sorted(CLIENT))
@pytest.mark.parametrize("up", SHAPES)
def test_every_cli_reaches_an_upstream_of_another_shape(
    cli: str, up: Shape, upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    shape = CLIENT[cli]
    if up == shape:
        pytest.skip("the same shape is passed through (tests/harness/test_proxy_shapes.py)")
    url, state = upstream
    server, records = proxy
    log = tmp_path / "proxy.jsonl"
    token = server.grant(f"run-{cli}", model(url, [up]), cap=5, seconds=60, log=log, expects_tools=True)
    for request in golden(cli):
        response = send(server, token, request)
        assert response.status_code == 200, response.text
        reply = read_stream(shape, response.content)
        assert reply.error == "", reply.error
        if request["plan"]["role"] == "side":
            assert reply.text == "Task" and not reply.tool_calls
        elif request["plan"]["kind"] == "tool_call":
            assert [c.name for c in reply.tool_calls] == [SHELL[cli]]
            assert "echo hello > proof.txt" in reply.tool_calls[0].arguments
        else:
            assert reply.text == "done"  # the tool result crossed: the script went on to its end
    grant = server.release(token)
    assert {path for path, _ in [(s.path, s) for s in state.seen]} == {f"/v1{PATHS[up]}"}
    assert all(KEY in (s.headers.get("authorization", "") + s.headers.get("x-api-key", "")) for s in state.seen)
    rows = records.calls(f"run-{cli}")
    assert {r.shape for r in rows} == {shape} and all(r.status == 200 for r in rows)
    assert all((r.prompt_tokens, r.completion_tokens) == (11, 7) for r in rows)  # usage carried over
    for line in lines(log):
        assert (line["shape"], line["upstream_shape"]) == (shape, up)
        assert isinstance(line["upstream_request"], dict) and line["request"]["model"] == "upstream-model"
    assert grant.shapes == {(shape, up)} and grant.no_task_tools is None
    summary = json.loads((tmp_path / "model.json").read_text())
    assert summary["shapes"] == [{"harness": shape, "upstream": up}]


def test_the_official_sdks_read_translated_replies(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    """Anthropic's SDK against a Chat-only upstream, OpenAI's Responses and Chat clients against a Messages-only one."""
    url, _ = upstream
    server, _ = proxy
    root = server.url.removesuffix("/v1")
    token = server.grant("sdk-messages", model(url, ["chat"]), cap=10, seconds=60)
    claude = anthropic.Anthropic(base_url=root, api_key=token, max_retries=0)
    tools: Any = [{"name": "bash", "description": "Run a command", "input_schema": COMMAND}]
    ask: Any = [{"role": "user", "content": "list files"}]
    with claude.messages.stream(model="m", max_tokens=256, messages=ask, tools=tools) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 7
    (use,) = [b for b in final.content if b.type == "tool_use"]
    assert use.name == "bash" and use.input == {"command": "echo hello > proof.txt"}
    whole = claude.messages.create(model="m", max_tokens=256, messages=ask, tools=tools)
    assert [b.type for b in whole.content] == ["tool_use"] and whole.usage.input_tokens == 11
    token = server.grant("sdk-openai", model(url, ["messages"]), cap=10, seconds=60)
    gpt = openai.OpenAI(base_url=server.url, api_key=token, max_retries=0)
    function: Any = [{"type": "function", "name": "bash", "parameters": COMMAND}]
    with gpt.responses.stream(model="m", input="list files", tools=function) as events:
        response = events.get_final_response()
    (call,) = [i for i in response.output if i.type == "function_call"]
    assert call.name == "bash" and json.loads(call.arguments) == {"command": "echo hello > proof.txt"}
    assert response.usage is not None and response.usage.output_tokens == 7
    chat_tools: Any = [TOOL]
    with gpt.chat.completions.stream(model="m", messages=ask, tools=chat_tools) as chunks:
        completion = chunks.get_final_completion()
    calls = completion.choices[0].message.tool_calls or []
    assert completion.choices[0].finish_reason == "tool_calls" and calls[0].function.name == "bash"  # type: ignore[union-attr]
    plain = gpt.chat.completions.create(model="m", messages=ask, tools=chat_tools)
    assert plain.usage is not None and plain.usage.prompt_tokens == 11


def test_an_image_is_refused_clearly_and_the_run_goes_on(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, state = upstream
    server, records = proxy
    token = server.grant("image", model(url, ["chat"]), cap=5, seconds=60)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": [image]}]}
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    refused = httpx.post(server.url + "/messages", json=body, headers=headers, timeout=30)
    assert refused.status_code == 400 and refused.json()["type"] == "error"
    assert (
        "messages[0].content[0]" in refused.json()["error"]["message"] and "image" in refused.json()["error"]["message"]
    )
    assert state.seen == []
    later = {**body, "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(server.url + "/messages", json=later, headers=headers, timeout=30).status_code == 200
    grant = server.release(token)
    assert grant.upstream_failure is None and [r.status for r in records.calls("image")] == [400, 200]


def test_the_model_blocks_reasoning_settings_go_with_every_call(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    url, state = upstream
    server, _ = proxy
    settings = model(
        url, ["chat", "responses", "messages"], reasoning_effort="high", thinking_budget=2048, max_tokens=4096
    )
    token = server.grant("reasoning", settings, cap=10, seconds=60, log=tmp_path / "proxy.jsonl")
    for cli in ("codex", "pi", "claude"):
        assert send(server, token, golden(cli)[0]).status_code == 200
    by_path = {s.path: s.body for s in state.seen}
    assert by_path["/v1/responses"]["reasoning"] == {"summary": "auto", "effort": "high"}  # Codex's summary kept
    assert by_path["/v1/chat/completions"]["reasoning_effort"] == "high"
    assert by_path["/v1/messages"]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    sent = [line["sent"] for line in lines(tmp_path / "proxy.jsonl")]
    assert [s["reasoning_effort"] for s in sent[:2]] == ["high", "high"] and sent[2]["thinking_budget"] == 2048


def test_count_tokens_without_a_messages_upstream_is_estimated(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, state = upstream
    server, records = proxy
    token = server.grant("count", model(url, ["chat"]), cap=5, seconds=60)
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}]}
    counted = httpx.post(server.url + "/messages/count_tokens", json=body, headers=headers, timeout=30)
    assert counted.status_code == 200 and counted.json()["input_tokens"] >= 100
    assert state.seen == [] and [r.role for r in records.calls("count")] == ["count_tokens"]


def test_cost_is_counted_per_run_and_the_spend_ceiling_stops_new_runs(
    upstream: tuple[str, Any], tmp_path: Path
) -> None:
    url, _ = upstream
    meter = SpendMeter(ceiling_usd=0.0001)
    server = ModelProxy(spend=meter).start()
    try:
        price = ModelPrice(input=2.0, cached_input=0.5, output=8.0)  # USD per million tokens
        token = server.grant("priced", model(url, ["chat"], price=price), cap=5, seconds=60, log=tmp_path / "p.jsonl")
        assert meter.allows_new_run()
        for request in golden("pi"):
            assert send(server, token, request).status_code == 200
        grant = server.release(token)
    finally:
        server.stop()
    per_call = (11 * 2.0 + 7 * 8.0) / 1e6
    assert grant.cost_usd == pytest.approx(2 * per_call)
    assert [line["cost_usd"] for line in lines(tmp_path / "p.jsonl")] == [pytest.approx(per_call)] * 2
    assert json.loads((tmp_path / "model.json").read_text())["cost_usd"] == pytest.approx(2 * per_call)
    assert meter.spent_usd == pytest.approx(2 * per_call) and meter.reached
    assert not meter.allows_new_run() and not meter.allows_new_run()
    assert "spend ceiling of $0.00 reached" in str(meter.stop_message) and "2 run(s) not started" in str(
        meter.stop_message
    )
