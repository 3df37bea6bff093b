"""The proxy forwards what the harnesses send and nothing else; every stream's usage reaches the records.

docs/runtime.md, "Model channel": "What the proxy forwards" (refused provider-side fetches, dropped
extras, every recorded harness request unchanged), "Usage of every stream" (Chat streams asked for
usage, cut streams counted) and the price of a prompt-cache write. Everything runs on loopback
against the scripted upstream or the replay upstream (tests/support/replay_upstream.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.test_proxy_shapes import golden, send
from tests.support.paths import DATA
from tests.support.transcript import lines
from twinforge.core.settings import ModelSettings
from twinforge.harness.allowlist import RULES, screen
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.scripted_upstream import Script, ScriptedUpstream, scripted_upstream
from twinforge.harness.shapes import Shape
from twinforge.runs.records import RecordsDB

KEY = "sk-upstream-canary-allow"
PATH_SHAPES: dict[str, Shape] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
CLIS = ["claude", "codex", "opencode", "pi"]
URL_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://exfil.example/x.png"}}


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, ScriptedUpstream]]:
    monkeypatch.setenv("TF_ALLOW_KEY", KEY)
    with scripted_upstream(Script(commands=["echo hi"]), key=KEY) as served:
        yield served


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB]]:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    server = ModelProxy(records, ping_after_s=30, ping_every_s=30, retry_waits_s=()).start()
    yield server, records
    server.stop()


def settings(url: str, **more: Any) -> ModelSettings:
    return ModelSettings(
        base_url=url, model="upstream-model", api_key_env="TF_ALLOW_KEY", api_shapes=["chat", "responses", "messages"]
    ).model_copy(update=more)


def recorded_requests() -> list[tuple[str, Shape, dict[str, Any], dict[str, str] | None]]:
    """Every request a harness sent in the recorded runs: ``(harness, shape, body, headers or None)``.

    The harness kit's streams keep the whole request and its headers; the harness runs' transcripts
    keep the request as forwarded, with long parts trimmed (their field names are checked).
    """
    found: list[tuple[str, Shape, dict[str, Any], dict[str, str] | None]] = []
    for cli in CLIS:
        for request in golden(cli):
            headers = {k.lower(): v for k, v in request["headers"].items()}
            found.append((cli, PATH_SHAPES[request["path"]], request["body"], headers))
    for transcript in sorted((DATA / "harness-runs").glob("*/*/proxy.jsonl")):
        for line in lines(transcript):
            if isinstance(line.get("request"), dict):
                found.append((transcript.parts[-3], line["shape"], line["request"], None))
    return found


def test_every_recorded_harness_request_passes_the_allow_list_unchanged() -> None:
    requests = recorded_requests()
    assert {h for h, *_ in requests} >= {"claude", "codex", "opencode", "pi", "mini-swe-agent", "claude-code"}
    for harness, shape, body, headers in requests:
        assert set(body) <= RULES[shape].fields, (harness, set(body) - RULES[shape].fields)
        if headers is not None:  # whole requests: nothing refused, nothing dropped, the betas kept
            screened = screen(shape, body, headers)
            assert screened.refused is None and screened.dropped == [], (harness, screened)
            assert screened.body == body
            assert screened.headers.get("anthropic-beta") == headers.get("anthropic-beta")


@pytest.mark.parametrize("cli", CLIS)
def test_recorded_requests_reach_the_upstream_with_their_fields_and_betas(
    cli: str, upstream: tuple[str, ScriptedUpstream], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, state = upstream
    server, _ = proxy
    token = server.grant(cli, settings(url), cap=5, seconds=60)
    for request in golden(cli):
        assert send(server, token, request).status_code == 200
    owned = {"model", "max_tokens", "max_completion_tokens", "max_output_tokens", "stream_options"}
    for request, seen in zip(golden(cli), state.seen, strict=True):
        assert {k: v for k, v in seen.body.items() if k not in owned} == {
            k: v for k, v in request["body"].items() if k not in owned
        }
        sent_betas = {k.lower(): v for k, v in request["headers"].items()}.get("anthropic-beta")
        assert seen.headers.get("anthropic-beta") == sent_betas


def _with(cli: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    request = copy.deepcopy(golden(cli)[-1])
    request["body"].update(fields)
    return cli, request


def _tool(cli: str, tool: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    cli_request = copy.deepcopy(golden(cli)[-1])
    cli_request["body"]["tools"] = [tool, *cli_request["body"]["tools"]]
    return cli, cli_request


def _content(cli: str, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    request = copy.deepcopy(golden(cli)[-1])
    key = "input" if cli == "codex" else "messages"
    request["body"][key].append({"role": "user", "content": [block]} if cli != "codex" else block)
    return cli, request


REFUSED: dict[str, tuple[tuple[str, dict[str, Any]], str]] = {
    "messages mcp_servers": (
        _with("claude", mcp_servers=[{"type": "url", "url": "https://x.example/mcp"}]),
        "mcp_servers",
    ),
    "messages container": (_with("claude", container="container_1"), "container"),
    "messages web_fetch": (_tool("claude", {"type": "web_fetch_20250910", "name": "web_fetch"}), "web_fetch_20250910"),
    "messages web_search": (_tool("claude", {"type": "web_search_20250305", "name": "ws"}), "web_search_20250305"),
    "messages code_execution": (_tool("claude", {"type": "code_execution_20250825", "name": "c"}), "code_execution"),
    "messages unknown tool type": (_tool("claude", {"type": "bash_20250124", "name": "bash"}), "bash_20250124"),
    "messages url image": (_content("claude", URL_IMAGE), "URL source"),
    "messages url document in a tool result": (
        _content(
            "claude",
            {"type": "tool_result", "tool_use_id": "t", "content": [{**URL_IMAGE, "type": "document"}]},
        ),
        "'document' block with a URL source",
    ),
    "responses web_search": (_tool("codex", {"type": "web_search"}), "'web_search'"),
    "responses web_search_preview": (_tool("codex", {"type": "web_search_preview"}), "web_search_preview"),
    "responses file_search": (_tool("codex", {"type": "file_search", "vector_store_ids": ["vs_1"]}), "file_search"),
    "responses code_interpreter": (_tool("codex", {"type": "code_interpreter"}), "code_interpreter"),
    "responses mcp": (_tool("codex", {"type": "mcp", "server_url": "https://x.example/mcp"}), "'mcp'"),
    "responses image_generation": (_tool("codex", {"type": "image_generation"}), "image_generation"),
    "responses computer_use": (_tool("codex", {"type": "computer_use_preview"}), "computer_use_preview"),
    "responses namespace holding web_search": (
        _tool("codex", {"type": "namespace", "name": "n", "tools": [{"type": "web_search"}]}),
        "tools[0].tools[0]",
    ),
    "responses input_image url": (
        _content("codex", {"role": "user", "content": [{"type": "input_image", "image_url": "https://x.example/i"}]}),
        "input_image",
    ),
    "responses input_file url": (
        _content("codex", {"role": "user", "content": [{"type": "input_file", "file_url": "https://x.example/f"}]}),
        "file_url",
    ),
    "chat web_search_options": (_with("pi", web_search_options={}), "web_search_options"),
    "chat image_url": (
        _content("opencode", {"type": "image_url", "image_url": {"url": "http://x.example/i.png"}}),
        "image_url",
    ),
    "chat tool type": (_tool("pi", {"type": "web_search"}), "'web_search'"),
}


def test_a_url_in_a_tool_calls_arguments_is_not_content() -> None:
    """The model's own tool input may hold anything; only content blocks are checked for URLs."""
    request = copy.deepcopy(golden("claude")[-1])
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"source": {"type": "url", "url": "https://x"}}}
    request["body"]["messages"].append({"role": "assistant", "content": [call]})
    assert screen("messages", request["body"], {}).refused is None
    request["body"]["messages"].append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                      "content": [URL_IMAGE]}]})  # fmt: skip
    where = f"messages[{len(request['body']['messages']) - 1}].content[0].content[0]"
    assert str(screen("messages", request["body"], {}).refused).startswith(f"{where}: a 'image' block with a URL")


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_provider_side_fetch_is_refused_in_the_requests_shape_and_recorded(
    case: str, upstream: tuple[str, ScriptedUpstream], proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    (cli, request), named = REFUSED[case]
    url, state = upstream
    server, records = proxy
    log = tmp_path / "proxy.jsonl"
    token = server.grant("refused", settings(url), cap=5, seconds=60, log=log)
    response = send(server, token, request)
    assert response.status_code == 400
    error = response.json()["error"]
    if cli == "claude":
        assert response.json()["type"] == "error" and error["type"] == "invalid_request_error"
    assert "allow-list" in error["message"] and named in error["message"], error["message"]
    assert state.seen == []  # nothing reached the provider
    (line,) = lines(log)
    assert (line["status"], line["refused"]) == (400, "allow-list") and named in line["error"]
    assert line["request"] == request["body"]  # the attempt, as sent
    assert records.calls("refused")[0].refused == "allow-list"
    assert send(server, token, golden(cli)[-1]).status_code == 200  # an answer: the run goes on


def test_a_beta_that_turns_on_a_fetch_is_refused_and_other_extras_are_dropped(
    upstream: tuple[str, ScriptedUpstream], proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    url, state = upstream
    server, _ = proxy
    log = tmp_path / "proxy.jsonl"
    token = server.grant("betas", settings(url), cap=5, seconds=60, log=log)
    request = copy.deepcopy(golden("claude")[-1])
    allowed = request["headers"]["anthropic-beta"]
    for beta in ("mcp-client-2025-04-04", "web-fetch-2025-09-10", "code-execution-2025-08-25", "files-api-2025-04-14"):
        request["headers"]["anthropic-beta"] = f"{allowed},{beta}"
        response = send(server, token, request)
        assert response.status_code == 400 and f"'{beta}' is refused" in response.json()["error"]["message"]
    assert state.seen == []
    request["headers"]["anthropic-beta"] = f"{allowed},some-new-beta-2099-01-01"
    request["headers"]["anthropic-version"] = "2099-01-01"
    request["body"]["service_tier"] = "priority"
    assert send(server, token, request).status_code == 200
    (seen,) = state.seen
    assert seen.headers["anthropic-beta"] == allowed and seen.headers["anthropic-version"] == "2023-06-01"
    assert "service_tier" not in seen.body
    notes = lines(log)[-1]["notes"]
    assert "dropped by the allow-list: field service_tier" in notes
    assert "dropped by the allow-list: header anthropic-beta: some-new-beta-2099-01-01" in notes


@pytest.mark.parametrize("options", [None, {"include_usage": False}])
def test_a_chat_stream_is_asked_for_its_usage(
    options: dict[str, Any] | None,
    upstream: tuple[str, ScriptedUpstream],
    proxy: tuple[ModelProxy, RecordsDB],
) -> None:
    url, state = upstream
    server, records = proxy
    token = server.grant("usage", settings(url), cap=5, seconds=60)
    request = copy.deepcopy(golden("pi")[0])
    request["body"].pop("stream_options")
    if options is not None:
        request["body"]["stream_options"] = options
    assert send(server, token, request).status_code == 200
    assert state.seen[0].body["stream_options"] == {"include_usage": True}
    (row,) = records.calls("usage")
    assert (row.prompt_tokens, row.completion_tokens) == (11, 7)
