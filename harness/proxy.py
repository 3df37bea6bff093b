"""The model-API proxy: an OpenAI-compatible pass-through on the host (docs/calibration.md, "Model proxy").

Each run gets its own token. The proxy holds the real credentials (read from the environment
variable the model block names) and replaces the run token with them on the way upstream, so no
real key is ever in the agent's configuration, its trajectory, the task container or the records.
It records every forwarded request and its response with timing and token usage, whatever the
upstream answers (an error page, a JSON list, malformed usage: recorded as such), and enforces the run's
model-call cap and deadline by refusing further calls with HTTP 401: the run's token is no longer
valid. (401, not 403: LiteLLM maps 401 to AuthenticationError, which Mini-SWE-agent does not retry;
a 403 becomes a generic APIError that it retries with backoff for minutes.)
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from twinforge.core.settings import ModelSettings
from twinforge.harness.exceptions import HarnessError


@dataclass
class RunGrant:
    """What one run token may do, and what it did.

    Attributes:
        run_id: The run.
        upstream: Where calls go (the real endpoint and model).
        cap: Model-call cap (40 for Mini-SWE-agent; 60 for some R8 tasks).
        deadline: ``time.monotonic()`` after which calls are refused.
        extra_body: Fields merged into every upstream request (e.g. a llama.cpp ``grammar``).
        log: JSON-lines transcript of every request and response.
        calls: Calls forwarded so far.
        refused: Why calls were refused (``cap`` / ``deadline``), if they were.
        record_errors: Calls the records database could not store (they are in the transcript).
    """

    run_id: str
    upstream: ModelSettings
    cap: int
    deadline: float
    extra_body: dict[str, Any] = field(default_factory=dict)
    log: Path | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    refused: str | None = None
    record_errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    log_lock: threading.Lock = field(default_factory=threading.Lock)


class CallLog(Protocol):
    """Where the proxy records each call (calibration's records database; ``None`` keeps the transcript only)."""

    def add_call(self, **values: Any) -> None:
        """Record one proxied call: run_id, n, status, seconds, prompt_tokens, completion_tokens, refused, error."""
        ...


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "twinforge_proxy"}}, status_code=status)


