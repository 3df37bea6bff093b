"""The proxy speaks Chat Completions, Responses and Messages, streamed, and records each call's role.

The request streams are the golden ones the four CLIs sent in the harness kit's loopback runs
(tests/data/harness-kit/<cli>/requests.jsonl, credentials redacted to ``<run-token>``); they are
replayed through the proxy to the scripted upstream, which answers in the same shape.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.paths import DATA
from twinforge.core.settings import ModelSettings
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.scripted_upstream import Script, scripted_upstream
from twinforge.harness.shapes import REPLY_LIMITS, capped_reply, read_stream, read_whole, role_of
from twinforge.runs.records import RecordsDB

KIT = DATA / "harness-kit"
KEY = "sk-upstream-canary-5f1e"
SHELL = {"claude": "Bash", "codex": "exec_command", "opencode": "bash", "pi": "bash"}


def golden(cli: str) -> list[dict[str, Any]]:
    lines = (KIT / cli / "requests.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["method"] == "POST"]


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    monkeypatch.setenv("TF_TEST_UPSTREAM_KEY", KEY)
    with scripted_upstream(Script(commands=["echo hello > proof.txt"]), key=KEY) as served:
        yield served


def model(url: str, shapes: list[str] | None = None) -> ModelSettings:
    return ModelSettings(
        base_url=url,
        model="upstream-model",
        api_key_env="TF_TEST_UPSTREAM_KEY",
        api_shapes=shapes or ["chat", "responses", "messages"],  # type: ignore[arg-type]
    )


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB]]:
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    server = ModelProxy(records, ping_after_s=0.05, ping_every_s=0.05, retry_waits_s=(0.01, 0.01, 0.01)).start()
    yield server, records
    server.stop()


@pytest.fixture
def patient_proxy(tmp_path: Path) -> Iterator[tuple[ModelProxy, RecordsDB]]:
    """A proxy whose keep-alive comments start late, so an upstream's error status comes back as a status."""
    records = RecordsDB(f"sqlite:///{tmp_path / 'records.db'}")
    server = ModelProxy(records, ping_after_s=60, ping_every_s=60, retry_waits_s=(0.01, 0.01, 0.01)).start()
    yield server, records
    server.stop()


def send(proxy: ModelProxy, token: str, request: dict[str, Any]) -> httpx.Response:
    headers = {k: v.replace("<run-token>", token) for k, v in request["headers"].items()}
    headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "host", "accept-encoding")}
    query = "?beta=true" if request.get("query") else ""
    url = proxy.url.removesuffix("/v1") + request["path"] + query
    return httpx.post(url, json=request["body"], headers=headers, timeout=30)


@pytest.mark.parametrize("cli", ["claude", "codex", "opencode", "pi"])
def test_golden_streams_pass_through_in_their_own_shape(
    cli: str, upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB], tmp_path: Path
) -> None:
    url, state = upstream
    server, records = proxy
    log = tmp_path / "proxy.jsonl"
    token = server.grant(f"run-{cli}", model(url), cap=5, seconds=60, log=log, expects_tools=True)
    shape = {"claude": "messages", "codex": "responses"}.get(cli, "chat")
    for request in golden(cli):
        response = send(server, token, request)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        reply = read_stream(shape, response.content)  # type: ignore[arg-type]
        if request["plan"]["role"] == "side":
            assert reply.text == "Task" and not reply.tool_calls
        elif request["plan"]["kind"] == "tool_call":
            assert [c.name for c in reply.tool_calls] == [SHELL[cli]]
            assert "echo hello > proof.txt" in reply.tool_calls[0].arguments
        else:
            assert reply.text == "done"
    grant = server.release(token)
    assert grant.no_task_tools is None
    # the upstream saw the real key and the upstream model, never the run token
    for seen in state.seen:
        assert token not in json.dumps(seen.headers) and token not in json.dumps(seen.body)
        assert KEY in (seen.headers.get("authorization", "") + seen.headers.get("x-api-key", ""))
        assert seen.body["model"] == "upstream-model"
        limits = [seen.body[k] for k in REPLY_LIMITS[shape] if k in seen.body]  # type: ignore[index]
        assert limits and all(limit <= model(url).max_tokens for limit in limits)  # the role's reply budget
    assert {s.path for s in state.seen} == {f"/v1/{'chat/completions' if shape == 'chat' else shape}"}
    rows = records.calls(f"run-{cli}")
    roles = [r.role for r in rows]
    assert roles == [r["plan"]["role"].replace("agent_turn", "agent") for r in golden(cli)]
    assert {r.shape for r in rows} == {shape}
    assert grant.calls == roles.count("agent") and grant.side_calls == roles.count("side")
    assert all(r.prompt_tokens == 11 and r.completion_tokens == 7 for r in rows)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert KEY not in log.read_text()
    assert lines[-1]["reply"]["text"] == "done"


