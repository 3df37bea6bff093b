"""A streamed (SSE) call through the model proxy: relayed or translated, kept alive, recorded as it ended.

The upstream's bytes go to the harness as they arrive, in the harness's shape (translated by
:class:`~twinforge.harness.translation.ReplyTranslator` where the upstream speaks another). While
the upstream is silent, SSE comments (``: keep-alive``) go out at event boundaries. How the call
ended decides its record (docs/runtime.md, "Model channel"; :mod:`twinforge.harness.call_record`):
the stream's own end mark (complete, 200); an error event in the stream (its status); the upstream
closing or failing before the end mark (cut by the upstream, 502, and the run ends as on any
upstream failure); the harness closing it first (cut by the client, 499).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import httpx
from starlette.responses import JSONResponse, Response, StreamingResponse

from twinforge.harness.call_record import CLIENT_CUT, UPSTREAM_CUT, CallEntry, detail_of, read_reply
from twinforge.harness.grant import UPSTREAM_FAILURES, RunGrant
from twinforge.harness.shapes import Reply, Shape, ToolCall, error_body, error_event, read_stream
from twinforge.harness.translation import ReplyTranslator, Turn
from twinforge.harness.translation.readers import StreamReader
from twinforge.harness.upstream_retry import RETRIED, send_with_retries

MAX_KEPT_STREAM = 8 * 2**20
"""Bytes of a streamed reply kept for the record (the harness gets all of it)."""
END_MARKS: dict[Shape, str] = {
    "chat": "finish_reason or [DONE]",
    "messages": "message_stop",
    "responses": "response.completed",
}
"""Each shape's own end of a streamed reply."""


class StreamHost(Protocol):
    """What the relay needs of the proxy."""

    ping_after_s: float
    ping_every_s: float
    retry_waits_s: tuple[float, ...]

    def http(self) -> httpx.AsyncClient:
        """The shared upstream client."""
        ...

    def record(self, grant: RunGrant, entry: CallEntry) -> None:
        """Record one call."""
        ...


def reply_of(turn: Turn) -> Reply:
    """A :class:`Turn` as the transcript's reply."""
    calls = [ToolCall(c.name, c.arguments, c.id) for c in turn.calls]
    return Reply(text=turn.text, tool_calls=calls, stop=turn.stop)


def _error(shape: Shape, status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(shape, status, message), status_code=status)


