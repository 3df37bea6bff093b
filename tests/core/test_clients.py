from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.net import free_port
from tests.support.samples import review_dict
from twinforge.blueprints import load_dimensions, reply_model
from twinforge.core.exceptions import ConfigError, ModelCallError
from twinforge.core.llm import Message, make_chat_model, request_object
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.localmodel.server import ServerInfo, _state_dir
from twinforge.core.settings import ModelSettings

PROMPT = [Message(role="system", content="be brief"), Message(role="user", content="score it")]
Reply = reply_model(load_dimensions())


def ok(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, openai_reply(json.dumps(review_dict([4] * 6)))


@pytest.mark.parametrize("form", ["json_object", "json_schema"])
def test_response_format_forms(form: str) -> None:
    with stub_server(ok) as (url, received):
        chat = make_chat_model(ModelSettings(base_url=url, structured_output=form), role="reviewer")  # type: ignore[arg-type]
        result = request_object(chat, PROMPT, Reply, schema_name="review")
    assert result.value.realism.score == 4  # type: ignore[attr-defined]
    sent = received[0]["body"]["response_format"]
    if form == "json_object":
        assert sent["type"] == "json_object" and sent["schema"]["required"] == load_dimensions().ids
    else:
        assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "review"
        assert sent["json_schema"]["schema"]["required"] == load_dimensions().ids
    assert received[0]["body"]["model"] == "local"
    assert result.completions[0].completion_tokens == 7


def test_key_read_from_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_CANARY_KEY", "sk-canary-123")
    with stub_server(ok) as (url, received):
        chat = make_chat_model(ModelSettings(base_url=url, api_key_env="MY_CANARY_KEY"))
        chat.complete(PROMPT)
    headers = {k.lower(): v for k, v in received[0]["headers"].items()}
    assert headers["authorization"] == "Bearer sk-canary-123"


def test_http_errors_retried_by_sdk_then_succeed() -> None:
    calls = {"n": 0}

    def flaky(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        calls["n"] += 1
        if calls["n"] < 3:
            return 503, {"error": {"message": "busy"}}
        return ok(path, body)

    with stub_server(flaky) as (url, _):
        chat = make_chat_model(ModelSettings(base_url=url, http_retries=3))
        assert "realism" in chat.complete(PROMPT).text
    assert calls["n"] == 3


def test_timeout_is_bounded_never_hangs() -> None:
    with stub_server(ok, delay_s=3.0) as (url, received):
        chat = make_chat_model(ModelSettings(base_url=url, timeout_s=0.3, http_retries=1), role="reviewer")
        started = time.monotonic()
        with pytest.raises(ModelCallError, match=r"\[reviewer\].*Timeout"):
            chat.complete(PROMPT)
        assert time.monotonic() - started < 3.0
    assert len(received) == 2  # first try + one retry


def test_persistent_http_error_is_clear() -> None:
    with stub_server(lambda p, b: (400, {"error": {"message": "response_format type not supported"}})) as (
        url,
        _,
    ):
        chat = make_chat_model(ModelSettings(base_url=url), role="generator")
        with pytest.raises(ModelCallError, match="BadRequest.*not supported"):
            chat.complete(PROMPT)


def test_truncation_is_reported() -> None:
    with stub_server(lambda p, b: (200, openai_reply('{"realism": {"sc', finish="length"))) as (url, _):
        chat = make_chat_model(ModelSettings(base_url=url))
        assert chat.complete(PROMPT).truncated


def test_openai_provider_needs_key() -> None:
    with pytest.raises(ModelCallError, match="TWINFORGE_API_KEY is not set"):
        make_chat_model(ModelSettings(provider="openai", base_url="http://127.0.0.1:1/v1"), role="generator")


def test_anthropic_forced_tool_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINFORGE_API_KEY", "sk-ant-test")

    def messages_api(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert path.endswith("/v1/messages")
        return 200, {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 9},
            "content": [{"type": "tool_use", "id": "t", "name": "review", "input": review_dict([5] * 6)}],
        }

    with stub_server(messages_api) as (url, received):
        chat = make_chat_model(ModelSettings(provider="anthropic", model="claude-test", base_url=url[:-3]))
        result = request_object(chat, PROMPT, Reply, schema_name="review")
    assert result.value.single_decision.score == 5  # type: ignore[attr-defined]
    body = received[0]["body"]
    assert body["system"] == "be brief"
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["tool_choice"] == {"type": "tool", "name": "review"}
    assert body["tools"][0]["input_schema"]["required"] == load_dimensions().ids
    assert body["temperature"] == 0.7
    headers = {k.lower(): v for k, v in received[0]["headers"].items()}
    assert "sk-ant-test" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


def test_unknown_provider_lists_valid() -> None:
    settings = ModelSettings.model_construct(provider="bedrock")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="valid: openai-compatible, openai, anthropic, scripted"):
        make_chat_model(settings, role="reviewer")


def test_crashed_local_server_is_named_with_its_log(tmp_path: Path) -> None:
    # A llama.cpp crash (AMX fault, 2026-12-01) left only "Connection error"; the error now says the
    # server twinforge started there exited and quotes its log.
    port = free_port()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    log = tmp_path / "server.log"
    log.write_text("INFO:     Uvicorn running on http://127.0.0.1\nlast words of the server\n")
    _state_dir().mkdir(parents=True, exist_ok=True)
    info = ServerInfo(
        pid=dead.pid,
        model="qwen2.5-coder-1.5b",
        host="127.0.0.1",
        port=port,
        n_ctx=8192,
        log=str(log),
        started_at=datetime.now(UTC),
        model_path=str(tmp_path / "m.gguf"),
    )
    (_state_dir() / f"{port}.json").write_text(info.model_dump_json())
    chat = make_chat_model(ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", http_retries=0), role="generator")
    with pytest.raises(ModelCallError) as caught:
        chat.complete(PROMPT)
    message = str(caught.value)
    assert f"pid {dead.pid}" in message and "has exited" in message
    assert "last words of the server" in message and str(log) in message


def test_refused_connection_without_a_dead_server_has_no_note() -> None:
    port = free_port()
    chat = make_chat_model(ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", http_retries=0), role="generator")
    with pytest.raises(ModelCallError) as caught:
        chat.complete(PROMPT)
    assert "Connection error" in str(caught.value) and "has exited" not in str(caught.value)
