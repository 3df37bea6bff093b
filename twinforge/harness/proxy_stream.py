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
from twinforge.harness.stream_tokens import (
    Counted,
    count,
    estimate,
    prompt_estimate,
    received_text,
    tokenize_url,
)
from twinforge.harness.translation import ReplyTranslator, Turn
from twinforge.harness.translation.readers import StreamReader
from twinforge.harness.translation.turn import Failed, Tokens
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
    """Relay the upstream's SSE bytes; keep-alive comments only at event boundaries while it is silent.

    Where the relay ends the stream itself, the call is recorded before its last event goes out (a
    client that stops reading at an error event finds the record written); where the harness closed
    it first, the record is written by a task of its own (:class:`_Ending`).
    """
    reader = translator.reader if translator is not None else StreamReader(entry.upstream_shape)
    kept = bytearray()
    ending = _Ending(host, grant, entry, reader, kept, translator, started)
    boundary = True
    entry.status = 200
    pending = first

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
                    await ending.now()
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
                    await ending.now()
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
                if reader.failed is not None and not ending.done:  # an error event: recorded before it goes out
                    _stream_error(grant, entry, reader.failed)
                    await ending.now()
                if out:
                    yield out
                continue
            last: list[bytes] = []
            if kind == "fail":
                last.append(cut(str(value)) if entry.received else _failed(grant, entry, str(value)))
            else:
                last.append(translator.end() if translator is not None else b"")
                if translator is None:
                    reader.end()
                if reader.failed is not None:
                    _stream_error(grant, entry, reader.failed)
                    if translator is not None:
                        last.append(translator.fail(reader.failed.message, reader.failed.status))
                elif not reader.complete:
                    last.append(cut(f"it closed the stream before its {END_MARKS[entry.upstream_shape]}"))
            await ending.now()
            for part in filter(None, last):
                yield part
            return
    finally:
        task.cancel()
        if not ending.done:  # the harness closed the stream (or the relay failed) before its end
            if not reader.complete:
                entry.status, entry.cut = CLIENT_CUT, "client"
                entry.error = f"the harness closed the stream after {entry.received} bytes from the upstream"
            ending.later()


def _stream_error(grant: RunGrant, entry: CallEntry, failure: Failed) -> None:
    """An error event inside the stream: the call's status, and the run ends on an upstream failure."""
    entry.status, entry.error = failure.status, f"upstream error in the stream: {failure.message}"
    if failure.status in UPSTREAM_FAILURES:
        grant.fail_upstream(failure.status, failure.message)


def _failed(grant: RunGrant, entry: CallEntry, message: str) -> bytes:
    entry.status, entry.error = 502, f"upstream failed: {message}"
    grant.fail_upstream(502, entry.error)
    return error_event(entry.shape, 502, entry.error)


_SETTLING: set[asyncio.Task[None]] = set()
"""Records of streams the harness closed, still being counted (kept so the tasks are not collected)."""


class _Ending:
    """Records a streamed call once: its reply, its usage (counted where the upstream gave none), its end."""

    def __init__(
        self,
        host: StreamHost,
        grant: RunGrant,
        entry: CallEntry,
        reader: StreamReader,
        kept: bytearray,
        translator: ReplyTranslator | None,
        started: float,
    ) -> None:
        self.host, self.grant, self.entry, self.reader = host, grant, entry, reader
        self.kept, self.translator, self.started = kept, translator, started
        self.done = False

    @property
    def counts(self) -> bool:
        """The upstream's usage cannot be taken as it is: the stream was cut or failed, or it sent none."""
        return not self.reader.complete or not self.reader.turn.tokens.seen

    async def now(self) -> None:
        """Count what the upstream did not report, then record the call (at most once)."""
        if self.done:
            return
        self.done = True
        counted = None
        if self.counts:
            counted = await count(received_text(self.reader.turn), self.grant.upstream, self.host.http())
        self._record(counted)

    def later(self) -> None:
        """Record once the relay can no longer await (the harness closed the stream; it was cancelled).

        Recorded at once, unless the upstream's tokenizer is to count the text: then from a task of
        its own.
        """
        if self.done:
            return
        text = received_text(self.reader.turn)
        if self.counts and text and tokenize_url(self.grant.upstream) is not None:
            try:
                settling = asyncio.get_running_loop().create_task(self.now())
            except RuntimeError:  # no loop left: the estimate below
                pass
            else:
                _SETTLING.add(settling)
                settling.add_done_callback(_SETTLING.discard)
                return
        self.done = True
        self._record(Counted(tokens=estimate(text), by="estimate") if self.counts else None)

    def _record(self, counted: Counted | None) -> None:
        entry, reader, translator = self.entry, self.reader, self.translator
        entry.seconds = time.monotonic() - self.started
        if translator is not None:
            entry.reply, entry.upstream_reply = reply_of(translator.writer.turn), reply_of(reader.turn)
        else:
            entry.reply = read_stream(entry.shape, bytes(self.kept))
        settle_usage(entry, reader.turn.tokens, counted)
        entry.error = entry.error or entry.reply.error or None
        entry.response = {"streamed_bytes": entry.received, "keep_alive_pings": entry.pings}
        self.host.record(self.grant, entry)


def settle_usage(entry: CallEntry, tokens: Tokens, counted: Counted | None) -> None:
    """The call's usage: as the upstream reported it, or counted where it reported none or less.

    With ``counted`` (the stream did not reach its end, or its upstream sent no usage): the larger
    of the reported and the counted completion, and the prompt estimated from the request where
    none was reported; the record then says ``usage_source: "counted"`` (docs/runtime.md, "Model
    channel"; :mod:`twinforge.harness.stream_tokens`).
    """
    prompt, completion = tokens.input, tokens.output
    if counted is not None and (counted.tokens > completion or (not prompt and entry.received)):
        entry.counted_by = counted.by
        completion = max(completion, counted.tokens)
        prompt = prompt or prompt_estimate(entry.upstream_request or entry.request)
    if tokens.seen or entry.counted_by is not None:
        update = {"prompt_tokens": prompt, "cached_tokens": min(tokens.cached, prompt), "completion_tokens": completion}
        entry.usage = entry.usage.model_copy(update=update)
        entry.cache_write_tokens = tokens.written
