"""The model-API proxy on the host: three API shapes, streamed (docs/calibration.md, "Model proxy").

Each run gets its own token. The proxy holds the real credentials (read from the environment
variable the model block names) and replaces the run token with them on the way upstream, so no
real key is ever in the agent's configuration, its trajectory, the task container or the records.

It serves OpenAI Chat Completions (``/v1/chat/completions``), OpenAI Responses (``/v1/responses``)
and Anthropic Messages (``/v1/messages`` and ``/v1/messages/count_tokens``), whole or streamed
(SSE), and forwards each call to the upstream in the same shape (``[models.*] api_shapes`` says
which shapes the upstream serves; a shape it lacks is refused with an error naming that setting).
While a streamed call waits for a slow upstream, SSE comment lines (``: keep-alive``) keep the
client's idle timers from firing; an upstream that fails after that is reported as an error event
in the shape.

It records every call with its role (``agent`` turns, ``side`` calls such as title generation,
``count_tokens``), timing and token usage, whatever the upstream answers (an error page, a JSON
list, malformed usage: recorded as such). It enforces the run's agent-turn cap, a side-call cap
and the deadline by refusing further calls with the harness's own stop status (401 by default: the
run's token is no longer valid; LiteLLM maps 401 to AuthenticationError, which Mini-SWE-agent does
not retry, while a 403 is retried with backoff for minutes; Codex stops at once only on 429). An
upstream that fails (401, 403, 408, 429, 5xx or no answer), once the proxy's own few retries of a
rate limit or server error are spent (``twinforge.harness.upstream_retry``: the same for every
harness), ends the run the same way: the failed call is recorded with the upstream's status, the
harness gets its stop status, and every later call is refused, so no harness retries for minutes
and the run is UNDETERMINED with that cause (:meth:`RunGrant.fail_upstream`).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from twinforge.core.llm import Usage
from twinforge.core.settings import ModelSettings
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.grant import UPSTREAM_FAILURES, RunGrant
from twinforge.harness.serving import serving
from twinforge.harness.shapes import (
    PATHS,
    Reply,
    Role,
    Shape,
    capped_reply,
    credential,
    error_body,
    error_event,
    read_stream,
    read_whole,
    role_of,
    tool_names,
)
from twinforge.harness.upstream_retry import RETRIED, RETRY_WAITS_S, send_with_retries

__all__ = ["CallLog", "ModelProxy", "RunGrant", "read_reply"]

FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
"""Client headers passed upstream (Messages needs its version and betas); never a credential."""
MAX_KEPT_STREAM = 8 * 2**20
"""Bytes of a streamed reply kept for the record (the client gets all of it)."""


class CallLog(Protocol):
    """Where the proxy records each call (calibration's records database; ``None`` keeps the transcript only)."""

    def add_call(self, **values: Any) -> None:
        """Record one call: run_id, n, role, shape, status, seconds, prompt/completion tokens, refused, error."""
        ...


def _error(shape: Shape, status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(shape, status, message), status_code=status)


class ModelProxy:
    """The proxy server, run in a background thread of the calibrating or implementing process.

    Args:
        records: Where each call is recorded (optional).
        host: Bind address (loopback).
        port: TCP port, 0 for any free one.
        ping_after_s: Seconds a streamed call waits for the upstream before keep-alive comments start.
        ping_every_s: Seconds between keep-alive comments while the upstream is silent.
        retry_waits_s: Seconds before each retry of a rate limit or server error (one more attempt
            per entry; ``()`` never retries; see ``twinforge.harness.upstream_retry``).
    """

    def __init__(
        self,
        records: CallLog | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ping_after_s: float = 10.0,
        ping_every_s: float = 10.0,
        retry_waits_s: tuple[float, ...] = RETRY_WAITS_S,
    ) -> None:
        self.records = records
        self.host = host
        self.port = port or _free_port()
        self.ping_after_s = ping_after_s
        self.ping_every_s = ping_every_s
        self.retry_waits_s = retry_waits_s
        self._grants: dict[str, RunGrant] = {}
        self._interrupted = False
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/", self._hello, methods=["GET", "HEAD"]),
                Route("/api/hello", self._hello, methods=["GET", "HEAD"]),
            ]
        )
        self._server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=self.port, log_level="warning", access_log=False, lifespan="off")
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL the harness is pointed at, e.g. ``http://127.0.0.1:41234/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout_s: float = 10.0) -> ModelProxy:
        """Serve in a daemon thread; returns once it accepts connections.

        Raises:
            HarnessError: It did not start in time.
        """
        self._thread = threading.Thread(target=self._server.run, name="model-proxy", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise HarnessError(f"model proxy did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def grant(
        self,
        run_id: str,
        upstream: ModelSettings,
        *,
        cap: int,
        seconds: float,
        extra_body: dict[str, Any] | None = None,
        log: Path | None = None,
        refusal_status: int = 401,
        side_cap: int | None = None,
        expects_tools: bool = False,
    ) -> str:
        """Issue a token for one run; returns it (the only credential the harness ever sees).

        Args:
            run_id: The run.
            upstream: The model block calls go to.
            cap: Agent-turn cap.
            seconds: Wall-clock budget from now.
            extra_body: Fields merged into every upstream request.
            log: The run's transcript file.
            refusal_status: Status of a refusal (the harness's own stop; see :class:`RunGrant`).
            side_cap: Cap on side calls (default: ``cap``).
            expects_tools: The harness offers native tools (see :attr:`RunGrant.no_task_tools`).

        Raises:
            HarnessError: The upstream model block has no base URL.
        """
        if upstream.endpoint() is None:
            raise HarnessError(f"run {run_id}: the model block needs a base_url (the proxy forwards to it explicitly)")
        token = f"tf-run-{secrets.token_urlsafe(24)}"
        self._grants[token] = RunGrant(
            run_id,
            upstream,
            cap,
            time.monotonic() + seconds,
            dict(extra_body or {}),
            log,
            refusal_status=refusal_status,
            side_cap=side_cap,
            expects_tools=expects_tools,
        )
        if self._interrupted:
            self._grants[token].interrupt()
        return token

    def interrupt(self) -> int:
        """Refuse every later call of every run, now and granted later (the user pressed Ctrl-C).

        Returns:
            How many live runs were interrupted.
        """
        self._interrupted = True
        grants = list(self._grants.values())
        for grant in grants:
            grant.interrupt()
        return len(grants)

    def resume(self) -> None:
        """Grant runs normally again (the interrupted calibration ended; its runs stay refused)."""
        self._interrupted = False

    def state(self, token: str) -> RunGrant:
        """A live run's accounting so far (calls, refusals)."""
        return self._grants[token]

    def release(self, token: str) -> RunGrant:
        """Revoke a run's token and return its accounting."""
        return self._grants.pop(token)

    # routes -------------------------------------------------------------------------------------

    async def _hello(self, request: Request) -> Response:
        return Response(b"", status_code=200)

    async def _models(self, request: Request) -> Response:
        grant = self._grants.get(credential(dict(request.headers)))
        if grant is None:
            return _error("chat", 401, "unknown run token")
        return JSONResponse({"object": "list", "data": [{"id": grant.upstream.model, "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        return await self._forward(request, "chat")

    async def _responses(self, request: Request) -> Response:
        return await self._forward(request, "responses")

    async def _messages(self, request: Request) -> Response:
        return await self._forward(request, "messages")

    async def _count_tokens(self, request: Request) -> Response:
        return await self._forward(request, "messages", count_tokens=True)

    # forwarding ---------------------------------------------------------------------------------

    async def _forward(self, request: Request, shape: Shape, *, count_tokens: bool = False) -> Response:
        grant = self._grants.get(credential(dict(request.headers)))
        if grant is None:
            return _error(shape, 401, "unknown run token")
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            entry = _Entry(grant.seq + 1, "agent", shape, None)
            entry.status, entry.error = 400, "request body is not a JSON object"
            await asyncio.to_thread(self._record, grant, entry)
            return _error(shape, 400, "the request body must be a JSON object")
        role = role_of(shape, body, count_tokens=count_tokens)
        tools = tool_names(shape, body)
        n, refused, message = grant.admit(role, tools)
        entry = _Entry(n, role, shape, body, tools)
        if refused is not None:
            entry.status, entry.refused = grant.refusal_status, refused
            await asyncio.to_thread(self._record, grant, entry)
            return _error(shape, grant.refusal_status, message)
        if serving(grant.upstream, shape) is None:
            # a misconfigured upstream ends the run at once, UNDETERMINED with this cause (docs/calibration.md)
            entry.status = 502
            entry.error = (
                f"the upstream {grant.upstream.model!r} does not serve the {shape} API; list it in "
                f"api_shapes of its model block if it does (served: {', '.join(grant.upstream.served_shapes())})"
            )
            await asyncio.to_thread(self._record, grant, entry)
            return _error(shape, grant.refusal_status, grant.fail_upstream(502, entry.error))
        upstream_body = {**body, **grant.extra_body, "model": grant.upstream.model}
        if not count_tokens:  # the role's reply budget holds for every harness (docs/runtime.md, "Harnesses")
            upstream_body = capped_reply(shape, upstream_body, grant.upstream.max_tokens)
        entry.request = upstream_body
        suffix = "/messages/count_tokens" if count_tokens else PATHS[shape]
        url = f"{str(grant.upstream.endpoint()).rstrip('/')}{suffix}"
        headers = self._headers(grant, shape, request)
        timeout = max(min(grant.remaining_s, grant.upstream.timeout_s), 1.0)
        if upstream_body.get("stream") is True and not count_tokens:
            return await self._stream(grant, entry, url, upstream_body, headers, timeout)
        return await self._whole(grant, entry, url, upstream_body, headers, timeout)

    @staticmethod
    def _headers(grant: RunGrant, shape: Shape, request: Request) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        for name in FORWARDED_HEADERS:
            if name in request.headers:
                headers[name] = request.headers[name]
        key = os.environ.get(grant.upstream.api_key_env, "")
        if key and shape == "messages":
            headers["x-api-key"] = key
        elif key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=None)
        return self._client

    async def _whole(
        self, grant: RunGrant, entry: _Entry, url: str, body: dict[str, Any], headers: dict[str, str], timeout: float
    ) -> Response:
        started = time.monotonic()
        content, media = b"", "application/json"
        try:

            async def send() -> httpx.Response:
                limit = max(min(grant.remaining_s, timeout), 1.0)
                return await self._http().post(url, json=body, headers=headers, timeout=limit)

            upstream, entry.attempts = await send_with_retries(send, grant, self.retry_waits_s)
            entry.status, content = upstream.status_code, upstream.content
            media = upstream.headers.get("content-type", media)
        except httpx.HTTPError as exc:
            entry.status, entry.error = 502, f"upstream failed: {type(exc).__name__}: {exc}"
            content = json.dumps(error_body(entry.shape, 502, entry.error)).encode()
        finally:
            # Every forwarded call is recorded, whatever came back (docs/calibration.md, "Model proxy").
            entry.seconds = time.monotonic() - started
            payload, usage, problem = read_reply(content)
            entry.response = payload
            entry.reply = read_whole(entry.shape, payload) if isinstance(payload, dict) else Reply()
            entry.reply.usage = usage
            entry.error = entry.error or problem
            await asyncio.to_thread(self._record, grant, entry)
        if entry.status in UPSTREAM_FAILURES:
            return _error(entry.shape, grant.refusal_status, grant.fail_upstream(entry.status, _detail(entry, content)))
        return Response(content, status_code=entry.status, media_type=media)

    async def _stream(
        self, grant: RunGrant, entry: _Entry, url: str, body: dict[str, Any], headers: dict[str, str], timeout: float
    ) -> Response:
        started = time.monotonic()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        client = self._http()

        async def send() -> httpx.Response:
            response = await client.send(client.build_request("POST", url, json=body, headers=headers), stream=True)
            if response.status_code in RETRIED:  # read and closed: another attempt may follow
                await response.aread()
                await response.aclose()
            return response

        async def pump() -> None:
            try:
                response, entry.attempts = await send_with_retries(send, grant, self.retry_waits_s)
                try:
                    await queue.put(("head", response))
                    async for chunk in response.aiter_bytes():
                        await queue.put(("data", chunk))
                    await queue.put(("end", None))
                finally:
                    await response.aclose()
            except (httpx.HTTPError, OSError) as exc:
                await queue.put(("fail", f"upstream failed: {type(exc).__name__}: {exc}"))

        task = asyncio.create_task(pump())
        first: tuple[str, Any] | None
        try:
            first = await asyncio.wait_for(queue.get(), min(self.ping_after_s, timeout))
        except TimeoutError:
            first = None
        if first is not None and first[0] == "fail":
            entry.status, entry.error, entry.seconds = 502, str(first[1]), time.monotonic() - started
            await asyncio.to_thread(self._record, grant, entry)
            return _error(entry.shape, grant.refusal_status, grant.fail_upstream(502, entry.error))
        if first is not None and first[0] == "head" and first[1].status_code != 200:
            entry.status = first[1].status_code
            content = bytearray()
            while True:
                kind, value = await queue.get()
                if kind != "data":
                    break
                content += value
            entry.seconds = time.monotonic() - started
            entry.response, _, entry.error = read_reply(bytes(content))
            await asyncio.to_thread(self._record, grant, entry)
            if entry.status in UPSTREAM_FAILURES:
                message = grant.fail_upstream(entry.status, _detail(entry, bytes(content)))
                return _error(entry.shape, grant.refusal_status, message)
            media = first[1].headers.get("content-type", "application/json")
            return Response(bytes(content), status_code=entry.status, media_type=media)
        relay = self._relay(grant, entry, queue, task, first, started, started + timeout)
        return StreamingResponse(
            relay, status_code=200, media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def _relay(
        self,
        grant: RunGrant,
        entry: _Entry,
        queue: asyncio.Queue[tuple[str, Any]],
        task: asyncio.Task[None],
        first: tuple[str, Any] | None,
        started: float,
        deadline: float,
    ) -> AsyncIterator[bytes]:
        """Relay the upstream's SSE bytes; keep-alive comments only at event boundaries while it is silent."""
        kept = bytearray()
        boundary = True
        entry.status = 200
        pending = first
        try:
            while True:
                if pending is None:
                    wait = min(self.ping_every_s, deadline - time.monotonic())
                    if wait <= 0:
                        entry.error = "upstream timed out"
                        grant.fail_upstream(504, entry.error)
                        yield error_event(entry.shape, 504, entry.error)
                        return
                    try:
                        pending = await asyncio.wait_for(queue.get(), wait)
                    except TimeoutError:
                        if boundary:
                            entry.pings += 1
                            yield b": keep-alive\n\n"
                        continue
                kind, value = pending
                pending = None
                if kind == "head":
                    if value.status_code != 200:
                        entry.status = value.status_code
                        body = bytearray()
                        while (item := await queue.get())[0] == "data":
                            body += item[1]
                        detail = _detail(entry, bytes(body))
                        entry.error = f"upstream answered HTTP {value.status_code} after keep-alive pings: {detail}"
                        if value.status_code in UPSTREAM_FAILURES:
                            grant.fail_upstream(value.status_code, detail)
                        yield error_event(entry.shape, value.status_code, entry.error)
                        return
                    continue
                if kind == "data":
                    if len(kept) < MAX_KEPT_STREAM:
                        kept += value[: MAX_KEPT_STREAM - len(kept)]
                    boundary = value.endswith((b"\n\n", b"\r\n\r\n"))
                    yield value
                    continue
                if kind == "fail":
                    entry.status, entry.error = 502, str(value)
                    grant.fail_upstream(502, entry.error)
                    yield error_event(entry.shape, 502, entry.error)
                return
        finally:
            task.cancel()
            entry.seconds = time.monotonic() - started
            entry.reply = read_stream(entry.shape, bytes(kept))
            entry.error = entry.error or entry.reply.error or None
            entry.response = {"streamed_bytes": len(kept), "keep_alive_pings": entry.pings}
            self._record(grant, entry)

    # records ------------------------------------------------------------------------------------

    def _record(self, grant: RunGrant, entry: _Entry) -> None:
        reply = entry.reply or Reply()
        if entry.attempts > 1:  # what the upstream answered before is an error worth keeping
            entry.error = "; ".join(filter(None, [entry.error, f"answered on attempt {entry.attempts}"]))
        with grant.lock:
            grant.usage += reply.usage.model_copy(update={"calls": 1, "seconds": max(entry.seconds, 0.0)})
        usage = reply.usage.model_dump(include={"prompt_tokens", "completion_tokens"})
        line: dict[str, Any] = {
            "n": entry.n,
            "role": entry.role,
            "shape": entry.shape,
            "status": entry.status,
            "seconds": round(entry.seconds, 4),
            "usage": usage,
            "refused": entry.refused,
            "error": entry.error,
            "attempts": entry.attempts,
            "tools": entry.tools,
            "request": entry.request,
            "response": entry.response,
            "reply": reply.as_dict() if entry.reply is not None else None,
            "at": time.time(),
        }
        if self.records is not None:
            try:
                self.records.add_call(
                    run_id=grant.run_id,
                    n=entry.n,
                    role=entry.role,
                    shape=entry.shape,
                    status=entry.status,
                    seconds=entry.seconds,
                    prompt_tokens=reply.usage.prompt_tokens,
                    completion_tokens=reply.usage.completion_tokens,
                    refused=entry.refused,
                    error=entry.error,
                )
            except Exception as exc:  # the transcript below still holds the call
                grant.record_errors += 1
                line["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
        if grant.log is not None:
            with grant.log_lock:
                grant.log.parent.mkdir(parents=True, exist_ok=True)
                with grant.log.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line, default=str) + "\n")


class _Entry:
    """One call on its way through the proxy (what the record will say)."""

    def __init__(
        self, n: int, role: Role, shape: Shape, request: dict[str, Any] | None, tools: list[str] | None = None
    ) -> None:
        self.n, self.role, self.shape, self.request = n, role, shape, request
        self.tools = tools or []
        self.status = 0
        self.seconds = 0.0
        self.refused: str | None = None
        self.error: str | None = None
        self.response: Any = None
        self.reply: Reply | None = None
        self.pings = 0
        self.attempts = 1


def _tokens(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(int(float(value)), 0)
    except (ValueError, OverflowError):
        return 0


def read_reply(content: bytes) -> tuple[Any, Usage, str | None]:
    """Parse an upstream reply for the records, whatever its shape.

    Args:
        content: The raw body the upstream sent.

    Returns:
        ``(payload, usage, problem)``: the JSON payload (or ``{"raw": text}`` for a body that is not
        JSON, e.g. an error page), token usage (tokens only) with malformed counts read as 0 (Chat's
        ``prompt_tokens`` / ``completion_tokens`` or Responses' and Messages' ``input_tokens`` /
        ``output_tokens``), and a note on what was malformed (``None`` when the reply was a
        well-formed JSON object).
    """
    try:
        payload: Any = json.loads(content)
    except ValueError:
        text = content.decode("utf-8", errors="replace")
        return (
            {"raw": text[:20000], "bytes": len(content)},
            Usage(),
            ("upstream reply is not JSON"),
        )
    if not isinstance(payload, dict):
        return (
            payload,
            Usage(),
            (f"upstream reply is a JSON {type(payload).__name__}, not an object"),
        )
    raw = payload.get("usage")
    usage = raw if isinstance(raw, dict) else {}
    names = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
    counts = {name: _tokens(usage, name if name in usage else alias) for name, alias in names.items()}
    problem = None
    present = {n: usage[n if n in usage else a] for n, a in names.items() if n in usage or a in usage}
    if raw is not None and (not isinstance(raw, dict) or any(counts[n] != v for n, v in present.items())):
        problem = f"malformed usage: {json.dumps(raw, default=str)[:200]}"
    return payload, Usage(**counts), problem


def _detail(entry: _Entry, content: bytes) -> str:
    """What a failed upstream said: its error message, else the head of its body."""
    payload, _, _ = read_reply(content)
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or entry.error or content[:200].decode("utf-8", "replace"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