class ModelProxy:
    """The proxy server, run in a background thread of the calibrating or implementing process.

    Args:
        records: Where each call is recorded (optional).
        host: Bind address (loopback).
        port: TCP port, 0 for any free one.
    """

    def __init__(self, records: CallLog | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.records = records
        self.host = host
        self.port = port or _free_port()
        self._grants: dict[str, RunGrant] = {}
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
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
    ) -> str:
        """Issue a token for one run; returns it (the only credential the harness ever sees).

        Raises:
            HarnessError: The upstream model block has no base URL.
        """
        if upstream.endpoint() is None:
            raise HarnessError(f"run {run_id}: the model block needs a base_url (the proxy forwards to it explicitly)")
        token = f"tf-run-{secrets.token_urlsafe(24)}"
        self._grants[token] = RunGrant(run_id, upstream, cap, time.monotonic() + seconds, dict(extra_body or {}), log)
        return token

    def state(self, token: str) -> RunGrant:
        """A live run's accounting so far (calls, refusals)."""
        return self._grants[token]

    def release(self, token: str) -> RunGrant:
        """Revoke a run's token and return its accounting."""
        return self._grants.pop(token)

    async def _models(self, request: Request) -> Response:
        grant = self._grants.get(request.headers.get("authorization", "").removeprefix("Bearer ").strip())
        if grant is None:
            return _error(401, "unknown run token")
        return JSONResponse({"object": "list", "data": [{"id": grant.upstream.model, "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        grant = self._grants.get(token)
        if grant is None:
            return _error(401, "unknown run token")
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            await asyncio.to_thread(
                self._record, grant, grant.calls, 400, 0.0, {}, None, None, error="request body is not a JSON object"
            )
            return _error(400, "the request body must be a JSON object")
        with grant.lock:
            if grant.calls >= grant.cap:
                grant.refused = "cap"
                return self._refuse(grant, f"model-call cap of {grant.cap} reached for run {grant.run_id}")
            remaining = grant.deadline - time.monotonic()
            if remaining <= 0:
                grant.refused = "deadline"
                return self._refuse(grant, f"time budget of run {grant.run_id} is used up")
            grant.calls += 1
            n = grant.calls
        body = {**body, **grant.extra_body, "model": grant.upstream.model}
        key = os.environ.get(grant.upstream.api_key_env, "")
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        endpoint = str(grant.upstream.endpoint()).rstrip("/")
        started = time.monotonic()
        status, content, media = 502, b"", "application/json"
        error: str | None = None
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=None)
        try:
            upstream = await self._client.post(
                f"{endpoint}/chat/completions",
                json=body,
                headers=headers,
                timeout=max(min(remaining, grant.upstream.timeout_s), 1.0),
            )
            status, content = upstream.status_code, upstream.content
            media = upstream.headers.get("content-type", media)
        except httpx.HTTPError as exc:
            error = f"upstream failed: {type(exc).__name__}: {exc}"
            content = json.dumps({"error": {"message": error, "type": "twinforge_proxy"}}).encode()
        finally:
            # Every forwarded call is recorded, whatever came back (docs/calibration.md, "Model proxy").
            seconds = time.monotonic() - started
            payload, usage, problem = read_reply(content)
            error = error or problem
            grant.prompt_tokens += usage["prompt_tokens"]
            grant.completion_tokens += usage["completion_tokens"]
            await asyncio.to_thread(self._record, grant, n, status, seconds, usage, body, payload, error=error)
        return Response(content, status_code=status, media_type=media)

    def _refuse(self, grant: RunGrant, message: str) -> JSONResponse:
        self._record(grant, grant.calls + 1, 401, 0.0, {}, None, None, refused=grant.refused)
        return _error(401, message)

    def _record(
        self,
        grant: RunGrant,
        n: int,
        status: int,
        seconds: float,
        usage: dict[str, int],
        request: dict[str, Any] | None,
        response: Any,
        refused: str | None = None,
        error: str | None = None,
    ) -> None:
        entry = {
            "n": n,
            "status": status,
            "seconds": round(seconds, 4),
            "usage": usage,
            "refused": refused,
            "error": error,
            "request": request,
            "response": response,
            "at": time.time(),
        }
        if self.records is not None:
            try:
                self.records.add_call(
                    run_id=grant.run_id,
                    n=n,
                    status=status,
                    seconds=seconds,
                    prompt_tokens=usage.get("prompt_tokens", 0),
                    completion_tokens=usage.get("completion_tokens", 0),
                    refused=refused,
                    error=error,
                )
            except Exception as exc:  # the transcript below still holds the call
                grant.record_errors += 1
                entry["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
        if grant.log is not None:
            with grant.log_lock:
                grant.log.parent.mkdir(parents=True, exist_ok=True)
                with grant.log.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry, default=str) + "\n")


def _tokens(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(int(float(value)), 0)
    except (ValueError, OverflowError):
        return 0


def read_reply(content: bytes) -> tuple[Any, dict[str, int], str | None]:
    """Parse an upstream reply for the records, whatever its shape.

    Args:
        content: The raw body the upstream sent.

    Returns:
        ``(payload, usage, problem)``: the JSON payload (or ``{"raw": text}`` for a body that is not
        JSON, e.g. an error page), token usage with malformed counts read as 0, and a note on what
        was malformed (``None`` when the reply was a well-formed JSON object).
    """
    try:
        payload: Any = json.loads(content)
    except ValueError:
        text = content.decode("utf-8", errors="replace")
        return (
            {"raw": text[:20000], "bytes": len(content)},
            {"prompt_tokens": 0, "completion_tokens": 0},
            ("upstream reply is not JSON"),
        )
    if not isinstance(payload, dict):
        return (
            payload,
            {"prompt_tokens": 0, "completion_tokens": 0},
            (f"upstream reply is a JSON {type(payload).__name__}, not an object"),
        )
    raw = payload.get("usage")
    usage = raw if isinstance(raw, dict) else {}
    counts = {name: _tokens(usage, name) for name in ("prompt_tokens", "completion_tokens")}
    problem = None
    if raw is not None and (not isinstance(raw, dict) or any(counts[n] != usage.get(n) for n in counts if n in usage)):
        problem = f"malformed usage: {json.dumps(raw, default=str)[:200]}"
    return payload, counts, problem


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