def test_keep_alive_comments_while_the_upstream_is_slow(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, state = upstream
    server, _ = proxy
    token = server.grant("slow", model(url), cap=5, seconds=60)
    request = golden("claude")[0]
    state.hold.clear()
    body = bytearray()
    pinged = threading.Event()
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    with httpx.stream("POST", server.url + "/messages", json=request["body"], headers=headers, timeout=30) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            body += chunk
            if b": keep-alive\n\n" in body and not pinged.is_set():
                pinged.set()
                state.hold.set()  # the upstream answers only once the client has seen a keep-alive
    assert body.startswith(b": keep-alive\n\n")
    assert [c.name for c in read_stream("messages", bytes(body)).tool_calls] == ["Bash"]
    grant = server.release(token)
    assert grant.calls == 1


def test_a_failure_after_keep_alive_comments_ends_the_run(proxy: tuple[ModelProxy, RecordsDB]) -> None:
    """The 200 and the keep-alives are already sent: the failure comes as an error event, with its message."""
    server, records = proxy
    with scripted_upstream(Script(fail_status=500)) as (url, state):
        token = server.grant("late-failure", model(url), cap=5, seconds=60)
        state.hold.clear()
        body = bytearray()
        headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
        request = golden("claude")[0]["body"]
        with httpx.stream("POST", server.url + "/messages", json=request, headers=headers, timeout=30) as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                body += chunk
                if b": keep-alive\n\n" in body:
                    state.hold.set()  # every attempt fails only once the client has seen a keep-alive
    assert b"event: error" in body and b"scripted failure" in body
    grant = server.release(token)
    assert grant.upstream_failure == "HTTP 500: scripted failure" and grant.refused == "upstream"
    (row,) = records.calls("late-failure")
    assert row.status == 500 and "after keep-alive pings: scripted failure" in (row.error or "")


def test_refusals_use_the_harness_stop_status_and_side_calls_count_apart(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, _ = upstream
    server, records = proxy
    token = server.grant("capped", model(url), cap=1, seconds=60, refusal_status=429, side_cap=1)
    agent = golden("codex")[0]
    assert send(server, token, agent).status_code == 200
    refused = send(server, token, agent)
    assert refused.status_code == 429
    assert refused.json()["error"]["type"] == "rate_limit_error"
    side = golden("opencode")[0]  # no tools, the title prompt: a side call, not an agent turn
    assert send(server, token, side).status_code == 200
    assert send(server, token, side).status_code == 429
    grant = server.release(token)
    assert (grant.calls, grant.side_calls, grant.refused) == (1, 1, "cap")
    assert grant.refused_event.is_set()
    rows = records.calls("capped")
    assert [(r.role, r.status, r.refused) for r in rows] == [
        ("agent", 200, None),
        ("agent", 429, "cap"),
        ("side", 200, None),
        ("side", 429, "side-cap"),
    ]


def test_count_tokens_and_whole_replies(upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]) -> None:
    url, _ = upstream
    server, records = proxy
    token = server.grant("whole", model(url), cap=5, seconds=60)
    body = {**golden("claude")[0]["body"], "stream": False}
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    counted = httpx.post(server.url + "/messages/count_tokens", json=body, headers=headers, timeout=30)
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    whole = httpx.post(server.url + "/messages", json=body, headers=headers, timeout=30)
    assert [c.name for c in read_whole("messages", whole.json()).tool_calls] == ["Bash"]
    assert [r.role for r in records.calls("whole")] == ["count_tokens", "agent"]
    assert httpx.head(server.url.removesuffix("/v1") + "/api/hello").status_code == 200
    server.release(token)


@pytest.mark.parametrize(("cli", "stop"), [("pi", 401), ("codex", 429), ("claude", 401)])
@pytest.mark.parametrize("status", [401, 429, 500])
def test_an_upstream_failure_ends_the_run_with_the_harness_stop_status(
    patient_proxy: tuple[ModelProxy, RecordsDB], cli: str, stop: int, status: int
) -> None:
    """The harness gets its stop status once the proxy's retries are spent; its own retries never reach upstream.

    A refused credential is not retried; a rate limit or a server error is, three times.
    """
    server, records = patient_proxy
    with scripted_upstream(Script(fail_status=status)) as (url, state):
        token = server.grant("failing", model(url), cap=5, seconds=60, refusal_status=stop)
        first = send(server, token, golden(cli)[0])
        retry = send(server, token, golden(cli)[0])
        assert len(state.seen) == (1 if status == 401 else 4)
    assert first.status_code == stop and retry.status_code == stop
    assert f"HTTP {status}: scripted failure" in json.dumps(first.json())
    grant = server.release(token)
    assert grant.refused == "upstream" and grant.refused_event.is_set()
    assert grant.upstream_failure == f"HTTP {status}: scripted failure"
    rows = records.calls("failing")
    assert [(r.status, r.refused) for r in rows] == [(status, None), (stop, "upstream")]
    assert ("attempt 4" in (rows[0].error or "")) == (status != 401)


@pytest.mark.parametrize("stream", [True, False])
def test_a_passing_failure_is_retried_by_the_proxy(patient_proxy: tuple[ModelProxy, RecordsDB], stream: bool) -> None:
    """Two 503s, then the answer: the harness sees only the answer; the record says it came on attempt 3."""
    server, records = patient_proxy
    with scripted_upstream(Script(commands=["true"], fail_status=503, fail_first=2)) as (url, state):
        token = server.grant("passing", model(url), cap=5, seconds=60)
        request = golden("pi")[0]
        response = send(server, token, {**request, "body": {**request["body"], "stream": stream}})
        assert len(state.seen) == 3
    assert response.status_code == 200
    grant = server.release(token)
    assert grant.upstream_failure is None and grant.refused is None
    (row,) = records.calls("passing")
    assert row.status == 200 and "answered on attempt 3" in (row.error or "")


def test_a_request_error_goes_back_as_it_is(patient_proxy: tuple[ModelProxy, RecordsDB]) -> None:
    """A 400 (an over-long context, a bad field) is an answer to the request, not a failure of the upstream.

    The patient proxy: with keep-alive comments after 50 ms, a loaded machine's slower 400 would come
    after the proxy had already sent its 200 and the first comment (that case is the stream tests').
    """
    server, records = patient_proxy
    with scripted_upstream(Script(fail_status=400)) as (url, _):
        token = server.grant("bad-request", model(url), cap=5, seconds=60)
        response = send(server, token, golden("pi")[0])
        assert send(server, token, golden("pi")[0]).status_code == 400
    assert response.status_code == 400
    grant = server.release(token)
    assert grant.upstream_failure is None and grant.refused is None
    assert [r.status for r in records.calls("bad-request")] == [400, 400]


def test_a_first_agent_turn_without_a_shell_tool_is_flagged(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, _ = upstream
    server, _ = proxy
    token = server.grant("connecting", model(url), cap=5, seconds=60, expects_tools=True)
    request = golden("pi")[0]
    body = {**request["body"], "tools": [t for t in request["body"]["tools"] if t["function"]["name"] == "read"]}
    assert send(server, token, {**request, "body": body}).status_code == 200
    grant = server.release(token)
    assert grant.no_task_tools is not None and "read" in grant.no_task_tools


def test_roles() -> None:
    assert role_of("chat", {"tools": [{}]}) == "agent"
    assert role_of("chat", {"messages": [{"role": "user", "content": "hi"}]}) == "agent"
    assert role_of("messages", {"output_config": {"format": {"type": "json_schema"}}}) == "side"
    assert role_of("messages", {}, count_tokens=True) == "count_tokens"


def test_every_reply_is_bounded_by_the_roles_budget_whatever_the_harness_asks() -> None:
    asked = {"max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 4000}, "messages": []}
    capped = capped_reply("messages", asked, 2048)
    assert capped["max_tokens"] == 2048 and "thinking" not in capped  # a budget above the cap is invalid
    assert asked["max_tokens"] == 32000  # the harness's body is not changed
    small = capped_reply("messages", {"max_tokens": 500, "thinking": {"budget_tokens": 100}}, 2048)
    assert small == {"max_tokens": 500, "thinking": {"budget_tokens": 100}}
    assert capped_reply("chat", {"messages": []}, 256)["max_tokens"] == 256  # none asked: the budget
    both = capped_reply("chat", {"max_tokens": 9000, "max_completion_tokens": 100}, 256)
    assert both["max_tokens"] == 256 and both["max_completion_tokens"] == 100
    assert capped_reply("responses", {"max_output_tokens": 128000}, 2048)["max_output_tokens"] == 2048


def test_an_interrupt_refuses_every_later_call_of_live_and_later_runs(
    upstream: tuple[str, Any], proxy: tuple[ModelProxy, RecordsDB]
) -> None:
    url, _ = upstream
    server, records = proxy
    live = server.grant("live", model(url), cap=40, seconds=60)
    agent = golden("claude")[0]
    assert send(server, live, agent).status_code == 200
    assert server.interrupt() == 1
    refused = send(server, live, agent)
    assert refused.status_code == 401 and "interrupted by the user" in refused.text
    later = server.grant("later", model(url), cap=40, seconds=60)  # a run that was setting up
    assert send(server, later, agent).status_code == 401
    grant = server.release(live)
    assert (grant.calls, grant.refused, grant.interrupted) == (1, "interrupted", True)
    assert server.release(later).refused == "interrupted"
    server.resume()  # the interrupted calibration ended: a new one's runs are granted normally
    assert send(server, server.grant("next", model(url), cap=40, seconds=60), agent).status_code == 200
    assert send(server, live, agent).status_code == 401  # the interrupted run's token is gone
    assert [(r.status, r.refused) for r in records.calls("live")] == [(200, None), (401, "interrupted")]