async def stream_call(
    host: StreamHost,
    grant: RunGrant,
    entry: CallEntry,
    request: httpx.Request,
    timeout: float,
    translator: ReplyTranslator | None,
) -> Response:
    """Forward one streamed call; returns what the harness gets (a stream, or an error status before it)."""
    started = time.monotonic()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    client = host.http()

    async def send() -> httpx.Response:
        response = await client.send(request, stream=True)
        if response.status_code in RETRIED:  # read and closed: another attempt may follow
            await response.aread()
            await response.aclose()
        return response

    async def pump() -> None:
        try:
            response, entry.attempts = await send_with_retries(send, grant, host.retry_waits_s)
            try:
                await queue.put(("head", response))
                async for chunk in response.aiter_bytes():
                    await queue.put(("data", chunk))
                await queue.put(("end", None))
            finally:
                await response.aclose()
        except (httpx.HTTPError, OSError) as exc:
            await queue.put(("fail", f"{type(exc).__name__}: {exc}"))

    task = asyncio.create_task(pump())
    first: tuple[str, Any] | None
    try:
        first = await asyncio.wait_for(queue.get(), min(host.ping_after_s, timeout))
    except TimeoutError:
        first = None
    if first is not None and first[0] == "fail":
        entry.status, entry.error, entry.seconds = 502, f"upstream failed: {first[1]}", time.monotonic() - started
        await asyncio.to_thread(host.record, grant, entry)
        return _error(entry.shape, grant.refusal_status, grant.fail_upstream(502, entry.error))
    if first is not None and first[0] == "head" and first[1].status_code != 200:
        entry.status = entry.upstream_status = first[1].status_code
        content = bytearray()
        while (item := await queue.get())[0] == "data":
            content += item[1]
        entry.seconds = time.monotonic() - started
        entry.response, _, entry.error = read_reply(bytes(content))
        await asyncio.to_thread(host.record, grant, entry)
        if entry.status in UPSTREAM_FAILURES:
            return _error(
                entry.shape, grant.refusal_status, grant.fail_upstream(entry.status, detail_of(entry, bytes(content)))
            )
        if entry.translated:
            return _error(entry.shape, entry.status, detail_of(entry, bytes(content)))
        media = first[1].headers.get("content-type", "application/json")
        return Response(bytes(content), status_code=entry.status, media_type=media)
    relay = _relay(host, grant, entry, queue, task, first, started, started + timeout, translator)
    return StreamingResponse(
        relay, status_code=200, media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


async def _relay(
    host: StreamHost,
    grant: RunGrant,
    entry: CallEntry,
    queue: asyncio.Queue[tuple[str, Any]],
    task: asyncio.Task[None],
    first: tuple[str, Any] | None,
    started: float,
    deadline: float,
    translator: ReplyTranslator | None,
) -> AsyncIterator[bytes]:
    """Relay the upstream's SSE bytes; keep-alive comments only at event boundaries while it is silent."""
    reader = translator.reader if translator is not None else StreamReader(entry.upstream_shape)
    kept = bytearray()
    boundary = True
    entry.status = 200
    pending = first
    ended = False  # the relay itself ended the stream (else the harness closed it)

    def cut(why: str) -> bytes:
        entry.status, entry.cut = UPSTREAM_CUT, "upstream"
        entry.error = f"stream cut by the upstream after {entry.received} bytes: {why}"
        grant.fail_upstream(UPSTREAM_CUT, entry.error)
        return error_event(entry.shape, UPSTREAM_CUT, entry.error)

    try:
        while True:
            if pending is None:
                wait = min(host.ping_every_s, deadline - time.monotonic())
                if wait <= 0:
                    entry.status, entry.error = 504, "upstream timed out"
                    entry.cut = "upstream" if entry.received else None
                    grant.fail_upstream(504, entry.error)
                    ended = True
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
                entry.upstream_status = value.status_code
                if value.status_code != 200:
                    entry.status = value.status_code
                    body = bytearray()
                    while (item := await queue.get())[0] == "data":
                        body += item[1]
                    detail = detail_of(entry, bytes(body))
                    entry.error = f"upstream answered HTTP {value.status_code} after keep-alive pings: {detail}"
                    if value.status_code in UPSTREAM_FAILURES:
                        grant.fail_upstream(value.status_code, detail)
                    ended = True
                    yield error_event(entry.shape, value.status_code, entry.error)
                    return
                continue
            if kind == "data":
                entry.received += len(value)
                if len(kept) < MAX_KEPT_STREAM:
                    kept += value[: MAX_KEPT_STREAM - len(kept)]
                if translator is not None:
                    out, boundary = translator.feed(value), True
                else:
                    reader.feed(value)
                    out, boundary = value, value.endswith((b"\n\n", b"\r\n\r\n"))
                if out:
                    yield out
                continue
            ended = True
            if kind == "fail":
                yield cut(str(value)) if entry.received else _failed(grant, entry, str(value))
                return
            if translator is not None:
                tail = translator.end()
                if tail:
                    yield tail
            else:
                reader.end()
            if reader.failed is not None:
                failure = reader.failed
                entry.status, entry.error = failure.status, f"upstream error in the stream: {failure.message}"
                if failure.status in UPSTREAM_FAILURES:
                    grant.fail_upstream(failure.status, failure.message)
                if translator is not None:
                    yield translator.fail(failure.message, failure.status)
            elif not reader.complete:
                yield cut(f"it closed the stream before its {END_MARKS[entry.upstream_shape]}")
            return
    finally:
        task.cancel()
        if not ended and not reader.complete:
            entry.status, entry.cut = CLIENT_CUT, "client"
            entry.error = f"the harness closed the stream after {entry.received} bytes from the upstream"
        entry.seconds = time.monotonic() - started
        if translator is not None:
            entry.reply, entry.upstream_reply = reply_of(translator.writer.turn), reply_of(reader.turn)
        else:
            entry.reply = read_stream(entry.shape, bytes(kept))
        tokens = reader.turn.tokens
        if tokens.seen:
            entry.usage = entry.usage.model_copy(
                update={
                    "prompt_tokens": tokens.input,
                    "cached_tokens": tokens.cached,
                    "completion_tokens": tokens.output,
                }
            )
        entry.error = entry.error or entry.reply.error or None
        entry.response = {"streamed_bytes": entry.received, "keep_alive_pings": entry.pings}
        host.record(grant, entry)


def _failed(grant: RunGrant, entry: CallEntry, message: str) -> bytes:
    entry.status, entry.error = 502, f"upstream failed: {message}"
    grant.fail_upstream(502, entry.error)
    return error_event(entry.shape, 502, entry.error)
