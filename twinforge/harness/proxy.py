"""The model-API proxy on the host: three API shapes, streamed (docs/calibration.md, "Model proxy").

Each run gets its own token. The proxy holds the real credentials (read from the environment
variable the model block names) and replaces the run token with them on the way upstream, so no
real key is ever in the agent's configuration, its trajectory, the task container or the records.

It serves OpenAI Chat Completions (``/v1/chat/completions``), OpenAI Responses (``/v1/responses``)
and Anthropic Messages (``/v1/messages`` and ``/v1/messages/count_tokens``), whole or streamed
(SSE), and forwards each call to the upstream in the same shape where the upstream serves it
(``[models.*] api_shapes``), else translated (``twinforge.harness.translation``; Chat Completions
first where served), recording both shapes. Only what the harnesses send is forwarded
(``twinforge.harness.allowlist``): a provider-side fetch is refused with a 400 in the request's
shape and recorded, other extras are dropped; a streamed Chat call is asked for its usage
(:func:`~twinforge.harness.shapes.with_stream_usage`). The model block's reasoning settings go with every call
(``twinforge.harness.model_settings``). While a streamed call waits for a slow upstream, SSE comment
lines (``: keep-alive``) keep the client's idle timers from firing; an upstream that fails after
that is reported as an error event in the shape (``twinforge.harness.proxy_stream``).

It records every call as it ended (``twinforge.harness.call_record``) with its role (``agent``
turns, ``side`` calls such as title generation,
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
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from twinforge.core.settings import ModelSettings
from twinforge.core.spend import SpendMeter
from twinforge.harness.allowlist import screen
from twinforge.harness.call_record import CallEntry, CallLog, cache_writes, detail_of, read_reply, record_call
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.grant import UPSTREAM_FAILURES, RunGrant
from twinforge.harness.model_settings import apply_model_settings, sent_settings
from twinforge.harness.proxy_stream import stream_call
from twinforge.harness.shapes import (
    PATHS,
    Reply,
    Shape,
    capped_reply,
    credential,
    error_body,
    read_whole,
    role_of,
    tool_names,
    with_stream_usage,
)
from twinforge.harness.translation import (
    ReplyTranslator,
    TranslationRefused,
    custom_tools,
    translate_request,
    translate_whole,
    upstream_shape,
)
from twinforge.harness.upstream_retry import RETRY_WAITS_S, send_with_retries

__all__ = ["CallLog", "ModelProxy", "RunGrant", "read_reply"]

ALLOW_LIST = "allow-list"
"""``refused`` of a call the allow-list refused (``twinforge.harness.allowlist``)."""
ANTHROPIC_VERSION = "2023-06-01"
"""The Messages API version sent when a translated call goes to a Messages upstream."""


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
        spend: The command's spend meter: each priced call's cost is added (``twinforge.core.spend``).
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
        spend: SpendMeter | None = None,
    ) -> None:
        self.records = records
        self.spend = spend
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
        """Revoke a run's token and return its accounting; its summary goes to ``model.json`` beside the transcript.

        ``model.json`` (:meth:`RunGrant.summary`): the model block's settings, the API shapes used,
        the tokens and the cost of the run.
        """
        grant = self._grants.pop(token)
        if grant.log is not None:
            grant.summary().write(grant.log.parent)
        return grant

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
            entry = CallEntry(grant.seq + 1, "agent", shape, None)
            entry.status, entry.error = 400, "request body is not a JSON object"
            await asyncio.to_thread(self.record, grant, entry)
            return _error(shape, 400, "the request body must be a JSON object")
        role = role_of(shape, body, count_tokens=count_tokens)
        tools = tool_names(shape, body)
        n, refused, message = grant.admit(role, tools)
        entry = CallEntry(n, role, shape, body, tools)
        if refused is not None:
            entry.status, entry.refused = grant.refusal_status, refused
            await asyncio.to_thread(self.record, grant, entry)
            return _error(shape, grant.refusal_status, message)
        screened = screen(shape, body, request.headers)
        if screened.refused is not None:  # docs/runtime.md, "Model channel", "What the proxy forwards"
            entry.status, entry.refused = 400, ALLOW_LIST
            entry.error = f"refused by the model proxy's allow-list: {screened.refused}"
            await asyncio.to_thread(self.record, grant, entry)
            return _error(shape, 400, entry.error)
        body = screened.body
        entry.notes = [f"dropped by the allow-list: {what}" for what in screened.dropped]
        settings = grant.upstream
        entry.upstream_shape = upstream_shape(shape, settings.served_shapes())
        if count_tokens and entry.upstream_shape != "messages":
            return await self._estimate_tokens(grant, entry, body)
        client_body = {**body, "model": settings.model}
        if not count_tokens:  # the role's reply budget holds for every harness (docs/runtime.md, "Harnesses")
            client_body = capped_reply(shape, client_body, settings.max_tokens)
        upstream_body = client_body
        if entry.translated:
            try:
                upstream_body, notes = translate_request(
                    shape,
                    entry.upstream_shape,
                    client_body,
                    budget=settings.max_tokens,
                    openai=settings.provider == "openai",
                )
                entry.notes += notes
            except TranslationRefused as exc:
                entry.status = 400
                entry.error = f"cannot translate this {shape} request for the {entry.upstream_shape} upstream: {exc}"
                await asyncio.to_thread(self.record, grant, entry)
                return _error(shape, 400, entry.error)
        upstream_body = {**upstream_body, **grant.extra_body}
        if not count_tokens:
            upstream_body = apply_model_settings(entry.upstream_shape, upstream_body, settings)
            upstream_body = with_stream_usage(entry.upstream_shape, upstream_body)
            entry.sent = sent_settings(entry.upstream_shape, upstream_body)
        entry.request = client_body if entry.translated else upstream_body
        entry.upstream_request = upstream_body if entry.translated else None
        suffix = "/messages/count_tokens" if count_tokens else PATHS[entry.upstream_shape]
        url = f"{api_base(settings)}{suffix}"
        headers = self._headers(grant, entry, screened.headers)
        timeout = max(min(grant.remaining_s, settings.timeout_s), 1.0)
        asked = str(body.get("model") or settings.model)
        custom = custom_tools(shape, body)
        if upstream_body.get("stream") is True and not count_tokens:
            translator = ReplyTranslator(shape, entry.upstream_shape, asked, custom) if entry.translated else None
            upstream = self.http().build_request("POST", url, json=upstream_body, headers=headers)
            return await stream_call(self, grant, entry, upstream, timeout, translator)
        return await self._whole(grant, entry, url, upstream_body, headers, timeout, asked, custom)

    async def _estimate_tokens(self, grant: RunGrant, entry: CallEntry, body: dict[str, Any]) -> Response:
        """``count_tokens`` for an upstream without Messages: estimated here (about 4 characters a token)."""
        tokens = max(
            1, len(json.dumps(body.get("messages") or [])) // 4 + len(json.dumps(body.get("system") or "")) // 4
        )
        entry.status, entry.notes = 200, [f"estimated by the proxy: the upstream serves no {entry.shape} API"]
        entry.response = {"input_tokens": tokens}
        await asyncio.to_thread(self.record, grant, entry)
        return JSONResponse({"input_tokens": tokens})

    @staticmethod
    def _headers(grant: RunGrant, entry: CallEntry, allowed: dict[str, str]) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if not entry.translated:  # the harness's own API version and allowed betas; never a credential
            headers.update(allowed)
        key = os.environ.get(grant.upstream.api_key_env, "")
        if entry.upstream_shape == "messages":
            headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
            if key:
                headers["x-api-key"] = key
        elif key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def http(self) -> httpx.AsyncClient:
        """The upstream client, shared by every call of this proxy."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=None)
        return self._client

    async def _whole(
        self,
        grant: RunGrant,
        entry: CallEntry,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
        asked: str,
        custom: frozenset[str],
    ) -> Response:
        started = time.monotonic()
        content, media = b"", "application/json"
        try:

            async def send() -> httpx.Response:
                limit = max(min(grant.remaining_s, timeout), 1.0)
                return await self.http().post(url, json=body, headers=headers, timeout=limit)

            upstream, entry.attempts = await send_with_retries(send, grant, self.retry_waits_s)
            entry.status = entry.upstream_status = upstream.status_code
            content = upstream.content
            media = upstream.headers.get("content-type", media)
        except httpx.HTTPError as exc:
            entry.status, entry.error = 502, f"upstream failed: {type(exc).__name__}: {exc}"
            content = json.dumps(error_body(entry.upstream_shape, 502, entry.error)).encode()
        finally:
            # Every forwarded call is recorded, whatever came back (docs/calibration.md, "Model proxy").
            entry.seconds = time.monotonic() - started
            payload, entry.usage, problem = read_reply(content)
            entry.cache_write_tokens = cache_writes(payload)
            entry.response = payload
            entry.error = entry.error or problem
            upstream_reply = read_whole(entry.upstream_shape, payload) if isinstance(payload, dict) else Reply()
            entry.reply = upstream_reply
            if entry.translated:
                entry.upstream_reply = upstream_reply
                if entry.status == 200 and isinstance(payload, dict):
                    translated, _ = translate_whole(entry.shape, entry.upstream_shape, payload, asked, custom)
                    content, media = json.dumps(translated).encode(), "application/json"
                    entry.reply = read_whole(entry.shape, translated)
            entry.reply.usage = entry.usage
            await asyncio.to_thread(self.record, grant, entry)
        if entry.status in UPSTREAM_FAILURES:
            return _error(
                entry.shape, grant.refusal_status, grant.fail_upstream(entry.status, detail_of(entry, content))
            )
        if entry.translated and entry.status != 200:
            return _error(entry.shape, entry.status, detail_of(entry, content))
        return Response(content, status_code=entry.status, media_type=media)

    # records ------------------------------------------------------------------------------------

    def record(self, grant: RunGrant, entry: CallEntry) -> None:
        """Record one call (transcript, records database, usage, cost; :func:`record_call`)."""
        record_call(grant, entry, self.records, self.spend)


def api_base(settings: ModelSettings) -> str:
    """The upstream's API base ending in ``/v1``: an Anthropic block may name the SDK's base without it.

    Anthropic's SDK takes ``https://api.anthropic.com`` and adds ``/v1`` itself (the Stage I clients
    use it so); OpenAI's takes the base with ``/v1``. The proxy appends only the shape's path, so one
    ``base_url`` serves both the SDK clients and the proxy.
    """
    base = str(settings.endpoint()).rstrip("/")
    if settings.provider == "anthropic" and not base.endswith("/v1"):
        base += "/v1"
    return base


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
